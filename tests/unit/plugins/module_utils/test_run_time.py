# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The run-time decisions (_run_time.py), one table each: what the control script's steps answered, what the deploy does."""
from __future__ import annotations

import pytest

import base64
import hashlib
import json

from ansible_collections.verl.deploy.plugins.module_utils._node_facts import call_digest
from helpers import answers
from helpers.answers import answered, training
from ansible_collections.verl.deploy.plugins.module_utils._control_step import (
    parse_training_state, rc_problem, step_changed, step_result)
from ansible_collections.verl.deploy.plugins.module_utils._run_time import (
    container_check, install_plan, ray_joining, ray_joins, training_left_as_found, training_plan, where_to_look, worker_in_ray)

HEAD_SAID = "ray: started on the head\n"
MEMBERS = "members=10.0.0.1=8,10.0.0.2=8\n"


@pytest.mark.parametrize("result, changed", [
    ({"rc": 0, "stdout": "stopped\nchanged=true\nstate=stopped\n"}, True),
    ({"rc": 0, "stdout": "left alone\nchanged=false\nstate=running\n"}, False),
    ({"rc": 4, "stdout": "changed=true\n"}, False),          # refused for another deploy's lock: nothing was done
    ({"rc": 1, "stdout": "half-way\n"}, True),               # failed without an answer: it may have stopped something
    ({"msg": "No such container: verl", "failed": True}, False),  # never ran its script
    ({"rc": 0, "stdout": ""}, False),                        # ended well without saying (an older script's step)
    ({"skipped": True, "changed": False}, False),            # did not run
])
def test_changed_is_what_the_step_answered(result, changed):
    assert step_changed(dict(result, stdout=answered(result["stdout"])) if "stdout" in result else result) is changed


@pytest.mark.parametrize("step, result, expected", [
    # A step that changes: what it answered; its sentences and its answer as a dict.
    ("stop-training", {"rc": 0, "stdout": answered("training: stopped (pid 7)\nchanged=true\nstate=stopped\n")},
     {"changed": True, "answer": {"changed": "true", "state": "stopped"}, "said": ["training: stopped (pid 7)"]}),
    ("stop-ray", {"rc": 1, "stdout": answered(""), "stderr": "ray: not found"}, {"changed": True, "answer": {}, "said": []}),
    ("stop-ray", {"rc": 127, "stdout": answered("")}, {"changed": True}),
    # Steps that only look, and the lock's take and release, never report changed, whatever they answer or however they end.
    ("unlock", {"rc": 0, "stdout": answered("changed=true\n")}, {"changed": False}),
    ("lock", {"rc": 0, "stdout": answered("changed=true\nstate=held\nlock=free\n")}, {"changed": False}),
    ("ray-check", {"rc": 3, "stdout": answered("")}, {"changed": False}),
    ("status", {"rc": 1, "stdout": answered("role=head\npid=7"), "stderr": "boom"},
     {"changed": False, "facts": {}, "other_release": False, "training": {"state": "unknown"}}),
    # status: its facts (in_ray decided here), its tails as lines, the head's training; a script of an earlier release is named.
    ("status", {"rc": 0, "stdout": answered("role=head\nraylet=running\ncurrent_ip=10.0.0.1\nnpus=8\nlisted=10.0.0.1=8\n"
                                            "log_tail=a\nb\n" + training("running", pid="7"))},
     {"tails": {"start_output": [], "log": ["a"], "npu_samples": []}, "other_release": False, "training": {"state": "running", "pid": "7"}}),
    ("status", {"rc": 0, "stdout": "ray: in the cluster\nin_ray=yes\n"}, {"facts": {}, "other_release": True, "training": {"state": "unknown"}}),
    # training-state: the training as the deploy reads it; no answer reads as unknown.
    ("training-state", {"rc": 0, "stdout": answered(training("running", pid="7", quiet="2"))},
     {"changed": False, "training": {"state": "running", "pid": "7", "quiet_for": "2"}}),
    # A control script of an earlier release (KEY=VALUE lines) answers nothing: its state= line is no fact.
    ("training-state", {"rc": 0, "stdout": "state=running\npid=7\n"}, {"training": {"state": "unknown", "pid": ""}}),
    ("training-state", {"failed": True, "msg": "No such container: verl"}, {"changed": False, "training": {"state": "unknown"}}),
    # members: the nodes alive as a list; none when the head could not be asked.
    ("members", {"rc": 0, "stdout": answered("members=10.0.0.1=8,10.0.0.2=8")}, {"changed": False, "members": ["10.0.0.1=8", "10.0.0.2=8"]}),
    ("members", {"rc": 0, "stdout": answered("members=")}, {"members": []}),
    ("members", {"rc": 1, "stdout": answered("members=10.0.0.1=8")}, {"members": []}),
    # A background job not finished yet (no exit code), and a role's script (no step).
    ("ray", {"ansible_job_id": "j1", "started": True, "finished": False, "stdout": answered("")}, {"changed": False}),
    (None, {"rc": 0, "stdout": answered("installed /verl/a.sh\nchanged=true\n")}, {"changed": True, "said": ["installed /verl/a.sh"]}),
    (None, {"rc": 0, "stdout": answered("changed=false\n")}, {"changed": False}),
    # An older role's script's lines are no answer: they are said, never read.
    (None, {"rc": 0, "stdout": "installed /verl/a.sh\nchanged=true\n"},
     {"changed": False, "answer": {}, "said": ["installed /verl/a.sh", "changed=true"]}),
    # A background job collected without its step's name (a worker's join, collect.yml): its document is read.
    (None, {"rc": 0, "stdout": answered("ray: the head lists no 10.0.0.2; stopping this node's stale Ray first.\nray: started\n"
                                        "changed=true\nstate=joined")},
     {"changed": True, "said": ["ray: the head lists no 10.0.0.2; stopping this node's stale Ray first.", "ray: started"]}),
    # A role's script that says nothing (a read, as the container check) or fails without saying changed nothing.
    (None, {"rc": 0, "stdout": answered("stack={}\n")}, {"changed": False, "answer": {"stack": "{}"}}),
    (None, {"rc": 5, "stdout": "", "stderr": "npu-smi: not found"}, {"changed": False}),
])
def test_a_steps_result_as_the_tasks_read_it(step, result, expected):
    found = step_result(step, result)
    assert {key: found[key] for key in expected if key != "training"} == {k: v for k, v in expected.items() if k != "training"}
    for key, value in expected.get("training", {}).items():
        assert found["training"][key] == value
    assert ("training" in found) is (step in ("training-state", "status")) and ("members" in found) is (step in ("members", "ray"))


