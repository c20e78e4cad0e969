"""Which phase of verl's loop logged last (plugins/module_utils/_log_phases.py), on log lines as verl prints them.

The lines are real ones pasted in public threads, cut to their first metrics where they are long: step lines from verl
issue 498 (critic/vf_loss:nan), verl issue 2060 (the validation's step:0 line and a healthy step:1) and the SGLang/verl
troubleshooting thread (zhaochenyang20/Awesome-ML-SYS-Tutorial issue 106, a step line as Ray prefixes the driver's
output); HCCL's from vllm-ascend issue 486 (a GRPO training's HcclAllreduce and EI0006); the device timeout from
Ascend/pytorch issue 43. The save, validation and load lines are the print() calls of verl 0.7.0's ray_trainer.py
(lines 946, 650, 667, 1036-1041) and the DAPO trainer's (dapo_ray_trainer.py 272-275). The all-zero rewards step is
the issue-106 line with its reward values at 0, as verl issue 3024 ("critic/rewards/mean 训练结果为0") reports them.
"""
from __future__ import annotations

import pytest

from ansible_collections.verl.deploy.plugins.module_utils import _log_phases as lp
from ansible_collections.verl.deploy.plugins.module_utils._control_step import document, read_answer, status_answer
from ansible_collections.verl.deploy.plugins.module_utils._training_state import status_report
from helpers.answers import status_step

STEP_83 = ("(TaskRunner pid=87031) step:83 - global_seqlen/min:340538.000 - actor/entropy_loss:0.317 - actor/kl_loss:0.024 - "
           "actor/pg_loss:0.000 - actor/grad_norm:0.006 - critic/score/mean:0.906 - critic/score/max:1.000 - "
           "critic/rewards/mean:0.906 - critic/rewards/max:1.000 - response_length/mean:330.437 - timing_s/gen:29.641")
STEP_1_NAN = ("step:1 - global_seqlen/min:2780.000 - critic/kl:-0.000 - critic/vf_loss:nan - critic/vpred_mean:nan - "
              "critic/grad_norm:nan - actor/pg_loss:-0.013 - actor/grad_norm:9.819 - critic/score/mean:0.594 - "
              "critic/rewards/mean:0.593 - timing_s/gen:10.7")
STEP_0_VAL = ("step:0 - val-aux/openai/gsm8k/reward/mean@1:0.565 - val-aux/openai/gsm8k/score/mean@1:0.565 - "
              "val-core/openai/gsm8k/acc/mean@1:0.508")
STEP_1 = ("step:1 - global_seqlen/min:484245.000 - actor/entropy:0.323 - actor/kl_loss:0.000 - actor/pg_loss:0.001 - "
          "actor/grad_norm:0.020 - critic/score/mean:0.558 - critic/rewards/mean:0.558 - critic/rewards/max:1.000")


def zero(step):
    line = STEP_83.replace("step:83", "step:%d" % step)
    line = line.replace("critic/score/mean:0.906 - critic/score/max:1.000", "critic/score/mean:0.000 - critic/score/max:0.000")
    return line.replace("critic/rewards/mean:0.906 - critic/rewards/max:1.000", "critic/rewards/mean:0.000 - critic/rewards/max:0.000")


HCCL = [
    '[rank1]:   File "/workspace/vllm/vllm/distributed/device_communicators/base_device_communicator.py", line 35, in all_reduce',
    "[rank1]: RuntimeError: InnerRunOpApi:torch_npu/csrc/framework/OpParamMaker.cpp:281 OPS function error: HcclAllreduce, error code is 6",
    "[rank1]: [ERROR] 2025-04-08-18:07:20 (PID:1292363, Device:1, RankID:1) ERR01100 OPS call acl api failed.",
    "[rank1]: EI0006: [PID: 1292363] 2025-04-08-18:07:20.444.436 Getting socket times out. Reason: Remote Rank did not send "
    "the data in time. Please check the reason for the rank being stuck",
]


@pytest.mark.parametrize("lines, phase, step, words", [
    ([STEP_0_VAL, STEP_1], "step", 1, "last phase logged: step (step 1)"),
    ([STEP_83, "(TaskRunner pid=87031) local_global_step_folder: /mnt/ckpts/global_step_84"], "save", 83, "after step 83"),
    ([STEP_83, "(TaskRunner pid=87031) num_prompt_in_batch=12 < prompt_bsz=16",
      "(TaskRunner pid=87031) num_gen_batches=3. Keep generating..."], "rollout", 83, "last phase logged: rollout"),
    ([STEP_83, "test_gen_batch meta info: {'eos_token_id': 151645, 'validate': True}"], "validation", 83, "validation"),
    (["Total training steps: 1000", "Load from checkpoint folder: /mnt/ckpts/global_step_80", "Setting global step to 80",
      "Resuming from /mnt/ckpts/global_step_80"], "load", None, "last phase logged: load"),
    ([STEP_83] + HCCL, "collective", 83, "last phase logged: collective (after step 83)"),
    ([STEP_83, "worker-1: EH9999: 2024-07-03-11:28:40.450.757  wait for compute device to finish failed, runtime result = 107020."],
     "collective", 83, "collective"),
    ([STEP_83, "Traceback (most recent call last):", '  File "/verl/verl/trainer/main_ppo.py", line 42, in main',
      "ValueError: data_source openai/gsm8k has no reward function"], "error", 83, "last phase logged: error"),
    (["some line of no phase"], None, None, "no line of the log's tail names a phase"),
])
def test_the_last_phase_that_logged_is_named(lines, phase, step, words):
    found = lp.last_phase(lines)
    assert found["phase"] == phase and found["step"] == step and words in found["text"], found
    assert bool(found["cause"]) is (phase is not None)


