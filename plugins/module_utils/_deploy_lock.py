# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Private to the verl.deploy collection: may change without notice.
#
# One deploy at a time per cluster: who this deploy is, for the lock on the Ray head, and the lock's take and release on the
# head's host (node_step's steps `lock` and `unlock` with lock_folder). The token tells this run's steps from another
# deploy's; the holder text is what a refused deploy reads ("the deploy of controller awx-1 pid 4242 (AWX job 17)").
# The lock is one file, <verl_log_dir>/.verl-deploy/deploy.lock on the head: verl_log_dir is mounted at the same path in
# the training container. A deploy takes it on the host, before its first change on any node (there may be no container
# yet); the container's verl_control.sh takes, renews and releases the same file through this same file, installed
# beside it (_run_time.NODE_PYTHON): `python3 -I -B _deploy_lock.py take|end|unlock ...` (main), standard library only.
from __future__ import annotations

import json
import os
import socket
import sys
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
# The environment that gives a step this run's lock identity (deploy_lock()'s env), as verl_control.sh reads it.
TOKEN_ENV, HOLDER_ENV, WAIT_ENV, KEEP_ENV, LEASE_ENV = (
    "VERL_DEPLOY_LOCK_TOKEN", "VERL_DEPLOY_LOCK_HOLDER", "VERL_DEPLOY_LOCK_WAIT", "VERL_DEPLOY_LOCK_KEEP", "VERL_DEPLOY_LOCK_LEASE")
# The steps before Ray's stage renews the lock (the container, SwanLab, the scripts) are bounded: the image's pull and the
# container's start by verl_docker_timeout each, the rest by these seconds (SwanLab's install 600, login 120 and run 300;
# the command's check 60; the image's check). The lock a deploy takes before its first change outlasts them
# (lease_before_ray); the first step of Ray's stage sets the lease back to LEASE.
BEFORE_RAY_SECONDS = 1200
KINDS = {"deploy": "the deploy", "compare": "the mask comparison (compare.yml)", "smoke": "the smoke launch (smoke.yml)"}


def deploy_lock(wait, job_id="", host=None, pid=None, started=None, kind="deploy", lease=None, folder="", outer=None, taken_back=None,
                before_ray=None):
    """This run's lock identity: {'token', 'holder', 'folder', 'env', 'host', 'pid'}; env is the argv prefix that gives it to
    verl_control.sh; host and pid are this run's (the comparison keeps them in its state: taken_back_from()).

    kind: "deploy" or "compare" (how the holder is named to a deploy that waits for it). lease: seconds the lock stays
    this run's without a step (None: verl_control.sh's 120 s); folder: the lock's folder on the head, when it must not
    follow verl_log_dir (a comparison's deploys log below <verl_log_dir>/compare but share the deployment's lock).
    outer: the identity a comparison handed down (outer_lock()): this run takes its token, holder, lease and folder, and
    its steps keep the lock when they end or fail (VERL_DEPLOY_LOCK_KEEP): the comparison releases it.
    taken_back: the token and holder of a comparison that died (taken_back_from()): this run resumes it and takes its lock
    back as its own at once, instead of waiting for its lease.
    before_ray: verl_docker_timeout, for a deploy: the lock also gets first_env, env with the lease of the take before its first
    change (lease_before_ray)."""
    lock = _identity(wait, job_id, host, pid, started, kind, lease, folder, outer, taken_back)
    if before_ray is not None:
        lock["first_env"] = [item for item in lock["env"] if not item.startswith(LEASE_ENV + "=")] + [
            "%s=%d" % (LEASE_ENV, max(lease_before_ray(before_ray), int(lock.get("lease") or 0)))]
    return lock


def lease_before_ray(docker_timeout):
    """Seconds the lock a deploy takes before its first change stays its own without a step: until Ray's stage renews it."""
    return LEASE + 2 * int(docker_timeout) + BEFORE_RAY_SECONDS


def _identity(wait, job_id, host, pid, started, kind, lease, folder, outer, taken_back):
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


# --- The lock itself: taken, renewed and released on the head's host (node_step's `lock` and `unlock` with lock_folder)
# and in its training container (verl_control.sh, through main).
LOCK_FILE = "deploy.lock"
# Seconds between two looks at another deploy's lock while waiting for it.
LOOK_EVERY = 2
# The exit code of a step refused for another deploy's lock: it changed nothing.
LOCK_REFUSED = 4


def lock_values(lock_env):
    """The VERL_DEPLOY_LOCK_* values of a step's lock_env (`env NAME=VALUE ...`, deploy_lock()'s env)."""
    return dict(item.split("=", 1) for item in lock_env if "=" in item and item.startswith("VERL_DEPLOY_LOCK_"))


def lock_fields(text):
    """The lock file's fields (token, holder, since, pid, lease), each its first line NAME=VALUE."""
    found = {}
    for line in (text or "").splitlines():
        name, sep, value = line.partition("=")
        if sep and name not in found:
            found[name] = value
    return found


