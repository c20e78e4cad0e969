# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: where_to_look
short_description: The deploy's last message on the head, and the same as the run's stats
version_added: 0.1.0
description:
  - Where the training's log, Ray's dashboard, SwanLab and TensorBoard are, the image's verl and the count of the prompts,
    as lines for people and as the run's stats (C(verl_deploy_summary), which AWX keeps with the job), from one place
    (plugins/module_utils/_run_time.py).
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  _input:
    description: The launch configuration (C(_verl_launch)).
    type: dict
    required: true
  head:
    description: The Ray head's inventory name.
    type: str
    required: true
  image_verl:
    description: The image's verl as the container stage's check read it on the head; none when that stage did not run.
    type: str
  prompts:
    description: The container stage's count of the prompts on the head; none when that stage did not run.
    type: str
  swanlab_proof:
    description: The SwanLab stage's verdict on its proof run; empty when there is none.
    type: str
    default: ""
"""

EXAMPLES = r"""
- name: Where to look
  ansible.builtin.debug:
    msg: "{{ (_verl_launch | verl.deploy.where_to_look(inventory_hostname, _container_image_verl | default(none))).lines }}"
"""

RETURN = r"""
_value:
  description: C(lines), the message; C(stats), the same as a dict (head, container, training_log, experiment, ray_dashboard,
    swanlab, tensorboard, image_verl).
  type: dict
"""


def where_to_look(launch, head, image_verl=None, prompts=None, swanlab_proof=""):
    from ansible_collections.verl.deploy.plugins.module_utils._run_time import where_to_look as _where_to_look
    return _where_to_look(launch, head, image_verl, prompts, swanlab_proof)


class FilterModule:
    def filters(self):
        return {"where_to_look": where_to_look}
