"""verl_resume_mode=resume_path: a restart resumes from the checkpoint folder it is given, as verl does (the
stand-in trainer follows verl's RayPPOTrainer._load_checkpoint), and the summary and status say so.

The training it leaves runs with these resume settings (pytest takes the files in name order; test_6_compare.py replaces it)."""
from sim_scenario import hosts, in_verl, playbook, started_marker, tail, training_pids

from test_1_deployed import STARTED

CKPTS = "/sim/ckpts/qwen3-8b-dapo"


def test_restart_resumes_from_the_given_checkpoint():
    head = hosts("ray_head")[0]
    before = training_pids(head)
    # Saved by the first training (verl_save_freq=2); the later ones resumed past it.
    assert in_verl(head, "test -d %s/global_step_2" % CKPTS, check=False).returncode == 0
    proc = playbook("deploy.yml", "-e", "verl_restart=true", "-e", "verl_resume_mode=resume_path",
                    "-e", "verl_resume_from_path=%s/global_step_2" % CKPTS)
    assert proc.returncode == 0, tail(proc)
    assert "Resume: from %s/global_step_2" % CKPTS in proc.output, tail(proc)
    after = training_pids(head)
    assert len(after) == 1 and after != before
    started = started_marker(head, after[0], STARTED)
    assert started["entry_point"] == "verl.trainer.main_ppo"
    assert started["resume_mode"] == "resume_path" and started["resumed_from_step"] == 2
    assert "trainer.resume_from_path=%s/global_step_2" % CKPTS in started["argv"]
    # The control script's report (status.yml shows it) names what the training was started with.
    status = in_verl(head, "bash /verl/verl_control.sh status '' 5 1800").stdout
    assert "algorithm: GRPO (resume mode resume_path)" in status, status
