# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: reach_listened
short_description: Read the port the head's listener of the reach check took
version_added: 0.2.0
description:
  - Takes the standard output of the Ray stage's reach check in listen mode on the head (its answer's C(port) and C(range))
    and returns the port it listens on and the head's ephemeral port range.
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  _input:
    description: The listener's standard output.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Connect to the head's listener
  ansible.builtin.debug:
    msg: "{{ (listener.stdout | verl.deploy.reach_listened).port }}"
"""

RETURN = r"""
_value:
  description: The listener.
  type: dict
  contains:
    port:
      description: The port, or none when the listener did not start.
      type: int
    range:
      description: The head's ephemeral port range (C(LOW-HIGH)), or empty.
      type: str
"""


def reach_listened(output):
    from ansible_collections.verl.deploy.plugins.module_utils._reach import listened
    return listened(output)


class FilterModule:
    def filters(self):
        return {"reach_listened": reach_listened}
