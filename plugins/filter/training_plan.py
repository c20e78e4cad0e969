# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: training_plan
short_description: Whether the training stage starts the training on the head, and what it says
version_added: 0.1.0
description:
  - Reads the training's state (the C(training) of M(verl.deploy.node_step)'s C(training-state), or of the pre-check's
    M(verl.deploy.node_facts)) and decides (in plugins/module_utils/_run_time.py) to start when it does not
    run (never started, crashed, stopped, orphaned), on C(verl_restart=true), or when its worker group lost a node; a
    finished training is not started again without C(verl_restart). Also the sentences for a training left alone, stalled,
    started again for its lost workers, or a finished one started again that trains only one step more (it resumes past
    C(verl_train_steps)).
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  _input:
    description: The training's state, as M(verl.deploy.node_step) returns it for C(training-state) (its C(training)).
    type: dict
    required: true
  launch:
    description: The launch configuration (its C(restart), C(status_stall_seconds), C(train_steps) and C(resume_mode) are read).
    type: dict
    required: true
  lost_workers:
    description: The workers whose Ray was started again in this run.
    type: list
    elements: str
    required: true
  host:
    description: The head's inventory name, for the sentences.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: What to do with the training
  ansible.builtin.set_fact:
    __training_plan: "{{ __training_state.training | verl.deploy.training_plan(_verl_launch, [], inventory_hostname) }}"
"""

RETURN = r"""
_value:
  description: C(state), C(pid), C(start) and C(stop_first) (booleans), C(left_alone), C(stalled), C(why_again) (sentences or empty).
  type: dict
"""


def training_plan(training, launch, lost_workers, host):
    from ansible_collections.verl.deploy.plugins.module_utils._run_time import training_plan as _training_plan
    return _training_plan(training, launch, lost_workers, host)


class FilterModule:
    def filters(self):
        return {"training_plan": training_plan}