@pytest.mark.parametrize("result, expected", [
    ({"rc": 0, "stdout": answered("lock: waited 3 s\nlock: waited for n1\nchanged=true\nstate=held\nlock=waited\n")},
     {"changed": False, "lock": "waited", "problem": ""}),
    # Refused: the host's words, named as the Ray stage names a refusal.
    ({"rc": 4, "stdout": answered(""), "stderr": "the Ray head h1: another deploy is changing this cluster: c2 holds its lock. Fix: wait.\n"},
     {"lock": "", "problem": "n1 (head): another deploy is changing this cluster: c2 holds its lock. Fix: wait."}),
    ({"rc": 1, "stdout": "", "stderr": "the Ray head h1: the deploy's lock in /logs/.verl-deploy: [Errno 13] Permission denied. Fix: x"},
     {"problem": "n1 (head): the deploy's lock in /logs/.verl-deploy: [Errno 13] Permission denied. Fix: x"}),
    ({"skipped": True}, {"lock": "", "problem": ""}),
])
def test_the_lock_taken_on_the_heads_host(result, expected):
    found = step_result("lock", result, "n1")
    assert {key: found[key] for key in expected} == expected


@pytest.mark.parametrize("result, problem", [
    ({"rc": 0, "stdout": "changed=true\n"}, ""),
    ({"failed": True, "msg": "No such container"}, ""),  # did not run: its module failed with its own words
    ({"rc": 1, "stderr": "docker: Error response from daemon: No such container: verl\n"},
     "install (a role's script) ended with rc 1; its last lines: docker: Error response from daemon: No such container: verl"),
    ({"rc": 2, "stderr": "", "stdout": ""}, "install (a role's script) ended with rc 2; its last lines: (no output)"),
    # Refused for another deploy's lock: the script's words (who holds it, the fix), without its prefix.
    ({"rc": 4, "stderr": "verl_control.sh on n1: another deploy (controller c pid 1) holds the lock. Fix: wait.\n"},
     "install (a role's script) was refused: another deploy (controller c pid 1) holds the lock. Fix: wait."),
])
def test_a_step_that_must_end_well(result, problem):
    assert rc_problem("install (a role's script)", result) == problem


