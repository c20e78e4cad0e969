#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) verl-deploy maintainers

from __future__ import annotations

DOCUMENTATION = r"""
---
module: npu_info
short_description: Gather Huawei Ascend NPU inventory, health and processes from C(npu-smi info)
version_added: 0.1.0
description:
  - Runs C(npu-smi info) on the target and turns its table into structured data.
  - Understands the 910B family, Atlas A3 (two chips per card, with Phy-ID), first-generation 910, 310 and 310P
    (Device id, no HBM column), the wide npu-smi 26.x layout with the container PID column, and the Ascend 950 layout.
  - The result is returned at the top level and as the fact C(verl_npu).
  - Optionally also reads C(npu-smi info -t board -i <id>) for every NPU found.
  - This module never changes anything on the target.
options:
  npu_smi_path:
    description:
      - Path of the C(npu-smi) executable.
      - When not set, C(npu-smi) is searched on E(PATH) (and the usual sbin directories), then at
        C(/usr/local/sbin/npu-smi) and C(/usr/local/bin/npu-smi).
    type: path
  board:
    description:
      - Also run C(npu-smi info -t board -i <id>) for each NPU found and return the parsed output as RV(boards).
      - A failing or unparseable board query only adds a warning.
    type: bool
    default: false
extends_documentation_fragment:
  - verl.deploy.attributes.read_only
notes:
  - C(npu-smi) is run as an argument list, not through a shell. It only reads, so the module also runs in check mode.
  - Output errors such as C(dcmi module initialize failed. ret is -8005) or C(... the device is used. ret is -8020)
    make the module fail with the code and a hint; inside a container they usually mean the NPU is held by another
    container or process, or the Ascend devices and driver (C(/dev/davinci*), C(/dev/davinci_manager), C(/dev/devmm_svm),
    C(/dev/hisi_hdc), C(/usr/local/Ascend/driver)) are not mounted. The failure result then also holds C(dcmi_code).
  - On the Ascend 950 layout there is no chip column, so each card has one chip with chip_id V(0), chip_id of processes
    is V(null), and aicore_pct holds the C(NPU Util(%)) value.
  - npu_smi_version is V(null) when the table has no version line or shows a documentation placeholder such as
    C(xxx.xxx.xxx).
requirements:
  - The Ascend driver and C(npu-smi) on the target (on the host, or mounted into the container).
author:
  - verl-deploy maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Read the NPU table
  verl.deploy.npu_info:
  register: npu

- name: Refuse to train on a busy or unhealthy host
  ansible.builtin.assert:
    that:
      - npu.healthy
      - npu.busy_npu_ids | length == 0
    fail_msg: "NPUs {{ npu.busy_npu_ids }} are in use, or a card is not healthy"

- name: Use an npu-smi outside PATH and also read the board info of every card
  verl.deploy.npu_info:
    npu_smi_path: /usr/local/Ascend/driver/tools/npu-smi
    board: true

- name: The same data is available as a fact
  ansible.builtin.debug:
    msg: "{{ ansible_facts.verl_npu.npu_ids }}"
"""

