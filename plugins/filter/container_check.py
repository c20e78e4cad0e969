# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: container_check
short_description: The container stage's check as this run calls it, and whether the pre-check's run of it stands for it
version_added: 0.5.0
description:
  - The check's call (arguments and environment, as text) and the record it keeps of it for the next deploy's pre-check;
    and whether the pre-check, which ran the call the last deploy kept, ran this same call in this same container while
    the training held the NPUs (then the stage's own check would skip its NPU operation and find the same, so it is not
    run again), as plugins/module_utils/_run_time.py decides it.
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  _input:
    description: The check's arguments.
    type: list
    elements: str
    required: true
  env:
    description: The check's environment.
    type: dict
    required: true
  read:
    description: The pre-check's run of the kept call (M(verl.deploy.node_facts)' C(container_check)).
    type: dict
    required: true
  as_read:
    description: The container ran when the pre-check read it, and this stage neither created nor started it.
    type: bool
    required: true
  workdir:
    description: C(verl_workdir), where the check keeps its record.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Decide the check's call, and whether the pre-check's run of it stands for it
  ansible.builtin.set_fact:
    __container_check: "{{ __container_check_argv | verl.deploy.container_check(__container_check_env, _precheck_node.container_check, true, '/verl') }}"
"""

RETURN = r"""
_value:
  description: C(argv), C(env) (the call, as text), C(record) (the call as JSON, the check's standard input),
    C(record_path) (where the check keeps it), C(reuse) (a boolean) and C(result) (the pre-check's run when reused, else
    V(null)).
  type: dict
"""


def container_check(argv, env, read, as_read, workdir):
    from ansible_collections.verl.deploy.plugins.module_utils._run_time import container_check as _container_check
    return _container_check(argv, env, read, as_read, workdir)


class FilterModule:
    def filters(self):
        return {"container_check": container_check}
