# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Private to the verl.deploy collection: may change without notice.
#
# How a step runs on a node: the control script's steps, the command that runs a step on the host or in the training
# container there (the node_step module runs it, for itself and as wait_progress's probe), and the steps decided there, in
# Python, between the script's primitives: Ray's (keep or start this node's Ray, the nodes and NPUs joined) and the wait for
# the training. Pure functions, table-tested in tests/unit/plugins/module_utils/test_control_step.py; standard library only,
# for the module ships it to every host.
from __future__ import annotations

import json
import re

# The steps the playbooks run. Those that only look change nothing whatever they answer; unlock is the run's own
# bookkeeping. DECIDED_STEPS are decided here, in Python, between the control script's primitives (decided_step); the
# others are the script's own (verl_control.sh's `case`, with the primitives and supervise, which start-training runs
# itself: tests/test_control_script.py holds the lists equal to the script's).
CONTROL_STEPS = ("members", "ray-progress", "ray", "ray-check", "training-state", "start-training", "verify-look", "npus-look",
                 "status", "stop-training", "stop-ray", "unlock", "lock")
LOOK_STEPS = frozenset(("members", "ray-progress", "ray-check", "training-state", "verify-look", "npus-look", "status", "unlock"))
DECIDED_STEPS = ("ray", "ray-check", "ray-progress", "verify-look")
PRIMITIVES = ("ray-look", "ray-start", "supervise", "verify-facts")

# What the Docker CLI says when `docker exec` could not start the step at all (the container is missing, stopped,
# restarting or paused, or the engine does not answer): the step did not run, so it neither failed nor changed anything.
_NOT_RUN = re.compile(r"^(Error response from daemon: (No such container|[Cc]ontainer \S+ is (not running|paused|restarting))"
                      r"|Error: No such container|Cannot connect to the Docker daemon)")


def control_argv(workdir, step, args=(), lock_env=()):
    """The command of a control script's step in the container: lock_env (this run's lock identity,
    `env VERL_DEPLOY_LOCK_TOKEN=...`), then bash <workdir>/verl_control.sh STEP ARGS."""
    return list(lock_env) + ["bash", workdir.rstrip("/") + "/verl_control.sh", step] + [str(arg) for arg in args]


def container_command(docker, container, argv, env=None, stdin=False):
    """(command, environment) that runs argv in the container as `docker exec` does. The environment's values go to the
    Docker CLI's own environment and are named with `-e NAME` only, so that no value shows in the host's process list."""
    env = {str(name): str(value) for name, value in (env or {}).items()}
    command = [docker, "exec"] + (["-i"] if stdin else [])
    for name in sorted(env):
        command += ["-e", name]
    return command + [container] + list(argv), env


def not_run(rc, stdout, stderr):
    """Why `docker exec` did not run the step (its CLI's first line), or "" when the step ran, whatever its exit code."""
    first = (stderr or "").strip().splitlines()[:1]
    if rc in (1, 125) and not (stdout or "").strip() and first and _NOT_RUN.match(first[0]):
        return first[0]
    return ""


_KEY = re.compile(r"[a-z][a-z0-9_]*")


def _key_value(line):
    """(key, value) of a KEY=VALUE line, or None for a sentence (or a line whose part before "=" is not a name)."""
    key, sep, value = line.partition("=")
    return (key.strip(), value.strip()) if sep and _KEY.fullmatch(key.strip()) else None


def parse_lines(text):
    """KEY=VALUE lines as a dict (the last value of a key wins; sentences, and lines whose key is not a name, are ignored).

    What every step of the scripts answers the playbooks with (read by _run_time.py and the filter training_state)."""
    return dict(pair for pair in map(_key_value, (text or "").splitlines()) if pair)


def sentences(text):
    """The lines of a step's output that parse_lines does not read: what the step says to people, in order.

    What a task shows of a step (the filter said); the playbooks decide on parse_lines' keys, never on these."""
    return [line for line in (text or "").splitlines() if line.strip() and not _key_value(line)]


def _members(text):
    """The entries of a list of Ray nodes alive, "IP=NPUS,IP=NPUS" (the members step's line)."""
    return [entry for entry in str(text or "").strip().split(",") if entry]


def in_cluster(members, ip, npus):
    """The one definition of "this node is in the cluster": the head's list of nodes alive holds its IP with all its NPUs."""
    return bool(ip) and "%s=%s" % (ip, npus) in _members(members)


