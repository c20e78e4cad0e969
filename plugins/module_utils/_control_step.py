# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Private to the verl.deploy collection: may change without notice.
#
# How a step runs on a node and what it answered: the one table of steps (STEPS), the command that runs a step on the host
# or in the training container there (the node_step module runs it, for itself and as wait_progress's probe), the steps
# decided there, in Python, between the script's primitives (Ray's: keep or start this node's Ray, the nodes and NPUs
# joined; the wait for the training), and each step's verdict, which node_step returns as typed keys (step_result). Pure
# functions, table-tested in tests/unit/plugins/module_utils/test_control_step.py and test_run_time.py; standard library
# only, for the module ships it to every host.
from __future__ import annotations

import json
import os
import re
import subprocess

from ansible_collections.verl.deploy.plugins.module_utils._deploy_lock import LOCK_REFUSED

# What the Docker CLI says when `docker exec` could not start the step at all (the container is missing, stopped,
# restarting or paused, or the engine does not answer): the step did not run, so it neither failed nor changed anything.
_NOT_RUN = re.compile(r"^(Error response from daemon: (No such container|[Cc]ontainer \S+ is (not running|paused|restarting))"
                      r"|Error: No such container|Cannot connect to the Docker daemon)")


# Docker's own rule for a container's name (daemon/names: validContainerNamePattern), which a container's ID also meets: a
# name that begins with "-" would be read by `docker exec` as one of its options (--privileged, -uroot).
_CONTAINER = re.compile(r"/?[a-zA-Z0-9][a-zA-Z0-9_.-]+")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def argument_problem(params):
    """Why node_step refuses its arguments before anything runs, or "": a container that is not a name Docker gives, an
    environment name that is not a shell variable's name, a workdir or chdir that is not an absolute path."""
    container = params.get("container")
    if container is not None and not _CONTAINER.fullmatch(str(container)):
        return ("container=%r is not a container's name (Docker's names match [a-zA-Z0-9][a-zA-Z0-9_.-]+). Fix: give the name of "
                "the training container, verl_container_name." % (container,))
    bad = sorted(str(name) for name in (params.get("env") or {}) if not _ENV_NAME.fullmatch(str(name)))
    if bad:
        return "env names %s, which are not variable names ([A-Za-z_][A-Za-z0-9_]*). Fix: rename them." % ", ".join(map(repr, bad))
    if params.get("step") and params.get("lock_folder") and params["step"] not in ("lock", "unlock"):
        return "lock_folder is for the steps lock and unlock (on the host), not %r. Fix: give container and workdir." % params["step"]
    if params.get("step") and not params.get("lock_folder") and not (params.get("container") and params.get("workdir")):
        return "step %r runs in the training container: give container and workdir (or lock_folder, for lock and unlock)." % params["step"]
    for option in ("workdir", "chdir", "lock_folder"):
        value = params.get(option)
        if value is not None and not str(value).startswith("/"):
            return "%s=%r is not an absolute path. Fix: give the folder from / (verl_workdir is one)." % (option, value)
    return ""


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


def run_command(argv, container=None, docker=None, env=None, stdin=None, chdir=None, timeout=None):
    """argv run, in the container when one is named: {rc, stdout, stderr}, or {failed, msg} when it did not run (docker exec
    could not start it, it could not be started, or it outlived timeout seconds). Its stdin ends with a new line, as
    ansible.builtin.command and docker_container_exec end it (a `while read` reads its last line); without stdin it reads
    nothing (a pipelined module's own stdin is its payload). A command that exits before it reads its stdin is an answer,
    not an error (subprocess' communicate ignores the closed pipe; AnsibleModule.run_command fails on it)."""
    extra = {}
    if container:
        argv, extra = container_command(docker, container, argv, env, stdin=stdin is not None)
    feed = {"stdin": subprocess.DEVNULL} if stdin is None else {"input": stdin + "\n"}
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, errors="replace", env=dict(os.environ, **extra), cwd=chdir,
                              check=False, timeout=timeout, **feed)
    except subprocess.TimeoutExpired:
        return {"failed": True, "msg": "%s: no answer within %d s" % (container or argv[0], timeout)}
    except OSError as exc:
        return {"failed": True, "msg": "%s could not run: %s" % (argv[0], exc)}
    stdout, stderr = proc.stdout.rstrip("\r\n"), proc.stderr.rstrip("\r\n")
    problem = not_run(proc.returncode, stdout, stderr) if container else ""
    if problem:
        return {"failed": True, "msg": "%s: %s" % (container, problem), "stderr": stderr}
    return {"rc": proc.returncode, "stdout": stdout, "stderr": stderr}


