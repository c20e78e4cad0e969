# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: deploy_lock
short_description: This deploy's identity for the lock on the Ray head (one deploy at a time)
version_added: 0.1.0
description:
  - A token that tells this run's steps from another deploy's, the holder text a refused deploy reads (the controller's host
    name, the ansible-playbook pid and the AWX job id when there is one), and the C(env) argv prefix that passes both and the
    wait to C(verl_control.sh).
  - Set it once per run (M(ansible.builtin.set_fact)), for the token holds the time it was made.
  - A deploy started by C(playbooks/compare.yml) finds the comparison's identity in the controller's environment
    (C(VERL_DEPLOY_OUTER_LOCK)) and takes it as its own, keeping the lock when it ends (the comparison holds the lock
    from its first mask to its end).
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  _input:
    description: Seconds a step waits for another deploy's lock (C(verl_deploy_lock_timeout)).
    type: int
    required: true
  job_id:
    description: The AWX job id (C(awx_job_id) or C(tower_job_id)), or empty.
    type: str
    default: ''
  kind:
    description: C(deploy), or C(compare) for the comparison's own identity, C(smoke) for the smoke launch's (each named so
      to a deploy that waits for it; the last two hold the lock across the deploys they run).
    type: str
    default: deploy
    choices: [deploy, compare, smoke]
  lease:
    description: Seconds the lock stays this run's without a step (empty - C(verl_control.sh)'s 120 s).
    type: int
  folder:
    description: The lock's folder on the head, when it must not follow C(verl_log_dir) (the comparison's).
    type: str
    default: ''
  before_ray:
    description:
      - A deploy's C(verl_docker_timeout). The identity then also has C(first_env), its C(env) with the lease of the lock the
        deploy takes on the head before its first change, which outlasts the stages before Ray's (the image's pull and the
        container's start, SwanLab's, the scripts').
    type: int
  resume:
    description:
      - The lock identity an earlier run of the same comparison kept in its state file (its C(token), C(holder), C(host)
        and C(pid)). When that run was on this controller and its ansible-playbook no longer runs (it was interrupted),
        this run takes its token and holder, so that it takes that lock back at once instead of waiting for its lease.
    type: dict
"""

EXAMPLES = r"""
- name: Keep this deploy's lock identity
  ansible.builtin.set_fact:
    _verl_lock: "{{ 300 | verl.deploy.deploy_lock(awx_job_id | default('')) }}"
"""

RETURN = r"""
_value:
  description: C(token), C(holder), C(folder), C(lease), C(outer) (taken from a comparison), C(env) (a list of strings),
    C(handed_down) (what a comparison puts in C(VERL_DEPLOY_OUTER_LOCK) for the deploys it runs), C(host) and C(pid) (this
    run's), C(first_env) (with O(before_ray)) and, for a comparison, C(taken_back) (the identity of an interrupted run of it was taken, O(resume)).
  type: dict
"""

import os

from ansible.errors import AnsibleFilterError


def deploy_lock(wait, job_id="", kind="deploy", lease=None, folder="", resume=None, before_ray=None):
    from ansible_collections.verl.deploy.plugins.module_utils import _deploy_lock
    try:
        # Only a deploy looks for a comparison's identity: the comparison's own is always new.
        outer = _deploy_lock.outer_lock(os.environ.get(_deploy_lock.OUTER_ENV, "")) if kind == "deploy" else None
    except ValueError as exc:
        raise AnsibleFilterError("verl.deploy.deploy_lock: %s" % exc) from None
    if kind not in _deploy_lock.KINDS:
        raise AnsibleFilterError("verl.deploy.deploy_lock: kind %r; use one of %s" % (kind, ", ".join(_deploy_lock.KINDS)))
    taken_back = _deploy_lock.taken_back_from(resume) if kind != "deploy" else None
    return _deploy_lock.deploy_lock(wait, job_id, kind=kind, lease=lease, folder=folder, outer=outer, taken_back=taken_back,
                                    before_ray=before_ray)


class FilterModule:
    def filters(self):
        return {"deploy_lock": deploy_lock}
