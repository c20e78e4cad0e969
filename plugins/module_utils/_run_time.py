# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Private to the verl.deploy collection: may change without notice.
#
# What the deploy decides at run time, from what the control script's steps answered (verl_control.sh in the training
# container: its answer, its exit code, its stderr; each step's own verdict is _control_step.step_result's) and the facts
# the stages before declared. Pure functions,
# each with its table in tests/unit/plugins/module_utils/test_run_time.py; the playbooks call them through the filters
# of the same names, once per step, and keep the result under a declared name.
from __future__ import annotations

import base64
import hashlib
import json
import os

from ansible_collections.verl.deploy.plugins.module_utils._control_step import in_cluster, is_stalled, last_lines, read_answer
from ansible_collections.verl.deploy.plugins.module_utils._node_facts import call_digest, check_record
from ansible_collections.verl.deploy.plugins.module_utils._training_state import _number, _step


def _true(value):
    """A boolean fact as Ansible may hand it over (a bool, or its text when a template rendered it)."""
    return value.strip().lower() in ("true", "yes", "1") if isinstance(value, str) else bool(value)


def ray_joins(workers, master, port, wait=None):
    """The workers' joins as each collected its own, and the head's wait, as the head reports them (report.yml).

    workers: every worker's variables (hostvars); a worker whose join ran in the background in this run holds
    __ray_join_result (collect.yml: node_step's collected result, its sentences read (said), with item, answered, rejoined). wait: the head's wait's result
    (wait.yml; skipped when there was nothing to wait for).
    unanswered: the workers that stopped answering; rejoined: those whose Ray was started again (the training's workers on
    them are gone); said: what the joins said; problem: one sentence per join that did not end well (still running when its
    bound passed, or a non-zero exit), with the fix, or ""; wait_failed: the wait ran and did not see every node's NPUs."""
    results = [vars_["__ray_join_result"] for vars_ in workers if _defined(vars_, "__ray_join_result")]
    unanswered = [r["item"] for r in results if not r.get("answered")]
    rejoined = [r for r in results if r.get("rejoined")]
    failed = [r for r in results if r.get("answered") and r.get("rc") != 0]
    problem = ""
    if failed:
        problem = " ".join("%s (worker): Ray did not join the head: its ray step ended with rc %s; its last lines: %s."
                           % (r["item"], "-" if r.get("rc") is None else r["rc"], last_lines(r)) for r in failed)
        problem += " Fix: check Ray on those nodes (status.yml), the network between them and %s:%s." % (master, port)
    wait = wait or {"skipped": True}
    return {"unanswered": unanswered, "rejoined": [r["item"] for r in rejoined],
            "said": [line for r in results for line in r.get("said") or []], "problem": problem,
            "wait_failed": not wait.get("skipped") and wait.get("rc", 1) != 0}


def ray_joining(workers, left_alone, head_kept):
    """After the workers' step (worker.yml), on the head: which workers join the head's Ray in the background in this run
    (their step started an async job), and whether the reach check (reach.yml) can tell anything: not when the training is
    left as it was found on a cluster this run left as it was (training_left_as_found): nothing is started."""
    joining = [vars_["inventory_hostname"] for vars_ in workers
               if _defined(vars_, "__ray_start") and "ansible_job_id" in (vars_["__ray_start"] or {})]
    return {"joining": joining, "reach_needed": not training_left_as_found(left_alone, head_kept, joining)}


def _defined(vars_, name):
    """Whether a host's variables hold name (a mapping or Ansible's hostvars of one host)."""
    try:
        return name in vars_ and vars_[name] is not None
    # An undefined value raises when it is read.
    except Exception:  # pylint: disable=broad-except
        return False


def worker_in_ray(members, node_ip, npus, raylet):
    """Whether a worker is in the head's Ray already, from what this run has read: the head's list of nodes alive
    (members, "IP=NPUS,...") holds this node's address with all of its NPUs, and the container stage's look saw its raylet
    running (raylet: True, False, or None when that look did not run). Only then is the worker left alone without a call of
    its own; anything else is asked in the container (the ray-check step, the same condition), which also covers a
    node whose container sees itself under another address."""
    # None (the look did not run) reads as not seen.
    return _true(raylet) and in_cluster(members, node_ip, npus)


def training_left_as_found(left_alone, head_kept, workers_started):
    """Whether the training is as the settings check read it, on a cluster this run left as it was: that read found a
    training this run leaves alone (one that runs from these settings, or one that finished, and no verl_restart: the
    settings check's _training_left_alone), the head's Ray was left alone and this deploy waited for no other one's lock
    (the head's ray step's kept: _control_step.step_result), and no worker's Ray was started in this run. Then the read still holds (no second read), and
    the reach check has nothing to tell (no probe): nothing is started, and a running training's rendezvous went through
    those ports already."""
    return _true(left_alone) and _true(head_kept) and not workers_started


