# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: swanlab_proof
short_description: Judge the SwanLab stage's proof that the server accepts a run
version_added: 0.4.0
description:
  - Takes the answer of C(roles/swanlab/files/swanlab_check_run.py) on the Ray head, as M(verl.deploy.node_step) returns it read
    (its C(proof), JSON), and returns the verdict. A run the server refused is a problem naming the SDK's own error and the fix
    (a workspace the key may not write to, a server release that does not speak the SDK's protocol, a session refused after the login, no answer); a run created
    but whose end the server did not take is a warning; a run created and finished, or one proven before with the same
    settings, is a note.
  - On a host that makes no proof (SwanLab off, a mode without login, not the head) the verdict says why, with no problem.
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  _input:
    description: The proof's answer (M(verl.deploy.node_step)'s RV(verl.deploy.node_step#module:answer)).
    type: dict
    required: true
  launch:
    description: The launch configuration of the host (C(_verl_launch)).
    type: dict
    required: true
  rc:
    description: The proof's exit code, named when it gave no answer.
    type: int
    default: 0
  stderr:
    description: The proof's standard error, quoted when it gave no answer.
    type: str
    default: ''
  said:
    description: The proof's sentences (node_step's RV(verl.deploy.node_step#module:said)), quoted when it gave no answer and no
      standard error.
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
- name: Stop if the SwanLab server refused the run
  ansible.builtin.assert:
    that: (proof.answer | verl.deploy.swanlab_proof(_verl_launch, proof.rc, proof.stderr, proof.said)).problems | length == 0
"""

RETURN = r"""
_value:
  description: The verdict.
  type: dict
  contains:
    problems:
      description: The refusal in one sentence, with the SDK's error and the fix.
      type: list
      elements: str
    warnings:
      description: A run created whose end the server did not take.
      type: list
      elements: str
    notes:
      description: The run created and finished (its name and page), or the earlier proof an unchanged re-run relies on.
      type: list
      elements: str
    summary:
      description: All of it in a few words, for the deploy's last message.
      type: str
    created:
      description: Whether a run was created on the server now (the proof's change).
      type: bool
"""


def swanlab_proof(answer, launch, rc=0, stderr="", said=None):
    from ansible_collections.verl.deploy.plugins.module_utils._swanlab_proof import verdict
    return verdict(answer, launch if isinstance(launch, dict) else {}, rc, stderr, said or ())


class FilterModule:
    def filters(self):
        return {"swanlab_proof": swanlab_proof}
