# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: image_stack
short_description: Judge a verl image's software from what the container stage's check printed
version_added: 0.2.0
description:
  - Takes the output of the container stage's check (its answer's C(stack), JSON - each module the training imports with its
    version or its import error, CUDA-only packages found, whether the entry point's file exists, the model's architecture
    in the image's vLLM registry) and returns the problems (the deploy stops before Ray) and notes (shown).
  - The verl releases this collection renders for, with the companion versions known to work, are one table (the
    collection's C(_versions) module utils), where each algorithm's entry point lives another (C(_algorithms)); a verl
    outside the first is a problem.
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  _input:
    description:
      - The check's standard output, or its registered result (C(rc), C(stdout), C(stderr)); a result whose exit code is not 0
        is judged by that code (RV(_value.probe_failed)), before any C(stack).
    type: raw
    required: true
  algorithm:
    description: The algorithm the deploy renders (C(verl_algorithm), a key of the collection's algorithm table), whose entry point must be in the image.
    type: str
    required: true
  rendered:
    description:
      - The verl profile run_training.sh is rendered for (C(_verl_launch.verl_profile), with C(profile) and C(why)).
      - The image's own profile, read from its verl version and marker files, must be this one.
    type: dict
    required: false
  allow_newer:
    description: C(verl_allow_untested_version). A verl newer than the release table is placed by its marker files instead of refused.
    type: bool
    default: false
  image:
    description: The container's image reference; a first NPU operation that fails in an image whose tag names another chip is told so.
    type: str
    default: ''
  chip:
    description: The host's chip (C(family), C(name)) as the pre-check read it.
    type: dict
    default: {}
  launch:
    description:
      - The launch configuration (C(_verl_launch)), for the fix of a check that exited non-zero (its container name, chip, devices).
      - Read only when the input is the check's registered result.
    type: dict
    default: {}
"""

EXAMPLES = r"""
- name: Stop if the image does not fit
  ansible.builtin.assert:
    that: (check.stdout | verl.deploy.image_stack(_verl_launch.algorithm)).problems | length == 0
"""

RETURN = r"""
_value:
  description: The verdict.
  type: dict
  contains:
    problems:
      description: One sentence per problem, each naming the package, the version or error, and the fix.
      type: list
      elements: str
    notes:
      description: The versions found, and a warning when they are not a combination known to work.
      type: list
      elements: str
    verl:
      description: The image's verl version, or none when the check printed none (verl does not import, or no stack).
      type: str
    launch_files:
      description:
        - The check's look at the launch files in C(verl_workdir) (its answer's C(look)), C(MODE SHA256 NAME) per file; empty
          when it looked at none, or the check failed.
      type: list
      elements: str
    ray:
      description:
        - Ray's version and the training Python's (C(version), C(python)) in the container, which every node's must equal
          the head's (C(verl.deploy.ray_skew)); none when the check did not say.
      type: dict
    raylet:
      description:
        - Whether Ray's raylet ran in the container when the check looked (its answer's C(raylet)); none when it did not say.
          The Ray stage leaves a worker alone without a call of its own when it ran and the head lists the node.
      type: bool
    sampler:
      description:
        - Whether the NPU sampler ran in the container when the check looked (its answer's C(sampler)); none when it did not
          say. The launch-scripts stage starts one beside a raylet that runs without it.
      type: bool
    probe_failed:
      description:
        - When the input is the check's registered result and it exited non-zero, what it said last, its exit code and the fix
          (the container does not see its NPUs, or its Python cannot use them); empty otherwise. C(problems) is then empty.
      type: str
"""

import json


def image_stack(output, algorithm, rendered=None, allow_newer=False, image="", chip=None, launch=None):
    from ansible_collections.verl.deploy.plugins.module_utils._control_step import read_answer
    from ansible_collections.verl.deploy.plugins.module_utils._versions import check_stack, probe_failure
    verdict = {"problems": [], "notes": [], "verl": None, "launch_files": [], "probe_failed": "", "raylet": None, "sampler": None, "ray": None}
    if isinstance(output, dict):  # the check's registered result
        if output.get("rc") not in (0, None) or output.get("failed"):
            return dict(verdict, probe_failed=probe_failure(output.get("rc"), output.get("stdout"), output.get("stderr") or output.get("msg"),
                                                            launch or {}))
        output = output.get("stdout")
    found = read_answer(output)["answer"]
    verdict["launch_files"] = [entry for entry in found.get("look", "").split(",") if entry]
    verdict["raylet"] = found["raylet"] == "running" if "raylet" in found else None
    verdict["sampler"] = found["sampler"] == "running" if "sampler" in found else None
    if "stack" not in found:
        return dict(verdict, problems=["the container check answered no stack (an older or edited npu_stack_check.sh?). Fix: run "
                                       "the deploy with this collection's own files."])
    try:
        stack = json.loads(found["stack"])
    except ValueError as exc:
        return dict(verdict, problems=["the container check's stack is not JSON (%s)." % exc])
    problems, notes = check_stack(stack, algorithm, rendered, bool(allow_newer), image, chip)
    verl = ((stack.get("modules") or {}).get("verl") or {}).get("version")
    return dict(verdict, problems=problems, notes=notes, verl=verl, ray=stack.get("ray"))


class FilterModule:
    def filters(self):
        return {"image_stack": image_stack}
