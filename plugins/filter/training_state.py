# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: training_state
short_description: Parse what C(verl_control.sh training-state) prints
version_added: 0.1.0
description:
  - Reads the step's answer (one JSON document) as a dict; C(launch) becomes the launch record the training started from, or C(None).
  - C(state) is one of C(running), C(orphaned) (it runs, but the Ray session it started in is gone), C(crashed), C(finished),
    C(stopped), C(not-started), or C(unknown) when nothing could be read (no container, no control script yet).
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  _input:
    description: The standard output of C(verl_control.sh training-state) (or C(status)).
    type: str
    required: true
  stall_seconds:
    description: With it, C(failed) says whether the training failed as status.yml diagnoses it (crashed, orphaned, or
      stalled - no step for more than these seconds).
    type: int
"""

EXAMPLES = r"""
- name: Say what the training does
  ansible.builtin.debug:
    msg: "{{ (state_output.stdout | verl.deploy.training_state).state }}"
"""

RETURN = r"""
_value:
  description: C(state), C(pid), C(exit_code), C(started_at), C(stopped_at), C(first_step), C(last_step), C(ray_session), C(log), C(launch);
    with O(stall_seconds), C(failed).
  type: dict
"""


def training_state(text, stall_seconds=None):
    from ansible_collections.verl.deploy.plugins.module_utils._control_step import parse_training_state
    from ansible_collections.verl.deploy.plugins.module_utils._training_state import failed
    state = parse_training_state(text)
    return state if stall_seconds is None else dict(state, failed=failed(state, int(stall_seconds)))


class FilterModule:
    def filters(self):
        return {"training_state": training_state}
