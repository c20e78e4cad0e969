# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: check_verdict
short_description: The verdict of playbooks/check.yml, from what each node's check left
version_added: 0.3.0
description:
  - Per node V(ready), V(not ready) (with the refusal the check kept) or V(did not answer); the whole is ready only when
    every node is. Also the report's lines (a headline, one line for the ready nodes, one per other node), the head first.
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  _input:
    description: The inventory names of the nodes checked.
    type: list
    elements: str
    required: true
  hostvars:
    description: C(hostvars) (each node's C(__verl_check_answered) and C(__verl_check_problem)).
    type: raw
    required: true
  head:
    description: The Ray head's inventory name.
    type: str
    default: ""
"""

EXAMPLES = r"""
- name: Report
  ansible.builtin.debug:
    msg: "{{ (groups | verl.deploy.ray_nodes | verl.deploy.check_verdict(hostvars, head=groups | verl.deploy.ray_head)).lines }}"
"""

RETURN = r"""
_value:
  description: C(ready) (bool), C(counts), C(nodes) (per node C(role), C(state), C(problem)) and C(lines).
  type: dict
"""


def _check_verdict(names, hostvars, head=""):
    from ansible_collections.verl.deploy.plugins.module_utils._readiness import check_nodes, check_verdict
    return check_verdict(check_nodes(names, hostvars), head)


class FilterModule:
    def filters(self):
        return {"check_verdict": _check_verdict}
