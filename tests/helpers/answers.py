# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The steps' answers as the tests write them: sentences and KEY=VALUE lines, compact in a table, made into the one JSON
document every step prints (plugins/module_utils/_control_step.py: read_answer). The deploy itself reads no KEY=VALUE."""
from __future__ import annotations

import re

from ansible_collections.verl.deploy.plugins.module_utils._control_step import document, step_result

_KEY = re.compile(r"[a-z][a-z0-9_]*")


def _key_value(line):
    key, sep, value = line.partition("=")
    return (key.strip(), value.strip()) if sep and _KEY.fullmatch(key.strip()) else None


def parse_lines(text):
    """The KEY=VALUE lines of a table's text as a dict."""
    return dict(pair for pair in map(_key_value, (text or "").splitlines()) if pair)


def sentences(text):
    """The other lines: the sentences, in order."""
    return [line for line in (text or "").splitlines() if line.strip() and not _key_value(line)]


def answered(text):
    """The document of a step whose sentences and answer are written as lines ("ray: started\\nchanged=true")."""
    return document(sentences(text), parse_lines(text))


def status_step(stdout, rc=0):
    """The status step that printed stdout, as verl.deploy.node_step returns it: what ran, and its verdict (facts, tails, training)."""
    result = {"rc": rc, "stdout": stdout}
    return dict(result, **step_result("status", result, "h"))


def training(state, pid="42", quiet="3", **more):
    """The facts `verl_control.sh training-state` answers for a training in that state (its state is decided on the host:
    _training_state.classify), as KEY=VALUE lines: quiet is the seconds since it started (no step logged yet)."""
    facts = {"pid": pid if state in ("running", "orphaned") else "", "started_at": "" if state == "not-started" else "1700000000",
             "now": str(1700000000 + int(quiet)), "exit_code": {"finished": "0", "crashed": "1"}.get(state, ""),
             "stopped_at": "1700000001" if state == "stopped" else "", "ray_session": "session_b",
             "ray_session_started": "session_a" if state == "orphaned" else "session_b"}
    if state == "restarting":  # keep-alive's supervisor waits to start it again
        facts.update(supervisor="running", restart_at="1700000060")
    facts.update(more)
    return "".join("%s=%s\n" % item for item in facts.items())