def not_run(rc, stdout, stderr):
    """Why `docker exec` did not run the step (its CLI's first line), or "" when the step ran, whatever its exit code."""
    first = (stderr or "").strip().splitlines()[:1]
    if rc in (1, 125) and not (stdout or "").strip() and first and _NOT_RUN.match(first[0]):
        return first[0]
    return ""


def read_answer(text):
    """A step as the deploy reads it: {said, answer, read}. The step's whole stdout is one JSON document
    {"said": [str], "answer": {str: str}} (verl_control.sh's emit, a decided step's document(), and each role's script:
    the container check, install_files.sh, reach.py, the SwanLab proof); read: it was one. Anything
    else (a script of an earlier release, a step that died before it could answer) answers nothing: its non-empty
    lines are kept as said, for people, and never read as facts. Split on "\n" only: a U+2028 or a record separator in a
    value stays inside it."""
    text = text or ""
    try:
        found = json.loads(text)
    except ValueError:
        found = None
    said = found.get("said") if isinstance(found, dict) else None
    answer = found.get("answer") if isinstance(found, dict) else None
    if (isinstance(said, list) and isinstance(answer, dict) and all(isinstance(line, str) for line in said)
            and all(isinstance(key, str) and isinstance(value, str) for key, value in answer.items())):
        return {"said": said, "answer": answer, "read": True}
    return {"said": [line for line in text.split("\n") if line.strip()], "answer": {}, "read": False}


def document(said, answer):
    """A decided step's stdout, as the control script's steps answer (read_answer): said, and answer's values as strings."""
    return json.dumps({"said": [str(line) for line in said], "answer": {str(key): _text(value) for key, value in answer.items()}},
                      sort_keys=True)


def _text(value):
    return str(value).lower() if isinstance(value, bool) else str(value)


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


def _size(text):
    try:
        return int(text)
    except (TypeError, ValueError):
        return -1


def _look(rc, said, stderr=""):
    return {"rc": rc, "stdout": document([said] if said else [], {}), "stderr": stderr}


def verify_look(facts):
    """One look of the deploy's bounded wait for the training (wait_progress polls it), from verify-facts' answer: rc 0 when
    it runs and its newest log grew since the previous look, or it finished as verl does (exit code 0 after a step); 3 not
    yet; 1 when it ended before it ran (the last lines of its start's output, on stderr). {rc, stdout, stderr}."""
    log = facts.get("log", "")
    if facts.get("exit_code"):
        # A short training may be done before its log was seen to grow: it ran, as verl does, to its last step.
        if facts["exit_code"] == "0" and facts.get("last_step"):
            return _look(0, "finished (exit code 0) at step %s; its log %s" % (facts["last_step"], log))
        tail = [line for line in facts.get("start_output", "").split("\n") if line]
        return _look(1, "", "verl_control.sh on %s: the training ended with exit code %s before it ran. Last lines of %s: %s" % (
            facts.get("host", "?"), facts["exit_code"], facts.get("start_out", "its start's output"), "".join(line + "|" for line in tail)))
    pid = facts.get("pid", "")
    if not pid or not log:
        return _look(3, "process %s, log %s" % (pid or "not yet", log or "not yet"))
    size = _size(facts.get("size"))
    seen_log, _sep, seen_size = facts.get("seen", "").rpartition(" ")
    if seen_log == log and size > _size(seen_size):
        return _look(0, "runs (pid %s); its log %s grows (%d bytes)" % (pid, log, size))
    return _look(3, "runs (pid %s); log %s at %d bytes, waiting for it to grow" % (pid, log.rsplit("/", 1)[-1], size))


def _answered(done):
    """A primitive's result, read: (answer, said)."""
    read = read_answer(done.get("stdout"))
    return read["answer"], read["said"]


def _joined_text(*texts):
    return "\n".join(text for text in texts if text)


