# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Private to the verl.deploy collection: may change without notice.
#
# playbooks/check.yml's verdict: from what each node's check left (it answered, and why it is not ready, if it is
# not) to one verdict for people (a short report) and for machines (set_stats verl_check, <verl_output_dir>/check.json).
from __future__ import annotations

import re
import textwrap

READY, REFUSED, UNANSWERED = "ready", "not ready", "did not answer"
# At most this many names of ready nodes in the report's line (a 128-node cluster still gets one line); of the nodes
# that share a problem, this many before the line counts the others.
_NAMES_SHOWN, _NAMES_PER_PROBLEM = 8, 3
# A problem at the terminal: at most two lines this wide; its whole text is in the log file and check.json.
WIDTH = 120
# A long aside (a search path, the list of verl's preprocessing scripts) is left to the whole text.
_ASIDE = re.compile(r" \([^()]{40,}\)")
# Longer words (paths) show their start and end; a sentence ends at a full stop before a capital.
_LONG_WORD = 32
_SENTENCE = re.compile(r"(?<=\.) (?=[A-Z])")
_UNANSWERED_WHY = "the node did not answer (unreachable, or its SSH login failed), so nothing on it was checked"


def _names(names, shown=_NAMES_SHOWN):
    listed = ", ".join(names[:shown])
    return listed + (" and %d more" % (len(names) - shown) if len(names) > shown else "")


def _cut(text, width):
    if len(text) <= width:
        return text
    return text[:width - 4].rsplit(" ", 1)[0].rstrip(",;:") + " ..."