def test_the_cause_is_the_phase_s_not_one_guess():
    causes = {lp.last_phase(lines)["cause"] for lines in ([STEP_83], HCCL, ["local_global_step_folder: /c/global_step_2"],
                                                          ["(WorkerDict pid=9) INFO vllm engine started"])}
    assert len(causes) == 4
    assert "HCCL" in lp.last_phase(HCCL)["cause"] and "verl_ckpts_dir" in lp.last_phase(["local_global_step_folder: /c"])["cause"]
    assert "update_actor" in lp.last_phase(["(WorkerDict pid=9) INFO vllm engine started"])["cause"]


def test_nan_losses_in_the_last_steps_are_flagged():
    found = lp.last_phase([STEP_0_VAL, STEP_1_NAN])
    assert found["flags"] == ["NaN in critic/grad_norm, critic/vf_loss at step 1: the update diverged (learning rate, KL, a "
                              "degenerate rollout); resuming from the checkpoint before it with a lower learning rate is the "
                              "usual way out"], found
    assert "; NaN in critic/grad_norm" in found["text"]
    assert lp.last_phase([STEP_1_NAN, STEP_83.replace("step:83", "step:2"), STEP_83.replace("step:83", "step:3"),
                          STEP_83.replace("step:83", "step:4")])["flags"] == [], "only the last 3 steps count"


def test_rewards_all_zero_in_the_last_steps_are_flagged():
    assert "rewards all zero in the last 3 step(s)" in lp.last_phase([STEP_83, zero(84), zero(85), zero(86)])["text"]
    assert lp.last_phase([zero(84), zero(85), STEP_83.replace("step:83", "step:86")])["flags"] == []
    assert lp.last_phase([STEP_0_VAL])["flags"] == [], "the validation's step:0 line is not a training step"


def test_the_tail_is_read_from_the_status_answer():
    """The log's tail is a value of the status step's answer, read as text (a log line "state=..." is the log's)."""
    answer = document([], {"pid": "7", "log": "/logs/verl.log", "start_output": "ray start",
                           "log_tail": "\n".join([STEP_83, "num_prompt_in_batch=12 < prompt_bsz=16", "state=finished"])})
    facts, tails = status_answer(read_answer(answer)["answer"])
    assert tails == {"start_output": ["ray start"], "log": [STEP_83, "num_prompt_in_batch=12 < prompt_bsz=16", "state=finished"],
                     "npu_samples": []}
    assert "state" not in facts and facts["pid"] == "7"
    empty = {"start_output": [], "log": [], "npu_samples": []}
    assert status_answer({"log": "", "start_output": "", "log_tail": ""})[1] == empty


def _nodes(tail, quiet=5000):
    answer = document([], {"role": "head", "raylet": "running", "current_ip": "10.0.0.1", "npus": "8", "listed": "10.0.0.1=8",
                           "pid": "7", "exit_code": "", "started_at": "50", "first_step": "100 1", "last_step": "200 83",
                           "now": str(200 + quiet), "log": "/logs/verl.log", "start_output": "", "log_tail": "\n".join(tail)})
    return [{"name": "head", "answered": True, "container": "running", "container_runs": True, "status": status_step(answer),
             "npu": None, "npus_in_use": "-"}]


def test_status_names_the_phase_a_stalled_training_stopped_in():
    report = status_report(_nodes([STEP_83] + HCCL), "head", 1800)
    assert report["state"] == "stalled"
    stalled = [alarm for alarm in report["alarms"] if "STALLED" in alarm][0]
    assert "last phase logged: collective (after step 83)" in stalled and "a collective (HCCL) did not complete" in stalled, stalled
    assert report["phase"]["phase"] == "collective"
    rollout = status_report(_nodes([STEP_83, "num_gen_batches=3. Keep generating..."]), "head", 1800)
    assert "last phase logged: rollout" in rollout["alarms"][0] and "HCCL) did not" not in rollout["alarms"][0]
    # A training that runs and logs is reported with its phase and flags in its line, without an alarm.
    running = status_report(_nodes([STEP_83, zero(84), zero(85), zero(86)], quiet=10), "head", 1800)
    assert running["state"] == "running" and not running["alarms"]
    assert any(line.startswith("training log: last phase logged: step (step 86); rewards all zero") for line in running["lines"]), running["lines"]
