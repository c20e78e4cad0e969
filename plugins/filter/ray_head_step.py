# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: ray_head_step
short_description: What the head's Ray step did, and whether the deploy goes on
version_added: 0.1.0
description:
  - Reads the result of C(verl_control.sh ray) on the Ray head (its C(KEY=VALUE) answer, exit code and stderr) once, as the
    deploy decides on it (in plugins/module_utils/_run_time.py), as C(changed), C(members), C(complete), C(lock), C(kept), C(say),
    C(said) and C(problem) (why the deploy stops here, or empty).
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  _input:
    description: The registered result of the head's C(verl_control.sh ray) step.
    type: dict
    required: true
  host:
    description: The head's inventory name, for the messages.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Keep what the head's step did
  ansible.builtin.set_fact:
    _ray_head: "{{ __ray_start | verl.deploy.ray_head_step(inventory_hostname) }}"
"""

RETURN = r"""
_value:
  description: C(changed), C(kept), C(complete), C(say) (booleans), C(members), C(lock), C(problem) (strings), C(said) (the step's sentences).
  type: dict
"""


def ray_head_step(result, host):
    from ansible_collections.verl.deploy.plugins.module_utils._run_time import ray_head_step as _ray_head_step
    return _ray_head_step(result, host)


class FilterModule:
    def filters(self):
        return {"ray_head_step": ray_head_step}
