"""verl_control.sh, executed: the training's state, the status lines (running, stalled, crashed...),
the detached start with its step times and exit code, the deploy's looks, and the targeted stop; every step the
playbooks read answers with one JSON document, its sentences and its answer (read in plugins/module_utils/_control_step.py).
Ray's steps and verify-look run as verl.deploy.node_step runs them on a host: decided in Python between the script's primitives, each
run through a stand-in `docker exec` that runs it here.

A stand-in start_verl.sh plays the training: a process whose command line holds this test's own
training pattern (each test renders a unique module name, so parallel tests never see each other's).
"""
from __future__ import annotations

import concurrent.futures
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from ansible_collections.verl.deploy.plugins.module_utils._control_step import (CONTROL_STEPS, DECIDED_STEPS, HOST_STEPS, PRIMITIVES, STEPS,
                                                                                classify, parse_training_state, read_answer)
from ansible_collections.verl.deploy.plugins.module_utils._launch_config import training_entry
from ansible_collections.verl.deploy.plugins.module_utils._report import terminal_lines
from ansible_collections.verl.deploy.plugins.module_utils._training_state import launch_record, node_status, status_report
from ansible_collections.verl.deploy.plugins.modules import node_step
from helpers.answers import status_step
from helpers.launch_helpers import launch_ok, write_scripts

REPO = Path(__file__).resolve().parent.parent

STAND_IN_START = r"""#!/bin/bash
# Stand-in start_verl.sh: `address` as the real one prints it; `train` runs a process holding the
# training pattern, prints step lines every STEP_SECONDS, and exits with EXIT_CODE (or on SIGTERM).
case "$1" in
address) echo "10.0.0.1 10.0.0.2" ;;
# What `ray start --head` prints on stdout (its banner), starting nothing here; or, while the file RAY_FAILS counts
# down, how Ray fails on a loaded node.
ray)
    if [ -s "${RAY_FAILS:-}" ] && [ "$(cat "$RAY_FAILS")" -gt 0 ]; then
        echo $(( $(cat "$RAY_FAILS") - 1 )) >"$RAY_FAILS"
        echo "Exception: The current node timed out during startup. This could happen because some of the raylet" \
            "failed to startup or the GCS has become overloaded." >&2
        exit 1
    fi
    printf '%s\n' "Local node IP: 10.0.0.2" "--------------------" "Ray runtime started." "--------------------" ;;
train)
    # While the file FAILS counts down, an attempt logs its steps and FAIL_TEXT to a log file of its own (as run_training.sh
    # tees each start to a new one), saves its last step as verl's tracker and exits 1; each attempt records the
    # VERL_DEPLOY_RESUME keep-alive gave it in RESUMES.
    if [ -s "${FAILS:-}" ] && [ "$(cat "$FAILS")" -gt 0 ]; then
        # LATER: each attempt fails later than the one before (another step), its failure not a repeat.
        [ -z "${LATER:-}" ] || STEPS=$((STEPS + 3 - $(cat "$FAILS")))
        echo $(( $(cat "$FAILS") - 1 )) >"$FAILS"
        . ./verl_control.env
        echo "resume=${VERL_DEPLOY_RESUME:-}" >>"${RESUMES}"
        log="${LOG_DIR}/${LOG_PREFIX}test_$(date +%s%N).log"
        program='for i in $(seq "$STEPS"); do echo "step:$i - actor/pg_loss:0.1"; sleep "$STEP_SECONDS"; done; exit 1'
        bash -c "$program" -m "$MODULE" | tee "${log}"
        printf '%s\n' "$FAIL_TEXT" >>"${log}"
        mkdir -p "${CKPTS_DIR}" && echo "$STEPS" >"${CKPTS_DIR}/latest_checkpointed_iteration.txt"
        exit 1
    fi
    [ -z "${RESUMES:-}" ] || echo "resume=${VERL_DEPLOY_RESUME:-}" >>"${RESUMES}"
    program='trap "exit 0" TERM
for i in $(seq "$STEPS"); do echo "step:$i - actor/pg_loss:0.1"; sleep "$STEP_SECONDS"; done
sleep "$HOLD" & wait
exit "$EXIT_CODE"'
    bash -c "$program" -m "$MODULE"
    code=$?
    # The supervisor reads the log's last lines before it writes the exit code: AFTER_END seconds here.
    sleep "${AFTER_END:-0}"
    exit "${code}"
    ;;
esac
"""


# `docker exec [-i] [-e NAME]... CONTAINER ARGV...` on this machine: ARGV run here, in the environment the CLI was given (the
# values of the -e names are in it, as the CLI passes them on).
DOCKER_EXEC = """#!/bin/sh
shift
while [ $# -gt 0 ]; do case "$1" in -i) shift ;; -e) shift 2 ;; *) break ;; esac; done
shift
exec "$@"
"""


def decided_step(folder, docker, step, args, env):
    """A step decided on the host (Ray's, verify-look) as verl.deploy.node_step runs it; the lock identity (VERL_DEPLOY_LOCK_* in env) goes to lock_env, as the
    deploy passes it (`env VERL_DEPLOY_LOCK_TOKEN=...`)."""
    lock_env = ["%s=%s" % (name, value) for name, value in sorted(env.items()) if name.startswith("VERL_DEPLOY_LOCK_")]
    params = {"container": "verl", "step": step, "workdir": str(folder), "args": list(args), "lock_env": ["env"] + lock_env if lock_env else [],
              "argv": None, "stdin": None, "chdir": None,
              "env": {name: value for name, value in env.items() if os.environ.get(name) != value and not name.startswith("VERL_DEPLOY_LOCK_")}}
    done = node_step.run(params, str(docker))
    return subprocess.CompletedProcess([step, *args], done.get("rc", 1), done.get("stdout", ""), done.get("stderr") or done.get("msg", ""))


