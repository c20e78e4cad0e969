# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: removal_report
short_description: What playbooks/remove.yml removed on a node and what it kept
version_added: 0.4.0
description:
  - From the training container's C(community.docker.docker_container_info) result, read before it was removed, one sentence
    for the node - the container removed (with Ray and the training in it) and what stays on the host - the folders it
    mounted read-write (checkpoints, logs, datasets, model), its named volumes, the image and the deploy's copy of the scripts.
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  _input:
    description: The C(community.docker.docker_container_info) result of the container.
    type: dict
    required: true
  host:
    description: The node's inventory name.
    type: str
    required: true
  container:
    description: The container's name (C(verl_container_name)).
    type: str
    required: true
  stage_dir:
    description: C(verl_host_stage_dir), where the deploy keeps a copy of the scripts per container.
    type: str
"""

EXAMPLES = r"""
- name: Say what was removed and what was kept
  ansible.builtin.debug:
    msg: "{{ container_before | verl.deploy.removal_report(inventory_hostname, 'verl', '/var/lib/verl-deploy') }}"
"""

RETURN = r"""
_value:
  description: "The sentence, e.g. C(node1: container verl removed, ...; kept on the host: the folders it mounted (/ckpt, /logs ...))."
  type: str
"""


def removal_report(info, host, container, stage_dir=None):
    from ansible_collections.verl.deploy.plugins.module_utils._removal import removal_report as _removal_report
    return _removal_report(info, host, container, stage_dir)


class FilterModule:
    def filters(self):
        return {"removal_report": removal_report}
