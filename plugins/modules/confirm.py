#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
module: confirm
short_description: Ask a yes/no question on the controller's terminal, with a time limit
version_added: 0.1.0
description:
  - Shows O(prompt) on the terminal of C(ansible-playbook) and waits at most O(timeout) seconds for an answer ended with Enter.
  - Unlike M(ansible.builtin.pause), it never waits without a bound, and it tells whether anybody could answer at all
    (RV(interactive)), so that a run without a terminal (CI, C(</dev/null)) can stop at once instead of waiting.
  - "Under AWX / Automation Controller the job has a pseudo-terminal that nobody types into: decide from the extra vars
    C(awx_job_id) / C(tower_job_id) before asking (the role C(verl.deploy.verl) does)."
  - Runs on the controller only (an action plugin); the hosts are not contacted.
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  prompt:
    description: The question. The time limit is appended to it.
    type: str
    required: true
  timeout:
    description: Seconds to wait for the answer; at least 1. When they pass, RV(timed_out) is V(true) and RV(confirmed) V(false).
    type: int
    default: 300
  answers:
    description: The answers (case-insensitive, surrounding blanks ignored) that confirm.
    type: list
    elements: str
    default: ["yes", "y"]
  probe:
    description: Only find out whether a person could answer (RV(interactive)); show nothing and wait for nothing.
    type: bool
    default: false
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
    details: It only asks; it changes nothing.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
  action:
    description: Indicates this has a corresponding action plugin so some parts of the options can be executed on the controller.
    support: full
seealso:
  - module: ansible.builtin.pause
notes:
  - Ctrl+C ends the question unconfirmed (RV(interrupted)).
"""

EXAMPLES = r"""
- name: Ask, for at most five minutes
  verl.deploy.confirm:
    prompt: Deploy to 3 node(s)? Type yes to go on
    timeout: 300
  register: answer

- name: Stop unless confirmed
  ansible.builtin.assert:
    that: answer.confirmed
    fail_msg: Not confirmed ({{ 'no answer within 300 s' if answer.timed_out else 'no terminal' if not answer.interactive else 'answer was not yes' }}).
"""

RETURN = r"""
interactive:
  description: Whether the controller's stdin is a terminal in the foreground (V(false) in CI or with C(</dev/null)).
  returned: always
  type: bool
  sample: true
confirmed:
  description: Whether one of O(answers) was typed and ended with Enter within O(timeout).
  returned: always
  type: bool
  sample: false
timed_out:
  description: Whether O(timeout) passed without an answer.
  returned: always
  type: bool
  sample: false
interrupted:
  description: Whether the question was ended with Ctrl+C.
  returned: always
  type: bool
  sample: false
waited:
  description: Seconds spent waiting.
  returned: always
  type: float
  sample: 4.2
"""
