# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) verl-deploy maintainers
from __future__ import annotations

DOCUMENTATION = r"""
name: route_to
short_description: The route a host takes to an address, from what verl.deploy.node_facts read there
version_added: 0.2.0
description:
  - Takes the C(network) part of M(verl.deploy.node_facts)'s result and an address.
  - When the module already asked the host (C(ip route get)) for that address, returns that answer.
  - Otherwise computes the route from the host's main routing table and addresses (longest prefix, lowest metric;
    an address of the host itself is reached over C(lo)).
  - C(ok) is V(true) with C(dev) and C(src), V(false) when no route matches, V(null) when the address is a host name
    that the module did not resolve on the host (ask the host then).
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  _input:
    description: The C(network) part of M(verl.deploy.node_facts)'s result.
    type: dict
    required: true
  target:
    description: The address (IPv4, or the host name given to the module as O(verl.deploy.node_facts#module:head_address)).
    type: str
    required: true
"""

EXAMPLES = r"""
- name: The source address this host uses towards the head
  ansible.builtin.debug:
    msg: "{{ (facts.network | verl.deploy.route_to('10.0.0.1')).src }}"
"""

RETURN = r"""
_value:
  description: C(target), C(ok), C(dev), C(src), C(via), C(how) (V(ip route get) or V(table)).
  type: dict
"""


def route_to(network, target):
    from ansible_collections.verl.deploy.plugins.module_utils._node_facts import route_to as _route_to
    measured = (network or {}).get("head_route") or {}
    target = str(target or "").strip()
    if measured.get("ok") is not None and target in (measured.get("target"), measured.get("address")):
        return dict(measured, target=target)
    return _route_to(target, (network or {}).get("routes") or [], (network or {}).get("addresses") or {})


class FilterModule:
    """verl.deploy.route_to"""

    def filters(self):
        return {"route_to": route_to}
