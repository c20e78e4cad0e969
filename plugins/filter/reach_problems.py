# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: reach_problems
short_description: Name the nodes whose container does not reach the head's Ray port or verl's rank-0 node
version_added: 0.2.0
description:
  - Takes each node's result of the Ray stage's reach check (its answer, C(NAME) to C(ADDRESS:PORT RESULT)) and returns one
    sentence per port that a node's container did not reach (the head's Ray port, the port verl's rank-0 node listened
    on as verl's rendezvous does), naming the node, the address, the port and the fix; and one when the rank-0 node's
    listener did not start.
  - With O(marker), the proof that every node's container reads the head's checkpoint storage - one sentence per node that
    does not see the file the head wrote in C(verl_ckpts_dir), or one when the head could not write it.
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  _input:
    description: One entry per node, C(host), C(answer), C(said), C(stderr) and C(rc) of the check (as P(verl.deploy.node_step#module) returns them).
    type: list
    elements: dict
    required: true
  rank0:
    description: The inventory name of verl's rank-0 node (P(verl.deploy.rank0_node#filter)).
    type: str
    required: true
  listened:
    description: The answer of the rank-0 node's listener (C(port) and C(range)).
    type: dict
    default: {}
  marker:
    description: The head's marker in C(verl_ckpts_dir) - C(path), C(written) (bool) and C(said) (why not); none when no proof
      was made (one node, or no training to start).
    type: dict
"""

EXAMPLES = r"""
- name: Stop if a node cannot reach the head's Ray port or verl's rank-0 node
  ansible.builtin.assert:
    that: results | verl.deploy.reach_problems('node2', listener.answer) | length == 0
"""

RETURN = r"""
_value:
  description: One sentence per port not reached, naming the node, the address and port, what failed and the fix; then one per
    node that does not see the head's checkpoint storage.
  type: list
  elements: str
"""


def reach_problems(results, rank0, listened=None, marker=None):
    from ansible_collections.verl.deploy.plugins.module_utils._reach import listened as _listened
    from ansible_collections.verl.deploy.plugins.module_utils._reach import storage_problems, unreached
    return unreached(results or [], rank0, _listened(listened)) + storage_problems(results or [], marker)


class FilterModule:
    def filters(self):
        return {"reach_problems": reach_problems}
