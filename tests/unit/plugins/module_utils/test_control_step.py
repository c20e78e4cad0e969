# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""How a step runs on a node (_control_step.py): its command, whether `docker exec` ran it at all, and Ray's steps decided
between the control script's primitives (one table each)."""
from __future__ import annotations

import pytest

from ansible_collections.verl.deploy.plugins.module_utils._control_step import (
    CONTROL_STEPS, LOOK_STEPS, STEPS, all_joined, argument_problem, container_command, control_argv, decided_step, document, in_cluster,
    joined, not_run, ray_plan, ray_step, read_answer, released_if_whole, verify_look)
from helpers.answers import parse_lines, sentences


def test_the_steps_that_only_look_are_steps_of_the_script():
    assert LOOK_STEPS < set(CONTROL_STEPS)


def test_a_control_step_runs_the_script_in_its_folder_after_the_lock_identity():
    assert control_argv("/verl/", "ray", [2], ["env", "VERL_DEPLOY_LOCK_TOKEN=t"]) == [
        "env", "VERL_DEPLOY_LOCK_TOKEN=t", "bash", "/verl/verl_control.sh", "ray", "2"]


@pytest.mark.parametrize("env, stdin, expected", [
    (None, False, (["docker", "exec", "verl", "true"], {})),
    # Values only in the CLI's environment: `-e NAME` takes them from there, so no value is in the process list.
    ({"B": 2, "A": "secret"}, False, (["docker", "exec", "-e", "A", "-e", "B", "verl", "true"], {"A": "secret", "B": "2"})),
    ({}, True, (["docker", "exec", "-i", "verl", "true"], {})),
])
def test_the_command_that_runs_a_step_in_the_container(env, stdin, expected):
    assert container_command("docker", "verl", ["true"], env, stdin) == expected


@pytest.mark.parametrize("rc, stdout, stderr, expected", [
    # The Docker CLI's words when it could not start the step (Docker 20.10 and later, as the simulated nodes run it).
    (1, "", "Error response from daemon: No such container: verl\n", "Error response from daemon: No such container: verl"),
    (1, "", "Error response from daemon: Container 5d4e is not running", "Error response from daemon: Container 5d4e is not running"),
    (1, "", "Error response from daemon: Container verl is paused, unpause the container before exec",
     "Error response from daemon: Container verl is paused, unpause the container before exec"),
    (1, "", "Error: No such container: verl", "Error: No such container: verl"),
    (1, "", "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?",
     "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?"),
    # It ran: whatever it said, and whatever its exit code.
    (0, "", "Error response from daemon: No such container: verl", ""),
    (1, "ray: started\n", "Error response from daemon: No such container: x", ""),
    (1, "", "verl_control.sh on n1: a training already runs (pid 7); stop it first", ""),
    (3, "", "", ""),
    (4, "", "verl_control.sh on n1: another deploy is changing this cluster", ""),
])
def test_whether_docker_exec_ran_the_step(rc, stdout, stderr, expected):
    assert not_run(rc, stdout, stderr) == expected


@pytest.mark.parametrize("members, ip, npus, expected", [
    ("10.0.0.1=8,10.0.0.2=8", "10.0.0.2", 8, True),
    ("10.0.0.1=8,10.0.0.2=4", "10.0.0.2", 8, False),   # listed without all its NPUs
    ("10.0.0.1=8,10.0.0.21=8", "10.0.0.2", 8, False),  # another address that begins with it
    ("", "10.0.0.2", 8, False),
    ("10.0.0.2=8", "", 8, False),
])
def test_in_the_cluster(members, ip, npus, expected):
    assert in_cluster(members, ip, npus) is expected


@pytest.mark.parametrize("members, expected, whole", [
    ("", (0, 0), False),
    ("10.0.0.1=8", (1, 8), False),
    ("10.0.0.1=8,10.0.0.2=8", (2, 16), True),
    ("10.0.0.1=8,10.0.0.2=8,10.0.0.3=0", (3, 16), True),  # a node without NPUs (a CPU node) adds none
    ("10.0.0.1=8,garbage", (2, 8), False),
])
def test_nodes_and_npus_joined(members, expected, whole):
    assert joined(members) == expected and all_joined(members, 2, 8) is whole