def training_plan(now, launch, lost_workers, host):
    """What the training stage does on the head, from the training's state (training-state's verdict:
    _control_step.parse_training_state) and the launch configuration (its restart, status_stall_seconds, train_steps,
    resume_mode).

    start: it does not run (never started, crashed, stopped, orphaned by a restarted Ray), or verl_restart=true, or it runs
    but its worker group lost a node; a training that finished (exit code 0) is not started again without verl_restart.
    stop_first: a training (or its orphan) is stopped before the new start. left_alone, stalled, why_again: the sentences.
    A finished training started again that resumes (resume_mode auto, it saved) past this run's train_steps trains one
    step more and ends, as verl's fit loop starts at the resumed step + 1 and that step reaches the total: why_again says
    so, and how to train further or start over."""
    state = now["state"]
    restart = _true(launch.get("restart"))
    stall_seconds = _number(launch.get("status_stall_seconds"), 1800)
    start = state not in ("running", "finished") or restart or (state == "running" and bool(lost_workers))
    left_alone = stalled = why_again = ""
    if not start:
        left_alone = ("Training runs on %s (pid %s), started from these settings; left alone. To start it again, run again with "
                      "-e verl_restart=true." % (host, now["pid"]) if state == "running" else
                      "Training finished on %s (exit code 0); left alone. To train further, raise verl_train_steps and run again "
                      "with -e verl_restart=true (it resumes from its last checkpoint)." % host)
        if is_stalled(now, stall_seconds):
            stalled = ("%s: the training left alone is STALLED: it runs (pid %s) but logged no step for %s s (more than %d s, "
                       "verl_status_stall_seconds); a hung collective (HCCL) looks like this. Fix: read its log, then restart it with "
                       "-e verl_restart=true (it resumes from its checkpoints)." % (host, now["pid"], now["quiet_for"], stall_seconds))
    elif state == "running" and lost_workers and not restart:
        why_again = ("%s: the training's workers on %s went with their Ray, which this run started again; verl's worker group cannot "
                     "go on without them, so the training is started again (it resumes from its checkpoints)." % (host, ", ".join(lost_workers)))
    elif state == "finished":
        why_again = _one_step_more(now, launch, host)
    elif state == "restarting":
        why_again = ("%s: keep-alive was about to start the training again after a failure (status.yml says why); this deploy "
                     "starts it itself, resuming from its checkpoints, and waits for it." % host)
    return {"state": state, "pid": now["pid"], "start": start, "stop_first": start and state in ("running", "orphaned", "restarting"),
            "left_alone": left_alone, "stalled": stalled, "why_again": why_again}


def _one_step_more(finished, launch, host):
    """The sentence for a finished training started again that resumes at or past this run's train_steps, or ""."""
    settings = (finished.get("launch") or {}).get("settings") or {}
    last = _step(finished.get("last_step"))
    reached = _number(last[1] if last else settings.get("train_steps"), 0)
    steps = _number(launch.get("train_steps"), 0)
    if launch.get("resume_mode") != "auto" or _number(settings.get("save_freq"), -1) <= 0 or not reached or steps > reached:
        return ""
    return ("%s: the training had finished at step %d; started again with verl_train_steps=%d, verl resumes from its last "
            "checkpoint (global_step_%d) and, past its total already, trains, saves and logs one step more (step %d) and ends. "
            "To train further, give a larger verl_train_steps; to start over, verl_resume_mode=disable." % (
                host, reached, steps, reached, reached + 1))


def container_check(argv, env, read, as_read, workdir):
    """The container stage's check (roles/container/files/npu_stack_check.sh), and whether the pre-check's run of it stands
    for it. argv, env: its call as this run renders it; read: the pre-check's run of the call the last deploy's check kept
    (node_facts' container_check: the digest of that call, rc, stdout); as_read: the container ran when the pre-check read
    it, and this stage neither created nor started it; workdir: verl_workdir, where the check keeps its record.

    reuse: the pre-check ran this same call in this same container and it passed, and the training held the NPUs then (its
    first_op names the holders), so the stage's own check would have skipped its NPU operation too and found the same;
    result: what to judge then (the pre-check's run). Otherwise the stage runs the check: call (argv, env as text),
    record (the call as the check keeps it, JSON, for the next deploy's pre-check) and record_path (where it keeps it)."""
    call = {"argv": [str(arg) for arg in argv], "env": {str(key): str(value) for key, value in (env or {}).items()}}
    read = read or {}
    reuse = _true(as_read) and read.get("rc") == 0 and read.get("record") == call_digest(call) and bool(_first_op(read).get("held"))
    return dict(call, record=json.dumps(call, sort_keys=True), record_path=check_record(workdir), reuse=reuse,
                result=read if reuse else None)


