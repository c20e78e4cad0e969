"""smoke.yml on the simulated node after test_6_finished.py's training ended by itself (nothing to stop): one step is
saved, then a restart resumes from it (verl_resume_mode=auto: "Load from checkpoint folder: .../global_step_1") and
trains step 2, both through deploy.yml into <verl_log_dir>/smoke; every phase is proven, smoke.json has the verdict,
and the user's checkpoints and finished training are left as they were. The extra vars are test_6's (verl 0.7.1's
image, privileged), as a user's would be the settings the cluster runs with."""
import json

from sim_scenario import hosts, in_verl, playbook, tail, training_pids

from test_6_finished import CKPTS, SHORT

SMOKE = "/sim/logs/smoke/ckpts/m1101100"


def test_a_smoke_launch_proves_load_rollout_update_save_and_resume_in_a_folder_of_its_own(tmp_path):
    head = hosts("ray_head")[0]
    users = "ls %s; cat %s/stand_in_stopped.json" % (CKPTS, CKPTS)
    before = in_verl(head, users).stdout
    proc = playbook("smoke.yml", *SHORT, "-e", "verl_compare_dir=%s" % tmp_path)
    assert proc.returncode == 0, tail(proc, 8000)
    assert ("Smoke launch of mask 1101100 passed in" in proc.output
            and "load, rollout, update, save (global_step_1 in %s) and resume" % SMOKE in proc.output), tail(proc, 8000)
    assert "No training ran before the smoke launch" in proc.output
    verdict = json.loads((tmp_path / "smoke" / "smoke.json").read_text())
    assert verdict["ok"] and verdict["proved"] == ["load", "rollout", "update", "save", "resume"], verdict
    assert (verdict["runs"]["save"]["steps"], verdict["runs"]["resume"]["steps"], verdict["runs"]["resume"]["loaded"]) == ([1], [2], 1)
    # What the resume run's training (the stand-in follows verl's _load_checkpoint) was started with and found.
    started = json.loads(in_verl(head, "cat %s/stand_in_started.json" % SMOKE).stdout)
    assert (started["resume_mode"], started["resumed_from_step"], started["verl_version"]) == ("auto", 1, "0.7.1"), started
    assert {"global_step_1", "global_step_2"} <= set(in_verl(head, "ls %s" % SMOKE).stdout.split())
    # The user's checkpoints and finished training: as they were; nothing of the user's was started.
    assert in_verl(head, users).stdout == before
    assert training_pids(head) == []
