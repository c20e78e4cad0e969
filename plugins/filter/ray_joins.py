# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: ray_joins
short_description: The workers' joins of the head's Ray, as the head reports them
version_added: 0.1.0
description:
  - Reads the joins each worker collected (its C(__ray_join_result), async_status's result with C(item), C(answered) and
    C(rejoined)) and the head's wait as the deploy decides on them (in plugins/module_utils/_run_time.py), as the workers
    that stopped answering, those whose Ray was started again and what they said, the failed joins' message, and whether
    the wait failed.
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  _input:
    description: Every worker's variables (hostvars); those whose join ran in the background hold C(__ray_join_result).
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
  wait:
    description: The head's wait's registered result (skipped when there was nothing to wait for); none when it did not run.
    type: dict
    required: false
"""

EXAMPLES = r"""
- name: The workers' joins
  ansible.builtin.set_fact:
    __ray_joins: >-
      {{ groups | verl.deploy.ray_workers | map('extract', hostvars) | list
         | verl.deploy.ray_joins(_verl_launch.master_addr, _verl_launch.ray_port, __ray_wait | default(none)) }}
"""

RETURN = r"""
_value:
  description: C(unanswered) and C(rejoined) (worker names), C(said) (their sentences), C(problem) (the failed joins, or
    empty), C(wait_failed) (the wait ran and did not see every node's NPUs).
  type: dict
"""


def ray_joins(workers, master, port, wait=None):
    from ansible_collections.verl.deploy.plugins.module_utils._run_time import ray_joins as _ray_joins
    return _ray_joins(workers, master, port, wait)


class FilterModule:
    def filters(self):
        return {"ray_joins": ray_joins}
