# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: step_changed
short_description: Whether a step of the control script changed anything (the one definition, for changed_when)
version_added: 0.1.0
description:
  - Reads a registered result of a C(verl_control.sh) step (or of a role script that answers as it does) as
    plugins/module_utils/_run_time.py decides it; what its C(changed=true|false) answer says.
  - A step refused for another deploy's lock (exit code 4), a skipped step and a step that ended well without an answer
    changed nothing; a step that failed or timed out half-way without an answer may have changed something.
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  _input:
    description: The registered result of the step.
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Stop Ray on this node
  community.docker.docker_container_exec:
    container: verl
    argv: [bash, /verl/verl_control.sh, stop-ray]
  register: stopped
  changed_when: stopped | verl.deploy.step_changed
"""

RETURN = r"""
_value:
  description: Whether the step changed anything.
  type: bool
"""


def step_changed(result):
    from ansible_collections.verl.deploy.plugins.module_utils._run_time import step_changed as _step_changed
    return _step_changed(result)


class FilterModule:
    def filters(self):
        return {"step_changed": step_changed}
