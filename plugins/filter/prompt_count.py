# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: prompt_count
short_description: What the container stage gives its count of the prompts longer than max_prompt_length
version_added: 0.2.0
description:
  - From the launch configuration of a host, the inputs of the count that the container stage's check makes on the Ray head
    (C(roles/container/files/prompt_lengths.py)); on any other host no files, so no count.
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  _input:
    description: The launch configuration of the host (C(_verl_launch)).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: The count's files
  ansible.builtin.debug:
    msg: "{{ (_verl_launch | verl.deploy.prompt_count).files }}"
"""

RETURN = r"""
_value:
  description: The count's inputs, each a string for the check's environment.
  type: dict
  contains:
    files:
      description: The training and validation files as a JSON list on the head, else empty.
      type: str
    max_prompt_length:
      description: C(verl_max_prompt_length).
      type: str
    prompt_key:
      description: The prompt column (C(data.prompt_key) in C(verl_extra_overrides), else verl's C(prompt)).
      type: str
    seconds:
      description: The time the count may take before it reports how far it got.
      type: str
"""


def prompt_count(launch):
    from ansible_collections.verl.deploy.plugins.module_utils._prompt_lengths import count_inputs
    return count_inputs(launch if isinstance(launch, dict) else {})


class FilterModule:
    def filters(self):
        return {"prompt_count": prompt_count}
