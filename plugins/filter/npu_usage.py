# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: npu_usage
short_description: What holds a host's NPUs, in words - the deploy's training, another container, the host
version_added: 0.2.0
description:
  - Takes the result of M(verl.deploy.npu_info) (its processes with their C(container_id)) and the id of the deploy's
    training container, and says which NPUs the training holds (with its pids) and which something else holds (pid, name,
    container). V(none) when no process holds an NPU, V(?) when npu-smi failed.
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  _input:
    description: The registered result of M(verl.deploy.npu_info).
    type: dict
    required: true
  own_container_id:
    description: The full id of the training container (its processes are the training's).
    type: str
    default: ''
"""

EXAMPLES = r"""
- name: NPUs in use
  ansible.builtin.debug:
    msg: "NPUs in use: {{ npu | verl.deploy.npu_usage(container.container.Id) }}"
"""

RETURN = r"""
_value:
  description: For example "0-7 by the training (pids 4101, 4102, ...)", or "3 by pid 77 (python3, on the host, in no container)".
  type: str
"""


def npu_usage(npu, own_container_id=""):
    from ansible_collections.verl.deploy.plugins.module_utils._precheck import npu_usage as _npu_usage
    return _npu_usage(npu if isinstance(npu, dict) else {}, own_container_id or "")


class FilterModule:
    def filters(self):
        return {"npu_usage": npu_usage}
