# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: ray_head
short_description: The inventory name of the deployment's Ray head
version_added: 0.3.0
description:
  - "The one definition of it, from the inventory groups C(ray_head) and C(ray_workers) (either may be missing); a host
    in both groups is the head. The stage-0 check C(roles/verl/tasks/one_head.yml) makes sure there is exactly one head."
  - "Its companions: P(verl.deploy.ray_head#filter) (the head), P(verl.deploy.ray_workers#filter) (the nodes that join it),
    P(verl.deploy.ray_nodes#filter) (all of them, the head first)."
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  _input:
    description: The play's C(groups).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Name the deployment's nodes
  ansible.builtin.debug:
    msg: "head {{ groups | verl.deploy.ray_head }}"
"""

RETURN = r"""
_value:
  description: The head's inventory name, or an empty string when the inventory has none.
  type: str
"""


def ray_head(groups):
    from ansible_collections.verl.deploy.plugins.module_utils._ray_nodes import ray_head as _ray_head
    return _ray_head(groups)


class FilterModule:
    def filters(self):
        return {"ray_head": ray_head}