def lease_of(fields):
    """The lease the holder wrote (a comparison's, a deploy's before Ray), else LEASE."""
    lease = str(fields.get("lease") or "")
    return int(lease) if lease.isdigit() else LEASE


def holder_state(fields, age, token, runs):
    """Whose the lock is, for a take: "free" (no lock), "mine" (this run's token), "gone" (its holder made no step for its
    lease and the call that took it no longer runs: runs(pid)), else "busy"."""
    if fields is None:
        return "free"
    if token and fields.get("token") == token:
        return "mine"
    if age > lease_of(fields) and not runs(fields.get("pid", "")):
        return "gone"
    return "busy"


def when(since):
    """A lock's since as the head's local time."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(int(since) if str(since).isdigit() else 0))


def refusal(where, fields, age, wait):
    """What a deploy refused for another deploy's lock reads (verl_control.sh's words)."""
    return ("%s: another deploy is changing this cluster: %s holds its lock since %s (last step %d s ago). This deploy waited %d s "
            "(verl_deploy_lock_timeout) and changed nothing. Fix: let that deploy end (or stop it), then run again; the lock of a "
            "deploy that is gone is taken over %d s after its last step." % (
                where, fields.get("holder") or "unknown", when(fields.get("since")), age, wait, lease_of(fields)))


def holder_runs(pid, proc="/proc"):
    """Whether a verl_control.sh call whose pid is pid runs on this host, seen from here or in a container (a container's
    step writes its pid as its container sees it: the last number of NSpid in /proc/<pid>/status)."""
    pid = str(pid or "").strip()
    if not pid.isdigit():
        return False
    for entry in os.listdir(proc):
        if not entry.isdigit():
            continue
        try:
            with open("%s/%s/cmdline" % (proc, entry), "rb") as handle:
                if b"verl_control.sh" not in handle.read():
                    continue
            with open("%s/%s/status" % (proc, entry), encoding="utf-8", errors="replace") as handle:
                nspid = [line.split()[1:] for line in handle if line.startswith("NSpid:")]
        except OSError:
            continue
        # Its pid in every namespace it is in (NSpid: the host's first, its container's last); without NSpid, the entry.
        if pid == entry or (nspid and nspid[0] and pid == nspid[0][-1]):
            return True
    return False


def _read(path, clock):
    """(fields, age in seconds) of the lock file, or (None, 0) when there is none."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
        age = int(clock() - os.stat(path).st_mtime)
    except FileNotFoundError:
        return None, 0
    return lock_fields(text), max(age, 0)


def _create(path, values, clock, pid):
    """The lock created only if none exists (O_EXCL): True, or False when another was there. pid: the call that holds it
    (a verl_control.sh's, whose run tells a holder that is gone from one that still works)."""
    try:
        handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(handle, "w", encoding="utf-8") as lock:
        lock.write("token=%s\nholder=%s\nsince=%d\npid=%d\nlease=%s\n" % (
            values[TOKEN_ENV], values.get(HOLDER_ENV) or "a deploy", int(clock()), pid, values.get(LEASE_ENV) or LEASE))
    return True


def _renew(path, fields, values, pid):
    """This run's lock made fresh, its call now this one (a holder is gone only when no call of it runs) and its lease this
    step's (the longer one a deploy took before its first change ends at Ray's stage); written aside, then renamed over it."""
    fields = dict(fields, pid=str(pid), lease=str(values.get(LEASE_ENV) or LEASE))
    aside = "%s.%d" % (path, os.getpid())
    with open(aside, "w", encoding="utf-8") as handle:
        handle.write("".join("%s=%s\n" % pair for pair in fields.items()))
    os.replace(aside, path)


def _answer(rc, said, answer, stderr=""):
    return {"rc": rc, "stdout": json.dumps({"said": said, "answer": answer}, sort_keys=True), "stderr": stderr}


def take(folder, values, where, runs=holder_runs, clock=time.time, sleep=time.sleep, pid=None):
    """The step `lock` on the head's host: acquire, answered as the script's steps answer, its last sentence how it was
    taken and for whom."""
    rc, how, said, refused = acquire(folder, values, where, runs, clock, sleep, pid)
    if rc:
        return _answer(rc, said, {}, refused)
    said.append("lock: %s for %s" % (how, values.get(HOLDER_ENV) or "this run"))
    return _answer(0, said, {"changed": str(how != "held").lower(), "state": "held", "lock": how})