def ray_step(step, args, lock_env, run):
    """A Ray step, decided here between the script's primitives: {rc, stdout, stderr}, stdout one document as the script's
    steps answer (document). run(primitive, args, lock_env) runs one in the container: {rc, stdout, stderr}.

    ray-progress NODES NPUS_PER_NODE (head): one look for the bounded wait, "A/NODES nodes, B/C NPU"; rc 0 when every NPU
    joined, 3 not yet. ray-check MEMBERS (worker): rc 0 when `ray` would leave it alone, 3 when it has to join. ray
    [MEMBERS]: this node left alone in the head's cluster, else started (a stale Ray stopped first): the head under the
    deploy's lock, answering how it took it, the nodes alive, whether they hold every node's NPUs and whether it released
    the lock (released_if_whole); a worker against the head's list."""
    if step == "ray-progress":
        nnodes, npus = int(args[0]), int(args[1])
        listed = run("members", [], lock_env)
        nodes, found = joined(_answered(listed)[0].get("members", "") if listed["rc"] == 0 else "")
        return {"rc": 0 if found >= nnodes * npus else 3, "stderr": listed["stderr"],
                "stdout": document(["%d/%d nodes, %d/%d NPU" % (nodes, nnodes, found, nnodes * npus)], {})}
    listed = str(args[0]) if args else ""
    looked = run("ray-look", [], lock_env)
    facts, said = _answered(looked)
    if looked["rc"] != 0 or "role" not in facts:
        # Refused for another deploy's lock (4), or its address not resolved: its own words.
        return dict(looked, rc=looked["rc"] or 1)
    look = dict(facts, **{flag: facts.get(flag) == "true" for flag in ("raylet", "gcs", "recorded")})
    stderr = looked["stderr"]
    plan = ray_plan(look, listed)
    if step == "ray-check":
        return {"rc": 0 if plan["keep"] else 3, "stdout": document(said + [plan.get("said") or plan["join"]], {}), "stderr": stderr}
    head = look["role"] == "head"
    if plan["keep"]:
        said.append(plan["said"])
        members, changed = look["members"], False
    else:
        started = run("ray-start", [plan["stale"]] if plan["stale"] else [], lock_env)
        said += _answered(started)[1]
        stderr = _joined_text(stderr, started["stderr"])
        if started["rc"] != 0:
            return {"rc": started["rc"], "stdout": document(said, {}), "stderr": stderr}
        if not head:
            return {"rc": 0, "stdout": document(said, {"changed": True, "state": "joined"}), "stderr": stderr}
        asked = run("members", [], lock_env)
        members, changed = _answered(asked)[0].get("members", "") if asked["rc"] == 0 else "", True
        stderr = _joined_text(stderr, asked["stderr"])
    if not head:
        return {"rc": 0, "stdout": document(said, {"changed": False, "state": "in-cluster"}), "stderr": stderr}
    complete = all_joined(members, look["nnodes"], look["npus"])
    released = (released_if_whole(lock_env, changed, complete, look["lock"])
                and _answered(run("unlock", [], lock_env))[0].get("state") == "released")
    answer = {"changed": changed, "state": "started" if changed else "in-cluster", "lock": look["lock"], "members": members,
              "complete": complete, "released": released}
    return {"rc": 0, "stdout": document(said, answer), "stderr": stderr}


def decided_step(step, args, lock_env, run):
    """A step of DECIDED_STEPS, run as the script's steps answer ({rc, stdout, stderr}); run(primitive, args, lock_env) runs
    one of the script's primitives in the container."""
    if step == "verify-look":
        looked = run("verify-facts", [], lock_env)
        return verify_look(_answered(looked)[0]) if looked["rc"] == 0 else looked
    return ray_step(step, args, lock_env, run)


# --- What a step answered, as the deploy reads it

# How the head took the deploy's lock when another deploy held it (the training may have changed meanwhile).
_LOCK_AFTER_ANOTHER = ("waited", "taken-over")
_SCRIPT_PREFIX = re.compile(r"^verl_control\.sh on [^:]*: ")
_HOST_PREFIX = re.compile(r"^the Ray head [^:]*: ")
STATE_KEYS = ("state", "pid", "exit_code", "started_at", "stopped_at", "first_step", "last_step", "ray_session", "log", "quiet_for", "launch",
              "restart_at", "keep_alive")


