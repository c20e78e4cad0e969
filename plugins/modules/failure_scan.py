#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) verl-deploy maintainers

from __future__ import annotations

DOCUMENTATION = r"""
---
module: failure_scan
short_description: Read a node's error lines of a failed training - Ray's session logs, CANN's plog, the kernel's OOM kills, the NPUs' health
version_added: 0.1.0
description:
  - One bounded, read-only look at a node for the failure diagnosis of C(status.yml). In the training container (C(docker exec
    CONTAINER python3 -) with a fixed reader script, as Ray's temp folder is inside the container) it reads Ray's session logs
    (C(<ray_temp_dir>/session_latest/logs/*.err), C(*.out), the raylet's among them) and CANN's plog (E(ASCEND_PROCESS_LOG_PATH)
    when set in the container, else C(~/ascend/log)); on the host, the kernel's log (C(dmesg)) where the user may read it, and
    the Health column of C(npu-smi info) (a chip whose health is not OK, or an npu-smi that fails with a dcmi error, is a line
    of the failure table; a healthy node adds none).
  - Of each file only its last O(max_kb) KB are read, and only the lines of the failure table
    (C(plugins/module_utils/_failures.py)) are returned, each with the stamped line before it (for its time), at most
    O(max_lines) per file, the newest O(max_files) files of each folder.
  - The container's clock (C(now), its UTC offset) and the host's boot time come back with the lines, for the controller to
    order the nodes' lines on its own clock.
  - What cannot be read (no container, no folder, C(dmesg) refused by C(kernel.dmesg_restrict), no npu-smi) is in RV(missing), never
    a failure.
options:
  container:
    description: The training container.
    type: str
    required: true
  docker:
    description: The docker client; searched on E(PATH) when not given.
    type: path
  ray_temp_dir:
    description: Ray's temp folder in the container (C(ray start --temp-dir)).
    type: str
    default: /tmp/ray
  plog_dirs:
    description: CANN's log folders in the container; empty - E(ASCEND_PROCESS_LOG_PATH) of the container, else C(~/ascend/log).
    type: list
    elements: str
    default: []
  kernel:
    description: Read the host's kernel log with C(dmesg).
    type: bool
    default: true
  npu_smi_path:
    description: The host's npu-smi, whose C(npu-smi info) gives each chip's health; searched on E(PATH) and in C(/usr/local/sbin)
      when not given. The empty string reads no health.
    type: str
  max_kb:
    description: At most this many KB (the end) of each file are read.
    type: int
    default: 256
  max_lines:
    description: At most this many matching lines (the last) are returned per file.
    type: int
    default: 200
  max_files:
    description: At most this many files (the newest) are read per folder (with O(max_kb), a bound of about 25 MB read per folder, a few seconds).
    type: int
    default: 100
  since:
    description:
      - Epoch seconds (the container's clock) of the training's start; files not written since are left out (an earlier
        run's, as Ray keeps one session folder for every job of the cluster).
    type: float
    default: 0
  timeout:
    description: Seconds the container's read may take.
    type: int
    default: 20
extends_documentation_fragment:
  - verl.deploy.attributes.read_only
notes:
  - Nothing is changed on the host or in the container.
author:
  - verl-deploy maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Read this node's error lines
  verl.deploy.failure_scan:
    container: verl
  register: __day2_failure_scan
"""

RETURN = r"""
clock:
  description: The container's clock when read (C(now), epoch seconds), its C(utc_offset) (seconds) and the host's C(boot) time.
  returned: always (C(boot) only when the container did not answer)
  type: dict
  sample: {now: 1733550000.25, utc_offset: 28800, boot: 1733000000.0}
files:
  description: Per file read, its C(path), C(mtime), C(size) and C(lines) - [index, text] pairs of the matching lines and the stamped lines before them.
  returned: always
  type: list
  elements: dict
missing:
  description: What could not be read and why.
  returned: always
  type: list
  elements: dict
"""
from ansible.module_utils.basic import AnsibleModule

from ansible_collections.verl.deploy.plugins.module_utils._control_step import argument_problem
from ansible_collections.verl.deploy.plugins.module_utils._failure_scan import DEFAULTS, scan


def main():
    module = AnsibleModule(
        argument_spec=dict(
            container=dict(type="str", required=True),
            docker=dict(type="path"),
            ray_temp_dir=dict(type="str", default=DEFAULTS["ray_temp_dir"]),
            plog_dirs=dict(type="list", elements="str", default=[]),
            kernel=dict(type="bool", default=True),
            npu_smi_path=dict(type="str"),
            max_kb=dict(type="int", default=DEFAULTS["max_kb"]),
            max_lines=dict(type="int", default=DEFAULTS["max_lines"]),
            max_files=dict(type="int", default=DEFAULTS["max_files"]),
            since=dict(type="float", default=0),
            timeout=dict(type="int", default=DEFAULTS["timeout"]),
        ),
        supports_check_mode=True,
    )
    params = module.params
    problem = argument_problem({"container": params["container"]})
    if problem:
        module.fail_json(msg=problem)
    module.exit_json(changed=False, **scan(module, params, params["docker"] or module.get_bin_path("docker")))


if __name__ == "__main__":
    main()
