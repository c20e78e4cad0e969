# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: control_values
short_description: The values file of the control script (verl_control.env) for a host's launch configuration
version_added: 0.1.0
description:
  - C(verl_control.sh) is a plain file, the same on every node and in every deployment; it sources C(verl_control.env) beside it.
  - This filter writes that file's text, shell assignments with each value quoted, from the launch configuration of
    M(verl.deploy.launch_config) (the host and its Ray role, the NPUs per node, the node count, the Ray ports, the training's
    process pattern, its log folder and prefix, the checkpoints folder) and the deploy lock's folder.
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  _input:
    description: The launch configuration of the host.
    type: dict
    required: true
  lock_folder:
    description: The folder of the deploy's lock when it is not the deployment's own state folder (a comparison's deploys).
    type: str
    default: ""
  ray_names:
    description: Each node's inventory name and the IP address its Ray node has, for keep-alive to name a node that left Ray.
    type: dict
    default: {}
"""

EXAMPLES = r"""
- name: The values the control script of this host reads
  ansible.builtin.copy:
    content: "{{ _verl_launch | verl.deploy.control_values(_verl_lock.folder | default('')) }}"
    dest: /tmp/verl_control.env
    mode: "0644"
"""

RETURN = r"""
_value:
  description: The text of C(verl_control.env), one C(NAME=value) line per value after a comment line.
  type: str
"""


def control_values(config, lock_folder='', ray_names=None):
    from ansible_collections.verl.deploy.plugins.module_utils._training_state import control_values as _control_values
    return _control_values(config, lock_folder, ray_names)


class FilterModule:
    def filters(self):
        return {"control_values": control_values}
