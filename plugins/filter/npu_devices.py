# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: npu_devices
short_description: The chip family and the trainable NPU device ids of an npu_info result
version_added: 0.1.0
description:
  - Takes the result of M(verl.deploy.npu_info) and returns the host's chip family (V(910b) for Atlas A2, V(a3) for Atlas A3,
    empty otherwise) and the device ids that C(verl_npu_devices) and E(ASCEND_RT_VISIBLE_DEVICES) name.
  - On Atlas A3 every chip is a device (two per card, 16 per node), numbered by its Phy-ID (its C(/dev/davinciN));
    elsewhere every card is a device, numbered by its NPU id.
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  _input:
    description: The registered result of M(verl.deploy.npu_info) (a failed one gives no devices).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Devices of this host
  ansible.builtin.debug:
    msg: "{{ npu | verl.deploy.npu_devices }}"
"""

RETURN = r"""
_value:
  description: The chip and its devices.
  type: dict
  contains:
    family:
      description: V(910b), V(a3), or empty.
      type: str
    name:
      description: The chip name(s) npu-smi printed, joined with C(/).
      type: str
    device_ids:
      description: Sorted device ids.
      type: list
      elements: int
    unhealthy:
      description: Sorted device ids whose card is not healthy.
      type: list
      elements: int
    busy:
      description: Device id to the PIDs that run on it.
      type: dict
"""


def npu_devices(info):
    from ansible_collections.verl.deploy.plugins.module_utils._chips import device_view
    return device_view(info if isinstance(info, dict) else {})


class FilterModule:
    def filters(self):
        return {"npu_devices": npu_devices}
