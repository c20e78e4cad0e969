# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Private to the verl.deploy collection: may change without notice.
"""Which phase of verl's training loop logged last, from the training log's tail, and what is wrong in its last steps.

A training that stops logging is "stalled" whatever it was doing; the log's last lines say where it stopped. The lines
each phase of verl 0.7.0 leaves (verl/trainer/ppo/ray_trainer.py and recipe/dapo/dapo_ray_trainer.py, the workers'
lines through Ray as "(WorkerDict pid=..., ip=...) ..."):
  load        "Total training steps: N", "Load from checkpoint folder: ...", "Resuming from ...", "Training from scratch",
              "Model config after override", "TF config:", "load ref weight start", "AgentLoopManager: [...]"
  rollout     vLLM's lines (vllm, vLLM, "Processed prompts"), recipe/dapo's dynamic sampling, "num_prompt_in_batch=... < prompt_bsz=..."
              and "num_gen_batches=N. Keep generating..."
  step        "step:N - key:value - ..." (verl/utils/logger/aggregate_logger.py concat_dict_to_str): one per step, after its
              update and save; its timing_s/gen, timing_s/update_actor, timing_s/save_checkpoint are that step's
  save        "local_global_step_folder: <ckpts>/global_step_N" (ray_trainer.py _save_checkpoint), the Megatron checkpoint
              manager's "Saving HF model checkpoint to ...", "Saved Huggingface config and tokenizer to ..."
  validation  "test_gen_batch meta info: ...", "validation generation end", "Initial/Final validation metrics"
  collective  HCCL and the torch_npu collectives failing or timing out (EI0006 "Getting socket times out", "OPS function
              error: HcclAllreduce", "wait for compute device to finish failed", the watchdog's timeouts)
  error       a Python traceback or an exception line (out of memory among them)
The update (update_actor) logs no line of its own in verl 0.7.0: a rollout's last line followed by nothing names the
rollout "or the update after it". No Ansible imports.
"""
from __future__ import annotations

import math
import re

STEP = re.compile(r"(?:^|\s)step:(\d+) - (.*)$")
METRIC = re.compile(r"([\w@./-]+):(-?(?:[0-9.]+(?:e[-+]?\d+)?|nan|inf|-inf))\b", re.IGNORECASE)
# (phase, pattern) in the order a line is tried: the first that matches names the line's phase.
PHASES = (
    ("collective", re.compile(r"HCCL|Hccl|hccl|EI000\d|EJ000\d|ERR02200|Getting socket times out|ProcessGroup\w*\.cpp|"
                              r"Watchdog caught collective|collective operation timeout|wait for compute device to finish failed|"
                              r"TCPStore|The client socket has timed out")),
    ("error", re.compile(r"Traceback \(most recent call last\)|\b\w+Error: |\b\w+Exception: |ActorDiedError|"
                         r"out of memory|OutOfMemory")),
    ("step", STEP),
    ("save", re.compile(r"local_global_step_folder: |Saving HF model checkpoint|Saved Huggingface config|Saved bridge checkpoint|"
                        r"Saved dist checkpoint|skip write latest_checkpointed_iteration")),
    ("validation", re.compile(r"test_gen_batch meta info|validation generation end|(Initial|Final) validation metrics")),
    ("load", re.compile(r"Total training steps: |Load from checkpoint folder|Resuming from |Training from scratch|"
                        r"Model config after override|TF config: |load ref weight start|AgentLoopManager: |Setting global step to")),
    ("rollout", re.compile(r"vllm|vLLM|Processed prompts|num_prompt_in_batch=|num_gen_batches=|Keep generating|AgentLoop")),
)
CAUSES = {
    "collective": "a collective (HCCL) did not complete: a rank that died or hangs, the NPUs' own network (hccn_tool link, "
                  "address, TLS), or HCCL_CONNECT_TIMEOUT/HCCL_EXEC_TIMEOUT shorter than a slow rank. Read every node's "
                  "log for the first rank that failed; restart with deploy.yml -e verl_restart=true",
    "error": "the trainer or a worker raised an error (the traceback in the log names it; out of memory: see "
             "docs/memory.md). Fix what it names, then deploy.yml again (it resumes from the last checkpoint)",
    "step": "the next step's rollout had not logged yet: generation itself is slow or hangs (vLLM-Ascend, HBM for the KV "
            "cache), or dynamic sampling (recipe/dapo) keeps regenerating a batch; compare with the last step's timing_s/gen",
    "save": "a checkpoint save did not finish: the storage of verl_ckpts_dir is slow, full or not shared, or a rank is "
            "blocked at the save's barrier. Check the storage (df, the mount on every node)",
    "validation": "the validation's generation did not finish: as a rollout (vLLM-Ascend, HBM), over the test set",
    "load": "the model or the checkpoint was loading: slow storage, or a node whose workers did not join the first "
            "collective (HCCL between the nodes)",
    "rollout": "the rollout (generation) or the update after it (verl logs no line at update_actor): a generation that "
               "hangs (vLLM-Ascend, HBM for the KV cache, dynamic sampling regenerating), or a collective of the update "
               "that waits on a rank",
}