@pytest.fixture()
def control(tmp_path):
    # One module per algorithm (the rendered scripts are DAPO's); the stand-in plays MODULE, DAPO's by default.
    module = "recipe.test_%s.main" % uuid.uuid4().hex[:12]
    other = module.replace(".main", ".grpo")
    logs = tmp_path / "logs"
    logs.mkdir()
    config = launch_ok(verl_log_dir=str(logs), verl_node_ip="10.0.0.1", verl_socket_ifname="eth0")
    config["training"] = dict(training_entry("dapo", modules=[module, other]), module=module, file=module.replace(".", "/") + ".py")
    folder = write_scripts(config, tmp_path / "verl")
    (folder / "start_verl.sh").write_text(STAND_IN_START)
    (folder / "launch.json").write_text(json.dumps(launch_record(config)))
    env = dict(os.environ, MODULE=module, STEPS="3", STEP_SECONDS="0.3", HOLD="0", EXIT_CODE="0", RAY_TMPDIR=str(tmp_path / "ray-tmp"))
    docker = tmp_path / "docker"
    docker.write_text(DOCKER_EXEC)
    docker.chmod(0o755)

    def run(*argv, timeout=60, **overrides):
        if argv[0] in DECIDED_STEPS:
            return decided_step(folder, docker, argv[0], argv[1:], dict(env, **overrides))
        return subprocess.run(["bash", str(folder / "verl_control.sh"), *argv], env=dict(env, **overrides), capture_output=True,
                              text=True, timeout=timeout, check=False)

    run.logs, run.state, run.module, run.other, run.folder = logs, logs / ".verl-deploy", module, other, folder
    yield run
    for name in (module, other):
        subprocess.run(["pkill", "-f", "--", name], check=False)


def said(proc):
    """A step's sentences for people (its document's said)."""
    return read_answer(proc.stdout)["said"]


def answer_of(proc):
    """A step's answer (its document's answer)."""
    return read_answer(proc.stdout)["answer"]


def lines(proc):
    """A step's document as lines: its sentences, then its answer as KEY=VALUE (sorted by key)."""
    return said(proc) + ["%s=%s" % item for item in sorted(answer_of(proc).items())]


def text(proc):
    return "\n".join(lines(proc))


def state(run):
    """The training as the playbooks read it: the script's facts, classified in Python (parse_training_state)."""
    proc = run("training-state")
    assert proc.returncode == 0, proc.stderr
    return parse_training_state(proc.stdout)


def shown(run, stall=1800):
    """What status.yml shows of this node (node_status says the status step's facts), as one text."""
    proc = run("status", "", "5")
    assert proc.returncode == 0, proc.stderr
    return "\n".join(node_status(status_step(proc.stdout), "verl", "running", "-", "/verl/verl_control.sh", stall))


def status_of(proc):
    """The status step's facts and tails, as node_step reads them."""
    found = status_step(proc.stdout, proc.returncode)
    return found["facts"], found["tails"]


def wait_for(check, seconds=20):
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline
        time.sleep(0.2)


def test_nothing_started_yet(control):
    assert state(control)["state"] == "not-started"
    status = shown(control)
    assert "training: not started on this node by verl.deploy" in status
    assert "verl: unknown (no verl/version/version in " in status
    version = control.logs.parent / "verl" / "verl" / "version"
    version.mkdir(parents=True)
    (version / "version").write_text("0.7.0.dev\n")
    assert "verl: 0.7.0.dev" in shown(control).splitlines()


def test_start_records_steps_and_the_exit_code_of_a_crash(control):
    (control.logs / "verl_qwen3_8b_run_1.log").write_text("step:0\n")
    assert lines(control("start-training", EXIT_CODE="3")) == ["training: started", "changed=true", "state=started"]
    wait_for((control.state / "exit_code").exists)
    found = state(control)
    assert found["state"] == "crashed" and found["exit_code"] == "3" and found["last_step"].endswith(" 3")
    assert found["first_step"].endswith(" 1") and found["ray_session"] == ""
    status = shown(control)
    assert "training: CRASHED (exit code 3)" in status and "step 3 logged at" in status
    # The facts status.yml decides from (verl.deploy.status_report): this node in Ray, the training's state lines; the
    # tails are text (the log's "state=..." line is the log's, not the training's state).
    with open(control.logs / "verl_qwen3_8b_run_1.log", "a", encoding="utf-8") as log:
        log.write("state=running\n")
    found, tails = status_of(control("status", "", "5"))
    assert (found["in_ray"], classify(found), found["exit_code"]) == ("no", "crashed", "3"), found
    assert tails["log"][-1] == "state=running" and tails["start_output"], tails
    assert "log: %s/verl_qwen3_8b_run_1.log (last 5 lines)" % control.logs in status
    assert "start output: %s/start_verl.out" % control.logs in status  # and, the training having crashed, its last lines


def test_a_clean_end_is_finished(control):
    control("start-training")
    wait_for((control.state / "exit_code").exists)
    assert state(control)["state"] == "finished"


def test_a_look_after_the_trainer_ended_and_before_its_exit_code_waits_for_the_code(control):
    """The trainer gone, its supervisor still reading the last lines: a look then read a training that finished as crashed
    (a comparison recorded a mask that logged all its steps as failed, CI 2026-12-06)."""
    control("start-training", AFTER_END="2")
    wait_for(lambda: (control.state / "last_step").exists() and (control.state / "last_step").read_text().endswith(" 3\n"))
    wait_for(lambda: subprocess.run(["pgrep", "-f", "--", control.module], check=False).returncode != 0)
    assert not (control.state / "exit_code").exists()
    found = state(control)
    assert (found["state"], found["exit_code"]) == ("finished", "0"), found


def test_running_then_stalled_then_stopped(control):
    assert control("start-training", HOLD="60").returncode == 0
    wait_for(lambda: (control.state / "last_step").exists() and (control.state / "last_step").read_text().endswith(" 3\n"))
    found = state(control)
    assert found["state"] == "running" and found["pid"]
    assert "training: running (pid %s)" % found["pid"] in shown(control)
    # No step for longer than the stall bound: a hung collective looks like this.
    (control.state / "last_step").write_text("%d 3\n" % (time.time() - 100))
    assert "training: STALLED: runs (pid %s) but logged no step for" % found["pid"] in shown(control, stall=30)
    assert "a training already runs" in control("start-training").stderr
    stop = control("stop-training")
    assert stop.returncode == 0 and lines(stop) == ["training: stopped", "changed=true", "state=stopped"], stop.stderr
    assert state(control)["state"] == "stopped"
    again = control("stop-training")
    assert said(again) == ["training: not running"]
    assert answer_of(again) == {"changed": "false", "state": "not-running"}


