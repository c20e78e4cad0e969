# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: reach_problems
short_description: Name the workers whose container does not reach the head's Ray or rendezvous port
version_added: 0.2.0
description:
  - Takes each worker's result of the Ray stage's reach check (its C(NAME=PORT RESULT) lines) and returns one sentence per
    port of the head that a worker's container did not reach, naming the node, the port and the fix.
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  _input:
    description: One entry per worker, C(host), C(stdout) and C(rc) of the check.
    type: list
    elements: dict
    required: true
  head:
    description: The head's address as the workers connect to it.
    type: str
    required: true
  listened:
    description: The standard output of the head's listener (its C(port=) and C(range=) lines).
    type: str
    default: ""
"""

EXAMPLES = r"""
- name: Stop if a worker cannot reach the head
  ansible.builtin.assert:
    that: results | verl.deploy.reach_problems('10.0.0.1', listener.stdout) | length == 0
"""

RETURN = r"""
_value:
  description: One sentence per port not reached, naming the worker, the port, what failed and the fix.
  type: list
  elements: str
"""

from ansible_collections.verl.deploy.plugins.module_utils._reach import listened as _listened
from ansible_collections.verl.deploy.plugins.module_utils._reach import unreached


def reach_problems(results, head, listened=""):
    return unreached(results or [], head, _listened(listened)["range"])


class FilterModule:
    def filters(self):
        return {"reach_problems": reach_problems}