@pytest.mark.parametrize("result, expected", [
    # Left alone, the lock free: kept, nothing to say.
    ({"rc": 0, "stdout": "ray: in the cluster\nchanged=false\nstate=running\nlock=free\n" + MEMBERS + "complete=true\n"},
     {"changed": False, "kept": True, "say": False, "complete": True, "members": ["10.0.0.1=8", "10.0.0.2=8"], "problem": "",
      "released": False}),
    # Left alone, and the lock released by the step itself (a training runs from these settings on the whole cluster).
    ({"rc": 0, "stdout": "changed=false\nstate=in-cluster\nlock=free\n" + MEMBERS + "complete=true\nreleased=true\n"},
     {"changed": False, "kept": True, "say": False, "released": True}),
    # Started again: changed, said, not kept; workers still to join.
    ({"rc": 0, "stdout": HEAD_SAID + "changed=true\nstate=started\nlock=held\nmembers=10.0.0.1=8\ncomplete=false\n"},
     {"changed": True, "kept": False, "say": True, "complete": False, "members": ["10.0.0.1=8"], "problem": ""}),
    # Left alone, but after waiting for another deploy's lock: the training may have changed meanwhile.
    ({"rc": 0, "stdout": "lock: waited 12 s\nchanged=false\nlock=waited\n" + MEMBERS + "complete=true\n"},
     {"changed": False, "kept": False, "say": True, "problem": ""}),
    ({"rc": 0, "stdout": "lock: taken over\nchanged=false\nlock=taken-over\n" + MEMBERS},
     {"changed": False, "kept": False, "say": True}),
    # Refused for another deploy's lock: nothing changed, the deploy stops with the script's words, without its prefix.
    ({"rc": 4, "stdout": "", "stderr": "verl_control.sh on n1: another deploy (controller c pid 1) holds the lock. Fix: wait.\n"},
     {"changed": False, "say": True, "problem": "n1 (head): another deploy (controller c pid 1) holds the lock. Fix: wait."}),
    # Failed: its last four lines of stderr.
    ({"rc": 1, "stdout": "", "stderr_lines": ["a", "b", "c", "d", "e"]},
     {"changed": True, "say": False, "problem": "n1 (head): Ray did not start: its ray step ended with rc 1; its last lines: b | c | d | e"}),
    ({"rc": None, "msg": "timed out", "stdout": ""},
     {"kept": False, "problem": "n1 (head): Ray did not start: its ray step ended with rc -; its last lines: timed out"}),
    # Started, but no node listed.
    ({"rc": 0, "stdout": "changed=true\nlock=held\nmembers=\n", "stderr": "ConnectionError: GCS"},
     {"members": [], "problem": "n1 (head): Ray was started, but asking it for its nodes failed: ConnectionError: GCS. Fix: look at Ray in "
                                "the container (ray status; /tmp/ray/session_latest/logs), then run deploy.yml again."}),
])
def test_the_heads_ray_step(result, expected):
    found = step_result("ray", dict(result, stdout=answered(result["stdout"])), "n1")
    assert {key: found[key] for key in expected} == expected
    if expected.get("say"):
        assert found["said"] == [line for line in result["stdout"].splitlines() if "=" not in line]


def join(item, rc=0, changed="false", answered=True, stdout=None, **more):
    result = {"item": item, "answered": answered, "rejoined": answered and rc is not None and changed != "false", **more}
    if answered:
        result.update(rc=rc, stdout=answers.answered(stdout if stdout is not None else "ray: %s joined\nchanged=%s\n" % (item, changed)))
        result["said"] = step_result(None, result)["said"]
    return result