def test_a_training_of_the_other_algorithm_is_found_and_stopped(control):
    """After verl_algorithm changed, the scripts of the new algorithm still find the training that runs (to report
    it, and to stop it on verl_restart=true): the pattern holds both entry points."""
    assert control("start-training", HOLD="60", MODULE=control.other).returncode == 0
    wait_for(lambda: state(control)["state"] == "running")
    status = shown(control)
    assert "training: running (pid" in status
    assert "algorithm: DAPO (resume mode auto)" in status, status
    assert answer_of(control("stop-training")) == {"changed": "true", "state": "stopped"}
    assert state(control)["state"] == "stopped"


def test_a_training_whose_ray_session_changed_is_orphaned(control, tmp_path):
    ray_dir = tmp_path / "ray-tmp" / "ray"
    ray_dir.mkdir(parents=True)
    (ray_dir / "session_latest").symlink_to(ray_dir / "session_1")
    control("start-training", HOLD="60")
    wait_for(lambda: state(control)["state"] == "running")
    assert state(control)["ray_session"] == "session_1"
    (ray_dir / "session_latest").unlink()
    (ray_dir / "session_latest").symlink_to(ray_dir / "session_2")
    assert state(control)["state"] == "orphaned"


def test_with_rays_folder_moved_the_session_is_read_there(control, tmp_path):
    """--temp-dir in verl_ray_start_args (verl_control.env's RAY_TEMP_DIR): Ray's session_latest is in that folder; the
    default folder's (a Ray started before, without it) says nothing about the training."""
    moved, default = tmp_path / "moved", tmp_path / "ray-tmp" / "ray"
    for folder, session in ((moved, "session_1"), (default, "session_old")):
        folder.mkdir(parents=True)
        (folder / "session_latest").symlink_to(folder / session)
    with open(control.folder / "verl_control.env", "a") as env:
        env.write("RAY_TEMP_DIR=%s\n" % moved)
    control("start-training", HOLD="60")
    wait_for(lambda: state(control)["state"] == "running")
    assert state(control)["ray_session"] == "session_1"
    (default / "session_latest").unlink()
    (default / "session_latest").symlink_to(default / "session_new")
    assert state(control)["state"] == "running", "the default folder is not Ray's"
    (moved / "session_latest").unlink()
    (moved / "session_latest").symlink_to(moved / "session_2")
    assert state(control)["state"] == "orphaned"


def test_verify_look_answers_once_per_call_until_the_log_grew(control):
    assert control("verify-look").returncode == 3, "nothing started: not yet"
    control("start-training", HOLD="60", STEPS="40", STEP_SECONDS="0.2")
    log = control.logs / "verl_qwen3_8b_run_2.log"
    log.write_text("step\n")
    wait_for(lambda: state(control)["state"] == "running")
    first = control("verify-look")
    assert first.returncode == 3 and "waiting for it to grow" in text(first), first.stderr
    with open(log, "a") as handle:
        handle.write("step\n")
    grown = control("verify-look")
    assert grown.returncode == 0 and "its log %s grows" % log in text(grown)


def test_verify_look_names_a_training_that_ended(control):
    control("start-training", EXIT_CODE="1", STEPS="0")
    wait_for((control.state / "exit_code").exists)
    proc = control("verify-look")
    assert proc.returncode == 1 and "the training ended with exit code 1 before it ran" in proc.stderr


def test_ray_progress_counts_nothing_without_ray(control):
    proc = control("ray-progress", "2", "8", **no_ray_here(control))
    assert proc.returncode == 3 and said(proc) == ["0/2 nodes, 0/16 NPU"], proc.stderr
    proc = control("ray-progress", "2", "8", **ray_here(control, "10.0.0.1=8,10.0.0.2=8"))
    assert proc.returncode == 0 and said(proc) == ["2/2 nodes, 16/16 NPU"], proc.stderr


def test_stop_ray_answers_whether_it_changed_anything(control):
    proc = control("stop-ray", **no_ray_here(control))
    assert proc.returncode == 0 and lines(proc) == ["ray: not running", "changed=false", "state=not-running"]


def test_the_removed_verify_step_is_unknown(control):
    """The deploy polls verify-look (wait_progress); the old blocking verify step is gone."""
    proc = control("verify", "10")
    assert proc.returncode == 1 and "unknown step 'verify'" in proc.stderr


def test_a_worker_refuses_head_steps(tmp_path):
    folder = write_scripts(launch_ok(is_head=False, nnodes=2, verl_train_batch_size=16), tmp_path)
    for step in ("members", "verify-facts", "training-state", "start-training", "stop-training"):
        proc = subprocess.run(["bash", str(folder / "verl_control.sh"), step], capture_output=True, text=True, timeout=30, check=False)
        assert proc.returncode != 0 and "runs on the Ray head only" in proc.stderr, step
    proc = subprocess.run(["bash", str(folder / "verl_control.sh"), "bogus"], capture_output=True, text=True, timeout=30, check=False)
    assert "unknown step 'bogus'" in proc.stderr


def test_a_worker_whose_container_restarted_comes_back_to_ray_unless_stop_took_it_out(control, tmp_path):
    """The container's start command runs come-back: a worker the deploy joined to Ray (ray-start wrote ray_wanted) joins
    again by itself; after stop.yml's stop-ray it stays out; on the head it leaves everything to deploy.yml."""
    head = control("come-back", **no_ray_here(control))
    assert lines(head) == ["ray: nothing to rejoin (the head, stopped by stop.yml, or running)", "changed=false"]
    worker = write_scripts(launch_ok(is_head=False, nnodes=2, verl_train_batch_size=16, verl_log_dir=str(control.logs)), tmp_path / "w")
    (worker / "start_verl.sh").write_text(STAND_IN_START)
    env = dict(os.environ, **no_ray_here(control))

    def step(*argv):
        return subprocess.run(["bash", str(worker / "verl_control.sh"), *argv], env=env, capture_output=True, text=True, timeout=60,
                              check=False)
    assert lines(step("come-back"))[-1] == "changed=false"  # never joined by a deploy: nothing to come back to
    assert step("ray-start").returncode == 0 and (control.state / "ray_wanted").exists()
    back = step("come-back")
    assert back.returncode == 0 and lines(back) == [
        "ray: the container restarted; stopping this node's stale Ray first.", "ray: joined the head again after the container restarted",
        "changed=true"]
    assert "Ray runtime started." in back.stderr
    stopped = step("stop-ray")
    assert stopped.returncode == 0 and not (control.state / "ray_wanted").exists()
    assert lines(step("come-back"))[-1] == "changed=false"


