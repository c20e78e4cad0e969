"""compare.yml on the simulated node, with real trainings: three masks, one of them refused by the settings (VPP with fewer
micro batches than pipeline stages, settings.yml), each trained with the comparison's own layout, TP 4 x PP 4 (-e
verl_train_tp=4 -e verl_train_pp=4), over the user's training of TP 8 x PP 2. The user's training is stopped because
verl_restart=true is given, and started again at the end as it ran, from its launch record: TP 8 x PP 2, its mask, its
experiment and resume mode auto, resuming from its newest checkpoint (the stand-in trainer follows
RayPPOTrainer._load_checkpoint), never with the comparison's extra vars: neither its TP and PP (a checkpoint of TP 8 x PP 2
would refuse them, as test_5_resume_layout.py shows) nor the resume_path from global_step_2 it is also given. The
comparison is interrupted as Ctrl-C does (SIGINT to its process group, the deploy it runs included) once its first mask
is measured, and run again: it takes back the cluster's lock its interrupted run held (no wait for the lock's lease),
trains only the mask not yet measured, writes the table, the JSON and the picture, which name the fastest mask that fits,
and still gives the user's training back (its launch record was kept in the state). Nothing is written to
verl_ckpts_dir but by the user's own training; the lock is released.

The training it leaves runs with its own settings (test_5_resume_layout.py runs after it, test_6_finished.py replaces it)."""
import json
import os
import signal
import subprocess
import time

from sim_scenario import finish, hosts, in_verl, module_utils, playbook, playbook_in_background, started_marker, tail, training_pids

from test_1_deployed import EXPERIMENT, STARTED

CKPTS = "/sim/ckpts/qwen3-8b-dapo"
LOCK = "/sim/logs/.verl-deploy/deploy.lock"


def _state(folder):
    try:
        return json.loads((folder / "state.json").read_text())
    except (OSError, ValueError):
        return {}


def _plan(proc):
    """The comparison's plan as it said it (the verifiers run at -vvv: the whole output is too long for a message)."""
    return proc.stdout.split("Show the plan]", 1)[-1][:4000]


def _interrupt_after_the_first_mask(proc, folder, seconds=900):
    deadline = time.monotonic() + seconds
    while "0000000" not in _state(folder).get("results", {}):
        assert proc.poll() is None, "the comparison ended before its first mask was measured:\n%s" % proc.out_file.read_text()[-6000:]
        assert time.monotonic() < deadline, "the first mask was not measured within %d s" % seconds
        time.sleep(1)
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C sends: the whole foreground group
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        # ansible-core 2.19 may stop only the task that runs and go on with the next (ansible/ansible#86078); between two
        # tasks it went on with the whole comparison (CI, 2026-12-05). The user presses Ctrl-C again: the first one
        # set SIGINT back to its default, so the second ends the run.
        os.killpg(proc.pid, signal.SIGINT)
    try:
        finish(proc, timeout=120)
    except Exception:  # pylint: disable=broad-except  # an Ansible that does not stop on SIGINT is stopped as a lost terminal would
        os.killpg(proc.pid, signal.SIGKILL)
        finish(proc, timeout=60)
    return proc