HEAD = {"role": "head", "npus": 8, "nnodes": 2, "master_ip": "10.0.0.1", "current_ip": "10.0.0.1", "ray_port": 6379, "raylet": True,
        "gcs": True, "recorded": True, "members": "10.0.0.1=8", "lock": "free"}
WORKER = dict(HEAD, role="worker", current_ip="10.0.0.2", gcs=False, members="")


@pytest.mark.parametrize("look, listed, keep, stale", [
    (HEAD, "", True, None),
    (dict(HEAD, members="10.0.0.2=8"), "", False, "the head's Ray at 10.0.0.1:6379 is not whole"),  # its GCS lists not itself
    (dict(HEAD, gcs=False, members=""), "", False, "the head's Ray at 10.0.0.1:6379 is not whole"),
    (dict(HEAD, raylet=False, gcs=False, members=""), "", False, "the head's Ray at 10.0.0.1:6379 is not whole"),  # recorded only
    (dict(HEAD, raylet=False, gcs=False, recorded=False, members=""), "", False, ""),  # nothing there: started, nothing stopped
    (WORKER, "10.0.0.1=8,10.0.0.2=8", True, None),
    (WORKER, "10.0.0.1=8", False, "the head lists no 10.0.0.2 with 8 NPU (alive: 10.0.0.1=8)"),
    (dict(WORKER, raylet=False), "10.0.0.1=8,10.0.0.2=8", False, "the head lists no 10.0.0.2 with 8 NPU (alive: 10.0.0.1=8,10.0.0.2=8)"),
    (dict(WORKER, raylet=False, recorded=False), "", False, ""),
])
def test_ray_is_kept_or_started_and_a_stale_one_stopped_first(look, listed, keep, stale):
    plan = ray_plan(look, listed)
    assert plan["keep"] is keep and plan.get("stale") == stale
    if keep:
        assert plan["said"].endswith("; left alone.")


ASKED = ["env", "VERL_DEPLOY_LOCK_TOKEN=t", "VERL_DEPLOY_LOCK_RELEASE_IF_WHOLE=1"]


@pytest.mark.parametrize("lock_env, changed, complete, lock, expected", [
    (ASKED, False, True, "free", True),
    (ASKED, False, True, "held", True),
    (ASKED[:2], False, True, "free", False),                           # not asked
    (ASKED, True, True, "free", False),                                # Ray was started: the training stage follows
    (ASKED, False, False, "free", False),                              # a worker's NPUs are missing: its join follows
    (ASKED, False, True, "waited", False),                             # another deploy changed the cluster meanwhile
    (ASKED, False, True, "taken-over", False),
    (ASKED + ["VERL_DEPLOY_LOCK_KEEP=1"], False, True, "free", False),  # a comparison's lock: it releases it
])
def test_the_heads_ray_releases_the_lock_when_the_deploy_has_nothing_else_to_change(lock_env, changed, complete, lock, expected):
    assert released_if_whole(lock_env, changed, complete, lock) is expected


def as_document(name, text):
    """A primitive's answer as the control script prints it (one JSON document), from its sentences and KEY=VALUE lines as
    written in these tables; members answers its list."""
    if name == "members":
        return document([], {"members": text})
    return document(sentences(text), parse_lines(text))


def fake(answers):
    """run() of ray_step: each primitive's answer, and the calls made, in order."""
    calls = []

    def run(name, args, lock_env):
        calls.append((name, list(args)))
        done = dict({"rc": 0, "stdout": "", "stderr": ""}, **answers.get(name, {}))
        return dict(done, stdout=as_document(name, done["stdout"]) if done["stdout"] else "")
    run.calls = calls
    return run


def looked(look, said=""):
    facts = "".join("%s=%s\n" % (key, str(value).lower() if isinstance(value, bool) else value) for key, value in look.items())
    return {"ray-look": {"stdout": said + facts}}