def lock_env(token, holder="controller c1 pid 11", wait="2"):
    return {"VERL_DEPLOY_LOCK_TOKEN": token, "VERL_DEPLOY_LOCK_HOLDER": holder, "VERL_DEPLOY_LOCK_WAIT": wait}


def on_host(step, folder, **env):
    """node_step's lock or unlock with lock_folder, as the module runs it on the head's host (the same file the script keeps)."""
    done = node_step.run({"lock_folder": str(folder), "step": step, "lock_env": ["env"] + ["%s=%s" % pair for pair in sorted(env.items())]})
    return subprocess.CompletedProcess([step], done["rc"], done["stdout"], done["stderr"])


def test_the_lock_a_deploy_takes_on_the_host_before_its_first_change_is_the_one_its_steps_hold(control):
    """deploy.yml takes its lock on the head's host before the container stage, with the longer lease of the stages before
    Ray's; its steps in the container find it held (and set the lease back), another deploy is refused on the host with the
    script's words, and the end's unlock on the host releases it."""
    lock = control.state / "deploy.lock"
    first = on_host("lock", control.state, **dict(lock_env("run-a", "controller c1 pid 11 (AWX job 7)"), VERL_DEPLOY_LOCK_LEASE="3000"))
    assert first.returncode == 0, first.stderr
    assert answer_of(first) == {"changed": "true", "state": "held", "lock": "free"}
    assert "token=run-a" in lock.read_text() and "lease=3000" in lock.read_text()
    # Another deploy, on the host (its own take before its first change) or in the container: refused, naming the holder.
    other = on_host("lock", control.state, **lock_env("run-b", "controller c2 pid 22", wait="0"))
    assert other.returncode == 4 and other.stdout and answer_of(other) == {}, other
    script = control("stop-training", **lock_env("run-b", "controller c2 pid 22", wait="0"))
    assert script.returncode == 4
    for refused in (other.stderr, script.stderr):
        told = refused.split(": ", 1)[1]
        assert told.startswith("another deploy is changing this cluster: controller c1 pid 11 (AWX job 7) holds its lock since "), refused
        assert "This deploy waited 0 s (verl_deploy_lock_timeout) and changed nothing. Fix: let that deploy end (or stop it), then " \
               "run again; the lock of a deploy that is gone is taken over 3000 s after its last step." in told, refused
    # The deploy's Ray step holds it, and from there the lease is the steps' own.
    assert answer_of(control("ray", **no_ray_here(control), **lock_env("run-a")))["lock"] == "held"
    assert "lease=120\n" in lock.read_text() and "token=run-a" in lock.read_text()
    assert answer_of(on_host("unlock", control.state, **lock_env("run-b"))) == {"changed": "false", "state": "not-held"}
    assert answer_of(on_host("unlock", control.state, **lock_env("run-a"))) == {"changed": "true", "state": "released"}
    assert not lock.exists()
    assert on_host("lock", control.state, **lock_env("run-b")).returncode == 0


def test_the_host_takes_over_the_lock_of_a_deploy_that_is_gone_as_the_script_does(control):
    control.state.mkdir(parents=True, exist_ok=True)
    lock = control.state / "deploy.lock"
    lock.write_text("token=old\nholder=controller c9 pid 99\nsince=1700000000\npid=999999\n")
    os.utime(lock, (time.time() - 600, time.time() - 600))
    proc = on_host("lock", control.state, **lock_env("run-new"))
    assert proc.returncode == 0, proc.stderr
    assert answer_of(proc)["lock"] == "taken-over"
    assert "lock: taken over from controller c9 pid 99 (since " in text(proc) and "that deploy is gone (no step for more than 120 s)" in text(proc)
    assert "token=run-new" in lock.read_text()


def test_a_second_deploy_waits_for_the_lock_then_refuses_naming_the_holder(control):
    first = control("start-training", HOLD="60", **lock_env("run-a", "controller c1 pid 11 (AWX job 7)"))
    assert first.returncode == 0, first.stderr
    assert "token=run-a" in (control.state / "deploy.lock").read_text()
    started = time.monotonic()
    second = control("stop-training", **lock_env("run-b", "controller c2 pid 22"))
    assert second.returncode == 4, second.stderr
    assert time.monotonic() - started >= 1  # it waited: bash's SECONDS, which bounds the wait, counts whole seconds (2 s is 1 to 2)
    assert "controller c1 pid 11 (AWX job 7) holds its lock since" in second.stderr, second.stderr
    assert "waited 2 s (verl_deploy_lock_timeout) and changed nothing" in second.stderr
    assert state(control)["state"] == "running", "the refused deploy stopped nothing"
    # The holder's own steps go on; its release frees the lock for the other.
    assert control("verify-look", **lock_env("run-a")).returncode in (0, 3)
    assert lines(control("unlock", **lock_env("run-b"))) == ["lock: not held by this deploy", "changed=false", "state=not-held"]
    assert lines(control("unlock", **lock_env("run-a"))) == ["lock: released", "changed=true", "state=released"]
    assert control("stop-training", **lock_env("run-b")).returncode == 0
    assert state(control)["state"] == "stopped"


def no_ray_here(control):
    """The environment of a node where no Ray runs: the machine running the tests may run a simulated cluster, whose
    raylets pgrep sees (and the step would stop a Ray it finds)."""
    bin_dir = control.logs.parent / "no-ray-bin"
    bin_dir.mkdir(exist_ok=True)
    for name, text in (("pgrep", "#!/bin/sh\nexit 1\n"), ("ray", "#!/bin/sh\necho 'stand-in: no Ray here' >&2\n")):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    return {"PATH": "%s:%s" % (bin_dir, os.environ["PATH"])}


