# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: npu_holders
short_description: Names of the containers that hold any of the given NPU devices
version_added: 0.1.0
description:
  - Takes the C(results) of a looped M(community.docker.docker_container_info), or the C(docker.containers) of
    M(verl.deploy.node_facts), and returns the names of the (running) containers that map any of the given device paths,
    or that are privileged (a privileged container sees every NPU).
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  _input:
    description: The C(results) list of a looped M(community.docker.docker_container_info), or C(docker.containers) of M(verl.deploy.node_facts).
    type: list
    elements: dict
    required: true
  exclude:
    description: A container name to leave out (the training container itself).
    type: str
    default: ''
  devices:
    description: Device paths on the host, such as V(/dev/davinci0).
    type: list
    elements: str
    required: true
"""

EXAMPLES = r"""
- name: Containers that would compete for the NPUs
  ansible.builtin.debug:
    msg: "{{ containers.results | verl.deploy.npu_holders(['/dev/davinci0', '/dev/davinci1']) }}"
"""

RETURN = r"""
_value:
  description: Container names, in the order given.
  type: list
  elements: str
"""

from ansible_collections.verl.deploy.plugins.module_utils._node_facts import holding_containers


def npu_holders(results, devices, exclude=""):
    if any("HostConfig" in (result or {}) for result in results or []):
        return holding_containers(results, devices, exclude)
    wanted = set(devices)
    holders = []
    for result in results or []:
        container = result.get("container") or {}
        if not result.get("exists") or not container:
            continue
        host_config = container.get("HostConfig") or {}
        mapped = {d.get("PathOnHost") for d in host_config.get("Devices") or []}
        name = (container.get("Name") or result.get("item") or "").lstrip("/")
        if (host_config.get("Privileged") or mapped & wanted) and name != exclude:
            holders.append(name)
    return holders


class FilterModule:
    def filters(self):
        return {"npu_holders": npu_holders}
