# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations


class ModuleDocFragment:
    """A step of the control script (verl_control.sh) in the training container, as verl.deploy.node_step and
    verl.deploy.wait_progress name it (plugins/module_utils/_control_step.py: CONTROL_STEPS, control_argv)."""

    # The choices are the table's (_control_step.STEPS), as tests/test_node_step.py holds them: ansible-test reads this text
    # as a literal.
    DOCUMENTATION = r"""
options:
  step:
    description:
      - A step of the control script, C(verl_control.sh) in O(workdir), run in O(container); V(lock) (and V(unlock)) with
        M(verl.deploy.node_step)'s C(lock_folder) run on the host.
    type: str
    choices: [members, ray-progress, ray, ray-check, training-state, start-training, verify-look, npus-look, status,
              stop-training, stop-ray, unlock, lock]
  workdir:
    description: The folder of the control script in the container (the deploy's C(verl_workdir)). Required with O(step) (but
      for the lock's steps on the host).
    type: str
  args:
    description: The step's arguments.
    type: list
    elements: str
    default: []
  lock_env:
    description:
      - The argument prefix that gives the step this run's lock identity (C(env VERL_DEPLOY_LOCK_TOKEN=...)), for the steps
        on the head that change the cluster or renew the lock.
    type: list
    elements: str
    default: []
"""
