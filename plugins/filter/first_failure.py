# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: first_failure
short_description: The first failure in the logs logs.yml collected from every node
version_added: 0.2.0
description:
  - Reads the collection's folder on the controller (one folder per node, as C(playbooks/logs.yml) unpacks each node's bundle)
    and names the first failure across the nodes, from the failure table (C(plugins/module_utils/_failures.py)), with every
    matching line in time order.
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  _input:
    description: The collection's folder on the controller.
    type: path
    required: true
  head:
    description: The Ray head's inventory name (its folder holds the training's start time).
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Write the first failure into the collection
  ansible.builtin.copy:
    content: "{{ '/var/log/verl-logs-20261207T040000Z' | verl.deploy.first_failure('node1') }}"
    dest: /var/log/verl-logs-20261207T040000Z/first-failure.txt
    mode: "0600"
"""

RETURN = r"""
_value:
  description: The text of C(first-failure.txt) - at most three lines naming the first failure (node, time, line, cause, fix), or
    that none was found, then every matching line in time order.
  type: str
"""


def first_failure(folder, head):
    from ansible_collections.verl.deploy.plugins.module_utils._failures import diagnose_bundle
    return diagnose_bundle(str(folder), str(head))


class FilterModule:
    def filters(self):
        return {"first_failure": first_failure}