def _value(text):
    try:
        return float(text)
    except ValueError:
        return None


def steps(lines):
    """[(step, {metric: value})] of the step lines, in order (the validation's step:0 line included)."""
    found = []
    for line in lines:
        match = STEP.search(line)
        if match:
            found.append((int(match.group(1)), {key: _value(value) for key, value in METRIC.findall(match.group(2))}))
    return found


# A traceback's frame line ("File \".../vllm/...\", line 35, in all_reduce") belongs to the error it leads to, whatever
# module path it names.
FRAME = re.compile(r"^\s*(\[rank\d+\]:\s*)?File \"")


def phase_of(line):
    if FRAME.search(line):
        return "error"
    for name, pattern in PHASES:
        if pattern.search(line):
            return name
    return None


def _finite(value):
    return value is None or not (math.isnan(value) or math.isinf(value))


def flags(found, last=3):
    """What is wrong in the last `last` training steps' metrics: NaN (or infinite) losses and gradient norms, rewards all
    zero in every one of them."""
    training = [(step, metrics) for step, metrics in found if any(key.startswith(("actor/", "critic/")) for key in metrics)][-last:]
    problems, bad_steps, bad_keys = [], [], set()
    for step, metrics in training:
        keys = [key for key, value in metrics.items() if ("loss" in key or "grad_norm" in key) and not _finite(value)]
        if keys:
            bad_steps.append(step)
            bad_keys.update(keys)
    if bad_keys:
        problems.append("NaN in %s at step %s: the update diverged (learning rate, KL, a degenerate rollout); resuming "
                        "from the checkpoint before it with a lower learning rate is the usual way out"
                        % (", ".join(sorted(bad_keys)), ", ".join(str(step) for step in bad_steps)))
    rewards = [metrics.get("critic/rewards/mean", metrics.get("critic/score/mean")) for _step, metrics in training]
    if training and all(value is not None and value == 0 for value in rewards):
        problems.append("rewards all zero in the last %d step(s) (critic/rewards/mean 0): the reward function matches no "
                        "response (data_source, ground_truth, the answer format) or the responses degenerated" % len(training))
    return problems


def last_phase(lines):
    """{'phase', 'line', 'step', 'flags', 'cause', 'text'} of a training log's tail: the phase of the last line that names
    one, the last step logged, what is wrong in the last steps and the likely cause; phase None when no line names one."""
    lines = [str(line) for line in lines or []]
    phase, where = None, ""
    for line in lines:
        name = phase_of(line)
        if name:
            phase, where = name, line.strip()
    found = steps(lines)
    step = found[-1][0] if found else None
    problems = flags(found)
    if phase is None:
        text = "no line of the log's tail names a phase"
    else:
        where_step = ""
        if step is not None:
            where_step = " (after step %d)" % step if phase != "step" else " (step %d)" % step
        text = "last phase logged: %s%s" % (phase, where_step)
    return {"phase": phase, "line": where[:300], "step": step, "flags": problems, "cause": CAUSES.get(phase, ""),
            "text": text + ("; " + "; ".join(problems) if problems else "")}
