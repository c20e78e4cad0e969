#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
module: controller_files
short_description: Write files on the controller, only those that differ
version_added: 0.2.0
description:
  - Writes each file of O(files) into the folder O(dest) on the controller (made when missing), with the mode O(mode), and
    only those whose text or mode differ from what is there; each is written to a temporary file beside it and renamed over
    the old one.
  - For files the controller keeps for itself, such as the launch scripts C(render.yml) renders. It runs in the task's own
    worker, with no module process, temporary folder or connection.
  - An action plugin.
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  dest:
    description: The folder on the controller.
    type: path
    required: true
  files:
    description: The files, each its name (no folder) and its text.
    type: dict
    required: true
  mode:
    description: The mode of every file written, in octal.
    type: str
    default: "0644"
attributes:
  action:
    description: Indicates this has a corresponding action plugin so some parts of the options can be executed on the controller.
    support: full
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
    details: Reports in RV(written) what would be written, and writes nothing.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
"""

EXAMPLES = r"""
- name: Render the launch scripts on the controller
  verl.deploy.controller_files:
    dest: "{{ verl_output_dir }}/{{ inventory_hostname }}"
    files:
      start_verl.sh: "{{ lookup('ansible.builtin.template', 'start_verl.sh.j2') }}"
    mode: "0755"
"""

RETURN = r"""
dest:
  description: The folder, as an absolute path.
  returned: unless the arguments were refused
  type: str
written:
  description: The names of the files written (in check mode, those that would be).
  returned: unless the arguments were refused
  type: list
  elements: str
"""