def _first_op(result):
    """The check's first_op (in its answer's stack), {} without one."""
    try:
        return json.loads(read_answer(result.get("stdout"))["answer"].get("stack") or "{}").get("first_op") or {}
    except (ValueError, AttributeError):
        return {}


# The collection's own Python that runs on the nodes beside the control script: keep-alive's decision and the failure table it
# reads (the training's supervisor runs _keep_alive.py), the npu-smi parser the NPU sampler reads, and the deploy's lock
# (the control script's steps on the head take, renew and release it with _deploy_lock.py).
NODE_PYTHON = ("_failures.py", "_keep_alive.py", "_npu_smi.py", "_deploy_lock.py")


def node_python_b64():
    """NODE_PYTHON's text as this collection holds it (the module_utils folder of this file), base64."""
    folder = os.path.dirname(os.path.abspath(__file__))
    found = {}
    for name in NODE_PYTHON:
        with open(os.path.join(folder, name), "rb") as handle:
            found[name] = base64.b64encode(handle.read()).decode("ascii")
    return found


def install_plan(files_b64, names, modes, installed):
    """Which launch files install.yml writes. files_b64: name -> the text this run renders, base64 (NODE_PYTHON's is the
    collection's own); names: the files in the order they are written (verl_control.env before verl_control.sh); modes:
    name -> mode; installed: what the container holds, "MODE SHA256 NAME" per file (look.sh's lines). wanted: those lines
    as this run renders the files; differ: the files whose content or mode differs, in order; stdin: install_files.sh's
    input for them, "MODE NAME BASE64" per line."""
    files_b64 = dict(node_python_b64(), **files_b64)
    wanted = ["%s %s %s" % (modes[name], hashlib.sha256(base64.b64decode(files_b64[name])).hexdigest(), name) for name in names]
    held = set(installed or ())
    differ = [name for name, line in zip(names, wanted) if line not in held]
    return {"wanted": wanted, "differ": differ, "stdin": "\n".join("%s %s %s" % (modes[name], name, files_b64[name]) for name in differ)}


_NOT_STAGED = "the container stage did not run in this deploy"


def where_to_look(launch, head, image_verl=None, prompts=None, swanlab_proof=""):
    """The deploy's last message on the head and the same as the run's stats (verl_deploy_summary, which AWX keeps):
    the training's log, Ray's dashboard, SwanLab and TensorBoard, the image's verl and the count of the prompts.

    launch: the launch configuration. image_verl, prompts: what the container stage's check found on the head
    (_container_image_verl, _container_prompts_summary), None when it did not run. swanlab_proof: the SwanLab stage's
    verdict on its proof run (_swanlab_proof_summary), "" when none."""
    swanlab = launch.get("swanlab") or {}
    if launch.get("swanlab_enabled"):
        swanlab_where = "%s, %sworkspace %s, project %s, local logs %s%s" % (
            swanlab.get("mode"), "server %s, " % swanlab["host"] if swanlab.get("host") else "", swanlab.get("workspace"),
            launch.get("project_name"), swanlab.get("log_dir"), "; " + swanlab_proof if swanlab_proof else "")
    else:
        swanlab_where = "off"
    tensorboard = launch.get("tensorboard")
    tensorboard_where = ("%s on the node that runs verl's driver (TaskRunner); view: tensorboard --logdir %s" % (
        tensorboard["dir"], tensorboard["root"]) if tensorboard else "off")
    log = "%s/%s%s_*.log" % (launch["log_dir"], launch["training"]["log_name"], launch["experiment_name"])
    dashboard = "http://%s:%s" % (launch["master_addr"], launch["dashboard_port"])
    image = image_verl or "unknown (%s; status.yml shows it)" % _NOT_STAGED
    stats = {"head": head, "container": launch["container_name"], "training_log": log, "experiment": launch["experiment_name"],
             "ray_dashboard": dashboard, "swanlab": swanlab_where, "tensorboard": tensorboard_where, "image_verl": image}
    lines = ["Training log: %s in container %s on %s" % (log, launch["container_name"], head), "Ray dashboard: " + dashboard,
             "SwanLab: " + swanlab_where, "TensorBoard: " + tensorboard_where, "Image's verl: " + image,
             "Prompts: %s" % (prompts if prompts is not None else "not counted (%s)" % _NOT_STAGED),
             "Status: ansible-playbook playbooks/status.yml; stop: ansible-playbook playbooks/stop.yml"]
    return {"lines": lines, "stats": stats}
