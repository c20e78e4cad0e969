"""The launch record, the training state verl_control.sh prints, and what differs between two records."""
from __future__ import annotations

import json

import pytest

from ansible_collections.verl.deploy.plugins.module_utils._control_step import classify, parse_training_state
from ansible_collections.verl.deploy.plugins.module_utils._training_state import launch_drift, launch_record
from helpers import answers
from helpers.answers import answered, parse_lines, training
from helpers.launch_helpers import SECRET_KEY, SWANLAB_ON, launch_ok

BASE = launch_ok()


def record(run_training="echo train", **overrides):
    return launch_record(launch_ok(**overrides), run_training)


def test_the_record_never_holds_the_key():
    assert SECRET_KEY not in json.dumps(launch_record(launch_ok(api_key=SECRET_KEY, **SWANLAB_ON)))


def test_the_record_keeps_what_shapes_the_training_and_the_mask():
    kept = record()["settings"]
    assert kept["mask"] == "0000000" and kept["train_tp"] == 4 and kept["model_path"] == "/models/Qwen3-8B"
    assert "features" not in kept and "image" not in kept and "train_start_timeout" not in kept
    assert json.loads(json.dumps(record())) == record(), "the record must survive JSON (it is kept as launch.json)"


def test_the_same_settings_make_no_drift():
    assert launch_drift(record(), record()) == []


def test_settings_that_never_need_a_restart_make_no_drift():
    quiet = record(verl_train_start_timeout=999, verl_ray_wait_timeout=999, verl_ray_join_retries=3, verl_ray_join_timeout=15,
                   verl_status_log_lines=5, verl_output_dir="/tmp/elsewhere", verl_image="registry:5000/other:tag",
                   verl_logs_dir="/tmp/other-logs", verl_logs_max_mb=5, verl_tracker_keys_dir="/root/elsewhere")
    assert launch_drift(record(), quiet) == []
    # A training started before the trackers' keys were kept (an earlier release's record) is no drift for them either.
    old = record()
    assert "tracker_keys" not in old["settings"] and "tracker_keys_dir" not in old["settings"]


@pytest.mark.parametrize("mask, expected", [
    ("1000000", "mask 0000000 -> 1000000: Remove Padding on"),
    ("0100001", "mask 0000000 -> 0100001: Dynamic Batch Size on, VPP on"),
])
def test_a_changed_mask_names_each_feature_turned_on_or_off(mask, expected):
    assert launch_drift(record(), record(verl_feature_mask=mask))[0] == expected
    back = expected.split(": ")[1].replace(" on", " off")
    assert launch_drift(record(verl_feature_mask=mask), record())[0].endswith(back)


def test_every_changed_setting_is_listed_mask_first():
    drift = launch_drift(record(), record(verl_feature_mask="1000000", verl_lr="2e-6", verl_train_steps=8))
    assert drift == ["mask 0000000 -> 1000000: Remove Padding on", "lr 1e-6 -> 2e-6", "train_steps 4 -> 8"]


def test_long_values_are_cut():
    drift = launch_drift(record(), record(verl_extra_env={"HCCL_A%d" % i: "x" * 50 for i in range(20)}))
    assert drift and all(len(line) < 300 for line in drift), drift


def test_swanlab_settings_are_compared():
    drift = launch_drift(record(), record(api_key=SECRET_KEY, **SWANLAB_ON))
    assert "swanlab_enabled false -> true" in drift, drift


def test_same_settings_but_another_run_training_is_drift():
    drift = launch_drift(record("echo old"), record("echo new"))
    assert len(drift) == 1 and "run_training.sh differs" in drift[0]


@pytest.mark.parametrize("started", [None, {}, {"unexpected": 1}, "garbage"])
def test_a_training_without_a_record_counts_as_changed(started):
    drift = launch_drift(started, record())
    assert len(drift) == 1 and "no launch record" in drift[0]


def test_the_state_lines_parse_with_the_record():
    lines = ["pid=42", "exit_code=", "started_at=1700000000", "last_step=1700000100 7", "ray_session=session_1",
             "log=/logs/verl_qwen3_8b_x.log", "launch=%s" % json.dumps(record())]
    text = answered("\n".join(lines))
    state = parse_training_state(text)
    assert state["state"] == "running" and state["pid"] == "42" and state["last_step"] == "1700000100 7"
    assert state["launch"] == record()


