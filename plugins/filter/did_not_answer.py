# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: did_not_answer
short_description: Why a node did not answer and what to check (the key, the user, the port, the address)
version_added: 0.4.0
description:
  - "From Ansible's message for a node whose task was unreachable (OpenSSH's own words) and the node's connection
    variables, the reason and the fix in one line (the node, head or worker, C(DID NOT ANSWER:), the reason, C(Fix:) and the
    fix), with the C(ssh) command that must log in."
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  _input:
    description: The node's inventory name.
    type: str
    required: true
  variables:
    description: The node's C(hostvars) (C(ansible_host), C(ansible_user), C(ansible_port), C(ansible_ssh_private_key_file), C(ansible_connection)).
    type: raw
    required: true
  message:
    description: The unreachable result's C(msg).
    type: str
    default: ""
  head:
    description: The Ray head's inventory name.
    type: str
    default: ""
"""

EXAMPLES = r"""
- name: Say why this node did not answer
  ansible.builtin.debug:
    msg: "{{ (inventory_hostname | verl.deploy.did_not_answer(hostvars[inventory_hostname], __ping.msg, groups | verl.deploy.ray_head)).line }}"
  when: __ping is unreachable
"""

RETURN = r"""
_value:
  description: C(name), C(role), C(reason), C(fix) and C(line).
  type: dict
"""


def _did_not_answer(name, variables, message="", head=""):
    from ansible_collections.verl.deploy.plugins.module_utils._readiness import did_not_answer
    return did_not_answer(name, message, variables, head)


class FilterModule:
    def filters(self):
        return {"did_not_answer": _did_not_answer}
