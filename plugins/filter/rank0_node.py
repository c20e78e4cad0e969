# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: rank0_node
short_description: The node verl makes rank 0, whose address its workers rendezvous at (MASTER_ADDR)
version_added: 0.3.0
description:
  - "verl 0.7.0 sorts its placement groups, one per node, by the node's address as Ray knows it, as text, and takes
    MASTER_ADDR and MASTER_PORT from the first: the node with the smallest address as a string, which need not be the
    Ray head (a worker at 10.0.0.10 comes before a head at 10.0.0.5)."
  - "Each node's address is the one the pre-check handed on (C(_precheck_node.node_ip): C(verl_node_ip), or the address
    towards the head), the one its Ray is started with. Nodes without it are left out; with none, the head."
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  _input:
    description: The nodes' host variables, the head first (C(groups | verl.deploy.ray_nodes | map('extract', hostvars))).
    type: list
    elements: dict
    required: true
"""

EXAMPLES = r"""
- name: Name verl's rank-0 node
  ansible.builtin.debug:
    msg: "{{ (groups | verl.deploy.ray_nodes | map('extract', hostvars) | verl.deploy.rank0_node).name }}"
"""

RETURN = r"""
_value:
  description: The node.
  type: dict
  contains:
    name:
      description: Its inventory name.
      type: str
    address:
      description: Its address, or empty when no node's address is known.
      type: str
"""


def rank0_node(nodes):
    from ansible_collections.verl.deploy.plugins.module_utils._reach import rank0_node as _rank0_node
    pairs = [(node.get("inventory_hostname"), (node.get("_precheck_node") or {}).get("node_ip")) for node in nodes or []]
    name, address = _rank0_node(pairs)
    return {"name": name, "address": address}


class FilterModule:
    def filters(self):
        return {"rank0_node": rank0_node}
