# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: swanlab_proof_request
short_description: What the SwanLab stage asks the head's container to prove that the server accepts a run
version_added: 0.4.0
description:
  - From the launch configuration of a host, the request (JSON, without the key) that C(roles/swanlab/files/swanlab_check_run.py)
    is given to create and finish a run named C(verl-deploy-check) in the training's workspace and project.
  - Empty when the host makes no proof, as SwanLab is off, its mode needs no login, or the host is not the Ray head.
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  _input:
    description: The launch configuration of the host (C(_verl_launch)).
    type: dict
    required: true
  key_changed:
    description:
      - Whether the key file was (re)written in this run. Then a run is proven again even when the record of the last one
        says the same server, workspace, project, mode and SDK.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Prove that the SwanLab server accepts a run
  community.docker.docker_container_exec:
    container: verl
    argv: [python3, "-", /root/.swanlab/verl_deploy_api_key, "{{ _verl_launch | verl.deploy.swanlab_proof_request(key_file is changed) }}"]
    stdin: "{{ lookup('ansible.builtin.file', 'swanlab_check_run.py') }}"
"""

RETURN = r"""
_value:
  description: The request as JSON (host, workspace, project, mode, experiment, description, record, force), or an empty string.
  type: str
"""


def swanlab_proof_request(launch, key_changed=False):
    from ansible_collections.verl.deploy.plugins.module_utils._swanlab_proof import request
    return request(launch if isinstance(launch, dict) else {}, bool(key_changed))


class FilterModule:
    def filters(self):
        return {"swanlab_proof_request": swanlab_proof_request}
