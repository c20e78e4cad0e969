# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: settings_problems
short_description: Check the verl settings of every inventory host on the controller, before any host is contacted
version_added: 0.1.0
description:
  - Reads the C(verl_) settings (and C(mask)) of every host from O(_input), the C(hostvars) of the inventory, which the
    controller has without contacting any host (inventory, group_vars, host_vars, extra vars), and checks them as
    M(verl.deploy.launch_config) does, in the controller's own process.
  - Leaves out only what the hosts must tell (the head's detected address); adds the rule across hosts (the same number of
    NPUs on every node).
  - The SwanLab key is never read into a result, only whether it is set. A too large value (a YAML alias bomb) is judged
    without being expanded. A host whose settings cannot be templated yet (they refer to facts) is left to the check after
    the pre-check.
  - Returns the problems, one per distinct message with the hosts it applies to; an empty list when every setting is usable.
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  _input:
    description: The C(hostvars) of the play.
    type: dict
    required: true
  head:
    description: The Ray head (the single host of C(ray_head)).
    type: str
    required: true
  workers:
    description: The other nodes (C(ray_workers)).
    type: list
    elements: str
    default: []
  spec:
    description: The argument spec options of the settings (the C(verl.deploy.verl) role's C(meta/argument_specs.yml)).
    type: dict
    required: true
  rules:
    description: The rules and bounds of the settings (the C(verl.deploy.verl) role's C(meta/setting_rules.yml)).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Check the settings of every node before any node is contacted
  ansible.builtin.fail:
    msg: "{{ _problems | map(attribute='msg') | join('\n') }}"
  when: _problems | length > 0
  vars:
    _problems: >-
      {{ hostvars | verl.deploy.settings_problems(head=groups | verl.deploy.ray_head, workers=groups | verl.deploy.ray_workers,
         spec=spec, rules=rules) }}
"""

RETURN = r"""
_value:
  description: The problems, each with the variable, its value (shortened), the message with the fix and the hosts.
  type: list
  elements: dict
"""

from collections.abc import Mapping


KEY = "verl_swanlab_api_key"


def _raw(view):
    """The host's variables as given (not templated), to judge their size before anything expands them:
    what Ansible's view of one host's variables templates on access, else the view itself."""
    raw = getattr(view, "_vars", None)
    return raw if isinstance(raw, dict) else view


def _value(view, raw, name):
    """(value, usable): a too large value described, not expanded; one that cannot be templated yet (it
    refers to facts, which no host has given) is not usable here."""
    from ansible_collections.verl.deploy.plugins.module_utils import _inputs as inputs
    why = inputs.oversized(raw[name])
    if why:
        return {inputs.OVERSIZED: why}, True
    try:
        value = view[name]
    except Exception:  # pylint: disable=broad-exception-caught
        return None, False
    return value, type(value).__name__ not in ("Marker", "UndefinedMarker", "AnsibleUndefined")


def given(hostvars, host, spec, forms_seen=None):
    """What the settings check gets of one host: the settings by value (never a secret), other verl_* names,
    whether the SwanLab key and which other secrets are set, the mask; deferred when something cannot be known before
    the pre-check. A setting that holds a secret (by value, after templating) is left out and becomes a problem that
    does not show it; the secrets' forms are added to `forms_seen` (to redact every message)."""
    from ansible_collections.verl.deploy.plugins.module_utils import _inputs as inputs
    from ansible_collections.verl.deploy.plugins.module_utils import _secrets as secrets
    view = hostvars[host]
    raw = _raw(view)
    result = {"settings": {}, "unknown": [], "api_key_set": False, "secrets_set": [], "mask": None, "deferred": False, "problems": []}
    by_secret = {}
    for name in secrets.SECRETS:
        if name in raw and not inputs.oversized(raw[name]):
            key, usable = _value(view, raw, name)
            forms = secrets.key_forms(key) if usable and isinstance(key, str) else ()
            if forms:
                by_secret[name] = forms
    for name in list(raw):
        if not isinstance(name, str) or not (name.startswith("verl_") or name == "mask"):
            continue
        if name != "mask" and name not in spec:
            result["unknown"].append(name)
            continue
        value, usable = _value(view, raw, name)
        result["deferred"] = result["deferred"] or not usable
        if name in secrets.SECRETS:
            if usable and len(str(value or "")) > 0:
                if name == KEY:
                    result["api_key_set"] = True
                else:
                    result["secrets_set"].append(name)
            continue
        value = plain(value) if usable and not inputs.oversized(value) else value
        if name == "mask":
            result["mask"] = value
        else:
            result["settings"][name] = value
    if by_secret:
        result["problems"] = secrets.problems_of(dict(result["settings"], mask=result["mask"]), by_secret)
        for problem in result["problems"]:
            result["settings"].pop(problem["variable"], None)
            if problem["variable"] == "mask":
                result["mask"] = None
        if forms_seen is not None:
            forms_seen.update(secrets.all_forms(by_secret))
    return result


def head_addresses(view, head):
    """The head's verl_node_ip and ansible_host as plain short strings (a huge value is described, not
    expanded); both left out when one of them can only be known from the head's facts."""
    found = {"name": head}
    raw = _raw(view)
    for key, name in (("node_ip", "verl_node_ip"), ("ansible_host", "ansible_host")):
        if name not in raw:
            continue
        value, usable = _value(view, raw, name)
        if not usable:
            return {"name": head}
        found[key] = str(value) if isinstance(value, str) and len(value) <= 253 else "(not a short string)"
    return found


def plain(value):
    """Plain dicts, lists and strings: each read of Ansible's lazily templated containers costs a template
    call, and the table is read thousands of times for a large inventory."""
    if isinstance(value, Mapping):
        return {plain(key): plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    if isinstance(value, str):
        return str(value)
    return value


def settings_problems(hostvars, head, spec, rules, workers=()):
    from ansible_collections.verl.deploy.plugins.module_utils._launch_config import check_inventory
    from ansible_collections.verl.deploy.plugins.module_utils import _secrets as secrets
    spec, rules = plain(spec), plain(rules)
    nodes = [head] + [w for w in dict.fromkeys(workers or ()) if w != head]
    forms = set()
    hosts = {host: given(hostvars, host, spec, forms) for host in nodes}
    problems = check_inventory(hosts, spec, rules, head_addresses(hostvars[head], head))
    # No message shows a value that holds the key (a host name or an address could, too).
    return secrets.redact(problems, tuple(sorted(forms, key=len, reverse=True)))


class FilterModule:
    def filters(self):
        return {"settings_problems": settings_problems}