@pytest.mark.parametrize("text, expected", [
    ("", "unknown"), (None, "unknown"), ("bash: /verl/verl_control.sh: No such file or directory", "unknown"),
    # A control script of an earlier release answered KEY=VALUE lines: none of it is a fact, its state= line least of all.
    ("state=running\npid=1\nlaunch={broken", "unknown"),
    (answered("pid=42\nstarted_at=1\nlaunch={broken"), "running"),
])
def test_nothing_readable_is_unknown_and_a_broken_record_is_none(text, expected):
    state = parse_training_state(text)
    assert state["launch"] is None and state["state"] == expected


def test_another_algorithm_is_drift():
    """DAPO and GRPO are different trainings: a change of verl_algorithm needs verl_restart=true."""
    assert launch_drift(record(), record(verl_algorithm="grpo")) == ["algorithm dapo -> grpo"]
    assert launch_drift(record(verl_algorithm="grpo"), record(verl_algorithm="grpo")) == []


def test_another_resume_setting_is_drift():
    drift = launch_drift(record(), record(verl_resume_mode="resume_path", verl_resume_from_path="/ckpt/global_step_2"))
    assert drift == ["resume_from_path  -> /ckpt/global_step_2", "resume_mode auto -> resume_path"], drift


AUTO = {"resume_mode": "auto", "save_freq": 2, "ckpts_dir": "/mnt/ckpts/run"}


def fresh_start_refusal(look, launch, node):
    """The refusal on what node_facts read on the head's host (a dict), written here as KEY=VALUE lines."""
    from ansible_collections.verl.deploy.plugins.module_utils._training_state import fresh_start_refusal as refusal
    return refusal(parse_lines(look), launch, node)


def test_a_training_past_its_first_save_with_no_checkpoint_now_is_refused():
    look = "last_step=1700000000 716\nckpts_seen=\nckpts_fs=64\nexists=yes\nfs_now=64\ncheckpoints=0\nmountpoint=no\n"
    text = fresh_start_refusal(look, AUTO, "node1")
    assert text.startswith("node1 (head): the last training reached step 716, but verl_ckpts_dir has no checkpoint: "
                           "is its storage mounted on node1?")
    assert text.endswith("To start over, give verl_resume_mode=disable.")
    # An empty mountpoint of another file system than before says so.
    other = fresh_start_refusal(look.replace("fs_now=64", "fs_now=77").replace("mountpoint=no", "mountpoint=yes"), AUTO, "node1")
    assert "another file system than when the training started: device 77, then 64, an empty mountpoint" in other
    # Checkpoints seen at the last start count, also below the first save.
    assert fresh_start_refusal("last_step=1 1\nckpts_seen=1700000000\ncheckpoints=0\n", AUTO, "n")


def test_no_refusal_with_checkpoints_a_young_training_or_another_resume_mode():
    assert fresh_start_refusal("last_step=1 716\ncheckpoints=3\n", AUTO, "n") == ""
    assert fresh_start_refusal("last_step=1 1\ncheckpoints=0\n", AUTO, "n") == ""  # before its first save
    assert fresh_start_refusal("checkpoints=0\n", AUTO, "n") == ""  # never trained
    assert fresh_start_refusal("last_step=1 716\ncheckpoints=0\n", dict(AUTO, resume_mode="disable"), "n") == ""
    assert fresh_start_refusal("last_step=1 716\ncheckpoints=0\n", dict(AUTO, save_freq=-1), "n") == ""
    assert fresh_start_refusal("", AUTO, "n") == ""  # nothing read (no host answer)


def test_a_restart_before_the_first_save_or_into_another_folder_is_not_refused():
    def look(**settings):
        return "last_step=1700000000 4\nlaunch=%s\ncheckpoints=0\n" % json.dumps({"settings": settings})
    # Started with verl_save_freq=1000, 4 steps logged: no checkpoint is expected, whatever this deploy's save_freq.
    assert fresh_start_refusal(look(save_freq=1000, ckpts_dir="/mnt/ckpts/run"), AUTO, "n") == ""
    # Past its save step (2) in /mnt/ckpts/old, restarted into /mnt/ckpts/run/: a new run in the new folder.
    assert fresh_start_refusal(look(save_freq=2, ckpts_dir="/mnt/ckpts/old"), AUTO, "n") == ""
    # The same folder (written with a trailing slash) with no checkpoint after a save step is refused.
    assert "has no checkpoint" in fresh_start_refusal(look(save_freq=2, ckpts_dir="/mnt/ckpts/run/"), AUTO, "n")


