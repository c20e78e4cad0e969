# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: status_report
short_description: The status of a deployment as a table and a verdict, from what status.yml read on each node
version_added: 0.3.0
description:
  - One row per node, the head first (container, in Ray, NPUs in use, HBM used/total, AICore), the training's state with
    step N of M, its rate and the time left, and the alarms (crashed, stalled, orphaned, a node out of Ray while it runs).
  - C(failed) is true when an alarm named in O(fail_on) is raised (P(verl.deploy.verl#role) setting C(verl_status_fail_on)).
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  _input:
    description: The inventory names of the nodes.
    type: list
    elements: str
    required: true
  hostvars:
    description: C(hostvars); each node that answered holds C(__day2_status_node) (roles/day2/tasks/status.yml).
    type: raw
    required: true
  head:
    description: The Ray head's inventory name.
    type: str
    required: true
  stall_seconds:
    description: A running training that logged no step for longer is stalled.
    type: int
    required: true
  fail_on:
    description: The alarms that make status.yml fail.
    type: list
    elements: str
    default: [crashed, stalled, orphaned, out-of-ray]
  control_sha256:
    description:
      - The SHA-256 of this collection's C(verl_control.sh). A node whose script in the container answers another (an earlier
        release of verl-deploy installed it) is listed in C(other_control) and named in C(lines) with the fix (deploy again).
    type: str
    default: ""
"""

EXAMPLES = r"""
- name: Status
  ansible.builtin.debug:
    msg: "{{ (ansible_play_hosts_all | verl.deploy.status_report(hostvars, head, 1800)).lines }}"
"""

RETURN = r"""
_value:
  description: C(state), C(progress) (C(step), C(total_steps), C(steps_per_min), C(seconds_left), C(text)), C(phase) (read from the
    log's tail, C(phase) the last of verl's phases that logged, C(line), C(step), C(flags) NaN losses or zero rewards in the
    last steps, C(cause) its likely cause, C(text)), C(alarms), C(failed), C(failing), C(fail_on), C(nodes) (per node its
    row), C(other_control) (the nodes whose control script another release installed), C(npu) (C(nodes) each node's NPU use over its
    sampler's last samples, C(idle) the nodes whose NPUs idle while the others work, while the training runs) and C(lines) (the table and the
    training's line, for people).
  type: dict
"""


def _status_report(names, hostvars, head, stall_seconds, fail_on=None, control_sha256=""):
    from ansible_collections.verl.deploy.plugins.module_utils._training_state import FAIL_ON, status_report
    nodes = []
    for name in names:
        try:
            node = hostvars[name].get("__day2_status_node")
        except Exception:  # pylint: disable=broad-exception-caught  # an undefined hostvar reads as absent
            node = None
        nodes.append(dict(node, name=name, answered=True) if isinstance(node, dict) else {"name": name, "answered": False})
    return status_report(nodes, head, int(stall_seconds), list(FAIL_ON if fail_on is None else fail_on), control_sha256)


class FilterModule:
    def filters(self):
        return {"status_report": _status_report}
