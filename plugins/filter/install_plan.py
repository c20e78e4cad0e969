# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: install_plan
short_description: Which launch files the install step writes, and what it gives install_files.sh
version_added: 0.1.0
description:
  - Compares the launch files as this run renders them (their text, base64, and their modes) with what the container holds
    (C(MODE SHA256 NAME) per file, as C(look.sh) prints it), as plugins/module_utils/_run_time.py decides it.
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  _input:
    description: The rendered files, name to text in base64.
    type: dict
    required: true
  names:
    description: The files, in the order they are written (the control script's values before the script).
    type: list
    elements: str
    required: true
  modes:
    description: Each file's mode, name to octal text.
    type: dict
    required: true
  installed:
    description: What the container holds, C(MODE SHA256 NAME) per file.
    type: list
    elements: str
    required: true
"""

EXAMPLES = r"""
- name: Decide which files differ from what the container holds
  ansible.builtin.set_fact:
    __training_install: "{{ __training_files | verl.deploy.install_plan(_training_files, _training_modes, _training_installed_lines) }}"
"""

RETURN = r"""
_value:
  description: C(wanted) (C(MODE SHA256 NAME) per file as rendered), C(differ) (the files to write, in order) and C(stdin)
    (C(MODE NAME BASE64) per file to write).
  type: dict
"""


def install_plan(files_b64, names, modes, installed):
    from ansible_collections.verl.deploy.plugins.module_utils._run_time import install_plan as _install_plan
    return _install_plan(files_b64, names, modes, installed)


class FilterModule:
    def filters(self):
        return {"install_plan": install_plan}