@pytest.mark.parametrize("results, expected", [
    ([], {"unanswered": [], "rejoined": [], "said": [], "problem": ""}),
    ([join("w1"), join("w2", changed="true")],
     {"unanswered": [], "rejoined": ["w2"], "said": ["ray: w1 joined", "ray: w2 joined"], "problem": ""}),
    ([join("w1", answered=False), join("w2")], {"unanswered": ["w1"], "rejoined": [], "said": ["ray: w2 joined"], "problem": ""}),
    ([join("w1", rc=1, changed="true", stderr_lines=["x", "ConnectionError"])],
     {"unanswered": [], "rejoined": ["w1"], "said": ["ray: w1 joined"],
      "problem": "w1 (worker): Ray did not join the head: its ray step ended with rc 1; its last lines: x | ConnectionError. "
                 "Fix: check Ray on those nodes (status.yml), the network between them and 10.0.0.1:6379."}),
    # Still running when its bound passed: no exit code.
    ([join("w1", rc=None, stdout="", msg="async task did not complete within the requested time")],
     {"rejoined": [], "problem": "w1 (worker): Ray did not join the head: its ray step ended with rc -; its last lines: async task "
                                 "did not complete within the requested time. Fix: check Ray on those nodes (status.yml), the network "
                                 "between them and 10.0.0.1:6379."}),
])
def test_the_workers_joins(results, expected):
    # Every worker's variables: those whose join ran in the background hold their collected join; the others nothing.
    workers = [{"inventory_hostname": "w9"}] + [{"inventory_hostname": r["item"], "__ray_join_result": r} for r in results]
    found = ray_joins(workers, "10.0.0.1", 6379, {"skipped": True})
    assert {key: found[key] for key in expected} == expected and found["wait_failed"] is False


@pytest.mark.parametrize("wait, failed", [
    (None, False),                                  # the wait did not run (its play was not reached)
    ({"skipped": True, "changed": False}, False),   # nothing to wait for
    ({"rc": 0, "progress": "3/3 nodes"}, False),
    ({"rc": 3, "progress": "2/3 nodes"}, True),     # not every node's NPUs within verl_ray_wait_timeout
    ({"failed": True, "msg": "container gone"}, True),  # no answer at all
])
def test_the_heads_wait_failed_only_when_it_ran_and_did_not_see_every_npu(wait, failed):
    assert ray_joins([], "10.0.0.1", 6379, wait)["wait_failed"] is failed


@pytest.mark.parametrize("starts, left_alone, head_kept, joining, needed", [
    # No worker joins, the head's Ray kept, the training runs from these settings: the reach check can tell nothing.
    ({"w1": {"skipped": True}, "w2": None}, True, True, [], False),
    ({"w1": {"ansible_job_id": "j1.1", "started": 1}, "w2": {"skipped": True}}, True, True, ["w1"], True),
    ({"w1": {"rc": 0}, "w2": {"ansible_job_id": "j2"}}, True, True, ["w2"], True),   # w1 checked in, not started
    ({}, False, True, [], True),        # nothing runs from these settings: the training will start
    ({}, "True", False, [], True),      # the head's Ray started again (a fact may come as text)
])
def test_which_workers_join_and_whether_the_reach_check_is_needed(starts, left_alone, head_kept, joining, needed):
    workers = [dict({"inventory_hostname": name}, **({"__ray_start": start} if start is not None else {}))
               for name, start in starts.items()]
    assert ray_joining(workers, left_alone, head_kept) == {"joining": joining, "reach_needed": needed}


@pytest.mark.parametrize("members, node_ip, raylet, listed", [
    ("10.0.0.1=8,10.0.0.2=8", "10.0.0.2", True, True),
    ("10.0.0.1=8,10.0.0.2=8", "10.0.0.2", "True", True),     # as a template may hand the fact over
    ("10.0.0.1=8,10.0.0.2=8", "10.0.0.2", False, False),     # its raylet is gone: the GCS has not noticed yet
    ("10.0.0.1=8,10.0.0.2=8", "10.0.0.2", None, False),      # the container stage did not look: ask the container
    ("10.0.0.1=8,10.0.0.2=4", "10.0.0.2", True, False),      # in, but not with all of its NPUs
    ("10.0.0.1=8,10.0.0.22=8", "10.0.0.2", True, False),     # another node whose address starts the same
    ("10.0.0.1=8", "10.0.0.2", True, False),                 # the head's Ray started anew: not listed yet
    ("", "10.0.0.2", True, False),
    ("10.0.0.1=8,10.0.0.2=8", "", True, False),              # no address handed on
])
def test_a_worker_is_left_alone_without_a_call_only_when_listed_with_its_npus_and_its_raylet_runs(members, node_ip, raylet, listed):
    assert worker_in_ray(members, node_ip, 8, raylet) is listed


