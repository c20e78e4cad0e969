# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: command_check
short_description: Judge the image's own verl check of the training command (Hydra's --cfg job)
version_added: 0.3.0
description:
  - Takes the answer of the training role's install call on the head, which runs the rendered command once with Hydra's
    C(--cfg job) inside the container (its one document's C(command_check_rc) and C(command_check_tail), the output's last lines),
    and returns whether it was checked, the problem (Hydra's own lines, the profile and the fix; the deploy stops before
    Ray) or a note.
  - The decision is the collection's C(_versions.command_check) module utils function.
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  _input:
    description: The install call's answer (M(verl.deploy.node_step)'s RV(verl.deploy.node_step#module:answer)).
    type: dict
    required: true
  profile:
    description: The verl profile run_training.sh is rendered for (C(_verl_launch.verl_profile.profile)).
    type: str
    required: true
  module:
    description: The entry module the command starts (C(_verl_launch.training.module)).
    type: str
    required: true
  workdir:
    description: C(verl_workdir), the image's verl checkout.
    type: str
    default: ''
  extra_overrides:
    description: C(verl_extra_overrides); a refused key that is one of them is the user's line to fix.
    type: list
    elements: str
    default: []
  version:
    description: The image's verl version, as the container stage read it.
    type: str
    required: false
  seconds:
    description: The bound the check ran with.
    type: int
    default: 60
"""

EXAMPLES = r"""
- name: Stop when the image's verl refuses the command
  ansible.builtin.assert:
    that: (copied.answer | verl.deploy.command_check(_verl_launch.verl_profile.profile, _verl_launch.training.module)).problem is none
"""

RETURN = r"""
_value:
  description: The verdict.
  type: dict
  contains:
    checked:
      description: Whether the answer holds a check (only the head checks, and only when run_training.sh was installed).
      type: bool
    problem:
      description: The refusal, quoting Hydra's own lines, with the profile and the fix; none when the command composed.
      type: str
    note:
      description: What the check found when it is no refusal (composed, or did not finish in time).
      type: str
"""


def command_check(answer, profile, module, workdir="", extra_overrides=None, version=None, seconds=60):
    from ansible_collections.verl.deploy.plugins.module_utils._versions import command_check as _command_check
    return _command_check(answer, profile, module, workdir, extra_overrides or (), version or None, seconds)


class FilterModule:
    def filters(self):
        return {"command_check": command_check}
