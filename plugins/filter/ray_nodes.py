# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: ray_nodes
short_description: The deployment's nodes from the inventory's groups, the Ray head first
version_added: 0.3.0
description:
  - The one definition of the deployment's nodes, from the inventory groups C(ray_head) and C(ray_workers) (either may be
    missing): the head, then each worker once, in the inventory's order. A host in both groups is the head.
  - Its companions in the same file are C(verl.deploy.ray_head) (the head's inventory name, V('') when the inventory has
    none; the stage-0 check C(roles/verl/tasks/one_head.yml) makes sure it has exactly one) and
    C(verl.deploy.ray_workers) (the nodes that join the head, the head excluded).
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  _input:
    description: The play's C(groups).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Count the deployment's nodes
  ansible.builtin.debug:
    msg: "{{ groups | verl.deploy.ray_nodes | length }} node(s), head {{ groups | verl.deploy.ray_head }}"
"""

RETURN = r"""
_value:
  description: The nodes' inventory names, the head first.
  type: list
  elements: str
"""


def _group(groups, name):
    return list((groups or {}).get(name) or [])


def ray_head(groups):
    """The head's inventory name: the first of the group ray_head, or "" when there is none."""
    return next(iter(_group(groups, "ray_head")), "")


def ray_workers(groups):
    """The nodes that join the head: the group ray_workers in its order, each once, without the head."""
    head = ray_head(groups)
    return list(dict.fromkeys(name for name in _group(groups, "ray_workers") if name != head))


def ray_nodes(groups):
    """Every node of the deployment: the group ray_head, then ray_workers, each once."""
    return list(dict.fromkeys(_group(groups, "ray_head") + ray_workers(groups)))


class FilterModule:
    def filters(self):
        return {"ray_head": ray_head, "ray_workers": ray_workers, "ray_nodes": ray_nodes}
