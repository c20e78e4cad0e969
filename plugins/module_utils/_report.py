# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The console report's decisions (the verl.deploy.report callback, the wait_progress action), as pure functions.

A stage is keyed on the play's name, never on a task's wording: the playbooks number their plays (`4. The training
container on every node`, `7-8. Report the joins, then train`); plays of one number form one stage; an unnumbered play
is the stage after the previous one.
"""
from __future__ import annotations

import re
import unicodedata

_NUMBERED = re.compile(r"^\s*(\d+)(?:\s*-\s*(\d+))?\.\s+(.*)$")
# A stage's label: the play's name up to its first aside (` - ...`, ` (...)`, `; ...`), at most this long.
_LABEL_MAX = 60
# Hosts named in one line at most; more are counted.
NAMED_HOSTS = 3
# What must not act on a terminal: controls (C0 and C1, but the tab), format characters (the bidi overrides and isolates,
# zero-width ones), line and paragraph separators, private-use and lone surrogates.
_ACTS = frozenset(("Cc", "Cf", "Zl", "Zp", "Co", "Cs"))


def _inert(char):
    if char == "\t" or unicodedata.category(char) not in _ACTS:
        return char
    return "\\x%02x" % ord(char) if ord(char) < 0x100 else "U+%04X" % ord(char)


def terminal_lines(text):
    """The one gate between what a node reports (log lines, file names, a start's output, process names, error texts) and a
    console line, the stats or a report: the text's lines (split on a new line only), each with what would act on a
    terminal shown escaped (ESC as \\x1b, a carriage return as \\x0d, U+2028, U+202E ...). The raw text stays in the log
    file."""
    return ["".join(map(_inert, line)) for line in str(text).split("\n")]


def terminal_text(text):
    """terminal_lines, joined again by new lines."""
    return "\n".join(terminal_lines(text))


def label_of(title):
    """The short label of a play's title: up to its first aside, cut at a word."""
    text = re.split(r" - | \(|; ", title.strip(), maxsplit=1)[0].strip().rstrip(".,:")
    if len(text) > _LABEL_MAX:
        text = text[:_LABEL_MAX].rsplit(" ", 1)[0].rstrip(",;:") + " ..."
    return text


def stage_plan(play_names):
    """The stage of every play, in order, and the highest stage number.

    Returns ([(key, label), ...] one per play, total). A range `a-b.` continues stage a when a is the stage before it
    (the play finishes a and does b: it is shown as b); otherwise it is shown as `a-b`.
    """
    plan, current, total = [], None, 0
    for name in play_names:
        match = _NUMBERED.match(name or "")
        if match:
            first, last, title = int(match.group(1)), match.group(2), match.group(3)
            if last is None:
                key, top = str(first), first
            elif current is not None and str(first) == current:
                key, top = last, int(last)
            else:
                key, top = "%d-%s" % (first, last), int(last)
        else:
            title = name or "play"
            top = (total + 1) if plan else 0
            key = str(top)
        plan.append((key, label_of(title)))
        current = key
        total = max(total, top)
    return plan, total


def host_list(names, named=NAMED_HOSTS):
    """`node1, node2` or `node1, node2, node3 and 45 more`."""
    names = sorted(names)
    if len(names) <= named:
        return ", ".join(names)
    return "%s and %d more" % (", ".join(names[:named]), len(names) - named)


def duration(seconds):
    seconds = int(round(seconds))
    if seconds < 60:
        return "%d s" % seconds
    if seconds < 3600:
        return "%d min %02d s" % divmod(seconds, 60)
    hours, rest = divmod(seconds, 3600)
    return "%d h %02d min" % (hours, rest // 60)


def stage_line(key, total, label, states, seconds, controller=()):
    """One stage's line: `[4/8] The training container on every node: changed on 3 (40 s)`.

    states: {host: 'ok' | 'changed' | 'skipped' | 'failed' | 'unreachable'}, each host's worst outcome in the stage;
    controller: the hosts that are the controller itself (named when they fail, never counted as nodes).
    """
    by_state = {}
    for host, state in states.items():
        by_state.setdefault(state, []).append(host)
    parts = []
    for state, word in (("failed", "FAILED on"), ("unreachable", "UNREACHABLE:")):
        if by_state.get(state):
            parts.append("%s %s" % (word, host_list(by_state[state])))
    for state in ("changed", "ok"):
        nodes = [host for host in by_state.get(state, []) if host not in controller]
        if nodes:
            parts.append("%s on %d" % (state, len(nodes)))
    if not parts:
        ran = any(states[host] in ("ok", "changed") for host in controller if host in states)
        parts.append("done on the controller" if ran else "skipped" if by_state else "no host")
    return "[%s/%d] %s: %s (%s)" % (key, total, label, ", ".join(parts), duration(seconds))


def _normal(text, host):
    return text.replace(host, "<node>") if host else text


def grouped(messages):
    """Messages of one task, each once: [(hosts, text)] in first-seen order.

    messages: [(host, text)]. Texts that differ only by the host's own name are one message, shown with the first
    host's wording and the count of the others.
    """
    groups, order = {}, []
    for host, text in messages:
        key = _normal(text, host)
        if key not in groups:
            groups[key] = (text, [])
            order.append(key)
        groups[key][1].append(host)
    return [(groups[key][1], groups[key][0]) for key in order]


def message_text(msg):
    """A debug message as one block: a list's lines joined, other values as they print."""
    if isinstance(msg, (list, tuple)):
        return "\n".join(str(line) for line in msg)
    return str(msg).rstrip("\n")


def problem_text(result):
    """What a failed or unreachable task said, in one line or block: its msg, else the last line of its stderr."""
    msg = result.get("msg")
    if not msg and isinstance(result.get("results"), list):
        msg = next((item.get("msg") for item in result["results"] if isinstance(item, dict) and item.get("failed") and item.get("msg")), "")
    if not msg:
        stderr = [line for line in str(result.get("stderr", "")).splitlines() if line.strip()]
        msg = stderr[-1] if stderr else "failed (no message)"
    return message_text(msg)


def progress_summary(what, states, total, named=2):
    """One line for a poll of many nodes: `pull x: 1/3 done; waiting for node2 (1/2 layers, 300/900 s), node3 (...)`.

    states: {host: {'progress': str, 'elapsed': float, 'timeout': int, 'done': bool}} of the hosts polled so far; total:
    the hosts the step runs on.
    """
    done = sorted(host for host, state in states.items() if state.get("done"))
    waiting = sorted((host for host, state in states.items() if not state.get("done")),
                     key=lambda host: (-states[host].get("elapsed", 0), host))
    shown = ["%s (%s, %d/%d s)" % (host, states[host].get("progress") or "no answer yet", states[host].get("elapsed", 0),
                                   states[host].get("timeout", 0)) for host in waiting[:named]]
    line = "%s: %d/%d done" % (what, len(done), total)
    if shown:
        line += "; waiting for " + ", ".join(shown)
    more = total - len(done) - len(shown)
    if more > 0:
        line += "%s%d more" % (" and " if shown else "; waiting for ", more)
    return line
