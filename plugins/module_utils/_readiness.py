# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Private to the verl.deploy collection: may change without notice.
#
# playbooks/check.yml's verdict: from what each node's check left (it answered, and why it is not ready, if it is
# not) to one verdict for people (a short report) and for machines (set_stats verl_check, <verl_output_dir>/check.json).
from __future__ import annotations

READY, REFUSED, UNANSWERED = "ready", "not ready", "did not answer"
# At most this many names of ready nodes in the report's line (a 128-node cluster still gets one line).
_NAMES_SHOWN = 8


def _names(names):
    shown = ", ".join(names[:_NAMES_SHOWN])
    return shown + (" and %d more" % (len(names) - _NAMES_SHOWN) if len(names) > _NAMES_SHOWN else "")


def check_verdict(nodes, head=""):
    """The verdict of a check over `nodes`: a list of {name, answered (bool), problem (str, "" when ready)}.

    Returns {ready (bool), counts {ready, not ready, did not answer}, nodes: {name: {role, state, problem}} (the head
    first, then in inventory order), lines: the report (a headline, one line for the ready nodes, one per other node)}.
    A node that did not answer is never ready: nothing is known about it.
    """
    ordered = sorted(nodes, key=lambda node: node["name"] != head)
    verdict = {}
    for node in ordered:
        problem = " ".join(str(node.get("problem") or "").split())
        # The refusals name their node first; the report names it once.
        problem = problem[len(node["name"]) + 2:] if problem.startswith(node["name"] + ": ") else problem
        state = UNANSWERED if not node.get("answered") else REFUSED if problem else READY
        if state == UNANSWERED and not problem:
            problem = "the node did not answer (unreachable, or its SSH login failed), so nothing on it was checked"
        verdict[node["name"]] = {"role": "head" if node["name"] == head else "worker", "state": state, "problem": problem}
    counts = {state: sum(1 for node in verdict.values() if node["state"] == state) for state in (READY, REFUSED, UNANSWERED)}
    ready = bool(verdict) and counts[READY] == len(verdict)
    label = {name: "%s (head)" % name if info["role"] == "head" else name for name, info in verdict.items()}
    lines = ["%s: %d of %d node(s) ready to deploy to%s; nothing was changed on any node." % (
        "READY" if ready else "NOT READY", counts[READY], len(verdict),
        "" if ready or not verdict else " (%s)" % ", ".join("%d %s" % (counts[state], state) for state in (REFUSED, UNANSWERED)
                                                            if counts[state]))]
    ready_names = [label[name] for name, info in verdict.items() if info["state"] == READY]
    if ready_names:
        lines.append("ready: %s" % _names(ready_names))
    lines += ["%s: %s: %s" % (label[name], info["state"].upper(), info["problem"]) for name, info in verdict.items()
              if info["state"] != READY]
    return {"ready": ready, "counts": counts, "nodes": verdict, "lines": lines}


def check_nodes(names, hostvars):
    """What each node's check left in its host variables (check.yml): answered (__verl_check_answered) and the
    refusal kept by the rescue (__verl_check_problem)."""
    found = []
    for name in names:
        node = hostvars[name]
        try:
            answered, problem = node.get("__verl_check_answered"), node.get("__verl_check_problem")
        except Exception:  # pylint: disable=broad-exception-caught  # an undefined hostvar reads as absent
            answered, problem = None, None
        found.append({"name": name, "answered": bool(answered) or bool(problem), "problem": problem or ""})
    return found
