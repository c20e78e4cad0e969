# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The control script's answers as the tests write them: its sentences and KEY=VALUE lines, compact in a table, made
into the one JSON document verl_control.sh's emit prints (plugins/module_utils/_control_step.py: read_answer)."""
from __future__ import annotations

from ansible_collections.verl.deploy.plugins.module_utils._control_step import document, parse_lines, sentences


def answered(text):
    """The document of a step whose sentences and answer are written as lines ("ray: started\\nchanged=true")."""
    return document(sentences(text), parse_lines(text))


def training(state, pid="42", quiet="3", **more):
    """The facts `verl_control.sh training-state` answers for a training in that state (its state is decided on the host:
    _training_state.classify), as KEY=VALUE lines: quiet is the seconds since it started (no step logged yet)."""
    facts = {"pid": pid if state in ("running", "orphaned") else "", "started_at": "" if state == "not-started" else "1700000000",
             "now": str(1700000000 + int(quiet)), "exit_code": {"finished": "0", "crashed": "1"}.get(state, ""),
             "stopped_at": "1700000001" if state == "stopped" else "", "ray_session": "session_b",
             "ray_session_started": "session_a" if state == "orphaned" else "session_b"}
    facts.update(more)
    return "".join("%s=%s\n" % item for item in facts.items())
