# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: setting_bool
short_description: Read a boolean setting exactly as the settings check reads it
version_added: 0.1.0
description:
  - The one reading of a boolean setting, the settings check's own. C(true)/C(false), C(yes)/C(no), C(on)/C(off), C(1)/C(0)
    and their spellings with surrounding spaces or in another case (a survey answer of C( true ) with spaces), so that no
    task reads a value as true that the check reads as false.
  - Anything else (which the settings check refuses) reads as false.
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  _input:
    description: The value.
    type: raw
    required: true
"""

EXAMPLES = r"""
- name: Ask only when the deploy is not confirmed yet
  ansible.builtin.debug:
    msg: not confirmed
  when: not (verl_confirm | verl.deploy.setting_bool)
"""

RETURN = r"""
_value:
  description: True or false.
  type: bool
"""


def setting_bool(value):
    from ansible_collections.verl.deploy.plugins.module_utils import _inputs as inputs
    return bool(inputs.to_bool("value", value, inputs.Errors()))


class FilterModule:
    def filters(self):
        return {"setting_bool": setting_bool}
