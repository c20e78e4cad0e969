"""Another verl release from the same inventory, and a training that reaches its last step: the node's container is
removed and the deploy creates it from verl 0.7.1's image (the scenario trained on 0.9.1's), privileged as verl's own
container template runs it (`verl_container_privileged=true`: no device list, every NPU seen), which trains a short run
with the keys 0.7.1 reads on all 16 NPUs; it ends, as verl does (exit code 0), status reports it finished, and an
unchanged re-run leaves it alone and changes nothing.

It replaces the running training with a short one (pytest takes the files in name order; test_7_smoke.py runs after it)."""
import json
import os
import time

from sim_scenario import hosts, in_verl, npu_processes, on_node, playbook, recap, tail, training_pids

from test_1_deployed import STARTED

IMAGE_0_7_1 = os.environ["VERL_SIM_EXTRA_LOCAL_IMAGES"]  # loaded by the prepare step beside the scenario's image
SHORT = ["-e", "verl_train_steps=6", "-e", "verl_resume_mode=disable", "-e", "verl_image=%s" % IMAGE_0_7_1,
         "-e", "verl_container_privileged=true"]
CKPTS = "/sim/ckpts/qwen3-8b-dapo"


def test_a_finished_training_is_reported_and_left_alone():
    head = hosts("ray_head")[0]
    # A container is never recreated by a deploy (it may hold a training): another image is a new container.
    on_node(head, "docker", "rm", "-f", "verl")
    proc = playbook("deploy.yml", *SHORT)
    assert proc.returncode == 0, tail(proc)
    assert "Image's verl: 0.7.1" in proc.output, tail(proc)
    privileged = on_node(head, "docker", "inspect", "-f", "{{.HostConfig.Privileged}} {{len .HostConfig.Devices}}", "verl").stdout.split()
    assert privileged == ["true", "0"], privileged
    deadline = time.monotonic() + 180
    while training_pids(head):
        assert time.monotonic() < deadline, "the 6-step training did not end by itself"
        time.sleep(2)
    stopped = json.loads(in_verl(head, "cat %s/stand_in_stopped.json" % CKPTS).stdout)
    assert stopped["finished"] is True and stopped["steps"] == 6, stopped
    started = json.loads(in_verl(head, "cat %s" % STARTED).stdout)
    assert started["pid"] == stopped["pid"] and started["verl_version"] == "0.7.1", started
    assert started["entry_point"] == "verl.trainer.main_ppo", started
    assert sorted(worker["device"] for worker in started["workers"]) == list(range(16)), started["workers"]
    # 0.7.1 reads remove padding from the Megatron keys and the model's, and has no bridge switch.
    assert "actor_rollout_ref.actor.megatron.use_remove_padding=True" in started["argv"], started["argv"]
    assert not [arg for arg in started["argv"] if "vanilla_mbridge" in arg], started["argv"]
    status = playbook("status.yml")
    assert status.returncode == 0, tail(status)
    assert "training: finished (exit code 0); step 6 logged" in status.output, tail(status)
    assert "NPUs in use: none" in status.output, tail(status)  # its workers went with it
    assert npu_processes(head) == {}
    again = playbook("deploy.yml", *SHORT)
    assert again.returncode == 0, tail(again)
    assert "Training finished on %s (exit code 0); left alone." % head in again.output, tail(again)
    assert {counts["changed"] for counts in recap(again.stdout).values()} == {0}, tail(again)
    assert training_pids(head) == []