@pytest.mark.parametrize("left_alone, head_kept, lost, holds", [
    (True, True, [], True),
    (False, True, [], False),      # nothing ran from these settings (or verl_restart): read again
    (True, False, [], False),      # the head's Ray restarted or another deploy's lock was waited for
    (True, True, ["w1"], False),   # a worker's Ray started again
    ("True", "True", [], True),    # as a template may hand the facts over
    ("False", True, [], False),
])
def test_the_settings_checks_read_holds_only_when_nothing_touched_the_training(left_alone, head_kept, lost, holds):
    assert training_left_as_found(left_alone, head_kept, lost) is holds


CHECK_ARGV = ["bash", "-c", "the check", "npu-stack-check", 8, "/usr/local/Ascend/ascend-toolkit/set_env.sh"]
CHECK_ENV = {"VERL_LOOK_DIR": "/verl", "VERL_MAX_PROMPT_LENGTH": 1024}  # a template may hand over a number
HELD = answered('look=\nraylet=running\nstack={"first_op": {"device": 0, "held": [42], "skipped": "pid(s) 42 of this container hold its NPUs"}}')
FREE = answered('look=\nraylet=none\nstack={"first_op": {"device": 0, "skipped": "the pre-check runs no NPU operation"}}')
AS_KEPT = call_digest({"argv": CHECK_ARGV, "env": CHECK_ENV})


@pytest.mark.parametrize("read, as_read, reuse", [
    ({"rc": 0, "record": AS_KEPT, "stdout": HELD}, True, True),
    ({"rc": 0, "record": AS_KEPT, "stdout": FREE}, True, False),      # the NPUs were free: the stage's check runs its NPU operation
    ({"rc": 0, "record": AS_KEPT, "stdout": HELD}, False, False),     # the stage created or started the container, or read it itself
    ({"rc": 0, "record": "another", "stdout": HELD}, True, False),    # the last deploy's call differs from this run's
    ({"rc": 4, "record": AS_KEPT, "stdout": "torch_npu does not load"}, True, False),  # it failed: the stage's own check says why
    ({"rc": None, "record": "", "msg": "not run: no record"}, True, False),  # an older deploy kept no call, or no container runs
    ({"rc": 0, "record": AS_KEPT, "stdout": answered("stack=not json")}, True, False),
    ({"rc": 0, "record": AS_KEPT, "stdout": 'stack={"first_op": {"held": [42]}}\n'}, True, False),  # an older check's line: no answer
    ({}, True, False),                                                # no pre-check read (the role on its own)
])
def test_the_pre_checks_run_of_the_container_check_stands_for_it_only_for_the_same_call_beside_the_training(read, as_read, reuse):
    decided = container_check(CHECK_ARGV, CHECK_ENV, read, as_read, "/verl/")
    assert decided["reuse"] is reuse and decided["result"] == (read if reuse else None)
    # The call as text, and the record the check keeps of it: what the next pre-check runs, with the same digest.
    assert decided["argv"][4] == "8" and decided["env"]["VERL_MAX_PROMPT_LENGTH"] == "1024"
    assert call_digest(json.loads(decided["record"])) == AS_KEPT and decided["record_path"] == "/verl/.npu_stack_check.json"


def state(name, pid="42", quiet="3"):
    return answered(training(name, pid=pid, quiet=quiet))


