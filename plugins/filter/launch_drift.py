# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: launch_drift
short_description: What differs between the launch record a training started from and the one this run renders
version_added: 0.1.0
description:
  - "One readable line per difference, such as C(mask 0000000 -> 1000000: Remove Padding on) or C(train_tp 4 -> 2); an empty list
    when nothing differs."
  - A training without a launch record (started by hand, or by an older version) counts as different.
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  _input:
    description: The launch record the running training started from (C(launch) of the training M(verl.deploy.node_step) or M(verl.deploy.node_facts) read).
    type: raw
    required: true
  now:
    description: The launch record this run renders (see the P(verl.deploy.launch_record#filter) filter).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Refuse to leave a training running under other settings
  ansible.builtin.assert:
    that: running.launch | verl.deploy.launch_drift(new_record) | length == 0
"""

RETURN = r"""
_value:
  description: The differences, the feature mask first.
  type: list
  elements: str
"""


def launch_drift(started, now):
    from ansible_collections.verl.deploy.plugins.module_utils._training_state import launch_drift as _launch_drift
    return _launch_drift(started, now)


class FilterModule:
    def filters(self):
        return {"launch_drift": launch_drift}
