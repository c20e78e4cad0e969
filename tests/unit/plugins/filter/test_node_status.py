# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The node_status filter: what status.yml shows of a node. The status step answers facts (one JSON document, with the
head's start output and log tails), which node_step reads into typed keys; the sentences are made here. A script of another release, which answered no document,
is named with the fix; a step that said nothing is shown with why."""
from __future__ import annotations

import json
import time

import pytest

from ansible_collections.verl.deploy.plugins.filter.node_status import FilterModule
from ansible_collections.verl.deploy.plugins.module_utils._control_step import document, step_result
from helpers.answers import parse_lines

node_status = FilterModule().filters()["node_status"]
HEAD = ["container verl: running", "NPUs in use: 0-7 by the training"]
NOW = 1_800_000_000
WORKER = ["address_problem=", "raylet=running", "role=worker", "master_ip=10.0.0.1", "current_ip=10.0.0.2", "npus=8",
          "ray_port=6379", "dashboard_port=8265", "listed=10.0.0.1=8,10.0.0.2=8", "workdir=/verl", "verl=0.7.0", "control=" + "a" * 64]
RECORD = json.dumps({"settings": {"algorithm": "grpo", "resume_mode": "auto", "train_steps": 100}})


def status_document(lines):
    """The status step's document from its facts as KEY=VALUE lines, then its tails after "--- start output" and "--- log"."""
    text = "\n".join(lines)
    facts, _sep, tails = text.partition("\n--- start output\n")
    start_output, _sep, log = tails.partition("--- log\n")
    return document([], dict(parse_lines(facts), start_output=start_output, log_tail=log))


def stepped(result):
    """The status step's result as verl.deploy.node_step returns it: what it ran, and its verdict."""
    return dict(result, **step_result("status", result, "h"))


def shown(facts, stall=1800, tails=()):
    return node_status(stepped({"rc": 0, "stdout": status_document(facts + list(tails))}), "verl", "running", "0-7 by the training",
                       "/verl/verl_control.sh", stall)[2:]


def head(state="running", **values):
    training = dict(pid="42" if state in ("running", "orphaned") else "", exit_code="", started_at=str(NOW - 600),
                    stopped_at="", first_step="%d 1" % (NOW - 500), last_step="%d 11" % (NOW - 100), ray_session="session_1",
                    ray_session_started="session_0" if state == "orphaned" else "session_1",
                    log="/logs/verl_run.log", launch=RECORD, now=str(NOW),
                    log_dir="/logs", log_lines="5", start_out="/logs/start_verl.out", start_out_previous="")
    if state == "not-started":
        training["started_at"] = ""
    training.update(values)
    facts = [line.replace("role=worker", "role=head").replace("current_ip=10.0.0.2", "current_ip=10.0.0.1") for line in WORKER]
    return facts + ["%s=%s" % item for item in training.items()] + ["--- start output", "ray: waiting", "RuntimeError: boom",
                                                                    "--- log", "step:11 - actor/pg_loss:0.1", "state=finished"]


def _at(seconds):
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(seconds))


@pytest.mark.parametrize("change, expected", [
    ({}, ["ray: in the cluster of 10.0.0.1:6379 as 10.0.0.2 with 8 NPU", "verl: 0.7.0"]),
    ({"in_ray": "no", "listed": "10.0.0.1=8", "raylet": "none"},
     ["ray: NOT in the cluster of 10.0.0.1:6379 (the head lists: 10.0.0.1=8; raylet here: absent). Fix: run deploy.yml again.",
      "verl: 0.7.0"]),
    ({"in_ray": "no", "listed": ""},
     ["ray: NOT in the cluster of 10.0.0.1:6379 (the head lists: nothing; raylet here: runs). Fix: run deploy.yml again.",
      "verl: 0.7.0"]),
    ({"in_ray": "unknown", "address_problem": "start_verl.sh: no address on eth0", "verl": ""},
     ["ray: cannot tell: start_verl.sh: no address on eth0", "verl: unknown (no verl/version/version in /verl)"]),
], ids=["in-ray", "out-of-ray", "head-lists-nothing", "no-address"])
def test_a_worker(change, expected):
    assert shown([line.split("=", 1)[0] + "=" + change.get(line.split("=", 1)[0], line.split("=", 1)[1]) for line in WORKER]) == expected