def classify(found):
    """The training's state from the facts `verl_control.sh training-state` answers (the control script looks, this
    decides): running (its process runs), orphaned (it runs, but the Ray session it started in is not the one that runs
    now: ray_session_started against ray_session), else not-started (never started: no started_at), stopped (stopped_at),
    restarting (it failed, and keep-alive's supervisor waits to start it again or is starting it: restart_at, attempt_at),
    finished (exit code 0) or crashed; no answer at all (no container, no script) is unknown."""
    if "pid" not in found:
        return "unknown"
    if found.get("pid"):
        started_in, now_in = found.get("ray_session_started", ""), found.get("ray_session", "")
        return "orphaned" if started_in and started_in != now_in else "running"
    if not found.get("started_at"):
        return "not-started"
    if found.get("stopped_at"):
        return "stopped"
    if not found.get("exit_code") and found.get("supervisor") and (found.get("restart_at") or found.get("attempt_at")):
        return "restarting"
    return "finished" if found.get("exit_code") == "0" else "crashed"


def json_lines(text):
    """The JSON objects of a text's lines, oldest first (keep-alive's decisions, the supervisor's keep_alive.jsonl; the NPU
    sampler's records); a line that is not one is skipped."""
    records = []
    for line in str(text or "").split("\n"):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            records.append(record)
    return records


def quiet_for(found):
    """Seconds since the running training's last step, else its start (now: the script's clock); "" when it does not run
    (a deploy names a stalled one it leaves alone)."""
    if "now" not in found:
        return ""
    since = (found.get("last_step") or "").split(" ")[0] or found.get("started_at", "")
    if not found.get("pid") or not since.isdigit() or not str(found["now"]).isdigit():
        return ""
    return str(int(found["now"]) - int(since))


def training_read(found):
    """The training's state from the facts training-state (and the head's status) answered: STATE_KEYS, classified, its
    keep-alive records and its launch record (None without one) read."""
    state = {key: found.get(key, "") for key in STATE_KEYS}
    state["state"], state["quiet_for"] = classify(found), quiet_for(found)
    state["keep_alive"] = json_lines(state["keep_alive"])
    try:
        state["launch"] = json.loads(state["launch"]) if state["launch"] else None
    except ValueError:
        state["launch"] = None
    return state


def _seconds(text):
    try:
        return int(str(text).strip())
    except (TypeError, ValueError):
        return 0


def is_stalled(training, stall_seconds):
    """The one definition of a stalled training: it runs, but logged no step (or, before its first, started) more than
    stall_seconds ago (quiet_for, from its state lines). Read by status.yml's lines and verdict and the deploy's plan."""
    return training.get("state") == "running" and _seconds(training.get("quiet_for")) > stall_seconds


def failed(training, stall_seconds):
    """The one definition of a failed training, whose first failure status names from every node's logs (failure_scan's
    answers, read only then): crashed, orphaned, restarting (keep-alive starts it again after a failure), or stalled
    (is_stalled)."""
    return training.get("state") in ("crashed", "orphaned", "restarting") or is_stalled(training, stall_seconds)


def parse_training_state(text):
    """The answer of `verl_control.sh training-state` (one JSON document) as the training's state (launch: the record, or
    None). Anything else (no container, a control script of an earlier release, which a deploy updates before it reads
    the training again) reads as state "unknown": nothing a node's files hold is read as a fact."""
    return training_read(read_answer(text)["answer"])


def _lines(text):
    return [line for line in str(text or "").split("\n") if line]


def status_answer(answer):
    """The facts of `verl_control.sh status` (its answer), and on the head its tails, the last start's output and the log's
    last lines, and the NPU sampler's last records: {"start_output": [...], "log": [...], "npu_samples": [...]}. in_ray
    (yes, no, or unknown when the node's addresses could not be resolved) is decided here, as `ray` decides it (in_cluster,
    with the raylet running)."""
    facts = dict(answer)
    tails = {"start_output": _lines(facts.pop("start_output", "")), "log": _lines(facts.pop("log_tail", "")),
             "npu_samples": [record for record in json_lines(facts.pop("npu_samples", "")) if isinstance(record.get("time"), int)]}
    if "role" in facts:
        inside = facts.get("raylet") == "running" and in_cluster(facts.get("listed"), facts.get("current_ip"), facts.get("npus"))
        facts["in_ray"] = "unknown" if facts.get("address_problem") else "yes" if inside else "no"
    return facts, tails


