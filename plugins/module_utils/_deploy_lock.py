# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Private to the verl.deploy collection: may change without notice.
#
# One deploy at a time per cluster: who this deploy is, for the lock verl_control.sh keeps on the Ray head.
# The token tells this run's steps from another deploy's; the holder text is what a refused deploy reads
# ("the deploy of controller awx-1 pid 4242 (AWX job 17)").
from __future__ import annotations

import json
import os
import socket
import time


def _parent_and_command(pid, proc="/proc"):
    """(parent pid, command line) of a process, or (0, '') when it cannot be read."""
    try:
        with open("%s/%d/stat" % (proc, pid), encoding="utf-8", errors="replace") as handle:
            parent = int(handle.read().rsplit(")", 1)[1].split()[1])
        with open("%s/%d/cmdline" % (proc, pid), "rb") as handle:
            command = handle.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except (OSError, ValueError, IndexError):
        return 0, ""
    return parent, command


def playbook_pid(pid=None, proc="/proc"):
    """The pid of the ansible-playbook process this one runs in (Ansible's forks are its children), else this pid."""
    pid = pid or os.getpid()
    found, current = pid, pid
    for _level in range(16):
        parent, command = _parent_and_command(current, proc)
        if "ansible-playbook" in command:
            found = current
        if parent <= 1:
            break
        current = parent
    return found


# The controller environment variable through which a comparison (playbooks/compare.yml) hands the deploys it runs its
# own lock identity (outer_lock() reads it): they then take and renew the comparison's lock as theirs, and keep it when
# they end or fail, so that the lock is held from the comparison's first mask to its end (docs/features.md).
OUTER_ENV = "VERL_DEPLOY_OUTER_LOCK"
# How long a lock whose holder made no step stays its holder's (verl_control.sh's LOCK_LEASE, for a deploy).
LEASE = 120
KINDS = {"deploy": "the deploy", "compare": "the mask comparison (compare.yml)", "smoke": "the smoke launch (smoke.yml)"}


def deploy_lock(wait, job_id="", host=None, pid=None, started=None, kind="deploy", lease=None, folder="", outer=None, taken_back=None):
    """This run's lock identity: {'token', 'holder', 'folder', 'env', 'host', 'pid'}; env is the argv prefix that gives it to
    verl_control.sh; host and pid are this run's (the comparison keeps them in its state: taken_back_from()).

    kind: "deploy" or "compare" (how the holder is named to a deploy that waits for it). lease: seconds the lock stays
    this run's without a step (None: verl_control.sh's 120 s); folder: the lock's folder on the head, when it must not
    follow verl_log_dir (a comparison's deploys log below <verl_log_dir>/compare but share the deployment's lock).
    outer: the identity a comparison handed down (outer_lock()): this run takes its token, holder, lease and folder, and
    its steps keep the lock when they end or fail (VERL_DEPLOY_LOCK_KEEP): the comparison releases it.
    taken_back: the token and holder of a comparison that died (taken_back_from()): this run resumes it and takes its lock
    back as its own at once, instead of waiting for its lease."""
    host = host or socket.gethostname()
    pid = pid or playbook_pid()
    if outer:
        env = ["env", "VERL_DEPLOY_LOCK_TOKEN=" + outer["token"], "VERL_DEPLOY_LOCK_HOLDER=" + outer["holder"],
               "VERL_DEPLOY_LOCK_WAIT=%d" % int(wait), "VERL_DEPLOY_LOCK_KEEP=1"]
        if outer.get("lease"):
            env.append("VERL_DEPLOY_LOCK_LEASE=%d" % int(outer["lease"]))
        lock = {"token": outer["token"], "holder": outer["holder"], "folder": outer.get("folder") or "",
                "lease": outer.get("lease"), "outer": True, "env": env, "host": host, "pid": pid}
        return dict(lock, handed_down=handed_down(lock))
    started = int(started if started is not None else time.time())
    holder = "%s of controller %s pid %d" % (KINDS[kind], host, pid)
    if str(job_id or "").strip():
        holder += " (AWX job %s)" % str(job_id).strip()
    token = "%s:%d:%d" % (host, pid, started)
    if taken_back:
        token, holder = taken_back["token"], taken_back["holder"]
    env = ["env", "VERL_DEPLOY_LOCK_TOKEN=" + token, "VERL_DEPLOY_LOCK_HOLDER=" + holder, "VERL_DEPLOY_LOCK_WAIT=%d" % int(wait)]
    if lease:
        env.append("VERL_DEPLOY_LOCK_LEASE=%d" % int(lease))
    lock = {"token": token, "holder": holder, "folder": folder or "", "lease": int(lease) if lease else None, "outer": False,
            "env": env, "host": host, "pid": pid, "taken_back": bool(taken_back)}
    return dict(lock, handed_down=handed_down(lock))


def _runs_ansible_playbook(pid):
    return "ansible-playbook" in _parent_and_command(pid)[1]


def taken_back_from(saved, host=None, alive=None):
    """{'token', 'holder'} of the lock a comparison kept in its state file (`saved`: the token, holder, host and pid of the
    run that wrote it), when the run now resuming it may take it back: written on this controller by an ansible-playbook
    that no longer runs (interrupted: Ctrl-C, a lost terminal). Else None: nothing saved, another controller's (its
    process cannot be seen from here), or the run still going (then its lock is refused to this one, as to any deploy).
    Without it, a comparison run again after an interruption would wait for its own dead lock's lease (about 30 min)."""
    if not isinstance(saved, dict) or not all(isinstance(saved.get(key), str) and saved[key] for key in ("token", "holder")):
        return None
    if saved.get("host") != (host or socket.gethostname()) or not isinstance(saved.get("pid"), int):
        return None
    if (alive or _runs_ansible_playbook)(saved["pid"]):
        return None
    return {"token": saved["token"], "holder": saved["holder"]}


def handed_down(lock):
    """The text of OUTER_ENV that hands `lock` (a comparison's deploy_lock()) to the deploys it runs."""
    return json.dumps({key: lock[key] for key in ("token", "holder", "lease", "folder")}, sort_keys=True)


def outer_lock(text):
    """The identity in OUTER_ENV's text, or None when there is none. Raises ValueError naming what is wrong: a deploy
    must not run under a half-given identity (it would take a lock nobody releases)."""
    if not (text or "").strip():
        return None
    try:
        found = json.loads(text)
    except ValueError as exc:
        raise ValueError("%s is not the JSON a comparison sets: %s" % (OUTER_ENV, exc)) from None
    if not isinstance(found, dict) or not all(isinstance(found.get(key), str) and found[key] for key in ("token", "holder")):
        raise ValueError("%s must give token and holder (it is set by playbooks/compare.yml for the deploys it runs)" % OUTER_ENV)
    if "\n" in found["token"] + found["holder"] + str(found.get("folder") or ""):
        raise ValueError("%s holds a new line: verl_control.sh keeps each field on one line" % OUTER_ENV)
    lease = found.get("lease")
    if lease is not None and (isinstance(lease, bool) or not isinstance(lease, int) or lease < 1):
        raise ValueError("%s: lease must be a positive number of seconds, not %r" % (OUTER_ENV, lease))
    return {"token": found["token"], "holder": found["holder"], "lease": lease, "folder": found.get("folder") or ""}