def test_the_heads_ray_step_says_its_sentences_and_answers_how_it_took_the_lock(control):
    """stdout is the step's sentences and its KEY=VALUE answer (start_verl.sh's and ray start's words go to stderr);
    lock= says whether this deploy found the lock free, held it already, waited for another deploy, or ran without one."""
    no_ray = no_ray_here(control)
    first = control("ray", **no_ray, **lock_env("run-a"))
    assert first.returncode == 0, first.stderr
    assert said(first) == ["ray: started"] and "Ray runtime started." in first.stderr, first.stdout
    assert answer_of(first) == {"changed": "true", "state": "started", "lock": "free", "members": "", "complete": "false",
                                "released": "false"}
    assert answer_of(control("ray", **no_ray, **lock_env("run-a")))["lock"] == "held"
    assert answer_of(control("ray", **no_ray))["lock"] == "none"
    # Another deploy (run-b) waits for run-a's lock, which run-a releases meanwhile.
    waiting = concurrent.futures.ThreadPoolExecutor(1).submit(control, "ray", **no_ray, **lock_env("run-b", wait="20"))
    time.sleep(1.5)
    assert control("unlock", **lock_env("run-a")).returncode == 0
    second = waiting.result(timeout=60)
    assert second.returncode == 0, second.stderr
    told = said(second)
    assert told[0].startswith("lock: controller c1 pid 11 holds the cluster's lock since ") and told[0].endswith("; waiting at most 20 s.")
    assert told[1].startswith("lock: taken after waiting ") and told[2:] == ["ray: started"], told
    assert answer_of(second)["lock"] == "waited"


