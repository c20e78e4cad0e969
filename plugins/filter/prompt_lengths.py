# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: prompt_lengths
short_description: Judge the count of the prompts longer than max_prompt_length that the container stage made on the head
version_added: 0.2.0
description:
  - Takes the output of the container stage's check on the Ray head (its answer's C(prompts), JSON - for each data file its rows,
    the prompts longer than C(verl_max_prompt_length) in tokens with the model's chat template, the longest, or why it was not
    counted) and returns the verdict.
  - With verl's default C(data.filter_overlong_prompts=False), any prompt longer than C(verl_max_prompt_length) is a problem,
    since verl 0.7.0 does not cut it and the training stops at the first rollout whose batch holds one. With
    C(data.filter_overlong_prompts=True) in C(verl_extra_overrides) verl drops them (a warning), unless too few rows are left
    for one batch (a problem).
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  _input:
    description: The check's standard output.
    type: str
    required: true
  launch:
    description: The launch configuration of the host (C(_verl_launch)).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Stop if prompts are longer than verl_max_prompt_length
  ansible.builtin.assert:
    that: (check.stdout | verl.deploy.prompt_lengths(_verl_launch)).problems | length == 0
"""

RETURN = r"""
_value:
  description: The verdict.
  type: dict
  contains:
    problems:
      description: One sentence per file whose prompts stop the training, naming the file, the numbers and the fix.
      type: list
      elements: str
    warnings:
      description: Files whose over-long prompts verl drops, or that were not counted (or not completely), and why.
      type: list
      elements: str
    notes:
      description: Files whose prompts all fit, with their number and the longest.
      type: list
      elements: str
    summary:
      description: All of them in one line, for the deploy's last message.
      type: str
"""


def prompt_lengths(output, launch):
    from ansible_collections.verl.deploy.plugins.module_utils._prompt_lengths import verdict
    return verdict(output, launch if isinstance(launch, dict) else {})


class FilterModule:
    def filters(self):
        return {"prompt_lengths": prompt_lengths}
