# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: launch_record
short_description: The launch record of a launch configuration, to compare with the one a running training started from
version_added: 0.1.0
description:
  - Keeps the settings of a launch configuration (from M(verl.deploy.launch_config)) that shape the training, the feature mask
    instead of its decoded table, and the SHA-256 of the rendered C(run_training.sh).
  - Leaves out what a change in alone never needs a restart for (timeouts, where scripts are rendered, per-host facts), and the
    image and container settings (an existing container is reused as it is).
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  _input:
    description: The launch configuration of the Ray head.
    type: dict
    required: true
  run_training:
    description: The rendered C(run_training.sh) of the head.
    type: str
    default: ""
"""

EXAMPLES = r"""
- name: The record the deploy installs as launch.json
  ansible.builtin.copy:
    content: "{{ _verl_launch | verl.deploy.launch_record(lookup('ansible.builtin.template', 'run_training.sh.j2')) | to_json }}"
    dest: /tmp/launch.json
    mode: "0644"
"""

RETURN = r"""
_value:
  description: C(settings) (a dict, with C(mask)) and C(run_training_sha256).
  type: dict
"""


def launch_record(config, run_training=''):
    from ansible_collections.verl.deploy.plugins.module_utils._training_state import launch_record as _launch_record
    return _launch_record(config, run_training)


class FilterModule:
    def filters(self):
        return {"launch_record": launch_record}
