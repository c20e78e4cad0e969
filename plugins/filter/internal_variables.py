# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: internal_variables
short_description: Name the inventory and extra variables that are named like the collection's internals
version_added: 0.1.0
description:
  - Reads the variable names (never the values) of the given hosts from O(_input), the C(hostvars), before any task has set
    a variable, so every name there came from the inventory or the extra vars.
  - A name such as C(_verl_launch), C(_training_module) or C(_precheck_node) would replace what the playbooks compute, since
    extra vars beat C(set_fact). Each is returned as one message that names it, the hosts it was seen on and the fix.
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  _input:
    description: The C(hostvars) of the play.
    type: dict
    required: true
  hosts:
    description: The hosts whose variables are read (the inventory's and C(localhost)).
    type: list
    elements: str
    required: true
"""

EXAMPLES = r"""
- name: Refuse variables named like the collection's internals
  ansible.builtin.fail:
    msg: "{{ _internal | join('\n') }}"
  when: _internal | length > 0
  vars:
    _internal: "{{ hostvars | verl.deploy.internal_variables(hosts=['localhost'] + groups['all']) }}"
"""

RETURN = r"""
_value:
  description: One message per such variable, in name order; an empty list when there is none.
  type: list
  elements: str
"""


def _names(view):
    """The host's variable names as given, without templating anything (Ansible's view keeps them in _vars)."""
    raw = getattr(view, "_vars", None)
    return list(raw if isinstance(raw, dict) else view)


def internal_variables(hostvars, hosts):
    from ansible_collections.verl.deploy.plugins.module_utils import _inputs as inputs
    found = {}
    for host in dict.fromkeys(hosts or ()):
        if host not in hostvars:
            continue
        for name in _names(hostvars[host]):
            if isinstance(name, str) and inputs.INTERNAL_NAME.match(name):
                found.setdefault(name, []).append(str(host))
    return [inputs.internal_name_problem(name, names) for name, names in sorted(found.items())]


class FilterModule:
    def filters(self):
        return {"internal_variables": internal_variables}
