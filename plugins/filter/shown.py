# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: shown
short_description: A name or value as a message may print it, control and format characters escaped
version_added: 0.1.0
description:
  - A short, plain string as it is; any other value escaped and cut as every message of the collection shows values
    (a new line as C(\n), an escape as C(\x1b), a format character as C(U+202E)), so that a host or group name cannot forge
    lines of a report or move the terminal's cursor.
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  _input:
    description: The value.
    type: raw
    required: true
"""

EXAMPLES = r"""
- name: Name the heads
  ansible.builtin.debug:
    msg: "{{ groups['ray_head'] | map('verl.deploy.shown') | join(', ') }}"
"""

RETURN = r"""
_value:
  description: The text to print.
  type: str
"""


def shown(value):
    from ansible_collections.verl.deploy.plugins.module_utils import _inputs as inputs
    return inputs.plain_or_shown(value)


class FilterModule:
    def filters(self):
        return {"shown": shown}
