# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: worker_in_ray
short_description: Whether a worker is in the head's Ray already, from what this run has read
version_added: 0.1.0
description:
  - True when the head's list of the Ray nodes alive holds this worker's address with all of its NPUs and the container
    stage's look saw its raylet running; the Ray stage then leaves the worker alone without a call of its own.
  - False otherwise, also when the look did not say; the worker is then asked in its container (the same condition), as
    decided in plugins/module_utils/_run_time.py.
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  _input:
    description: The head's list of the Ray nodes alive, C(IP=NPUS) separated by commas.
    type: str
    required: true
  node_ip:
    description: This worker's address towards the head, as the pre-check handed it on.
    type: str
    required: true
  npus:
    description: The NPUs this worker trains on.
    type: int
    required: true
  raylet:
    description: Whether the container stage's look saw the raylet running; none when it did not look.
    type: raw
    required: true
"""

EXAMPLES = r"""
- name: Join unless the head lists this worker already
  ansible.builtin.debug:
    msg: "{{ _ray_members | verl.deploy.worker_in_ray(_precheck_node.node_ip, _verl_launch.npu_per_node, _container_raylet_runs) }}"
"""

RETURN = r"""
_value:
  description: Whether the worker is in the head's Ray with all of its NPUs and its raylet runs.
  type: bool
"""


def worker_in_ray(members, node_ip, npus, raylet):
    from ansible_collections.verl.deploy.plugins.module_utils._run_time import worker_in_ray as _worker_in_ray
    return _worker_in_ray(members, node_ip, npus, raylet)


class FilterModule:
    def filters(self):
        return {"worker_in_ray": worker_in_ray}