def joined(members):
    """(nodes, NPUs) of a list of Ray nodes alive."""
    entries = _members(members)
    npus = 0
    for entry in entries:
        try:
            npus += int(entry.rsplit("=", 1)[1])
        except (IndexError, ValueError):
            continue
    return len(entries), npus


def all_joined(members, nnodes, npus_per_node):
    """The one definition of "every NPU joined": the list holds every node's NPUs."""
    return joined(members)[1] >= int(nnodes) * int(npus_per_node)


def ray_plan(look, listed):
    """What `ray` does on a node, from ray-look's facts (role, npus, master_ip, current_ip, ray_port, raylet, gcs, recorded,
    members) and, on a worker, the head's list of nodes alive: keep (it is in the cluster: said says so), or start, after
    stopping a stale Ray when one is there (stale: why, else ""). A head is whole when its GCS and raylet run and the GCS
    lists it alive with its NPUs; a worker is in when its raylet runs and the head lists it. join: a worker's sentence
    when it is not in (ray-check)."""
    where, ip, npus = "%s:%s" % (look["master_ip"], look["ray_port"]), look["current_ip"], look["npus"]
    if look["role"] == "head":
        if look["raylet"] and look["gcs"] and in_cluster(look["members"], ip, npus):
            return {"keep": True, "said": "ray: the head runs at %s; left alone." % where}
        stale = look["raylet"] or look["gcs"] or look["recorded"]
        return {"keep": False, "stale": "the head's Ray at %s is not whole" % where if stale else ""}
    if look["raylet"] and in_cluster(listed, ip, npus):
        return {"keep": True, "said": "ray: %s is in the cluster of %s with %s NPU; left alone." % (ip, where, npus)}
    stale = look["raylet"] or look["recorded"]
    return {"keep": False, "stale": "the head lists no %s with %s NPU (alive: %s)" % (ip, npus, listed or "none") if stale else "",
            "join": "ray: %s has to join the cluster of %s (alive: %s)" % (ip, where, listed or "none")}


def released_if_whole(lock_env, changed, complete, lock):
    """Whether the head's `ray` releases the deploy's lock itself: asked to (VERL_DEPLOY_LOCK_RELEASE_IF_WHOLE in lock_env:
    the deploy found a training running from its settings), Ray was left alone holding every node's NPUs, and the lock was
    taken without waiting (free, or this deploy's already) and is not a comparison's (VERL_DEPLOY_LOCK_KEEP). Nothing that
    follows then changes the cluster; a later step that does takes the lock again."""
    asked = "VERL_DEPLOY_LOCK_RELEASE_IF_WHOLE=1" in lock_env and not any(item.startswith("VERL_DEPLOY_LOCK_KEEP=") for item in lock_env)
    return asked and not changed and complete and lock in ("free", "held")


def _said(text):
    return [line for line in (text or "").splitlines() if line.strip()]


def _facts(text):
    """parse_lines of the lines before a line "--- start output", and the lines after it."""
    lines = (text or "").splitlines()
    cut = lines.index("--- start output") if "--- start output" in lines else len(lines)
    return parse_lines("\n".join(lines[:cut])), lines[cut + 1:]


def _size(text):
    try:
        return int(text)
    except (TypeError, ValueError):
        return -1


def verify_look(text):
    """One look of the deploy's bounded wait for the training (wait_progress polls it), from verify-facts' facts: rc 0 when
    it runs and its newest log grew since the previous look, or it finished as verl does (exit code 0 after a step); 3 not
    yet; 1 when it ended before it ran (the last lines of its start's output, on stderr). {rc, stdout, stderr}."""
    facts, tail = _facts(text)
    log = facts.get("log", "")
    if "exit_code" in facts:
        # A short training may be done before its log was seen to grow: it ran, as verl does, to its last step.
        if facts["exit_code"] == "0" and facts.get("last_step"):
            return {"rc": 0, "stdout": "finished (exit code 0) at step %s; its log %s" % (facts["last_step"], log), "stderr": ""}
        return {"rc": 1, "stdout": "", "stderr": "verl_control.sh on %s: the training ended with exit code %s before it ran. Last lines of %s: %s" % (
            facts.get("host", "?"), facts["exit_code"], facts.get("start_out", "its start's output"), "".join(line + "|" for line in tail))}
    pid = facts.get("pid", "")
    if not pid or not log:
        return {"rc": 3, "stdout": "process %s, log %s" % (pid or "not yet", log or "not yet"), "stderr": ""}
    size = _size(facts.get("size"))
    seen_log, _sep, seen_size = facts.get("seen", "").rpartition(" ")
    if seen_log == log and size > _size(seen_size):
        return {"rc": 0, "stdout": "runs (pid %s); its log %s grows (%d bytes)" % (pid, log, size), "stderr": ""}
    return {"rc": 3, "stdout": "runs (pid %s); log %s at %d bytes, waiting for it to grow" % (pid, log.rsplit("/", 1)[-1], size), "stderr": ""}


