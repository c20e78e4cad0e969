# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: ray_joins
short_description: The workers' joins of the head's Ray, as the head reports them
version_added: 0.1.0
description:
  - Reads the joins each worker collected (async_status results with C(item), C(answered) and C(rejoined)) as the deploy
    decides on them (in plugins/module_utils/_run_time.py), as the workers that stopped answering, those whose Ray was started
    again and what they said, and the failed joins' message.
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  _input:
    description: The workers' collected joins.
    type: list
    elements: dict
    required: true
  master:
    description: The head's address, for the fix.
    type: str
    required: true
  port:
    description: Ray's port, for the fix.
    type: int
    required: true
"""

EXAMPLES = r"""
- name: The workers' joins
  ansible.builtin.set_fact:
    __ray_joins: "{{ __ray_join_results | verl.deploy.ray_joins(_verl_launch.master_addr, _verl_launch.ray_port) }}"
"""

RETURN = r"""
_value:
  description: C(unanswered) and C(rejoined) (worker names), C(said) (their sentences), C(problem) (the failed joins, or empty).
  type: dict
"""


def ray_joins(results, master, port):
    from ansible_collections.verl.deploy.plugins.module_utils._run_time import ray_joins as _ray_joins
    return _ray_joins(results, master, port)


class FilterModule:
    def filters(self):
        return {"ray_joins": ray_joins}
