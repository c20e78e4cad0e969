# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: screen_settings
short_description: Replace each too large or too deeply nested setting by a short description
version_added: 0.1.0
description:
  - Takes a mapping of settings and returns it with every value that holds a string longer than 65536 characters, more
    than 2000 items in all or more than 4 levels of nesting replaced by C({__verl_oversized__{:} <why>}).
  - The walk is bounded, so a YAML alias bomb (a small document standing for billions of items) is judged at once instead
    of being expanded when the settings are passed to a module; M(verl.deploy.launch_config) then reports the variable.
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  _input:
    description: The settings, by name.
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Check the settings, a huge one named without being expanded
  verl.deploy.launch_config:
    settings: "{{ {'verl_extra_overrides': verl_extra_overrides} | verl.deploy.screen_settings }}"
    spec: "{{ spec }}"
    rules: "{{ rules }}"
    host: "{{ inventory_hostname }}"
    is_head: true
    nnodes: 1
    head:
      name: "{{ inventory_hostname }}"
"""

RETURN = r"""
_value:
  description: The settings, each too large value replaced by a one-key mapping that says why.
  type: dict
"""


def screen_settings(settings):
    from ansible_collections.verl.deploy.plugins.module_utils._inputs import screen
    return screen(settings)


class FilterModule:
    def filters(self):
        return {"screen_settings": screen_settings}
