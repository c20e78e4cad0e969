"""compare.yml on the simulated node, with real trainings: three masks, one of them refused by the settings (VPP with fewer
micro batches than pipeline stages, settings.yml). The user's training is stopped because verl_restart=true is given, and
started again at the end with the user's settings, here verl_resume_mode=resume_path from global_step_2: it resumes from
that checkpoint as verl does (the stand-in trainer follows RayPPOTrainer._load_checkpoint), and the summary and status say
so. The comparison is interrupted as Ctrl-C does (SIGINT to its process group, the deploy it runs included) once its first
mask is measured, and run again: it takes back the cluster's lock its interrupted run held (no wait for the lock's lease),
trains only the mask not yet measured, and writes the table, the JSON and the picture, which name the fastest mask that
fits. Nothing is written to verl_ckpts_dir; the lock is released.

The training it leaves runs with these resume settings (test_5_resume_layout.py runs after it, test_6_finished.py replaces it)."""
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
    # The user's settings for the training started again at the end; each mask's training has the comparison's own.
    resume = ("-e", "verl_resume_mode=resume_path", "-e", "verl_resume_from_path=%s/global_step_2" % CKPTS)
    args = ("-e", "masks=0000000,1100000,0000001", "-e", "verl_restart=true", "-e", "verl_compare_dir=%s" % folder, *resume)

    first = _interrupt_after_the_first_mask(playbook_in_background("compare.yml", *args, out=tmp_path / "first.log", session=True), folder)
    assert "0000001 (VPP): refused by the settings, not trained: - %s: With VPP (bit 6)" % head in first.output, _plan(first)
    assert "verl_rollout_log_prob_micro_batch_size_per_gpu=128, that is 3 micro batch(es)" in first.output, _plan(first)
    assert "1100000" not in _state(folder)["results"]
    assert in_verl(head, "test -e %s" % LOCK, check=False).returncode == 0, "an interrupted comparison keeps the lock (no always ran)"
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

    # The user's training runs again with the user's settings, resuming from the checkpoint they name, none of them lost.
    after = training_pids(head)
    assert len(after) == 1 and after != user
    assert "The training that ran before the comparison was started again with your settings" in again.output
    restored = " ".join((folder / "deploy-user.log").read_text().split())
    assert "Resume: from %s/global_step_2" % CKPTS in restored, restored[-4000:]
    marker = started_marker(head, after[0], STARTED)
    assert (marker["experiment_name"], marker["resume_mode"], marker["resumed_from_step"]) == (EXPERIMENT, "resume_path", 2), marker
    assert "trainer.resume_from_path=%s/global_step_2" % CKPTS in marker["argv"] and marker["entry_point"] == "verl.trainer.main_ppo"
    assert saved <= set(in_verl(head, "ls %s" % CKPTS).stdout.split())
    # The control script's report (status.yml shows it) names what the training was started with.
    said = in_verl(head, "bash /verl/verl_control.sh status '' 5")
    status = "\n".join(module_utils("_training_state").node_status({"rc": said.returncode, "stdout": said.stdout}, "verl", "running", "-",
                                                                   "/verl/verl_control.sh"))
    assert "algorithm: GRPO (resume mode resume_path)" in status, status
