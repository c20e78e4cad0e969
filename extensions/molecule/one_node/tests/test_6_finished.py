"""A training that reaches its last step ends, as verl does (exit code 0): status reports it finished, and an
unchanged re-run leaves it alone and changes nothing.

Runs last (pytest takes the files in name order): it replaces the running training with a short one."""
import json
import time

from sim_scenario import hosts, in_verl, npu_processes, playbook, recap, tail, training_pids

SHORT = ["-e", "verl_train_steps=6", "-e", "verl_resume_mode=disable"]
CKPTS = "/sim/ckpts/qwen3-8b-dapo"


def test_a_finished_training_is_reported_and_left_alone():
    head = hosts("ray_head")[0]
    proc = playbook("deploy.yml", "-e", "verl_restart=true", *SHORT)
    assert proc.returncode == 0, tail(proc)
    deadline = time.monotonic() + 180
    while training_pids(head):
        assert time.monotonic() < deadline, "the 6-step training did not end by itself"
        time.sleep(2)
    stopped = json.loads(in_verl(head, "cat %s/stand_in_stopped.json" % CKPTS).stdout)
    assert stopped["finished"] is True and stopped["steps"] == 6, stopped
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
