# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: training_failed
short_description: Whether a training failed, as status.yml diagnoses it
version_added: 0.5.0
description:
  - True when the training is crashed, orphaned (it runs, but the Ray session it started in is gone), restarting (keep-alive
    starts it again after a failure), or stalled (it runs, but logged no step for more than O(stall_seconds)).
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  _input:
    description:
      - The training, as P(verl.deploy.node_step#module) returns it (RV(verl.deploy.node_step#module:training) of its
        V(status) or V(training-state) step).
    type: dict
    required: true
  stall_seconds:
    description: A running training that logged no step for longer is stalled (verl_status_stall_seconds).
    type: int
    required: true
"""

EXAMPLES = r"""
- name: Say whether the head's training failed
  ansible.builtin.debug:
    msg: "{{ head_status.training | verl.deploy.training_failed(1800) }}"
"""

RETURN = r"""
_value:
  description: Whether the training failed.
  type: bool
"""


def training_failed(training, stall_seconds):
    from ansible_collections.verl.deploy.plugins.module_utils._control_step import failed
    return failed(dict(training or {}), int(stall_seconds))


class FilterModule:
    def filters(self):
        return {"training_failed": training_failed}