# status.yml's table and verdict (status_report): per-node facts as roles/day2/tasks/status.yml keeps them.
from ansible_collections.verl.deploy.plugins.module_utils._training_state import FAIL_ON, status_report, training_progress  # noqa: E402

NPU = {"npus": [{"chips": [{"hbm_used_mb": 40960, "hbm_total_mb": 65536, "aicore_pct": 50},
                           {"hbm_used_mb": 20480, "hbm_total_mb": 65536, "aicore_pct": 30}]}]}
LAUNCH = json.dumps({"settings": {"train_steps": 100}})


def worker_answer(in_ray="yes", control="", role="worker"):
    """The status step's facts of a node in the head's Ray (in_ray yes) or not: the node is 10.0.0.2 (the head 10.0.0.1)."""
    ip = "10.0.0.1" if role == "head" else "10.0.0.2"
    return "\n".join(["role=%s" % role, "raylet=running", "current_ip=%s" % ip, "master_ip=10.0.0.1", "npus=8", "address_problem=",
                      "listed=10.0.0.1=8%s" % (",10.0.0.2=8" if in_ray == "yes" else ""), "control=%s" % control])


def head_answer(state="running", first="1000 1", last="1600 11", quiet="60", code="", control=""):
    """The head's facts of a training in that state (decided on the host: classify) quiet seconds after its last step."""
    facts = training(state, quiet=str(int(last.split()[0]) - 1700000000 + int(quiet or 0)), exit_code=code, first_step=first,
                     last_step=last, launch=LAUNCH)
    return answered(worker_answer("yes", control, role="head") + "\n" + facts)


def node(name, answer="yes", runs=True, answered=True):
    answer = answers.answered(worker_answer(answer)) if answer in ("yes", "no") else answer
    if not answered:
        return {"name": name, "answered": False}
    return {"name": name, "answered": True, "container": "running" if runs else "exited (exit code 137)", "container_runs": runs,
            "status": answers.status_step(answer), "npu": NPU, "npus_in_use": "0-1 by the training"}


@pytest.mark.parametrize("head, workers, fail_on, state, failed, alarm", [
    (head_answer(), ["yes"], FAIL_ON, "running", False, None),
    (head_answer(quiet="4000"), ["yes"], FAIL_ON, "stalled", True, "STALLED: no step for 4000 s"),
    (head_answer(state="crashed", code="1", quiet=""), ["yes"], FAIL_ON, "crashed", True, "CRASHED (exit code 1)"),
    (head_answer(state="crashed", code="", quiet=""), ["no"], FAIL_ON, "crashed", True, "container or node restarted"),
    (head_answer(), ["no"], FAIL_ON, "running", True, "w1 is NOT in the head's Ray cluster while the training runs"),
    (head_answer(), ["no"], ["crashed"], "running", False, None),
    (head_answer(state="stopped", quiet=""), ["no"], FAIL_ON, "stopped", False, None),
    (head_answer(state="finished", code="0", quiet=""), ["yes"], FAIL_ON, "finished", False, None),
    (head_answer(state="orphaned"), ["yes"], FAIL_ON, "orphaned", True, "Ray cluster was restarted under it"),
    (head_answer(state="crashed", code="1"), ["yes"], [], "crashed", False, None),
], ids=["running", "stalled", "crashed", "crashed-restarted", "worker-out-of-ray", "out-of-ray-switched-off", "stopped",
        "finished", "orphaned", "nothing-fails"])
def test_the_status_verdict(head, workers, fail_on, state, failed, alarm):
    nodes = [node("w%d" % i, answer) for i, answer in enumerate(workers, 1)] + [node("h", head)]
    report = status_report(nodes, "h", 1800, fail_on)
    assert (report["state"], report["failed"]) == (state, failed), report["lines"]
    if alarm:
        assert any(alarm in line for line in report["failing"]), report["failing"]


def test_the_status_table_head_first_with_progress_and_time_left():
    report = status_report([node("w1"), node("w2", answered=False), node("h", head_answer())], "h", 1800)
    assert report["lines"] == [
        "node  role    container       in Ray  NPUs in use          HBM        AICore",
        "h     head    running         yes     0-1 by the training  60/128 GB  40%",
        "w1    worker  running         yes     0-1 by the training  60/128 GB  40%",
        "w2    worker  DID NOT ANSWER  ?       ?                    ?          ?",
        "training: running; step 11 of 100 (11.0%), 1.0 steps/min, about 1 h 29 min left",
    ]
    assert report["progress"] == {"step": 11, "total_steps": 100, "steps_per_min": 1.0, "seconds_left": 5340,
                                  "text": "step 11 of 100 (11.0%), 1.0 steps/min, about 1 h 29 min left"}


