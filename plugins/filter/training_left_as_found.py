# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: training_left_as_found
short_description: Whether the training is as the settings check read it, on a cluster this run left as it was
version_added: 0.1.0
description:
  - True when the settings check read a training this run leaves alone (running from these settings, or finished), the
    head's Ray was left alone, this deploy waited for no other deploy's lock, and no worker's Ray was started in this run.
    Then the settings check's read of the training still holds, and the reach check has nothing to probe.
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  _input:
    description: Whether this run leaves the training as the settings check read it (running from these settings, or finished; C(_training_left_alone)).
    type: bool
    required: true
  head_kept:
    description: The head's Ray step's C(kept) (its verdict, M(verl.deploy.node_step)).
    type: bool
    required: true
  workers_started:
    description: The workers whose Ray was started in this run.
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
- name: Whether to read the training again
  ansible.builtin.set_fact:
    __training_left_as_found: "{{ _training_left_alone | verl.deploy.training_left_as_found(true, []) }}"
"""

RETURN = r"""
_value:
  description: A boolean.
  type: bool
"""


def training_left_as_found(left_alone, head_kept, workers_started=()):
    from ansible_collections.verl.deploy.plugins.module_utils._run_time import training_left_as_found as _training_left_as_found
    return _training_left_as_found(left_alone, head_kept, workers_started)


class FilterModule:
    def filters(self):
        return {"training_left_as_found": training_left_as_found}