def acquire(folder, values, where, runs=holder_runs, clock=time.time, sleep=time.sleep, pid=None):
    """This run's lock taken (or renewed, when it holds it) in folder, waiting at most VERL_DEPLOY_LOCK_WAIT s for another
    deploy's, then refused (4, naming it): (rc, how, said, refusal). how: held (this run's already), free, waited,
    taken-over (from a deploy that is gone); pid: the call that holds it (None: this process)."""
    pid = pid or os.getpid()
    path = os.path.join(folder, LOCK_FILE)
    os.makedirs(folder, exist_ok=True)
    token, wait = values[TOKEN_ENV], int(values.get(WAIT_ENV) or 300)
    said, waited, over, start = [], False, False, clock()
    while True:
        fields, age = _read(path, clock)
        state = holder_state(fields, age, token, runs)
        if state == "gone":
            # Only one deploy moves this lock aside (rename is atomic); it then takes a new one.
            aside = "%s.gone.%d" % (path, os.getpid())
            try:
                os.rename(path, aside)
                os.remove(aside)
            except OSError:
                continue
            said.append("lock: taken over from %s (since %s): that deploy is gone (no step for more than %d s)." % (
                fields.get("holder"), when(fields.get("since")), lease_of(fields)))
            over = True
            continue
        if state == "busy":
            if clock() - start >= wait:
                return LOCK_REFUSED, "", said, refusal(where, fields, age, wait)
            if not waited:
                said.append("lock: %s holds the cluster's lock since %s; waiting at most %d s." % (
                    fields.get("holder") or "another deploy", when(fields.get("since")), wait))
            waited = True
            sleep(LOOK_EVERY)
            continue
        if state == "mine":
            _renew(path, fields, values, pid)
            return 0, "held", said, ""
        if _create(path, values, clock, pid):
            if waited:
                said.append("lock: taken after waiting %d s for another deploy." % (clock() - start))
            return 0, "taken-over" if over else ("waited" if waited else "free"), said, ""
        # Another deploy took it first: look again.


def _mine(path, values):
    fields, _age = _read(path, time.time)
    return fields is not None and bool(values.get(TOKEN_ENV)) and fields.get("token") == values[TOKEN_ENV]


def end(folder, values, code):
    """When a step of the holder in the container exits: its lock fresh again when it went well (0) or is to be looked at
    again (3); released when it failed, for the deploy ends with that failure; kept when the lock is a comparison's
    (VERL_DEPLOY_LOCK_KEEP): it goes on with its next mask and releases the lock at its end."""
    path = os.path.join(folder, LOCK_FILE)
    if not _mine(path, values):
        return
    if values.get(KEEP_ENV) or str(code) in ("0", "3"):
        os.utime(path)
    else:
        os.remove(path)


def release(folder, values):
    """The step `unlock` on the head's host, as verl_control.sh's: kept for a run that holds it across deploys (KEEP), released
    by its holder, else not held."""
    path = os.path.join(folder, LOCK_FILE)
    if not _mine(path, values):
        return _answer(0, ["lock: not held by this deploy"], {"changed": "false", "state": "not-held"})
    if values.get(KEEP_ENV):
        os.utime(path)
        return _answer(0, ["lock: kept for %s, which releases it when it ends" % (values.get(HOLDER_ENV) or "the run that holds it")],
                       {"changed": "false", "state": "kept"})
    os.remove(path)
    return _answer(0, ["lock: released"], {"changed": "true", "state": "released"})


def host_step(step, folder, lock_env, where=None):
    """node_step's `lock` or `unlock` with lock_folder, on the head's host: {rc, stdout, stderr} as the script's steps answer."""
    values = lock_values(lock_env)
    where = where or "the Ray head %s" % socket.gethostname()
    if step == "lock" and not values.get(TOKEN_ENV):
        return {"rc": 1, "stdout": "", "stderr": "%s: step 'lock' needs %s (the run's lock identity)." % (where, TOKEN_ENV)}
    try:
        return take(folder, values, where) if step == "lock" else release(folder, values)
    except OSError as exc:
        return {"rc": 1, "stdout": "", "stderr": "%s: the deploy's lock in %s: %s. Fix: make verl_log_dir writable by the Ansible user "
                "on the head (or connect as root), then run again." % (where, folder, exc)}


def main(argv, env):
    """verl_control.sh's lock, in the container (its steps on the head): take|end CODE|unlock FOLDER WHERE PID, this run's
    identity in env (VERL_DEPLOY_LOCK_*). take prints how it was taken, then its sentences, one a line (4: refused, the
    refusal on stderr); end prints nothing; unlock prints the step's document, as the host's unlock answers."""
    command, rest = (argv[1:2] or [""])[0], argv[2:]
    if command not in ("take", "end", "unlock") or len(rest) != (4 if command == "end" else 3):
        sys.stderr.write("usage: _deploy_lock.py take|end CODE|unlock FOLDER WHERE PID\n")
        return 2
    code = rest.pop(0) if command == "end" else ""
    folder, where, pid = rest
    values = {key: value for key, value in env.items() if key.startswith("VERL_DEPLOY_LOCK_")}
    try:
        if command == "end":
            end(folder, values, code)
            return 0
        if command == "unlock":
            sys.stdout.write(release(folder, values)["stdout"] + "\n")
            return 0
        rc, how, said, refused = acquire(folder, values, where, pid=int(pid))
    except OSError as exc:
        sys.stderr.write("%s: the deploy's lock in %s: %s\n" % (where, folder, exc))
        return 1
    sys.stdout.write("".join(line + "\n" for line in [how] + said))
    if refused:
        sys.stderr.write(refused + "\n")
    return rc


if __name__ == "__main__":
    raise SystemExit(main(sys.argv, os.environ))