def last_lines(result, count=4):
    lines = result.get("stderr_lines") or (result.get("stderr") or "").splitlines()
    return " | ".join(lines[-count:]) or result.get("msg") or "(no output)"


def step_changed(result):
    """The one definition of "changed" for a step of the control script (and the role scripts that answer as it does): what
    its answer says (changed=true|false). Without that answer: a step that ran and failed half-way (an exit code other
    than 0) may have changed something (e.g. `ray` stopped a stale Ray, then its start failed); a step refused for another
    deploy's lock (4), one that ended well without saying (an older script's step), and one that never ran its script (no
    exit code: skipped, no container, a node that did not answer) changed nothing."""
    found = read_answer(result.get("stdout", ""))["answer"]
    rc = result.get("rc")
    if rc == LOCK_REFUSED:
        return False
    if "changed" in found:
        return found["changed"] == "true"
    return isinstance(rc, int) and rc != 0


def rc_problem(what, result):
    """Why a step that must end well (verl.deploy.node_step's fail_on_rc) failed, or "": it ran and ended with an exit code
    other than 0; refused for another deploy's lock, the script's own words (who holds it, the fix). A step that could not
    run at all failed already with its module's words."""
    rc = result.get("rc")
    if not isinstance(rc, int) or rc == 0:
        return ""
    if rc == LOCK_REFUSED:
        return "%s was refused: %s" % (what, _SCRIPT_PREFIX.sub("", (result.get("stderr") or "").strip()))
    return "%s ended with rc %d; its last lines: %s" % (what, rc, last_lines(result))


def _members_verdict(result, answer, _host):
    """members: the Ray nodes alive, ["IP=NPUS", ...]; none when the head could not be asked."""
    return {"members": _members(answer.get("members")) if result.get("rc") == 0 else []}


def _training_verdict(_result, answer, _host):
    """training: the training's state (training_read); "unknown" without an answer."""
    return {"training": training_read(answer)}


def _status_verdict(result, answer, _host):
    """status (status.yml's, and the deploy's verify of a training that did not start): facts, its answer but the tails, with
    in_ray; tails (status_answer); training: the head's training read from the facts (training_read; "unknown" on a worker);
    none of them unless it ended well. other_release: it ended well, said something but no document (a control script an
    earlier release of verl-deploy installed: nothing it said is read)."""
    facts, tails = status_answer(answer if result.get("rc") == 0 else {})
    read = read_answer(result.get("stdout"))
    return {"facts": facts, "tails": tails, "training": training_read(facts),
            "other_release": result.get("rc") == 0 and not read["read"] and bool(read["said"])}


def _ray_verdict(result, answer, host):
    """The head's `ray` (a worker's join runs in the background and is read with the others' by _run_time.ray_joins).

    members: the Ray nodes its GCS listed alive after the step (["IP=NPUS", ...], as the members step's); complete: that list holds every node's NPUs
    (the wait has nothing to wait for when no worker joins); lock: how it took the deploy's lock; kept: the head's Ray was
    left alone and this deploy took the lock without waiting for another one (the settings check's read of the training
    still holds); released: the step released the lock itself (asked to by VERL_DEPLOY_LOCK_RELEASE_IF_WHOLE, since a
    training runs from these settings, it left Ray alone and found every node's NPUs): no unlock step follows, and a later
    step that changes something takes the lock again; say: the step's sentences are worth showing (how it took the lock,
    or what it did to Ray); problem: why the deploy stops here, or ""."""
    if "state" in answer and "lock" not in answer:
        return {}
    rc, lock = result.get("rc"), answer.get("lock", "")
    changed = step_changed(result)
    problem = ""
    if rc == LOCK_REFUSED:
        problem = "%s (head): %s" % (host, _SCRIPT_PREFIX.sub("", (result.get("stderr") or "").strip()))
    elif rc != 0:
        problem = "%s (head): Ray did not start: its ray step ended with rc %s; its last lines: %s" % (
            host, "-" if rc is None else rc, last_lines(result))
    elif not answer.get("members"):
        problem = ("%s (head): Ray was started, but asking it for its nodes failed: %s. Fix: look at Ray in the container (ray status; "
                   "/tmp/ray/session_latest/logs), then run deploy.yml again." % (host, (result.get("stderr") or "").strip()[-600:] or "no output"))
    return {
        "members": _members(answer.get("members")), "complete": answer.get("complete") == "true", "lock": lock,
        "released": rc == 0 and answer.get("released") == "true",
        "kept": rc == 0 and not changed and lock not in _LOCK_AFTER_ANOTHER,
        "say": rc == LOCK_REFUSED or lock in _LOCK_AFTER_ANOTHER or (rc == 0 and changed), "problem": problem,
    }