@pytest.mark.parametrize("last, total, text", [
    ("1700000600 4", 4, "step 4 of 4 (100.0%)"),
    # verl_restart=true of a finished training: verl resumed at its total and trained one step more.
    ("1700000600 5", 4, "step 5, past its total of 4 (started again after it had reached it)"),
    ("1700000600 5", None, "step 5"),
])
def test_the_progress_of_a_finished_training_at_and_past_its_total(last, total, text):
    launch = {"settings": {"train_steps": total}} if total else None
    assert training_progress({"state": "finished", "last_step": last, "launch": launch})["text"] == text


def test_a_control_script_another_release_installed_is_named_with_the_fix():
    """The script answers its own SHA-256 (control=); one of another release, or one from before it said which it is, is
    named (a stopped container's, or a node that did not answer, cannot be told)."""
    ours, theirs = "a" * 64, "b" * 64
    nodes = [node("h", head_answer(control=ours)), node("w1", answered(worker_answer(control=theirs))), node("w2"),
             node("w3", "", runs=False), node("w4", answered=False)]
    report = status_report(nodes, "h", 1800, control_sha256=ours)
    assert report["other_control"] == ["w1", "w2"] and not any("verl_control" in text for text in report["failing"])  # a note
    assert report["lines"][-1] == ("verl_control.sh on w1, w2 was installed by another release of verl-deploy: this report reads it as "
                                   "this release's and may read it wrongly. Fix: run deploy.yml to update it (a running training is "
                                   "left alone).")
    assert status_report(nodes[:1], "h", 1800, control_sha256=ours)["other_control"] == []
    assert status_report(nodes, "h", 1800)["other_control"] == []  # nothing to compare with


def test_a_head_whose_container_is_down_shows_no_training():
    """(An unknown name in verl_status_fail_on is refused by the settings' rules before any node is read.)"""
    report = status_report([node("h", "", runs=False)], "h", 1800, ["crashed"])
    assert report["state"] == "unknown" and report["nodes"]["h"]["ray"] == "no" and not report["failed"]


def test_a_restart_before_the_first_save_of_the_last_training_is_not_refused():
    """Issue 28: a training started with save_freq=1000 logged 4 steps (no checkpoint yet, rightly); a deploy with new
    settings (save_freq 2 now) and verl_restart=true starts it again. Whether a checkpoint is expected is the last
    training's save_freq (its launch record, launch.json), not this deploy's."""
    def look(save_freq, step=4):
        record = json.dumps({"settings": {"save_freq": save_freq, "train_tp": 4}, "run_training_sha256": "0" * 64})
        return "last_step=1700000000 %d\nckpts_seen=\nckpts_fs=64\nlaunch=%s\nexists=yes\nfs_now=64\ncheckpoints=0\n" % (
            step, record)

    assert fresh_start_refusal(look(1000), AUTO, "node1") == ""
    # It did pass its save step (1000 steps logged with save_freq 1000): the checkpoint is expected, whatever this deploy says.
    assert "reached step 1000" in fresh_start_refusal(look(1000, step=1000), dict(AUTO, save_freq=5000), "node1")
    # The last training saved every 2 steps and logged 4: refused, also when this deploy saves every 1000.
    assert fresh_start_refusal(look(2), dict(AUTO, save_freq=1000), "node1")
    # No record (an older state folder, an unreadable line): this deploy's save_freq decides, as before.
    assert fresh_start_refusal(look(2).replace("launch={", "launch=x{"), dict(AUTO, save_freq=1000), "node1") == ""


def test_a_default_experiment_name_is_no_drift_of_its_own():
    """The default name follows the mask (recorded): a mask change is one line; a name the user gives is compared."""
    drift = launch_drift(record(), record(verl_feature_mask="1000000", verl_loggers=["tensorboard"]))
    assert drift[0].startswith("mask 0000000 -> 1000000") and not [line for line in drift if line.startswith("experiment_name")]
    assert [line for line in drift if line.startswith("tensorboard")] == ["tensorboard null -> /mnt/project/verl/logs/tensorboard"], drift
    assert "experiment_name  -> mine" in launch_drift(record(), record(verl_experiment_name="mine"))