@pytest.mark.parametrize("step, args, lock_env, answers, rc, said, answer, calls", [
    # The head's Ray whole: one look, left alone; asked to, the lock released by one unlock.
    ("ray", [], ASKED, dict(looked(dict(HEAD, nnodes=1)), unlock={"stdout": "lock: released\nchanged=true\nstate=released"}), 0,
     ["ray: the head runs at 10.0.0.1:6379; left alone."],
     {"changed": "false", "state": "in-cluster", "lock": "free", "members": "10.0.0.1=8", "complete": "true", "released": "true"},
     ["ray-look", "unlock"]),
    # Not whole: its stale Ray stopped and started, then asked for the nodes alive.
    ("ray", [], [], dict(looked(dict(HEAD, gcs=False, lock="none")), members={"stdout": "10.0.0.1=8"},
                         **{"ray-start": {"stdout": "ray: the head's Ray at 10.0.0.1:6379 is not whole; stopping this node's stale Ray first.\n"
                                                    "ray: started"}}), 0,
     ["ray: the head's Ray at 10.0.0.1:6379 is not whole; stopping this node's stale Ray first.", "ray: started"],
     {"changed": "true", "state": "started", "lock": "none", "members": "10.0.0.1=8", "complete": "false", "released": "false"},
     ["ray-look", "ray-start", "members"]),
    # Its start failed: Ray's own words on stderr, no answer (it may have stopped a stale Ray).
    ("ray", [], [], dict(looked(dict(HEAD, raylet=False, gcs=False, recorded=False)),
                         **{"ray-start": {"rc": 1, "stderr": "the GCS has become overloaded."}}), 1, [], {}, ["ray-look", "ray-start"]),
    # Refused for another deploy's lock: the look's own exit code and words, nothing else run.
    ("ray", [], ASKED, {"ray-look": {"rc": 4, "stderr": "another deploy is changing this cluster"}}, 4, [], {}, ["ray-look"]),
    # A worker in the head's list: left alone; not in: its stale Ray stopped and joined.
    ("ray", ["10.0.0.1=8,10.0.0.2=8"], [], looked(WORKER), 0, ["ray: 10.0.0.2 is in the cluster of 10.0.0.1:6379 with 8 NPU; left alone."],
     {"changed": "false", "state": "in-cluster"}, ["ray-look"]),
    ("ray", ["10.0.0.1=8"], [], dict(looked(WORKER), **{"ray-start": {"stdout": "ray: started"}}), 0, ["ray: started"],
     {"changed": "true", "state": "joined"}, ["ray-look", "ray-start"]),
    ("ray-check", ["10.0.0.1=8"], [], looked(WORKER), 3, ["ray: 10.0.0.2 has to join the cluster of 10.0.0.1:6379 (alive: 10.0.0.1=8)"], {},
     ["ray-look"]),
    # The lock's sentences (it waited for another deploy) come before the step's own.
    ("ray-check", ["10.0.0.1=8,10.0.0.2=8"], [], looked(WORKER, "lock: taken after waiting 3 s for another deploy.\n"), 0,
     ["lock: taken after waiting 3 s for another deploy.", "ray: 10.0.0.2 is in the cluster of 10.0.0.1:6379 with 8 NPU; left alone."], {},
     ["ray-look"]),
    ("ray-progress", ["2", "8"], ASKED, {"members": {"stdout": "10.0.0.1=8"}}, 3, ["1/2 nodes, 8/16 NPU"], {}, ["members"]),
    ("ray-progress", ["2", "8"], ASKED, {"members": {"rc": 1}}, 3, ["0/2 nodes, 0/16 NPU"], {}, ["members"]),
])
def test_a_ray_step_decided_between_the_primitives(step, args, lock_env, answers, rc, said, answer, calls):
    run = fake(answers)
    done = ray_step(step, args, lock_env, run)
    read = read_answer(done["stdout"])
    assert done["rc"] == rc and read["said"] == said and read["answer"] == answer, done
    assert [name for name, _args in run.calls] == calls


RUNS = "host=n1\nstart_out=/logs/start_verl.out\nlog=/logs/verl_q_run.log\npid=42\nsize=%s\nseen=%s\n"


