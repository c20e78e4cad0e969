# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: said
short_description: The sentences a step of the collection's scripts says to people, without its KEY=VALUE answer
version_added: 0.3.0
description:
  - A step of the control script (C(verl_control.sh ray) ...) says what it did in sentences, then answers the playbooks
    in C(KEY=VALUE) lines (read by the collection's run-time decisions, e.g. P(verl.deploy.step_changed#filter)). This returns
    the sentences, in order, for a task to show; the decision whether to show them is made on the answer's keys, never on
    the sentences.
  - A line is a sentence when it is not a C(KEY=VALUE) line (a name, then C(=)); empty lines are dropped.
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  _input:
    description: A step's standard output.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Say what was done to this node's Ray
  ansible.builtin.debug:
    msg: "{{ started.stdout | verl.deploy.said }}"
  when: started | verl.deploy.step_changed
"""

RETURN = r"""
_value:
  description: The step's sentences, one string per line.
  type: list
  elements: str
"""


def said(text):
    from ansible_collections.verl.deploy.plugins.module_utils._training_state import sentences
    return sentences(text)


class FilterModule:
    def filters(self):
        return {"said": said}