RETURN = r"""
npu_smi_version:
  description: Version printed in the table header; V(null) when absent or a placeholder.
  returned: success
  type: str
  sample: 24.1.rc2
npus:
  description: One entry per NPU card, sorted by NPU id.
  returned: success
  type: list
  elements: dict
  contains:
    npu_id:
      description: NPU (card) id as printed.
      returned: success
      type: int
      sample: 0
    name:
      description: Chip name, for example C(910B3), C(Ascend910) (A3), C(310P3), C(Ascend950DT).
      returned: success
      type: str
      sample: 910B3
    health:
      description: V(OK) only when every row of the card says OK; otherwise the first value that is not OK.
      returned: success
      type: str
      sample: OK
    power_w:
      description: Power draw in W of the first chip row; V(null) when printed as C(NA) or C(-).
      returned: success
      type: float
      sample: 96.7
    temp_c:
      description: Temperature in degrees C of the first chip row; V(null) when not numeric.
      returned: success
      type: int
      sample: 40
    chips:
      description: Chip rows of the card, sorted by chip id.
      returned: success
      type: list
      elements: dict
      contains:
        chip_id:
          description: Chip id within the card (V(0) on the 950 layout, which has no chip column).
          returned: success
          type: int
          sample: 0
        phy_id:
          description: Phy-ID (the /dev/davinciN number) on Atlas A3; V(null) elsewhere.
          returned: success
          type: int
          sample: 3
        device_id:
          description: Device (logical) id on 310 and 310P; V(null) elsewhere.
          returned: success
          type: int
          sample: 1
        bus_id:
          description: PCIe Bus-Id as printed (C(NA) on 950, possibly masked such as C(0000:xx:00.0)).
          returned: success
          type: str
          sample: "0000:C1:00.0"
        aicore_pct:
          description: AICore usage in percent (C(NPU Util(%)) on 950).
          returned: success
          type: int
          sample: 0
        memory_used_mb:
          description: Used MB of the Memory-Usage column.
          returned: success
          type: int
          sample: 0
        memory_total_mb:
          description: Total MB of the Memory-Usage column.
          returned: success
          type: int
          sample: 0
        hbm_used_mb:
          description: Used MB of the HBM-Usage column; V(null) on cards without one (310, 310P).
          returned: success
          type: int
          sample: 56363
        hbm_total_mb:
          description: Total MB of the HBM-Usage column; V(null) on cards without one (310, 310P).
          returned: success
          type: int
          sample: 65536
processes:
  description: Process rows in printed order (C(No running processes found) lines are not processes).
  returned: success
  type: list
  elements: dict
  contains:
    npu_id:
      description: NPU id the process uses.
      returned: success
      type: int
      sample: 5
    chip_id:
      description: Chip id, V(null) on the 950 layout that has no chip column.
      returned: success
      type: int
      sample: 0
    pid:
      description: Process id as seen by npu-smi.
      returned: success
      type: int
      sample: 2290156
    name:
      description: Process name, possibly truncated by npu-smi; empty when npu-smi prints none.
      returned: success
      type: str
      sample: VLLMEngineCore
    memory_mb:
      description: Device memory used by the process in MB.
      returned: success
      type: int
      sample: 56630
    seen:
      description: Whether this host shows the pid (npu-smi prints host pids; V(false) when it runs in a container, or the process ended).
      returned: success
      type: bool
      sample: true
    comm:
      description: The process's name in C(/proc/<pid>/comm) (npu-smi often prints none for processes in containers).
      returned: success
      type: str
      sample: ray::WorkerDict
    container_id:
      description: The innermost container id of the process's cgroup; V(null) for a process of the host itself.
      returned: success
      type: str
      sample: 3f0c9d1e2b4a5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d
npu_ids:
  description: Sorted NPU ids.
  returned: success
  type: list
  elements: int
  sample: [0, 1, 2, 3, 4, 5, 6, 7]
chip_count:
  description: Total number of chip rows.
  returned: success
  type: int
  sample: 8
healthy:
  description: V(true) when at least one NPU was found and every NPU health is V(OK).
  returned: success
  type: bool
  sample: true
busy_npu_ids:
  description: Sorted unique ids of the NPUs that have at least one process.
  returned: success
  type: list
  elements: int
  sample: [0, 1]
boards:
  description:
    - Parsed C(npu-smi info -t board -i <id>) output per NPU, keys in snake_case (for example C(npu_id),
      C(product_name), C(software_version), C(firmware_version), C(board_id), C(pcie_bus_info), C(pci_device_id),
      C(chip_count)); only the keys npu-smi printed.
    - Plain decimal values are integers; hex ids, versions and the serial number stay strings.
    - NPUs whose board query failed are left out (with a warning).
  returned: when O(board=true)
  type: list
  elements: dict
  sample:
    - npu_id: 0
      product_name: IT21HMDC_Bin5
      software_version: 25.5.1
      firmware_version: 7.8.0.6.201
      board_id: "0x60"
      pcie_bus_info: "0000:C1:00.0"
      pci_device_id: "0xD802"
      chip_count: 1
npu_smi_path:
  description: The npu-smi executable that was run (for example to mount the same one into a container).
  returned: success
  type: str
  sample: /usr/local/sbin/npu-smi
ansible_facts:
  description: Facts set by this module.
  returned: success
  type: dict
  contains:
    verl_npu:
      description: The same data as the top-level keys npu_smi_version to busy_npu_ids (without RV(boards)).
      returned: success
      type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.verl.deploy.plugins.module_utils._npu_smi import read_npu


def main():
    module = AnsibleModule(
        argument_spec=dict(
            npu_smi_path=dict(type='path'),
            board=dict(type='bool', default=False),
        ),
        supports_check_mode=True,
    )
    # Reading is harmless, so check mode runs npu-smi too; npu-smi prints host pids: what each process is here (a
    # container's, or the host's).
    facts = read_npu(module, module.params['npu_smi_path'], 'the npu_smi_path option', module.params['board'])
    if facts.pop('failed'):
        module.fail_json(**facts)
    extra = {key: facts.pop(key) for key in ('npu_smi_path', 'boards') if key in facts}
    module.exit_json(changed=False, ansible_facts=dict(verl_npu=facts), **dict(facts, **extra))


if __name__ == '__main__':
    main()