@pytest.mark.parametrize("text, rc, stdout, stderr", [
    # Not started yet, or no log yet.
    ("host=n1\nstart_out=/logs/start_verl.out\nlog=\npid=\nsize=\nseen=\n", 3, "process not yet, log not yet", ""),
    ("host=n1\nstart_out=/o\nlog=\npid=42\nsize=\nseen=\n", 3, "process 42, log not yet", ""),
    # The first look at its log, then a look that saw it grow; another log than the one seen before waits one look more.
    (RUNS % (100, ""), 3, "runs (pid 42); log verl_q_run.log at 100 bytes, waiting for it to grow", ""),
    (RUNS % (120, "/logs/verl_q_run.log 100"), 0, "runs (pid 42); its log /logs/verl_q_run.log grows (120 bytes)", ""),
    (RUNS % (100, "/logs/verl_q_run.log 100"), 3, "runs (pid 42); log verl_q_run.log at 100 bytes, waiting for it to grow", ""),
    (RUNS % (120, "/logs/verl_q_old.log 100"), 3, "runs (pid 42); log verl_q_run.log at 120 bytes, waiting for it to grow", ""),
    # A log folder with a space in its path is read whole.
    (RUNS.replace("/logs/", "/my logs/") % (120, "/my logs/verl_q_run.log 100"), 0,
     "runs (pid 42); its log /my logs/verl_q_run.log grows (120 bytes)", ""),
    # Ended: finished as verl does (after a step), or before it ran (its start's last lines).
    ("host=n1\nstart_out=/o\nlog=/l.log\nexit_code=0\nlast_step=6\n--- start output\nbye\n", 0, "finished (exit code 0) at step 6; its log /l.log",
     ""),
    ("host=n1\nstart_out=/o\nlog=\nexit_code=1\nlast_step=\n--- start output\nTraceback\nImportError: x=1\n", 1, "",
     "verl_control.sh on n1: the training ended with exit code 1 before it ran. Last lines of /o: Traceback|ImportError: x=1|"),
    ("host=n1\nstart_out=/o\nlog=\nexit_code=0\nlast_step=\n--- start output\n", 1, "",
     "verl_control.sh on n1: the training ended with exit code 0 before it ran. Last lines of /o: "),
])
def test_the_wait_for_the_training_decides_on_one_look(text, rc, stdout, stderr):
    facts, _sep, tail = text.partition("--- start output\n")
    facts = dict(parse_lines(facts), **({"start_output": tail} if _sep else {}))
    done = verify_look(facts)
    assert (done["rc"], read_answer(done["stdout"])["said"], done["stderr"]) == (rc, [stdout] if stdout else [], stderr)


def test_verify_look_reads_the_facts_of_its_primitive_and_passes_on_its_failure():
    run = fake({"verify-facts": {"stdout": RUNS % (120, "/logs/verl_q_run.log 100")}})
    assert decided_step("verify-look", [], ["env"], run)["rc"] == 0 and run.calls == [("verify-facts", [])]
    refused = fake({"verify-facts": {"rc": 1, "stderr": "verl_control.sh on n1: step 'verify-facts' runs on the Ray head only"}})
    assert decided_step("verify-look", [], [], refused)["rc"] == 1


@pytest.mark.parametrize("params, refused", [
    ({"container": "verl", "workdir": "/verl", "step": "ray"}, ""),
    ({"lock_folder": "/sim/logs/.verl-deploy", "step": "lock"}, ""),  # the deploy's lock on the head's host
    ({"lock_folder": "/sim/logs/.verl-deploy", "step": "unlock"}, ""),
    ({"lock_folder": "/sim/logs/.verl-deploy", "step": "ray"}, "lock_folder is for the steps lock and unlock (on the host), not 'ray'"),
    ({"step": "lock"}, "step 'lock' runs in the training container: give container and workdir (or lock_folder, for lock and unlock)"),
    ({"lock_folder": "logs/.verl-deploy", "step": "lock"}, "lock_folder='logs/.verl-deploy' is not an absolute path"),
    ({"container": "--privileged", "workdir": "/verl", "step": "ray"}, "container='--privileged' is not a container's name"),
    ({"argv": ["true"], "chdir": "/tmp"}, ""),
])
def test_node_steps_arguments_are_refused_before_anything_runs(params, refused):
    problem = argument_problem(params)
    assert problem.startswith(refused) if refused else problem == "", problem


def test_the_table_of_steps_names_what_each_decided_step_runs():
    """A decided step names the primitives it runs, each a step of the table; the others run none."""
    assert all(kind.startswith("decided") == bool(uses) for kind, uses, _verdict in STEPS.values())
    assert {use for _kind, uses, _verdict in STEPS.values() for use in uses} <= set(STEPS)
    assert all(verdict is None or callable(verdict) for _kind, _uses, verdict in STEPS.values())
