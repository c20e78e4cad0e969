"""Changed settings while a GRPO training runs, then verl_restart=true: the running training gets SIGTERM,
exits cleanly, and a new one starts.

Runs after test_1_deployed (pytest takes the files in name order): it restarts the training."""
import json
import os

from sim_scenario import hosts, in_verl, playbook, started_marker, tail, training_pids

from test_1_deployed import KEY, STARTED

CKPTS = "/sim/ckpts/qwen3-8b-dapo"


def test_another_algorithm_is_drift_and_changes_nothing():
    """DAPO asked for while GRPO runs: the deploy stops before the confirmation, says so, and the training runs on."""
    head = hosts("ray_head")[0]
    before = training_pids(head)
    proc = playbook("deploy.yml", "-e", "verl_algorithm=dapo")
    assert proc.returncode != 0, tail(proc)
    assert "was started from other settings than this run renders: algorithm grpo -> dapo" in proc.output, tail(proc)
    assert training_pids(head) == before and len(before) == 1


def test_a_checkpoint_to_resume_from_that_is_missing_stops_the_deploy():
    """Checked on the head with the other paths, before the confirmation and before anything changes."""
    head = hosts("ray_head")[0]
    before = training_pids(head)
    proc = playbook("deploy.yml", "-e", "verl_restart=true", "-e", "verl_resume_mode=resume_path",
                    "-e", "verl_resume_from_path=%s/global_step_999" % CKPTS)
    assert proc.returncode != 0, tail(proc)
    assert "verl_resume_from_path=%s/global_step_999 is not an existing directory on this host" % CKPTS in proc.output, tail(proc)
    # When not: who was running as the trainer got its signal (the stand-in keeps the container's processes then).
    assert training_pids(head) == before, in_verl(head, "cat %s/stand_in_stopped.json" % CKPTS, check=False).stdout


def test_prompts_longer_than_max_prompt_length_stop_the_deploy_before_the_training_is_touched():
    """Counted in the head's container with the image's transformers and pyarrow (the container stage), before Ray and
    before the running training is stopped: verl 0.7.0 would stop at the first rollout that holds one."""
    head = hosts("ray_head")[0]
    before = training_pids(head)
    proc = playbook("deploy.yml", "-e", "verl_restart=true", "-e", "verl_max_prompt_length=64")
    assert proc.returncode != 0, tail(proc)
    text = " ".join(proc.output.split())
    assert "256 of 256 prompts in /sim/data/train.parquet (verl_train_file) are longer than max_prompt_length 64 tokens" in text, \
        tail(proc)
    assert "'RuntimeError: Sizes of tensors must match except in dimension 0." in text, tail(proc)
    assert training_pids(head) == before


def test_restart_stops_the_training_cleanly_and_starts_a_new_one():
    head = hosts("ray_head")[0]
    before = training_pids(head)
    proc = playbook("deploy.yml", "-vvv", "-e", "verl_restart=true")
    assert proc.returncode == 0, tail(proc)
    assert KEY not in proc.stdout + proc.stderr, "the SwanLab key is in the -vvv output"
    assert "verl_swanlab_api_key is set but verl_swanlab_mode is offline" in proc.output
    assert "Algorithm: GRPO" in proc.output and "Resume: auto, from the newest checkpoint in %s" % CKPTS in proc.output, tail(proc)
    # verl_image is empty: the summary names the image chosen for the A3 chip, and why.
    image = os.environ["VERL_SIM_VERL_LOCAL_IMAGE"]
    assert "Image: %s (chosen for Atlas A3 / Ascend910_93 (npu-smi: Ascend910); set verl_image to override)" % image in proc.output
    assert "Ascend910 (A3: one device per chip) detected: 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15" in proc.output
    after = training_pids(head)
    assert len(after) == 1 and after != before
    stopped = json.loads(in_verl(head, "cat %s/stand_in_stopped.json" % CKPTS).stdout)
    assert stopped["pid"] == int(before[0]) and stopped["signal"] == "SIGTERM"
    assert started_marker(head, after[0], STARTED)["pid"] == int(after[0])