@pytest.mark.parametrize("state, values, stall, expected", [
    ("running", {}, 1800, ["training: running (pid 42) since %s; step 11 logged at %s (100 s ago), 1.5 steps/min" % (
        _at(NOW - 600), _at(NOW - 100))]),
    ("running", {}, 30, ["training: STALLED: runs (pid 42) but logged no step for 100 s (more than 30 s, verl_status_stall_seconds); "
                         "step 11 logged at %s (100 s ago), 1.5 steps/min. The log's last lines below show the phase it stopped in "
                         "(status.yml names it with its likely cause); then restart with deploy.yml -e verl_restart=true." % _at(NOW - 100)]),
    ("orphaned", {}, 1800, ["training: its Ray cluster was restarted under it (pid 42); it cannot go on. Fix: run deploy.yml again (it "
                            "is started again and resumes from its checkpoints)."]),
    ("crashed", {"exit_code": "137", "first_step": "", "last_step": ""}, 1800,
     ["training: CRASHED (exit code 137) after %s; no step logged yet. Fix: read the log below, then run deploy.yml again (it resumes "
      "from its checkpoints)." % _at(NOW - 600)]),
    ("crashed", {}, 1800, ["training: CRASHED (exit code unknown: the container or node restarted under it) after %s; step 11 logged "
                           "at %s (100 s ago), 1.5 steps/min. Fix: read the log below, then run deploy.yml again (it resumes from its "
                           "checkpoints)." % (_at(NOW - 600), _at(NOW - 100))]),
    ("finished", {"exit_code": "0", "first_step": "%d 11" % (NOW - 100)}, 1800,
     ["training: finished (exit code 0); step 11 logged at %s (100 s ago)" % _at(NOW - 100)]),
    ("stopped", {"stopped_at": str(NOW - 50)}, 1800,
     ["training: stopped at %s (stop.yml); step 11 logged at %s (100 s ago), 1.5 steps/min" % (_at(NOW - 50), _at(NOW - 100))]),
    ("not-started", {"launch": "", "start_out": "", "log": ""}, 1800, ["training: not started on this node by verl.deploy"]),
], ids=["running", "stalled", "orphaned", "crashed", "crashed-restarted", "finished", "stopped", "not-started"])
def test_the_head_says_its_training(state, values, stall, expected):
    lines = shown(head(state, **values), stall)
    assert lines[:3] == ["ray: in the cluster of 10.0.0.1:6379 as 10.0.0.1 with 8 NPU",
                         "ray: nodes alive with their NPUs: 10.0.0.1=8,10.0.0.2=8; dashboard http://10.0.0.1:8265", "verl: 0.7.0"]
    assert lines[3] == expected[0]
    rest = lines[4:]
    if state == "not-started":
        assert rest == ["log: none yet in /logs"]
        return
    # The launch record's algorithm, the start output (its last lines after a crash), then the log's tail as text.
    assert rest[:2] == ["algorithm: GRPO (resume mode auto)", "start output: /logs/start_verl.out"]
    crash = ["ray: waiting", "RuntimeError: boom"] if state == "crashed" else []
    assert rest[2:] == crash + ["log: /logs/verl_run.log (last 5 lines)", "step:11 - actor/pg_loss:0.1", "state=finished"]


def test_the_head_whose_ray_does_not_answer_and_the_previous_start():
    facts = [line.replace("listed=10.0.0.1=8,10.0.0.2=8", "listed=")
             .replace("start_out_previous=", "start_out_previous=/logs/start_verl.out.1") for line in head()]
    lines = shown(facts)
    assert lines[:2] == ["ray: the head's Ray does not answer at 10.0.0.1:6379 (raylet here: runs). Fix: run deploy.yml again.",
                         "ray: nodes alive with their NPUs: none; dashboard http://10.0.0.1:8265"]
    assert "start output: /logs/start_verl.out (the previous start's: /logs/start_verl.out.1)" in lines


OTHER = ["/verl/verl_control.sh answers as another release of verl-deploy did: nothing it said is read. Fix: run deploy.yml to update "
         "it (a running training is left alone)."]


@pytest.mark.parametrize("stdout, expected", [
    # A script of another release said its own sentences, then KEY=VALUE lines: none of it is read, and it is named.
    ("ray: in the cluster of 10.0.0.1:6379 as 10.0.0.2 with 8 NPU\nverl: 0.7.0\nin_ray=yes\n", OTHER),
    ("in_ray=no\nstate=not-running\n", OTHER), ("", []), (None, []),
])
def test_another_release_s_script_is_named(stdout, expected):
    assert node_status(stepped({"rc": 0, "stdout": stdout}), "verl", "running", "0-7 by the training", "/verl/verl_control.sh") == HEAD + expected


@pytest.mark.parametrize("result, last", [
    ({"rc": 127, "stdout": "", "stderr": "bash: /verl/verl_control.sh: No such file or directory"},
     ["not deployed: no /verl/verl_control.sh in the container (run deploy.yml)"]),
    ({"rc": 1, "stdout": "", "stderr": "verl_control.sh: verl_control.env is missing beside it in /verl. Fix: run deploy.yml again.\n"},
     ["verl_control.sh: verl_control.env is missing beside it in /verl. Fix: run deploy.yml again."]),
    ({"skipped": True, "changed": False}, []),  # the container is down: its line says so
])
def test_why_a_node_said_nothing(result, last):
    assert node_status(stepped(result), "verl", "running", "0-7 by the training", "/verl/verl_control.sh") == HEAD + last


def test_as_status_yml_calls_it(render):
    lines, = render(["r | verl.deploy.node_status('verl', 'exited (exit code 137)', '-', '/verl/verl_control.sh', '30')"],
                    r=stepped({"rc": 0, "stdout": status_document(head())}))
    assert lines[:2] == ["container verl: exited (exit code 137)", "NPUs in use: -"]
    assert lines[5].startswith("training: STALLED: runs (pid 42) but logged no step for 100 s (more than 30 s"), lines


def test_status_yml_reads_whether_the_heads_training_failed(render):
    """roles/day2/vars/main.yml's _day2_training_failed: the status step's training, with verl_status_stall_seconds."""
    crashed, stalled, running, unread = render(
        ["c.training | verl.deploy.training_failed(1800)", "r.training | verl.deploy.training_failed(30)",
         "r.training | verl.deploy.training_failed(1800)", "n.training | default({}) | verl.deploy.training_failed(30)"],
        c=stepped({"rc": 0, "stdout": status_document(head("crashed", exit_code="1"))}),
        r=stepped({"rc": 0, "stdout": status_document(head())}), n={"skipped": True})
    assert (crashed, stalled, running, unread) == (True, True, False, False)
