# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: answer
short_description: Read the KEY=VALUE lines a step of the collection's scripts ends with
version_added: 0.3.0
description:
  - The control script's steps (C(verl_control.sh ray), C(stop-training), C(stop-ray), C(unlock) ...) say what they did in
    sentences for people, then answer the playbooks in C(KEY=VALUE) lines (C(changed=true), C(state=stopped),
    C(members=IP=NPUS,...), C(complete=true)). This returns those lines as a dict; a sentence is never read.
  - The last value of a key wins; lines without C(=) are ignored; a value is a string (C(changed) is V(true) or V(false)).
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  _input:
    description: A step's standard output.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Stop Ray in the container
  community.docker.docker_container_exec:
    container: verl
    argv: [bash, /verl/verl_control.sh, stop-ray]
  register: stopped
  changed_when: (stopped.stdout | verl.deploy.answer).changed | default('false') == 'true'
"""

RETURN = r"""
_value:
  description: The step's C(KEY=VALUE) lines as a dict of strings.
  type: dict
"""


def answer(text):
    from ansible_collections.verl.deploy.plugins.module_utils._training_state import parse_lines
    return parse_lines(text)


class FilterModule:
    def filters(self):
        return {"answer": answer}