def ray_step(step, args, lock_env, run):
    """A Ray step, decided here between the script's primitives: {rc, stdout, stderr} as the script's steps answer (its
    sentences, then its KEY=VALUE lines). run(primitive, args, lock_env) runs one in the container: {rc, stdout, stderr}.

    ray-progress NODES NPUS_PER_NODE (head): one look for the bounded wait, "A/NODES nodes, B/C NPU"; rc 0 when every NPU
    joined, 3 not yet. ray-check MEMBERS (worker): rc 0 when `ray` would leave it alone, 3 when it has to join. ray
    [MEMBERS]: this node left alone in the head's cluster, else started (a stale Ray stopped first): the head under the
    deploy's lock, answering how it took it, the nodes alive, whether they hold every node's NPUs and whether it released
    the lock (released_if_whole); a worker against the head's list."""
    if step == "ray-progress":
        nnodes, npus = int(args[0]), int(args[1])
        listed = run("members", [], lock_env)
        members = _said(listed["stdout"])[-1:] if listed["rc"] == 0 else []
        nodes, found = joined(members[0] if members else "")
        return {"rc": 0 if found >= nnodes * npus else 3, "stdout": "%d/%d nodes, %d/%d NPU" % (nodes, nnodes, found, nnodes * npus),
                "stderr": listed["stderr"]}
    listed = str(args[0]) if args else ""
    looked = run("ray-look", [], lock_env)
    lines = _said(looked["stdout"])
    try:
        look = json.loads(lines[-1])
    except (IndexError, ValueError):
        look = None
    if looked["rc"] != 0 or not isinstance(look, dict):
        # Refused for another deploy's lock (4), or its address not resolved: its own words.
        return dict(looked, rc=looked["rc"] or 1)
    said, stderr = lines[:-1], looked["stderr"]
    plan = ray_plan(look, listed)
    if step == "ray-check":
        return {"rc": 0 if plan["keep"] else 3, "stdout": "\n".join(said + [plan.get("said") or plan["join"]]), "stderr": stderr}
    head = look["role"] == "head"
    if plan["keep"]:
        said.append(plan["said"])
        members, changed = look["members"], False
    else:
        started = run("ray-start", [plan["stale"]] if plan["stale"] else [], lock_env)
        said += _said(started["stdout"])
        stderr = "\n".join(text for text in (stderr, started["stderr"]) if text)
        if started["rc"] != 0:
            return {"rc": started["rc"], "stdout": "\n".join(said), "stderr": stderr}
        if not head:
            return {"rc": 0, "stdout": "\n".join(said + ["changed=true", "state=joined"]), "stderr": stderr}
        asked = run("members", [], lock_env)
        members, changed = (_said(asked["stdout"])[-1:] or [""])[0] if asked["rc"] == 0 else "", True
        stderr = "\n".join(text for text in (stderr, asked["stderr"]) if text)
    if not head:
        return {"rc": 0, "stdout": "\n".join(said + ["changed=false", "state=in-cluster"]), "stderr": stderr}
    complete = all_joined(members, look["nnodes"], look["npus"])
    released = released_if_whole(lock_env, changed, complete, look["lock"]) and "state=released" in _said(run("unlock", [], lock_env)["stdout"])
    answer = ["changed=%s" % str(changed).lower(), "state=%s" % ("started" if changed else "in-cluster"), "lock=%s" % look["lock"],
              "members=%s" % members, "complete=%s" % str(complete).lower(), "released=%s" % str(released).lower()]
    return {"rc": 0, "stdout": "\n".join(said + answer), "stderr": stderr}


def decided_step(step, args, lock_env, run):
    """A step of DECIDED_STEPS, run as the script's steps answer ({rc, stdout, stderr}); run(primitive, args, lock_env) runs
    one of the script's primitives in the container."""
    if step == "verify-look":
        looked = run("verify-facts", [], lock_env)
        return verify_look(looked["stdout"]) if looked["rc"] == 0 else looked
    return ray_step(step, args, lock_env, run)