def _elide(word):
    """A long word (a path, name=path) as its name, and its start and end."""
    name, equals, value = word.rpartition("=") if "=" in word[:40] else ("", "", word)
    if len(value) <= _LONG_WORD:
        return word
    return name + equals + value[:_LONG_WORD // 2 - 2] + "..." + value[-_LONG_WORD // 2 + 1:]


def brief(problem, prefix="", width=WIDTH):
    """A problem as the terminal shows it: at most two lines of `width`, the first starting with `prefix`.

    The whole text when it fits, with long asides left out and long words (paths) elided in the middle; else the first
    sentence of what is wrong on the first line and the first of its fix on the second, each cut at a word. The whole
    text stays in the log file (and check.json).
    """
    text = " ".join(_elide(word) for word in _ASIDE.sub("", str(problem)).split())
    lines = textwrap.wrap(prefix + text, width, subsequent_indent="  ", break_on_hyphens=False)
    if len(lines) <= 2:
        return lines
    what, found, fix = text.partition(" Fix: ")
    if not found:
        return [lines[0], _cut("  " + " ".join(lines[1:]).strip(), width)]
    return [_cut(prefix + _SENTENCE.split(what, 1)[0], width), _cut("  Fix: " + _SENTENCE.split(fix, 1)[0], width)]


def _problems(node):
    """A node's problems as a list, each without the node's name before it (the refusals name their node first)."""
    found = node.get("problem") or []
    found = [found] if isinstance(found, str) else list(found)
    prefix = node["name"] + ": "
    problems = []
    for problem in found:
        problem = " ".join(str(problem).split())
        problem = problem[len(prefix):] if problem.startswith(prefix) else problem
        if problem and problem not in problems:
            problems.append(problem)
    return problems


def check_verdict(nodes, head=""):
    """The verdict of a check over `nodes`: a list of {name, answered (bool), problem (a str or a list of them; empty when
    ready)}.

    Returns {ready (bool), counts {ready, not ready, did not answer}, nodes: {name: {role, state, problem, problems}} (the
    head first, then in inventory order; the whole text of each problem), lines: the report: a headline, one line for the
    ready nodes, then each problem once, with the nodes it was found on, in at most two lines of WIDTH (brief())}.
    A node that did not answer is never ready: nothing is known about it.
    """
    ordered = sorted(nodes, key=lambda node: node["name"] != head)
    verdict = {}
    for node in ordered:
        problems = _problems(node)
        state = UNANSWERED if not node.get("answered") else REFUSED if problems else READY
        if state == UNANSWERED and not problems:
            problems = [_UNANSWERED_WHY]
        verdict[node["name"]] = {"role": "head" if node["name"] == head else "worker", "state": state,
                                 "problem": " ".join(problems), "problems": problems}
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
    # Each problem once: the nodes where it reads the same (but for the node's own name) share its lines.
    shared = {}
    for name, info in verdict.items():
        for problem in info["problems"]:
            key = (info["state"], problem.replace(name, "<node>"))
            shared.setdefault(key, (problem, []))[1].append(label[name])
    for (state, _key), (problem, names) in shared.items():
        lines += brief(problem, "%s: %s: " % (_names(names, _NAMES_PER_PROBLEM), state.upper()))
    return {"ready": ready, "counts": counts, "nodes": verdict, "lines": lines}


def check_nodes(names, hostvars):
    """What each node's check left in its host variables (check.yml): answered (__verl_check_answered), the
    refusal kept by the rescue (__verl_check_problem), or Ansible's message when it did not answer
    (__verl_check_unanswered: then the reason and the fix, did_not_answer)."""
    found = []
    for name in names:
        node = hostvars[name]
        try:
            answered, problem = node.get("__verl_check_answered"), node.get("__verl_check_problem")
            unanswered = node.get("__verl_check_unanswered")
        except Exception:  # pylint: disable=broad-exception-caught  # an undefined hostvar reads as absent
            answered, problem, unanswered = None, None, None
        if unanswered is not None:
            said = did_not_answer(name, unanswered, node)
            found.append({"name": name, "answered": False, "problem": "%s. Fix: %s." % (said["reason"], said["fix"])})
            continue
        found.append({"name": name, "answered": bool(answered) or bool(problem), "problem": problem or ""})
    return found


# Why a node did not answer, from Ansible's unreachable message (OpenSSH's own words after "Failed to connect to the host
# via ssh: "), and what to check: (words in the message, the reason, the fix). The first match counts.
_WHY = (
    (("permission denied", "too many authentication failures", "no more authentication methods"),
     "the SSH login as {user} was refused ({said})",
     "give the user that may log in (ansible_user, now {user}) and its key (ansible_ssh_private_key_file, now {key}): "
     "`{ssh}` must log in without a password"),
    (("host key verification failed", "remote host identification has changed"),
     "the node's SSH host key is not in the controller's known_hosts, or it changed ({said})",
     "check that {host} is that node, then add its key: `ssh-keyscan -p {port} {host} >> ~/.ssh/known_hosts`"),
    (("could not resolve hostname", "name or service not known", "temporary failure in name resolution"),
     "the name {host} does not resolve ({said})",
     "give the node's address as ansible_host (now {host}): `{ssh}` must log in"),
    (("connection refused",),
     "nothing listens for SSH on {host} port {port} ({said})",
     "check ansible_port (now {port}) and that sshd runs on the node: `{ssh}` must log in"),
    (("timed out", "no route to host", "network is unreachable", "connection reset", "connection closed"),
     "{host} port {port} cannot be reached ({said}): the node is down, or a firewall or a wrong address is in the way",
     "check that the node is up and its address (ansible_host, now {host}) and port (ansible_port, now {port}): "
     "`{ssh}` must log in"),
)


def did_not_answer(name, message, variables, head=""):
    """A node that did not answer (its task was unreachable): {name, role, reason, fix, line} from Ansible's message and
    the node's connection variables (its hostvars: ansible_host, ansible_user, ansible_port, ansible_ssh_private_key_file,
    ansible_connection), so that the fix names the key, the user, the port or the address to check."""
    def var(key, default):
        try:
            value = variables.get(key)
        except Exception:  # pylint: disable=broad-exception-caught  # an undefined hostvar reads as absent
            value = None
        return default if value in (None, "") else str(value)

    said = str(message or "unreachable").replace("Task failed: ", "").replace("Failed to connect to the host via ssh: ", "")
    said = " ".join(said.split())[:200].rstrip(".")
    key, user = var("ansible_ssh_private_key_file", var("ansible_private_key_file", "")), var("ansible_user", var("ansible_ssh_user", ""))
    found = {"host": var("ansible_host", name), "port": var("ansible_port", "22"), "said": said,
             "user": user or "your login name on the controller", "key": key or "not set: the ssh agent's or ~/.ssh/id_*"}
    found["ssh"] = "ssh -p %s %s%s%s true" % (found["port"], "-i %s " % key if key else "", user + "@" if user else "", found["host"])
    over_ssh = var("ansible_connection", "ssh") in ("ssh", "smart", "paramiko", "paramiko_ssh", "ansible.builtin.ssh")
    matched = [(why.format(**found), how.format(**found)) for words, why, how in _WHY
               if over_ssh and any(word in said.lower() for word in words)]
    reason, fix = matched[0] if matched else (
        "it did not answer over its connection %s (%s)" % (var("ansible_connection", "ssh"), said),
        "check the node's connection variables (ansible_host, ansible_user, ansible_port, the key): `ansible %s -m ping` "
        "must answer pong" % name)
    role = "head" if name == head else "worker"
    return {"name": name, "role": role, "reason": reason, "fix": fix,
            "line": "%s (%s): DID NOT ANSWER: %s. Fix: %s." % (name, role, reason, fix)}
