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
"""

EXAMPLES = r"""
- name: Keep this deploy's lock identity
  ansible.builtin.set_fact:
    _verl_lock: "{{ 300 | verl.deploy.deploy_lock(awx_job_id | default('')) }}"
"""

RETURN = r"""
_value:
  description: C(token), C(holder) and C(env) (a list of strings).
  type: dict
"""

from ansible_collections.verl.deploy.plugins.module_utils._deploy_lock import deploy_lock


class FilterModule:
    def filters(self):
        return {"deploy_lock": deploy_lock}
