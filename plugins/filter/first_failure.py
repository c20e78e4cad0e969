# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: first_failure
short_description: The first failure of a training, from the logs logs.yml collected or from every node's look
version_added: 0.2.0
description:
  - Given a folder, reads the collection's folder on the controller (one folder per node, as C(playbooks/logs.yml) unpacks
    each node's bundle) and names the first failure across the nodes, from the failure table
    (C(plugins/module_utils/_failures.py)), with every matching line in time order.
  - Given each node's look (C(roles/day2/tasks/failure_scan.yml)), names it as C(status.yml) does, for the deploy's verify of
    a training that did not start as expected.
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  _input:
    description:
      - The collection's folder on the controller, or per node its look (C(failure_scan), C(clock_offset); none where none was
        made).
    type: raw
    required: true
  head:
    description: The Ray head's inventory name (its folder holds the training's start time).
    type: str
    required: true
  head_status:
    description: With the looks, the head's V(status) step as P(verl.deploy.node_step#module) returns it (its log's tail, the
      training's start).
    type: dict
    default: {}
  node_ips:
    description: With the looks, each node's address (a worker's line the head's log holds is that worker's).
    type: dict
    default: {}
"""

EXAMPLES = r"""
- name: Write the first failure into the collection
  ansible.builtin.copy:
    content: "{{ '/var/log/verl-logs-20261207T040000Z' | verl.deploy.first_failure('node1') }}"
    dest: /var/log/verl-logs-20261207T040000Z/first-failure.txt
    mode: "0600"

- name: Name the first failure from every node's look (the deploy's verify)
  ansible.builtin.debug:
    msg: "{{ {'node1': node1_look, 'node2': node2_look} | verl.deploy.first_failure('node1', head_status) }}"
"""

RETURN = r"""
_value:
  description:
    - Of a folder, the text of C(first-failure.txt) - at most three lines naming the first failure (node, time, line, cause,
      fix), or that none was found, then every matching line in time order.
    - Of the looks, C(lines) (at most three, none when no line of the table was found) and C(stats) (as C(verl_status.failure),
      with every matching line as C(evidence)).
  type: raw
"""


def first_failure(source, head, head_status=None, node_ips=None):
    if isinstance(source, dict):
        from ansible_collections.verl.deploy.plugins.module_utils._training_state import first_failure_report
        return first_failure_report(source, str(head), dict(head_status or {}), dict(node_ips or {}))
    from ansible_collections.verl.deploy.plugins.module_utils._failures import diagnose_bundle
    return diagnose_bundle(str(source), str(head))


class FilterModule:
    def filters(self):
        return {"first_failure": first_failure}
