# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: precheck_report
short_description: Every problem and warning of one host, from what the pre-check read and its launch configuration
version_added: 0.2.0
description:
  - Runs each rule of the pre-check (one small function per rule, each with its message) over what
    M(verl.deploy.node_facts) read on a host and the host's launch configuration, and returns every problem at once.
  - Processes that npu-smi lists on the deploy's NPUs are fine when they run in the deploy's own training container (the
    training itself, on a re-run); any other container's or the host's are a problem naming the pid, the process and the
    container.
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  _input:
    description:
      - "A dict: C(launch) (the launch configuration), C(npu), C(docker) and C(facts) (what M(verl.deploy.node_facts)
        returned), C(container) (the training container, as the P(verl.deploy.container_info#filter) filter gives it),
        C(paths) (C(checks), the paths to check with their variable and kind; C(state), each path's state), C(route)
        (the route to the head), C(ckpts_nodes) (each node's read of the checkpoint folder, by inventory name), C(hccn_nodes)
        (each node's C(hccn) read), C(npu_devices_nodes) (each node's C(verl_npu_devices)) and C(images_nodes) (each node's
        Docker images)."
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Stop if this host cannot train
  ansible.builtin.assert:
    that: report.problems | length == 0
    fail_msg: "{{ inventory_hostname }}: {{ report.problems | join(' ') }}"
  vars:
    report: "{{ {'launch': _verl_launch, 'npu': facts.npu, 'docker': facts.docker, 'facts': facts} | verl.deploy.precheck_report }}"
"""

RETURN = r"""
_value:
  description: The host's report.
  type: dict
  contains:
    problems:
      description: One sentence per rule that failed, each naming the variable, the value and the fix.
      type: list
      elements: str
    warnings:
      description: What may trouble the training without stopping the deploy (other processes with the devices open, a small C(/dev/shm)).
      type: list
      elements: str
    brief:
      description: The problems as the terminal shows them, each in at most two lines of 120 characters (C(- ) before each).
      type: list
      elements: str
    brief_warnings:
      description: The warnings as the terminal shows them, as C(brief).
      type: list
      elements: str
    training_npus:
      description: The NPUs (C(devices)) and processes (C(pids)) that the deploy's own training container holds.
      type: dict
"""


def precheck_report(checked):
    from ansible_collections.verl.deploy.plugins.module_utils._precheck import report
    return report(checked if isinstance(checked, dict) else {})


class FilterModule:
    def filters(self):
        return {"precheck_report": precheck_report}
