#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
module: wait_progress
short_description: Wait, bounded, for a probe to say done, and print its progress on every poll
version_added: 0.2.0
description:
  - Runs the read-only probe O(argv) on the host (or, with O(container), inside that container) every O(interval) seconds.
  - "After every poll it prints a line C([host] WHAT: PROGRESS, ELAPSED/TIMEOUT s) in the job output as it happens,
    where PROGRESS is the last line the probe printed (for example C(3/4 nodes, 24/32 NPU))."
  - The probe's exit code decides; V(0) is done; O(pending_rc) is not done yet; any other code fails at once with what
    the probe printed. When O(timeout) passes first, the task fails naming O(what) and the last progress.
  - An action plugin; each poll is one round trip to the host.
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  what:
    description: What is waited for, in the progress lines and the failure message.
    type: str
    required: true
  argv:
    description:
      - The probe, as an argument list (no shell). It must only read. One of O(argv) and O(step) (a step that only looks,
        V(ray-progress), V(verify-look) or V(npus-look), run as M(verl.deploy.node_step) runs it) is required.
    type: list
    elements: str
  container:
    description: Run the probe in this Docker container on the host (C(docker exec), as M(verl.deploy.node_step) runs a step).
    type: str
  chdir:
    description: The probe's working directory.
    type: str
  timeout:
    description: Seconds to wait at most (at least 1).
    type: int
    required: true
  interval:
    description: Seconds between polls (at least 1).
    type: int
    default: 5
  pending_rc:
    description: The probe's exit code that means "not done yet".
    type: int
    default: 3
extends_documentation_fragment:
  - verl.deploy.attributes.read_only
  - verl.deploy.control_step
attributes:
  action:
    description: Indicates this has a corresponding action plugin so some parts of the options can be executed on the controller.
    support: full
"""

EXAMPLES = r"""
- name: Wait until Ray reports every node's NPUs (bounded by verl_ray_wait_timeout)
  verl.deploy.wait_progress:
    what: Ray
    container: verl
    workdir: /verl
    step: ray-progress
    args: ["4", "8"]
    timeout: 600
"""

RETURN = r"""
progress:
  description: The last progress line of the probe.
  returned: always
  type: str
  sample: 4/4 nodes, 32/32 NPU
rc:
  description: The probe's last exit code.
  returned: always
  type: int
stdout:
  description: The probe's last standard output.
  returned: always
  type: str
stderr:
  description: The probe's last standard error.
  returned: always
  type: str
polls:
  description: How many times the probe ran.
  returned: always
  type: int
waited:
  description: Seconds waited.
  returned: always
  type: float
timed_out:
  description: Whether O(timeout) passed before the probe said done.
  returned: always
  type: bool
"""
