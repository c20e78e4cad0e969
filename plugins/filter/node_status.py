# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: node_status
short_description: What status.yml shows of one node, from its control script's status step
version_added: 0.1.0
description:
  - The node's container and the NPUs in use, then what C(verl_control.sh status) found, said in sentences (this node in
    Ray, the image's verl and, on the head, the training's state, its start output and its log's last lines), or why it
    found nothing (no control script in the container, or the step's own error).
  - The step answers facts only, which P(verl.deploy.node_step#module) returns read (its C(facts), C(tails) and C(training)); the sentences
    are made here, and P(verl.deploy.status_report#filter) decides the verdict from the same facts.
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  _input:
    description: The registered result of P(verl.deploy.node_step#module)'s V(status) step (skipped while the container is down).
    type: dict
    required: true
  container:
    description: The container's name.
    type: str
    required: true
  container_line:
    description: The container's state as shown.
    type: str
    required: true
  npus_in_use:
    description: The NPUs in use, as P(verl.deploy.npu_usage#filter) says it.
    type: str
    required: true
  control:
    description: The control script's path in the container.
    type: str
    required: true
  stall_seconds:
    description: A running training that logged no step for longer is said to be STALLED (verl_status_stall_seconds).
    type: int
    default: 1800
"""

EXAMPLES = r"""
- name: Status
  ansible.builtin.debug:
    msg: "{{ status_result | verl.deploy.node_status('verl', 'running', '0-7 by the training', '/verl/verl_control.sh', 1800) }}"
"""

RETURN = r"""
_value:
  description: The lines to show, in order.
  type: list
  elements: str
"""


def node_status(result, container, container_line, npus_in_use, control, stall_seconds=1800):
    from ansible_collections.verl.deploy.plugins.module_utils._training_state import node_status as _node_status
    return _node_status(result, container, container_line, npus_in_use, control, int(stall_seconds))


class FilterModule:
    def filters(self):
        return {"node_status": node_status}
