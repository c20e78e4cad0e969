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


def deploy_lock(wait, job_id="", host=None, pid=None, started=None):
    """This deploy's lock identity: {'token', 'holder', 'env'}; env is the argv prefix that gives it to verl_control.sh."""
    host = host or socket.gethostname()
    pid = pid or playbook_pid()
    started = int(started if started is not None else time.time())
    holder = "the deploy of controller %s pid %d" % (host, pid)
    if str(job_id or "").strip():
        holder += " (AWX job %s)" % str(job_id).strip()
    token = "%s:%d:%d" % (host, pid, started)
    return {"token": token, "holder": holder,
            "env": ["env", "VERL_DEPLOY_LOCK_TOKEN=" + token, "VERL_DEPLOY_LOCK_HOLDER=" + holder,
                    "VERL_DEPLOY_LOCK_WAIT=%d" % int(wait)]}
