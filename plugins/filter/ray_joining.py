# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: ray_joining
short_description: Which workers join the head's Ray in this run, and whether the reach check can tell anything
version_added: 0.1.0
description:
  - On the head, after the workers' step (roles/ray, worker.yml), as the deploy decides it (in plugins/module_utils/_run_time.py),
    the workers whose join runs in the background in this run (their step started an async job), and whether the reach
    check (reach.yml) is needed. It is not when a training runs from these settings on a cluster this run left as it was
    (the head's Ray kept, no worker joining), since that training's rendezvous went through those ports already.
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  _input:
    description: Every worker's variables (hostvars); a worker whose join was started holds C(__ray_start) with its C(ansible_job_id).
    type: list
    elements: dict
    required: true
  left_alone:
    description: Whether this run leaves the training as the settings check read it (running from these settings, or finished; C(_training_left_alone)).
    type: raw
    required: true
  head_kept:
    description: Whether the head's Ray was left alone and no other deploy's lock was waited for (C(_ray_head.kept)).
    type: raw
    required: true
"""

EXAMPLES = r"""
- name: Keep which workers join, and whether the reach check is needed
  ansible.builtin.set_fact:
    _ray_cluster: >-
      {{ groups | verl.deploy.ray_workers | map('extract', hostvars) | list
         | verl.deploy.ray_joining(_training_left_alone | default(false), _ray_head.kept) }}
"""

RETURN = r"""
_value:
  description: C(joining) (the workers' names) and C(reach_needed) (bool).
  type: dict
"""


def ray_joining(workers, left_alone, head_kept):
    from ansible_collections.verl.deploy.plugins.module_utils._run_time import ray_joining as _ray_joining
    return _ray_joining(workers, left_alone, head_kept)


class FilterModule:
    def filters(self):
        return {"ray_joining": ray_joining}
