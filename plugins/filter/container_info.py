# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) verl-deploy maintainers
from __future__ import annotations

DOCUMENTATION = r"""
name: container_info
short_description: One container out of what verl.deploy.node_facts read, shaped like docker_container_info's result
version_added: 0.2.0
description:
  - Takes C(docker.containers) of M(verl.deploy.node_facts) and a container name; returns C(exists) and C(container)
    with the keys the deploy reads (C(Id), C(Name), C(Image), C(State.Status), C(State.Running), C(Config.Labels), C(Config.Image),
    C(HostConfig.Devices), C(HostConfig.Privileged)), as M(community.docker.docker_container_info) names them.
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  _input:
    description: C(docker.containers) of M(verl.deploy.node_facts).
    type: list
    elements: dict
    required: true
  name:
    description: The container's name.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Whether the training container runs
  ansible.builtin.debug:
    msg: "{{ (facts.docker.containers | verl.deploy.container_info('verl')).container.State.Running | default(false) }}"
"""

RETURN = r"""
_value:
  description: C(exists) and C(container) (V(null) when it does not exist).
  type: dict
"""


def container_info(containers, name):
    from ansible_collections.verl.deploy.plugins.module_utils._node_facts import container_info as _container_info
    return _container_info(containers or [], name)


class FilterModule:
    """verl.deploy.container_info"""

    def filters(self):
        return {"container_info": container_info}