def ray_here(control, members):
    """The environment of a head whose Ray runs and whose GCS lists `members` alive (IP=NPUS,...): its python3 asks Ray,
    but for the script's printer of its answer (python3 -I -S -c), which runs as it is."""
    bin_dir = control.logs.parent / "ray-here-bin"
    bin_dir.mkdir(exist_ok=True)
    python3 = "#!/bin/sh\n[ \"$1\" != -I ] || exec %s \"$@\"\necho '%s'\n" % (sys.executable, members)
    for name, text in (("pgrep", "#!/bin/sh\nexit 0\n"), ("python3", python3)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    return {"PATH": "%s:%s" % (bin_dir, os.environ["PATH"])}


def test_a_whole_ray_left_alone_releases_the_lock_when_the_deploy_has_nothing_else_to_change(control):
    """VERL_DEPLOY_LOCK_RELEASE_IF_WHOLE (the deploy found a training running from its settings): a head step that leaves
    Ray alone with every node's NPUs listed releases the lock itself (released=true; deploy.yml then runs no unlock step).
    Not when a node's NPUs are missing, nor for a comparison's lock, nor without being asked."""
    lock = control.state / "deploy.lock"
    whole = ray_here(control, "10.0.0.2=8")
    asked = dict(lock_env("run-a"), VERL_DEPLOY_LOCK_RELEASE_IF_WHOLE="1")
    proc = control("ray", **whole, **asked)
    assert proc.returncode == 0, proc.stderr
    assert said(proc) == ["ray: the head runs at 10.0.0.1:9182; left alone."], proc.stdout
    assert answer_of(proc) == {"changed": "false", "state": "in-cluster", "lock": "free", "members": "10.0.0.2=8",
                               "complete": "true", "released": "true"}
    assert not lock.exists()
    for env in (dict(whole, **lock_env("run-a")), dict(whole, **asked, VERL_DEPLOY_LOCK_KEEP="1")):
        proc = control("ray", **env)
        assert proc.returncode == 0 and answer_of(proc)["released"] == "false", proc.stdout + proc.stderr
        assert lock.exists()
        assert control("unlock", **lock_env("run-a")).returncode == 0 and not lock.exists()
    # A cluster of two nodes whose second node's NPUs are not listed: the workers' join follows, the lock stays.
    values = control.folder / "verl_control.env"
    values.write_text(values.read_text() + "NNODES=2\n")
    proc = control("ray", **whole, **asked)
    assert answer_of(proc)["complete"] == "false" and answer_of(proc)["released"] == "false", proc.stdout
    assert lock.exists()


def test_a_head_whose_ray_timed_out_at_startup_is_stopped_and_started_once_more(control, tmp_path):
    no_ray = no_ray_here(control)
    fails = tmp_path / "ray-fails"
    fails.write_text("1")
    proc = control("ray", RAY_FAILS=str(fails), **no_ray)
    assert proc.returncode == 0, proc.stderr
    assert said(proc) == ["ray: the head's Ray did not start at 10.0.0.1:9182 (attempt 1 of 2); stopping this node's stale "
                          "Ray first.", "ray: started"], proc.stdout
    fails.write_text("2")
    proc = control("ray", RAY_FAILS=str(fails), **no_ray)
    assert proc.returncode != 0 and proc.stderr.strip().splitlines()[-1].endswith("the GCS has become overloaded."), proc.stderr


def test_the_lock_of_a_deploy_that_is_gone_is_taken_over(control):
    control.state.mkdir(parents=True, exist_ok=True)
    lock = control.state / "deploy.lock"
    lock.write_text("token=old\nholder=controller c9 pid 99\nsince=1700000000\npid=999999\n")
    os.utime(lock, (time.time() - 600, time.time() - 600))
    proc = control("start-training", **lock_env("run-new"))
    assert proc.returncode == 0, proc.stderr
    assert "lock: taken over from controller c9 pid 99 (since " in text(proc) and "that deploy is gone" in text(proc)
    assert "token=run-new" in lock.read_text()
    # The head's ray step answers how it took the lock (the training stage then reads the training again).
    lock.write_text("token=old\nholder=controller c9 pid 99\nsince=1700000000\npid=999999\n")
    os.utime(lock, (time.time() - 600, time.time() - 600))
    assert answer_of(control("ray", **no_ray_here(control), **lock_env("run-next")))["lock"] == "taken-over"


def test_a_failed_step_of_the_holder_releases_its_lock(control):
    control("start-training", HOLD="60", **lock_env("run-a"))
    wait_for(lambda: state(control)["state"] == "running")
    again = control("start-training", **lock_env("run-a"))
    assert again.returncode == 1 and "a training already runs" in again.stderr
    assert not (control.state / "deploy.lock").exists()


COMPARISON = "the mask comparison (compare.yml) of controller c1 pid 11"


def test_a_comparison_holds_the_lock_across_its_deploys_and_releases_it_at_its_end(control):
    """compare.yml takes the lock once (`lock`, on the head's host) with a lease of its own; the deploys it runs carry its token with
    VERL_DEPLOY_LOCK_KEEP: their steps, their failures and their unlock keep it. Another deploy meanwhile waits and is
    refused naming the comparison, also between two masks (no training running) and past the deploy's 120 s lease."""
    mine = dict(lock_env("cmp-1", COMPARISON), VERL_DEPLOY_LOCK_LEASE="900")
    deploy = dict(mine, VERL_DEPLOY_LOCK_KEEP="1")
    lock = control.state / "deploy.lock"
    taken = on_host("lock", control.state, **mine)
    assert taken.returncode == 0, taken.stderr
    assert answer_of(taken) == {"changed": "true", "state": "held", "lock": "free"}
    assert "lease=900" in lock.read_text()
    assert answer_of(on_host("lock", control.state, **mine))["lock"] == "held"
    # A mask's deploy: its start holds the lock, its failed step and its unlock keep it.
    assert control("start-training", HOLD="60", **deploy).returncode == 0
    wait_for(lambda: state(control)["state"] == "running")
    assert control("start-training", **deploy).returncode == 1 and lock.exists()
    kept = control("unlock", **deploy)
    assert answer_of(kept) == {"changed": "false", "state": "kept"} and lock.exists()
    assert "lock: kept for %s, which releases it when it ends" % COMPARISON in text(kept)
    assert control("stop-training", **deploy).returncode == 0  # the mask's training ends: between two masks
    # Another deploy, between the masks and older than a deploy's lease: refused, naming the comparison.
    os.utime(lock, (time.time() - 600, time.time() - 600))
    other = control("start-training", **lock_env("run-b", "controller c2 pid 22"))
    assert other.returncode == 4 and COMPARISON + " holds its lock since" in other.stderr, other.stderr
    assert "taken over 900 s after its last step" in other.stderr
    assert state(control)["state"] == "stopped", "the refused deploy started nothing"
    # The comparison's look at its training renews the lock; a look without its token does not.
    os.utime(lock, (time.time() - 600, time.time() - 600))
    control("training-state")
    assert time.time() - lock.stat().st_mtime > 500
    control("training-state", **mine)
    assert time.time() - lock.stat().st_mtime < 60
    # Its end releases it (its own unlock has no KEEP); the other deploy then goes through.
    assert answer_of(control("unlock", **mine)) == {"changed": "true", "state": "released"}
    assert control("stop-training", **lock_env("run-b")).returncode == 0


def test_a_comparison_that_is_gone_loses_its_lock_after_its_own_lease(control):
    control.state.mkdir(parents=True, exist_ok=True)
    lock = control.state / "deploy.lock"
    lock.write_text("token=cmp-old\nholder=%s\nsince=1700000000\npid=999999\nlease=900\n" % COMPARISON)
    os.utime(lock, (time.time() - 1000, time.time() - 1000))
    proc = control("stop-training", **lock_env("run-new"))
    assert proc.returncode == 0, proc.stderr
    assert "lock: taken over from %s" % COMPARISON in text(proc) and "no step for more than 900 s" in text(proc)


def test_the_lock_folder_a_comparison_gives_is_in_the_scripts_values(control, tmp_path):
    """A comparison's deploys log below <verl_log_dir>/compare; their verl_control.sh keeps the deployment's lock."""
    shared = tmp_path / "logs-of-the-deployment" / ".verl-deploy"
    config = launch_ok(verl_log_dir=str(control.logs / "compare"), verl_node_ip="10.0.0.1", verl_socket_ifname="eth0")
    # This test's own training pattern: the rendered one matches every verl trainer on the machine, and stop-training
    # would SIGTERM the trainers of the simulated clusters that run beside the suite (seen as their trainers' stops that
    # nobody asked for, sent from outside their containers).
    config["training"] = dict(config["training"], pattern="-m %s( |$)" % re.escape(control.module))
    folder = write_scripts(config, tmp_path / "verl-cmp", lock_folder=str(shared))
    assert "LOCK_FOLDER=%s\n" % shared in (folder / "verl_control.env").read_text()
    proc = subprocess.run(["bash", str(folder / "verl_control.sh"), "stop-training"], env=dict(os.environ, **lock_env("cmp-2", COMPARISON)),
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "token=cmp-2" in (shared / "deploy.lock").read_text()
    assert "LOCK_FOLDER=''\n" in (control.folder / "verl_control.env").read_text()  # a deploy's own: its log folder
    assert not (control.logs / "compare" / ".verl-deploy" / "deploy.lock").exists()


def test_status_answers_which_control_script_this_is(control):
    """status.yml tells a script that another release of verl-deploy installed by this answer (the script's SHA-256)."""
    proc = control("status", "", "5")
    assert proc.returncode == 0, proc.stderr
    assert status_of(proc)[0]["control"] == hashlib.sha256((control.folder / "verl_control.sh").read_bytes()).hexdigest()


def test_the_script_without_its_values_names_the_fix(control):
    """An install cut between the two files, or a script copied alone: it refuses every step, naming the missing file."""
    (control.folder / "verl_control.env").unlink()
    proc = control("training-state")
    assert proc.returncode == 1 and proc.stdout == ""
    assert "verl_control.env is missing beside it in %s" % control.folder in proc.stderr and "Fix: run deploy.yml again." in proc.stderr


def test_the_control_script_is_one_file_for_every_node_and_its_values_tell_them_apart(tmp_path):
    head = write_scripts(launch_ok(nnodes=2, verl_train_batch_size=16), tmp_path / "head")
    worker = write_scripts(launch_ok(host="node2", is_head=False, nnodes=2, verl_train_batch_size=16), tmp_path / "worker")
    assert (head / "verl_control.sh").read_bytes() == (worker / "verl_control.sh").read_bytes()
    assert "{{" not in (head / "verl_control.sh").read_text()
    values = [set((folder / "verl_control.env").read_text().splitlines()) for folder in (head, worker)]
    assert values[0] ^ values[1] == {"# verl_control.env: verl_control.sh's values for node1 (Ray head), written by verl.deploy; "
                                     "do not edit (deploy again).", "HOST=node1", "ROLE=head",
                                     "# verl_control.env: verl_control.sh's values for node2 (Ray worker), written by verl.deploy; "
                                     "do not edit (deploy again).", "HOST=node2", "ROLE=worker"}


def test_an_old_training_that_ends_after_a_new_start_leaves_no_exit_code(control):
    control("start-training", STEPS="1", HOLD="2", EXIT_CODE="5")
    wait_for((control.state / "last_step").exists)
    (control.state / "run").write_text("a-later-run\n")  # as a start after it writes
    wait_for(lambda: not state(control)["pid"])
    time.sleep(0.5)
    assert not (control.state / "exit_code").exists()


# CANN's text (vllm-ascend#1955), stamped now: lines stamped before the attempt began are an earlier attempt's.
HCCL_SOCKET = ("EI0006: [PID: 2717288] {now}.177.194 Getting socket times out. Reason: Remote Rank did not send "
               "the data in time. Please check the reason for the rank being stuck")
NPU_OOM = "RuntimeError: NPU out of memory. Tried to allocate 22.00 MiB (NPU 0; 60.97 GiB total capacity)"  # vllm-ascend#1127


def keep_alive(control, tmp_path, fails, text, steps="3", later="", **policy):
    """Start a training whose first `fails` attempts end with `text`, keep-alive's policy (KEEP_ALIVE...) in its values;
    returns the file each attempt records VERL_DEPLOY_RESUME in."""
    values = control.folder / "verl_control.env"
    policy = dict({"KEEP_ALIVE": "3", "KEEP_ALIVE_WINDOW": "3600", "KEEP_ALIVE_WAIT": "0"}, **policy)
    kept = [line for line in values.read_text().splitlines() if line.split("=")[0] not in policy and not line.startswith("CKPTS_DIR=")]
    values.write_text("\n".join(kept + ["%s=%s" % item for item in policy.items()] + ["CKPTS_DIR=%s" % (tmp_path / "ckpts")]) + "\n")
    (tmp_path / "fails").write_text("%d\n" % fails)
    resumes = tmp_path / "resumes"
    resumes.write_text("")
    text = text.replace("{now}", time.strftime("%Y-%m-%d-%H:%M:%S"))
    control.env_extra = dict(FAILS=str(tmp_path / "fails"), FAIL_TEXT=text, RESUMES=str(resumes), STEPS=steps, LATER=later)
    assert control("start-training", **control.env_extra).returncode == 0
    return resumes


def test_keep_alive_starts_a_training_that_failed_transiently_again_from_its_checkpoint(control, tmp_path):
    resumes = keep_alive(control, tmp_path, 1, HCCL_SOCKET)
    wait_for((control.state / "exit_code").exists)
    found = state(control)
    assert found["state"] == "finished", found
    # The first attempt started as deployed; the restart resumes from the checkpoint that attempt saved.
    assert resumes.read_text().splitlines() == ["resume=", "resume=auto"]
    (record,) = found["keep_alive"]
    assert (record["decision"], record["class"], record["step"], record["resume_from"]) == ("restart", "HCCL connection timeout", "3", "3")
    assert "keep-alive: 1 restart(s); the last at " in shown(control)
    assert "HCCL connection timeout at step 3 (node1), resumed from step 3" in shown(control)


def test_keep_alive_never_restarts_a_deterministic_failure_nor_the_same_failure_at_the_same_step(control, tmp_path):
    keep_alive(control, tmp_path, 1, NPU_OOM)
    wait_for((control.state / "exit_code").exists)
    found = state(control)
    assert found["state"] == "crashed" and [record["decision"] for record in found["keep_alive"]] == ["give-up"], found
    assert "keep-alive: not restarted after exit code 1: NPU out of memory is deterministic: a restart repeats it" in shown(control)
    # A transient failure that comes back at the same step after a restart repeats: given up.
    keep_alive(control, tmp_path, 2, HCCL_SOCKET)
    wait_for((control.state / "exit_code").exists)
    found = state(control)
    assert [record["decision"] for record in found["keep_alive"]] == ["restart", "give-up"], found
    assert "HCCL connection timeout again at step 3, as before the last restart" in found["keep_alive"][-1]["why"]


def test_keep_alive_holds_its_bound_and_a_stop_cancels_a_waiting_restart(control, tmp_path):
    keep_alive(control, tmp_path, 2, HCCL_SOCKET, later="1", KEEP_ALIVE="1")
    wait_for((control.state / "exit_code").exists)
    assert "1 restart(s) within the last 3600 s already (verl_keep_alive=1" in state(control)["keep_alive"][-1]["why"]
    # A restart that waits (KEEP_ALIVE_WAIT) reads as restarting; stop.yml's stop cancels it for good.
    keep_alive(control, tmp_path, 1, HCCL_SOCKET, KEEP_ALIVE_WAIT="30")
    wait_for((control.state / "restart_at").exists)
    found = state(control)
    assert found["state"] == "restarting" and "training: RESTARTING (keep-alive): HCCL connection timeout at step 3" in shown(control)
    stop = control("stop-training")
    assert lines(stop) == ["training: stopped (keep-alive's restart cancelled)", "changed=true", "state=stopped"], stop.stderr
    run = (control.state / "run").read_text().strip()
    wait_for(lambda: subprocess.run(["pgrep", "-f", "--", "verl_control.sh supervise %s$" % re.escape(run)], check=False).returncode == 1)
    assert state(control)["state"] == "stopped" and not (control.state / "restart_at").exists()


def test_each_start_keeps_the_previous_starts_output(control):
    control("start-training", EXIT_CODE="2", STEPS="0")
    wait_for((control.state / "exit_code").exists)
    control("start-training", EXIT_CODE="3", STEPS="0")
    wait_for((control.state / "exit_code").exists)
    assert (control.logs / "start_verl.out").exists() and (control.logs / "start_verl.out.1").exists()
    status = shown(control)
    assert "start output: %s/start_verl.out (the previous start's: %s/start_verl.out.1)" % (control.logs, control.logs) in status


def test_the_steps_verl_deploy_node_step_runs_are_the_scripts():
    """The table of steps (_control_step.STEPS) is the script's: its `case` lines, in order, are the table's steps but those
    node_step decides itself (DECIDED_STEPS) or runs on the head's host (HOST_STEPS); its usage (the header) and its refusal
    of an unknown step list them but supervise (start-training runs it). node_step's choices are the table's steps but the
    primitives."""
    text = (REPO / "roles/training/files/verl_control.sh").read_text()
    dispatch = text[text.index('case "${step}" in'):]
    cased = re.findall(r"^([a-z-]+)\) ", dispatch, re.M)
    assert cased == [step for step in STEPS if step not in DECIDED_STEPS + HOST_STEPS]
    assert CONTROL_STEPS == tuple(step for step in STEPS if step not in PRIMITIVES)
    listed = re.search(r"use one of: ([a-z, -]+)\.", dispatch).group(1).split(", ")
    usage = re.findall(r"^#   bash verl_control\.sh ([a-z-]+)", text[:text.index("set -euo pipefail")], re.M)
    assert listed == usage == [step for step in cased if step != "supervise"]


# Names a node's files may have: a line break, a Unicode line separator (Python's splitlines() breaks there, bash does not)
# and a record separator, each followed by what an answer of KEY=VALUE lines would have read as facts.
FORGED = "pid=1\nexit_code=0\nstarted_at=1\nlast_step=1 7\nstate=finished\nrole=worker\n"


@pytest.mark.parametrize("breaker", ["\n", "\u2028", "\x1e"], ids=["line-break", "line-separator", "record-separator"])
def test_forged_node_files_change_no_verdict(control, breaker):
    """A log file whose name forges facts, a state file and the image's version file with extra lines: every value stays
    inside its field, so the training still reads as never started, the wait as not yet, the node as the head."""
    name = "verl_qwen3_8b_run%s%s.log" % (breaker, FORGED.replace("\n", breaker))
    (control.logs / name).write_text("step:1\n")
    found = state(control)
    assert (found["state"], found["pid"], found["exit_code"], found["log"]) == ("not-started", "", "", str(control.logs / name)), found
    look = control("verify-look")
    assert look.returncode == 3 and said(look) == ["process not yet, log %s" % (control.logs / name)], look.stdout
    # A state file with an extra line: its value is the whole text, which is not an exit code 0.
    control.state.mkdir(exist_ok=True)
    (control.state / "started_at").write_text("1700000000\n")
    (control.state / "exit_code").write_text("1%sexit_code=0\n" % breaker)
    assert state(control)["state"] == "crashed"
    (control.folder / "verl" / "version").mkdir(parents=True)
    (control.folder / "verl" / "version" / "version").write_text("0.7.0%s%s" % (breaker, FORGED.replace("\n", breaker)))
    facts, _tails = status_of(control("status", "", "5"))
    assert (facts["role"], facts["verl"].split(breaker)[0]) == ("head", "0.7.0"), facts


def test_escape_sequences_a_node_holds_reach_no_console_line_raw(control):
    """A log line and a log file's name with terminal escapes: status says them, and the console's gate (the report
    callback's, and the status verdict's own lines) shows each escaped."""
    name = "verl_qwen3_8b_\x1b[2Jrun.log"
    (control.logs / name).write_text("step:1 - reward:\x1b[1A\x1b[2K forged line\u202e\n")
    status = shown(control)
    assert "\x1b[1A" in status  # what the node said, as it said it, before the gate
    gated = terminal_lines(status)
    assert all(line.isprintable() for line in gated) and any("\\x1b[1A\\x1b[2K forged lineU+202E" in line for line in gated), gated
    report = status_report([{"name": "h", "answered": True, "container": "running", "container_runs": True, "npu": None,
                             "npus_in_use": "-", "status": status_step(control("status", "", "5").stdout)}], "h", 1800)
    assert all(line.isprintable() for line in report["lines"] + report["alarms"] + report["failing"]), report["lines"]


def test_stop_ray_ends_the_npu_sampler_its_pid_file_names_and_no_other_process(control):
    """The sampler (npu_sampler.py, started with Ray by start_verl.sh) ends with Ray; a pid file a restarted container left,
    naming a process that is not the sampler by now, ends nothing."""
    (control.folder / "npu_sampler.py").write_text("import time\ntime.sleep(60)\n")
    sampler = subprocess.Popen([sys.executable, str(control.folder / "npu_sampler.py")])  # pylint: disable=consider-using-with
    other = subprocess.Popen(["sleep", "60"])  # pylint: disable=consider-using-with
    try:
        (control.folder / ".npu_sampler.pid").write_text("%d\n" % other.pid)
        assert control("stop-ray", **no_ray_here(control)).returncode == 0
        (control.folder / ".npu_sampler.pid").write_text("%d\n" % sampler.pid)
        proc = control("stop-ray", **no_ray_here(control))
        assert proc.returncode == 0 and lines(proc) == ["ray: not running", "changed=false", "state=not-running"]
        assert sampler.wait(timeout=10) == -signal.SIGTERM
        assert other.poll() is None
    finally:
        for process in (sampler, other):
            process.kill()
            process.wait()


def test_status_answers_the_npu_samplers_last_lines_and_the_nodes_clock(control):
    host = re.search(r"^HOST=(.*)$", (control.folder / "verl_control.env").read_text(), re.M).group(1).strip("'")
    (control.logs / ("npu_samples.%s.jsonl" % host)).write_text("".join('{"time": %d, "node": "n", "npus": []}\n' % t for t in range(6)))
    proc = control("status", "", "5")
    facts, tails = status_of(proc)
    assert [record["time"] for record in tails["npu_samples"]] == [2, 3, 4, 5]
    assert facts["clock"].isdigit() and "npu_samples" not in facts
