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
    M(verl.deploy.node_facts), and returns the names of the (running) containers that hold any of the given device paths
    (one of their processes has it open (O(holders), C(device_holders) of M(verl.deploy.node_facts)) or it is in their
    device list). A privileged container that opens none of them holds nothing (a monitoring agent, an exporter).
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
  holders:
    description: The processes that hold C(/dev/davinci*) open, with their container (C(device_holders) of M(verl.deploy.node_facts)).
    type: list
    elements: dict
    default: []
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


def _as_listed(result):
    """A docker_container_info result in the shape of node_facts' docker.containers."""
    container = (result or {}).get("container") or {}
    if not result.get("exists") or not container:
        return {}
    running = (container.get("State") or {}).get("Running")
    return {"Id": container.get("Id") or "", "Names": [container.get("Name") or "/" + str(result.get("item") or "")],
            "State": "running" if running or running is None else "exited", "HostConfig": container.get("HostConfig") or {}}


def npu_holders(results, devices, exclude="", holders=None):
    from ansible_collections.verl.deploy.plugins.module_utils._node_facts import holding_containers
    listed = [r if "HostConfig" in (r or {}) else _as_listed(r) for r in results or []]
    return holding_containers([entry for entry in listed if entry], devices, exclude, holders or [])


class FilterModule:
    def filters(self):
        return {"npu_holders": npu_holders}
