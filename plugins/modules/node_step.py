#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
module: node_step
short_description: Run one step of the deploy on a node and return what it did, read
version_added: 0.2.0
description:
  - Runs one step of the control script C(verl_control.sh) in the training container (O(step)), or a role's script that
    answers as it does, in a container or on the host (O(argv)), in one round trip, and reads its answer in Python.
  - A step answers with sentences for people and ends with C(KEY=VALUE) lines for the playbooks; the task's C(changed) is
    what its C(changed=true|false) line says. A step that only looks (V(members), V(ray-progress), V(ray-check),
    V(training-state), V(verify-look), V(npus-look), V(status)) and V(unlock) (the run's own bookkeeping) never report
    changed. Without that line, a step that ended with an exit code other than 0 may have changed something half-way and
    reports changed; one refused for another deploy's lock (exit code 4) did not. A role's script (O(argv)) changed
    something only when it says so.
  - A step that ran does not fail the task whatever its exit code (unless O(fail_on_rc)); the task that reads it decides,
    from RV(rc) and RV(answer). The task fails when the step could not run (no such container).
  - With O(job), collects the result of a step started in the background (C(async), C(poll=0)) as
    M(ansible.builtin.async_status) does, and reads it the same way once it has finished (O(step) may name it; a step
    that only looks never reports changed).
  - An action plugin.
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  container:
    description: The container to run in (with M(community.docker.docker_container_exec)); without it, the host.
    type: str
  argv:
    description: A role's script, as an argument list (no shell), instead of O(step). One of O(step), O(argv) and O(job) is
      required.
    type: list
    elements: str
  stdin:
    description: The script's standard input.
    type: str
  job:
    description: The job id of the same step started in the background; its result is collected instead of running the step.
    type: str
  fail_on_rc:
    description: Fail the task, with the step's last lines, when the step ends with an exit code other than 0.
    type: bool
    default: false
  env:
    description: Environment variables of the step in O(container) (values as strings).
    type: dict
extends_documentation_fragment:
  - verl.deploy.control_step
attributes:
  action:
    description: Indicates this has a corresponding action plugin so some parts of the options can be executed on the controller.
    support: full
  async:
    description: Supports being used with the C(async) keyword.
    support: full
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: none
    details: The step is not run in check mode (the task reports skipped).
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
"""

EXAMPLES = r"""
- name: Stop the training on the head
  verl.deploy.node_step:
    container: verl
    workdir: /verl
    step: stop-training
  register: stopped

- name: Say what the step did
  ansible.builtin.debug:
    msg: "{{ stopped.said }}"
  when: stopped is changed
"""

RETURN = r"""
rc:
  description: The step's exit code.
  returned: when the step ran
  type: int
stdout:
  description: The step's standard output (its sentences, then its C(KEY=VALUE) lines).
  returned: when the step ran
  type: str
stderr:
  description: The step's standard error.
  returned: when the step ran
  type: str
answer:
  description: The step's C(KEY=VALUE) lines (the last value of a key wins).
  returned: always
  type: dict
  sample: {changed: "true", state: stopped}
said:
  description: The step's sentences for people, in order.
  returned: always
  type: list
  elements: str
training:
  description: For V(training-state), the training (C(state), C(pid), C(exit_code), C(last_step), C(log), C(launch), ...);
    its state is V(unknown) when the step did not answer.
  returned: with O(step=training-state)
  type: dict
members:
  description: For V(members), the Ray nodes alive, each C(IP=NPUS); empty when the head could not be asked.
  returned: with O(step=members)
  type: list
  elements: str
finished:
  description: With O(job), whether the job has ended.
  returned: with O(job)
  type: bool
"""