@pytest.mark.parametrize("training, stalled", [
    ({"state": "running", "quiet_for": "1801"}, True),
    ({"state": "running", "quiet_for": "1800"}, False),   # at the bound, not past it
    ({"state": "running", "quiet_for": ""}, False),       # not known: never an alarm
    ({"state": "crashed", "quiet_for": "5000"}, False),   # only a running training stalls
])
def test_the_one_definition_of_stalled(training, stalled):
    from ansible_collections.verl.deploy.plugins.module_utils._training_state import is_stalled
    assert is_stalled(training, 1800) is stalled


FACTS = {"pid": "", "exit_code": "", "started_at": "", "stopped_at": "", "last_step": "", "ray_session": "session_b",
         "ray_session_started": "session_b", "now": "1000"}


@pytest.mark.parametrize("facts, state, quiet", [
    # What verl_control.sh training-state answers: facts; the state is decided here (classify).
    ({}, "not-started", ""),
    ({"pid": "7", "started_at": "900"}, "running", "100"),
    ({"pid": "7", "started_at": "900", "last_step": "990 12"}, "running", "10"),
    # Started in a Ray session that is no longer the one running: its Ray cluster was restarted under it.
    ({"pid": "7", "started_at": "900", "ray_session_started": "session_a"}, "orphaned", "100"),
    ({"pid": "7", "started_at": "900", "ray_session_started": ""}, "running", "100"),  # a start before the session was kept
    ({"started_at": "900", "stopped_at": "950"}, "stopped", ""),
    ({"started_at": "900", "exit_code": "0"}, "finished", ""),
    ({"started_at": "900", "exit_code": "3"}, "crashed", ""),
    ({"started_at": "900"}, "crashed", ""),  # ended with no exit code kept: the container or the node restarted under it
])
def test_the_state_is_decided_from_the_scripts_facts(facts, state, quiet):
    found = parse_training_state(answered("\n".join("%s=%s" % item for item in dict(FACTS, **facts).items())))
    assert (found["state"], found["quiet_for"]) == (state, quiet)


def test_no_state_or_quiet_time_is_taken_from_a_node():
    """The state and the quiet time are decided here from facts; a state= or quiet_for= a node answers is no fact (an
    earlier release's script answered them itself, and a node's file could forge them)."""
    found = parse_training_state(answered("state=finished\npid=7\nquiet_for=42\nstarted_at=900\nnow=1000\n"))
    assert (found["state"], found["quiet_for"]) == ("running", "100")
    assert classify({"pid": "7", "state": "stopped"}) == "running" and classify({}) == "unknown"


def test_status_names_the_first_failure_on_the_worker_that_failed_not_the_heads_followers():
    """Issue 57: the head's log holds only followers (RayTaskError, ActorDiedError, the placement group's); the worker's Ray
    log holds NPU out of memory (vllm-ascend#19's text) ten minutes into the run: status names that worker, in at most 3
    lines above its table, and keeps the same and every matching line as data. A healthy training scans nothing."""
    from unit.plugins.module_utils.test_failures import HEAD_LOG, WORKER_ERR
    from ansible_collections.verl.deploy.plugins.module_utils._control_step import document
    facts = parse_lines(worker_answer("yes", role="head") + "\n" + training("crashed", quiet="0", exit_code="1", started_at="1699999400"))
    head = document([], dict(facts, log_tail="\n".join(HEAD_LOG)))
    scan = {"clock": {"now": 1_700_000_100.0, "utc_offset": 0},
            "files": [{"path": "/tmp/ray/session_latest/logs/worker-1.err", "mtime": 1_700_000_000.0,
                       "lines": [[str(index), line] for index, line in enumerate(WORKER_ERR)]}]}
    nodes = [node("h", head), dict(node("w1"), failure_scan=scan, clock_offset="0.4")]
    report = status_report(nodes, "h", 1800)
    assert report["state"] == "crashed" and report["failure"]["node"] == "w1", report["failure"]
    assert report["failure"]["signature"] == "npu_oom" and report["failure"]["evidence"][0].split()[3] == "w1"
    assert report["lines"][0].startswith("first failure: w1 at 2023-11-14 22:13:19 UTC, NPU out of memory"), report["lines"]  # its clock 0.4 s ahead
    assert report["lines"][3].startswith("node  role")
    # A line a node holds reaches the stats through the terminal's gate.
    scan["files"][0]["lines"][-1][1] += "\x1b[2J"
    gated = status_report(nodes, "h", 1800)["failure"]
    assert "\x1b" not in gated["line"] + "".join(gated["evidence"]) and "\\x1b[2J" in gated["line"], gated["line"]
    healthy = status_report([node("h", head_answer()), node("w1")], "h", 1800)
    assert healthy["failure"] == {"failed": False} and healthy["lines"][0].startswith("node  role")


