# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: log_collection
short_description: What playbooks/logs.yml got from each node
version_added: 0.1.0
description:
  - For each node, from what its tasks registered (C(__day2_logs_ping), C(__day2_logs_bundle), C(_day2_logs_error)),
    whether its logs were collected, or why not (it did not answer its ping, or its collection failed).
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  _input:
    description: The node names (C(ansible_play_hosts_all)).
    type: list
    elements: str
    required: true
  hostvars:
    description: C(hostvars).
    type: raw
    required: true
  max_mb:
    description: The bound per file (C(verl_logs_max_mb)), for the summary line.
    type: int
    required: true
"""

EXAMPLES = r"""
- name: Say what was collected
  ansible.builtin.debug:
    msg: "{{ (ansible_play_hosts_all | verl.deploy.log_collection(hostvars, 20)).values() | map(attribute='summary') | list }}"
"""

RETURN = r"""
_value:
  description:
    - Per node, C(state) (V(collected), V(unreachable) or V(failed)) and C(summary) (one line); when collected C(container) (its
      state), C(files), C(truncated) (the files cut to their end) and C(missing) (what was not found, and why); else C(reason).
  type: dict
"""


def _get(node, key, default=None):
    try:
        value = node.get(key, default)
    except Exception:  # pylint: disable=broad-exception-caught  # an undefined hostvar reads as absent
        return default
    return default if value is None else value


def node_collection(name, node, max_mb):
    """What logs.yml got from one node (its hostvars)."""
    from ansible_collections.verl.deploy.plugins.module_utils._readiness import did_not_answer
    ping = _get(node, "__day2_logs_ping", {}) or {}
    bundle = _get(node, "__day2_logs_bundle", {}) or {}
    error = _get(node, "_day2_logs_error")
    if ping.get("ping") != "pong":
        said = did_not_answer(name, ping.get("msg", ""), node)
        reason = "the node did not answer: %s. Fix: %s" % (said["reason"], said["fix"])
        return {"state": "unreachable", "reason": reason, "summary": "%s: NOT COLLECTED: %s" % (name, reason)}
    if error or "files" not in bundle:
        reason = "the collection failed: %s" % (error or "nothing was packed")
        return {"state": "failed", "reason": reason, "summary": "%s: NOT COLLECTED: %s" % (name, reason)}
    files = [entry["name"] for entry in bundle["files"]]
    truncated = [entry["name"] for entry in bundle["files"] if entry.get("truncated")]
    missing = list(bundle.get("missing") or [])
    not_found = sorted({entry["name"] for entry in missing})
    summary = "%s: %d file(s), %d cut to their last %d MB; container %s; not found: %s" % (
        name, len(files), len(truncated), max_mb, bundle.get("container_state", "?"), ", ".join(not_found) or "nothing")
    return {"state": "collected", "container": bundle.get("container_state"), "files": files, "truncated": truncated,
            "missing": missing, "summary": summary}


def log_collection(names, hostvars, max_mb):
    return {name: node_collection(name, hostvars[name], max_mb) for name in names}


class FilterModule:
    def filters(self):
        return {"log_collection": log_collection}