@pytest.mark.parametrize("text, restart, lost, expected", [
    (state("running"), False, [], {"start": False, "stop_first": False, "stalled": "", "why_again": "",
                                   "left_alone": "Training runs on h (pid 42), started from these settings; left alone. "
                                                 "To start it again, run again with -e verl_restart=true."}),
    (state("finished", pid=""), False, [], {"start": False, "left_alone": (
        "Training finished on h (exit code 0); left alone. To train further, raise verl_train_steps and run again with "
        "-e verl_restart=true (it resumes from its last checkpoint).")}),
    (state("running"), True, [], {"start": True, "stop_first": True, "left_alone": "", "why_again": ""}),
    (state("finished"), True, [], {"start": True, "stop_first": False}),
    (state("running"), False, ["w1", "w2"], {"start": True, "stop_first": True, "why_again": (
        "h: the training's workers on w1, w2 went with their Ray, which this run started again; verl's worker group cannot go on "
        "without them, so the training is started again (it resumes from its checkpoints).")}),
    (state("running"), True, ["w1"], {"start": True, "why_again": ""}),   # verl_restart says why
    (state("orphaned"), False, [], {"start": True, "stop_first": True}),
    (state("crashed"), False, [], {"start": True, "stop_first": False}),
    (state("stopped"), False, [], {"start": True, "stop_first": False}),
    # keep-alive waits to start it again: the deploy cancels that and starts it itself (and waits for it).
    (state("restarting", pid=""), False, [], {"state": "restarting", "start": True, "stop_first": True, "why_again": (
        "h: keep-alive was about to start the training again after a failure (status.yml says why); this deploy starts it itself, "
        "resuming from its checkpoints, and waits for it.")}),
    ("", False, [], {"state": "unknown", "start": True, "stop_first": False}),  # no container, or nothing deployed yet
    (state("running", quiet="1900"), False, [], {"start": False, "stalled": (
        "h: the training left alone is STALLED: it runs (pid 42) but logged no step for 1900 s (more than 1800 s, "
        "verl_status_stall_seconds); a hung collective (HCCL) looks like this. Fix: read its log, then restart it with "
        "-e verl_restart=true (it resumes from its checkpoints).")}),
    (state("running", quiet="1800"), False, [], {"stalled": ""}),
])
def test_the_training_plan(text, restart, lost, expected):
    found = training_plan(parse_training_state(text), {"restart": restart, "status_stall_seconds": 1800, "train_steps": 4, "resume_mode": "auto"}, lost, "h")
    assert {key: found[key] for key in expected} == expected


def finished(last_step, save_freq=2, train_steps=4):
    record = json.dumps({"settings": {"train_steps": train_steps, "save_freq": save_freq}})
    return answered(training("finished", last_step="1700000000 %s" % last_step, launch=record))


ONE_MORE = ("h: the training had finished at step 4; started again with verl_train_steps=4, verl resumes from its last checkpoint "
            "(global_step_4) and, past its total already, trains, saves and logs one step more (step 5) and ends. To train further, "
            "give a larger verl_train_steps; to start over, verl_resume_mode=disable.")


# A finished training started again (verl_restart=true): verl's fit loop starts at the resumed step + 1, so a resume at or
# past this run's total trains one step more and ends (ray_trainer.py: is_last_step = global_steps >= total_training_steps).
@pytest.mark.parametrize("text, launch, why", [
    (finished(4), {}, ONE_MORE),
    (finished(4), {"train_steps": 3}, ONE_MORE.replace("verl_train_steps=4", "verl_train_steps=3")),
    (finished(4), {"train_steps": 10}, ""),                  # raised: it trains steps 5 to 10
    (finished(4), {"resume_mode": "disable"}, ""),           # starts over from step 1
    (finished(4, save_freq=-1), {}, ""),                     # it saved nothing: verl starts over
    (finished(""), {}, ONE_MORE),                            # no step line read: its record's total
    (finished(4), {"restart": False}, ""),                   # left alone
])
def test_a_finished_training_started_again_past_its_total_says_it_trains_one_step_more(text, launch, why):
    settings = {"restart": True, "status_stall_seconds": 1800, "train_steps": 4, "resume_mode": "auto", **launch}
    found = training_plan(parse_training_state(text), settings, [], "h")
    assert (found["start"], found["stop_first"], found["why_again"]) == (launch.get("restart", True), False, why)


FILES = {"start_verl.sh": "#!/bin/bash\n", "verl_control.env": "HOST=h\n", "verl_control.sh": "#!/usr/bin/env bash\n", "launch.json": "{}\n"}
NAMES = list(FILES)
MODES = {"start_verl.sh": "755", "verl_control.env": "644", "verl_control.sh": "755", "launch.json": "644"}