def test_the_deploys_verify_names_the_first_failure_as_status_does():
    """The deploy's verify of a training that did not start as expected reads the same looks with the same filter
    (verl.deploy.first_failure, given each node's look): the same lines and stats as status.yml's; a worker's line the
    head's log holds (forwarded by Ray with its IP) is that worker's by the address the pre-check found; nothing found
    says nothing, and the deploy's message is the verify's own."""
    from unit.plugins.module_utils.test_failures import HEAD_LOG, WORKER_ERR
    from ansible_collections.verl.deploy.plugins.filter.first_failure import first_failure
    from ansible_collections.verl.deploy.plugins.module_utils._control_step import document
    facts = parse_lines(worker_answer("yes", role="head") + "\n" + training("crashed", quiet="0", exit_code="1", started_at="1699999400"))
    head = document([], dict(facts, log_tail="\n".join(HEAD_LOG)))
    scan = {"clock": {"now": 1_700_000_100.0, "utc_offset": 0},
            "files": [{"path": "/tmp/ray/session_latest/logs/worker-1.err", "mtime": 1_700_000_000.0,
                       "lines": [[str(index), line] for index, line in enumerate(WORKER_ERR)]}]}
    looks = {"h": None, "w1": {"failure_scan": scan, "clock_offset": 0.4}}
    deploy = first_failure(looks, "h", answers.status_step(head))
    status = status_report([node("h", head), dict(node("w1"), **looks["w1"])], "h", 1800)
    assert deploy["lines"] == status["lines"][:3] and deploy["stats"] == status["failure"] and deploy["stats"]["node"] == "w1"
    forwarded = document([], dict(facts, log_tail="(WorkerDict pid=4242, ip=10.0.0.2) " + WORKER_ERR[-1]))
    assert first_failure({"h": None, "w1": None}, "h", answers.status_step(forwarded), {"h": "10.0.0.1", "w1": "10.0.0.2"})["stats"]["node"] == "w1"
    assert first_failure({"h": None, "w1": {"failure_scan": None, "clock_offset": None}}, "h", {}) == {"lines": [], "stats": {"failed": False}}


@pytest.mark.parametrize("training, failed", [
    ({"state": "crashed"}, True), ({"state": "orphaned"}, True),
    ({"state": "running", "quiet_for": "1801"}, True),    # stalled
    ({"state": "running", "quiet_for": "10"}, False), ({"state": "finished"}, False), ({"state": "stopped"}, False),
    ({"state": "unknown"}, False),
])
def test_the_one_definition_of_a_failed_training_status_diagnoses(training, failed):
    from ansible_collections.verl.deploy.plugins.module_utils import _training_state
    assert _training_state.failed(training, 1800) is failed


def with_samples(document, aicore, clock=1700000100, at=20):
    """A status step's answer with its NPU sampler's last line (npu_samples) and the node's clock, as verl_control.sh answers."""
    found = json.loads(document)
    line = {"time": clock - at, "node": "n", "every": 30, "processes": 1,
            "npus": [{"id": "0", "hbm_used_mb": 30720, "hbm_total_mb": 65536, "aicore_pct": aicore, "temp_c": 50, "health": "OK"}]}
    found["answer"].update({"npu_samples": json.dumps(line) + "\n", "clock": str(clock)})
    return json.dumps(found)


def test_status_shows_each_nodes_npu_use_and_names_the_idle_one():
    nodes = [node("h", with_samples(head_answer(), 40)), node("w1", with_samples(answered(worker_answer()), 0)),
             node("w2", with_samples(answered(worker_answer()), 44))]
    report = status_report(nodes, "h", 1800)
    assert "  w1: AICore 0 % mean, HBM 30/64 GB, max 50 C, -; 1 sample(s), newest 20 s ago" in report["lines"]
    assert any(line.startswith("NPUs IDLE on w1: AICore 0 % while the other nodes average 42 %") for line in report["lines"])
    assert report["npu"]["idle"] == ["w1"] and report["npu"]["nodes"]["h"]["aicore_pct"] == 40.0
    assert not report["failed"]  # a note, not an alarm
    # Once the training has stopped, the figures stay and nobody is named.
    nodes[0] = node("h", with_samples(head_answer(state="stopped", quiet=""), 40))
    report = status_report(nodes, "h", 1800)
    assert report["npu"]["idle"] == [] and not any(line.startswith("NPUs IDLE") for line in report["lines"])