def test_a_comparison_interrupted_after_its_first_mask_resumes_and_names_the_fastest_mask_that_fits(tmp_path):
    head = hosts("ray_head")[0]
    folder = tmp_path / "compare"
    user = training_pids(head)
    assert len(user) == 1
    saved = set(in_verl(head, "ls %s" % CKPTS).stdout.split())
    assert "global_step_2" in saved  # saved by the first training (verl_save_freq=2); the later ones resumed past it
    # The comparison's own layout and resume settings: its masks train with its layout; none of them reaches the user's training.
    own = ("-e", "verl_train_tp=4", "-e", "verl_train_pp=4",
           "-e", "verl_resume_mode=resume_path", "-e", "verl_resume_from_path=%s/global_step_2" % CKPTS)
    args = ("-e", "masks=0000000,1100000,0000001", "-e", "verl_restart=true", "-e", "verl_compare_dir=%s" % folder, *own)

    first = _interrupt_after_the_first_mask(playbook_in_background("compare.yml", *args, out=tmp_path / "first.log", session=True), folder)
    assert "0000001 (VPP): refused by the settings, not trained: - %s: With VPP (bit 6)" % head in first.output, _plan(first)
    assert "verl_rollout_log_prob_micro_batch_size_per_gpu=128, that is 3 micro batch(es)" in first.output, _plan(first)
    assert "1100000" not in _state(folder)["results"]
    assert in_verl(head, "test -e %s" % LOCK, check=False).returncode == 0, "an interrupted comparison keeps the lock (no always ran)"
    # The user's training as the head read it before the first mask, kept for the run that resumes: its own layout.
    ran = _state(folder)["user_read"]["launch"]["settings"]
    assert (ran["train_tp"], ran["train_pp"], ran["resume_mode"], ran["mask"]) == (8, 2, "auto", "1101100"), ran
    # The newest checkpoint the user's training saved before the comparison stopped it: where it goes on from.
    newest = int(in_verl(head, "cat %s/latest_checkpointed_iteration.txt" % CKPTS).stdout.strip())
    measured = (folder / "deploy-m0000000.log").stat().st_mtime

    again = playbook("compare.yml", *args, timeout=1800)
    assert again.returncode == 0, tail(again, 8000)
    assert "ended without releasing the lock on the cluster: this run takes it back" in again.output, _plan(again)
    assert "0000000 (none): measured already (resumed: not trained again)" in again.output, tail(again, 8000)
    assert (folder / "deploy-m0000000.log").stat().st_mtime == measured
    report = json.loads((folder / "compare.json").read_text())
    rows = {row["mask"]: row for row in report["rows"]}
    assert {mask: row["status"] for mask, row in rows.items()} == {"0000000": "measured", "1100000": "measured", "0000001": "refused"}, rows
    assert report["winner"] in ("0000000", "1100000") and report["verdict"].startswith("fastest that fits: " + report["winner"]), report
    assert all(rows[mask]["steps"] == 3 for mask in ("0000000", "1100000")), rows
    assert "fastest that fits: " + report["winner"] in (folder / "compare.md").read_text()
    assert (folder / "compare.html").read_text().count("<svg") == 2
    assert str(folder / "compare.html") in again.stdout.rsplit("TASK [", 1)[-1]  # the paths in the run's last lines
    # The lock is released, and the state forgets it; every mask's training logged and saved below <verl_log_dir>/compare.
    assert in_verl(head, "test -e %s" % LOCK, check=False).returncode != 0
    assert _state(folder)["lock"] is None
    assert in_verl(head, "ls -d /sim/logs/compare/ckpts/m0000000 /sim/logs/compare/ckpts/m1100000").returncode == 0

    # The user's training runs again as it ran (its launch record, written after the comparison's extra vars), resuming from
    # its newest checkpoint, none of them lost; the masks trained with the comparison's TP 4 x PP 4.
    after = training_pids(head)
    assert len(after) == 1 and after != user
    assert "The training that ran before the comparison was started again as it ran" in again.output, tail(again, 8000)
    given = json.loads((folder / "deploy-user.json").read_text())
    assert (given["verl_train_tp"], given["verl_train_pp"], given["verl_resume_mode"], given["verl_feature_mask"]) == (8, 2, "auto", "1101100")
    restored = " ".join((folder / "deploy-user.log").read_text().split())
    assert "Resume: auto, from the newest checkpoint in %s" % CKPTS in restored, restored[-4000:]
    marker = started_marker(head, after[0], STARTED)
    assert (marker["experiment_name"], marker["resume_mode"], marker["resumed_from_step"]) == (EXPERIMENT, "auto", newest), marker
    assert {"actor_rollout_ref.actor.megatron.tensor_model_parallel_size=8", "actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=2",
            "trainer.resume_mode=auto"} <= set(marker["argv"]), marker["argv"]
    assert not [arg for arg in marker["argv"] if "global_step_2" in arg] and marker["entry_point"] == "verl.trainer.main_ppo"
    masked = " ".join((folder / "deploy-m1100000.log").read_text().split())
    assert "TP 4, PP 4, gen TP 4" in masked, masked[-4000:]  # the summary's hyper-parameters line
    assert "TP 8, PP 2, gen TP 8" in restored, restored[-4000:]
    assert saved <= set(in_verl(head, "ls %s" % CKPTS).stdout.split())
    # The control script's report (status.yml shows it) names what the training was started with.
    said = in_verl(head, "bash /verl/verl_control.sh status '' 5")
    result = {"rc": said.returncode, "stdout": said.stdout}
    result.update(module_utils("_control_step").step_result("status", result))  # as node_step returns it
    status = "\n".join(module_utils("_training_state").node_status(result, "verl", "running", "-", "/verl/verl_control.sh"))
    assert "algorithm: GRPO (resume mode auto)" in status, status