def _lock_verdict(result, answer, host):
    """The deploy's lock taken on the head's host: lock, how (held, free, waited, taken-over); problem: why the deploy stops
    here (another deploy holds it, or its folder cannot be written), named as the Ray stage names a refusal, or ""."""
    refused = result.get("rc") not in (0, None)
    return {"lock": answer.get("lock", ""),
            "problem": "%s (head): %s" % (host, _HOST_PREFIX.sub("", (result.get("stderr") or "").strip())) if refused else ""}


# The one table of steps: name -> (kind, primitives, verdict). kind: look (the script's step that changes nothing whatever
# it answers; unlock is the run's own bookkeeping), change (the script's step that may change the node), decided look /
# decided change (decided here, in Python, between the primitives it names: decided_step), host look (run on the head's
# host, not in the container: node_step's lock_folder, _deploy_lock.host_step; lock is the run's own bookkeeping too, and
# unlock runs in either), primitive (the script's, run only by a decided step; supervise by start-training, come-back by
# the container's start command). verdict(result, answer, host): the typed keys node_step returns beside changed, answer
# and said (step_result), None for none. In the order of verl_control.sh's `case` and usage, which
# tests/test_control_script.py holds equal to it; node_step's and wait_progress' choices are CONTROL_STEPS.
STEPS = {
    "members": ("look", (), _members_verdict),
    "ray-progress": ("decided look", ("members",), None),
    "ray": ("decided change", ("ray-look", "ray-start", "members", "unlock"), _ray_verdict),
    "ray-check": ("decided look", ("ray-look",), None),
    "ray-look": ("primitive", (), None),
    "ray-start": ("primitive", (), None),
    "training-state": ("look", (), _training_verdict),
    "start-training": ("change", (), None),
    "supervise": ("primitive", (), None),
    "verify-look": ("decided look", ("verify-facts",), None),
    "verify-facts": ("primitive", (), None),
    "npus-look": ("look", (), None),
    "status": ("look", (), _status_verdict),
    "stop-training": ("change", (), None),
    "stop-ray": ("change", (), None),
    "unlock": ("look", (), None),
    "lock": ("host look", (), _lock_verdict),
    "come-back": ("primitive", (), None),
}
CONTROL_STEPS = tuple(name for name, (kind, _uses, _verdict) in STEPS.items() if kind != "primitive")
LOOK_STEPS = frozenset(name for name, (kind, _uses, _verdict) in STEPS.items() if kind.endswith("look"))
DECIDED_STEPS = tuple(name for name, (kind, _uses, _verdict) in STEPS.items() if kind.startswith("decided"))
HOST_STEPS = tuple(name for name, (kind, _uses, _verdict) in STEPS.items() if kind.startswith("host"))
PRIMITIVES = tuple(name for name, (kind, _uses, _verdict) in STEPS.items() if kind == "primitive")


def step_result(step, result, host="?"):
    """A step's result as the tasks read it (verl.deploy.node_step returns it beside the command's rc, stdout and stderr).

    step: the control script's step, or None for a role's script (install_files.sh, the container check, the SwanLab proof):
    each answers with one JSON document (read_answer). changed: step_changed, and never for a step that only looks; a
    role's script changed something only when it says so (changed "true"), so that one that only reads need not say;
    answer: its answer as a dict; said: its sentences for people; and the step's verdict (STEPS), host naming the node in
    its messages."""
    read = read_answer(result.get("stdout", ""))
    if step is None:
        # A role's script, or a background job collected without its step's name (a worker's join).
        return {"changed": read["answer"].get("changed") == "true", "answer": read["answer"], "said": read["said"]}
    found = {"changed": step not in LOOK_STEPS and step_changed(result), "answer": read["answer"], "said": read["said"]}
    verdict = STEPS[step][2]
    return dict(found, **verdict(result, read["answer"], host)) if verdict else found