def look(name, mode=None, text=None):
    return "%s %s %s" % (mode or MODES[name], hashlib.sha256((FILES[name] if text is None else text).encode()).hexdigest(), name)


@pytest.mark.parametrize("installed, differ", [
    ([], NAMES),                                                         # a new container: everything, the values first
    ([look(name) for name in NAMES], []),                                # an unchanged re-run writes nothing
    ([look(name) for name in NAMES if name != "verl_control.env"], ["verl_control.env"]),  # an earlier release's container
    ([look("start_verl.sh", mode="700")] + [look(name) for name in NAMES[1:]], ["start_verl.sh"]),  # a mode changed by hand
    ([look("launch.json", text="{\"old\": 1}\n")] + [look(name) for name in NAMES[:3]], ["launch.json"]),  # new settings
])
def test_the_install_writes_what_differs_in_its_order(installed, differ):
    files = {name: base64.b64encode(text.encode()).decode() for name, text in FILES.items()}
    plan = install_plan(files, NAMES, MODES, installed)
    assert plan["wanted"] == [look(name) for name in NAMES]
    assert plan["differ"] == differ
    assert plan["stdin"] == "\n".join("%s %s %s" % (MODES[name], name, files[name]) for name in differ)


# The deploy's last message and its stats (verl_deploy_summary), from a launch configuration as the settings check makes it.
LAUNCH = {"log_dir": "/logs", "training": {"log_name": "verl_qwen3_8b_"}, "experiment_name": "e1", "master_addr": "10.0.0.1",
          "dashboard_port": 8265, "container_name": "verl", "project_name": "p", "swanlab_enabled": False, "swanlab": None,
          "tensorboard": None}
SWANLAB = {"swanlab_enabled": True, "swanlab": {"mode": "cloud", "host": "", "workspace": "team", "log_dir": "/logs/swanlab"}}


@pytest.mark.parametrize("change, image, prompts, proof, expected", [
    ({}, "0.9.1", "256 prompts", "", {"swanlab": "off", "tensorboard": "off", "image_verl": "0.9.1", "prompts": "256 prompts"}),
    (SWANLAB, "0.7.0", "", "", {"swanlab": "cloud, workspace team, project p, local logs /logs/swanlab", "prompts": ""}),
    (dict(SWANLAB, swanlab=dict(SWANLAB["swanlab"], mode="local", host="http://10.0.0.9:8000")), "0.7.0", None, "run proven", {
        "swanlab": "local, server http://10.0.0.9:8000, workspace team, project p, local logs /logs/swanlab; run proven",
        "prompts": "not counted (the container stage did not run in this deploy)"}),
    ({"tensorboard": {"dir": "/tb/p/e1", "root": "/tb"}}, None, None, "", {
        "tensorboard": "/tb/p/e1 on the node that runs verl's driver (TaskRunner); view: tensorboard --logdir /tb",
        "image_verl": "unknown (the container stage did not run in this deploy; status.yml shows it)"}),
    ({}, "", "x", "ignored: SwanLab is off",
     {"swanlab": "off", "image_verl": "unknown (the container stage did not run in this deploy; status.yml shows it)"}),
], ids=["off", "cloud", "local-server-proof", "tensorboard-no-container-stage", "empty-version"])
def test_where_to_look_says_once_what_the_stats_keep(change, image, prompts, proof, expected):
    where = where_to_look(dict(LAUNCH, **change), "node1", image, prompts, proof)
    stats, lines = where["stats"], where["lines"]
    for key, value in expected.items():
        if key == "prompts":
            assert "Prompts: %s" % value in lines, lines
        else:
            assert stats[key] == value, stats
    assert lines == ["Training log: /logs/verl_qwen3_8b_e1_*.log in container verl on node1", "Ray dashboard: http://10.0.0.1:8265",
                     "SwanLab: " + stats["swanlab"], "TensorBoard: " + stats["tensorboard"], "Image's verl: " + stats["image_verl"],
                     lines[5], "Status: ansible-playbook playbooks/status.yml; stop: ansible-playbook playbooks/stop.yml"]
    assert (stats["head"], stats["container"], stats["training_log"], stats["experiment"]) == (
        "node1", "verl", "/logs/verl_qwen3_8b_e1_*.log", "e1")
