# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: fresh_start
short_description: Why a deploy must not start the training over from step 0, or an empty string
version_added: 0.1.0
description:
  - With C(verl_resume_mode=auto), a training that reached its first save (or whose start found checkpoints) must find a
    checkpoint in C(verl_ckpts_dir) again; when there is none (its storage not mounted, another file system), the refusal
    names the step reached, the node and the fix (mount it, or C(verl_resume_mode=disable) to start over).
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  _input:
    description:
      - What M(verl.deploy.node_facts) read on the head's host (its RV(verl.deploy.node_facts#module:last_training)), or the
        same as C(KEY=VALUE) lines.
    type: raw
    required: true
  launch:
    description: The head's launch configuration (C(resume_mode), C(save_freq), C(ckpts_dir)).
    type: dict
    required: true
  node:
    description: The head's inventory name.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Refuse a silent fresh start
  ansible.builtin.assert:
    that: facts.last_training | verl.deploy.fresh_start(_verl_launch, inventory_hostname) == ''
"""

RETURN = r"""
_value:
  description: The refusal, or an empty string.
  type: str
"""


def fresh_start(look, launch, node):
    from ansible_collections.verl.deploy.plugins.module_utils._training_state import fresh_start_refusal
    return fresh_start_refusal(look, launch, node)


class FilterModule:
    def filters(self):
        return {"fresh_start": fresh_start}
