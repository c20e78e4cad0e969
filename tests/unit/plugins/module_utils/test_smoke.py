# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The smoke launch's judgement (_smoke.py): which phases two short trainings proved, and where they stopped, from what
they logged and saved. The log lines are verl's (the step lines of its console logger, _load_checkpoint's words, Ray's
error of a worker-group call)."""
from __future__ import annotations

import pytest

from ansible_collections.verl.deploy.plugins.module_utils import _smoke as smoke

CKPTS = "/logs/smoke/ckpts/m1100000"
STEP1 = "(TaskRunner pid=88) step:1 - timing_s/gen:3.1 - timing_s/update_actor:4.2 - timing_s/step:8.0\n"
STEP2 = "(TaskRunner pid=91) step:2 - timing_s/gen:3.0 - timing_s/update_actor:4.1 - timing_s/step:7.9\n"
LOADED1 = "(TaskRunner pid=91) Load from checkpoint folder: %s/global_step_1\n" % CKPTS
SAVED1 = "global_step_1\nlatest_checkpointed_iteration.txt\ntracker=1\n"
SAVED12 = "global_step_1\nglobal_step_2\nlatest_checkpointed_iteration.txt\ntracker=2\n"
OOM_GEN = ("ray.exceptions.RayTaskError(RuntimeError): ray::WorkerDict.actor_rollout_generate_sequences() (pid=7)\n"
           "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB (NPU 0; 60.96 GiB total capacity)\n")
OOM_UPDATE = ("ray.exceptions.RayTaskError(RuntimeError): ray::WorkerDict.actor_rollout_update_actor() (pid=7)\n"
              "RuntimeError: NPU out of memory. Tried to allocate 1.00 GiB\n")
SAVE_ERROR = (STEP1 + "ray.exceptions.RayTaskError(CheckpointingException): ray::WorkerDict.save_checkpoint() (pid=7)\n"
              "megatron.core.dist_checkpointing.core.CheckpointingException: Object shard "
              "/logs/smoke/ckpts/m1100000/global_step_1/actor/dist_ckpt/__0_0.distcp not found\n")


def save_run(log=STEP1, outcome="finished", listing=SAVED1, message=""):
    return smoke.record("save", log, outcome, 40, listing, message)


def resume_run(log=LOADED1 + STEP2, outcome="finished", listing=SAVED12, message=""):
    return smoke.record("resume", log, outcome, 30, listing, message)


@pytest.mark.parametrize("save, resume, ok, proved, phase, words", [
    (save_run(), resume_run(), True, ["load", "rollout", "update", "save", "resume"], None, None),
    # The deploy refused (the pre-check, the settings on the nodes): nothing trained.
    (save_run("", "deploy-failed", "", "node1: the NPUs are held by pid 42"), None, False, [], "deploy", "held by pid 42"),
    # The training ended before step 1: the model or the workers did not come up.
    (save_run("ImportError: cannot import name 'Qwen3ForCausalLM'\n", "crashed", ""), None, False, [], "load", "ImportError"),
    (save_run(OOM_GEN, "crashed", ""), None, False, ["load"], "rollout", "NPU out of memory"),
    (save_run(OOM_UPDATE, "crashed", ""), None, False, ["load", "rollout"], "update", "NPU out of memory"),
    # Step 1 ran, its save failed (Megatron's distributed checkpoint), or was never written.
    (save_run(SAVE_ERROR, "crashed", "tracker=\n"), None, False, ["load", "rollout", "update"], "save", "CheckpointingException"),
    (save_run(listing="tracker=\n"), None, False, ["load", "rollout", "update"], "save", "no global_step_1 folder was written"),
    (save_run(listing="global_step_1\ntracker=\n"), None, False, ["load", "rollout", "update"], "save", "global_step_1 was not finished"),
    # A crash after step 1 is the save's, even where an earlier smoke launch left a global_step_1 behind.
    (save_run(SAVE_ERROR, "crashed", SAVED1), None, False, ["load", "rollout", "update"], "save", "CheckpointingException"),
    (save_run(outcome="timeout", listing=SAVED1), None, False, ["load", "rollout", "update"], "save", "stopped at the bound"),
    # The restart: refused by its pre-check, started over instead of loading the save, or failed after loading it.
    (save_run(), resume_run("", "deploy-failed", SAVED1, "the checkpoint was saved with TP 4"), False,
     ["load", "rollout", "update", "save"], "resume", "saved with TP 4"),
    (save_run(), resume_run(STEP1 + STEP2), False, ["load", "rollout", "update", "save"], "resume", "did not load global_step_1"),
    (save_run(), resume_run(LOADED1 + OOM_UPDATE, "crashed", SAVED1), False, ["load", "rollout", "update", "save"], "resume",
     "NPU out of memory"),
    (save_run(), resume_run(LOADED1 + STEP2 + SAVE_ERROR.replace(STEP1, ""), "crashed", SAVED1), False,
     ["load", "rollout", "update", "save"], "resume", "CheckpointingException"),
    (save_run(), resume_run(LOADED1.replace("global_step_1", "global_step_5") + STEP2), False,
     ["load", "rollout", "update", "save"], "resume", "it loaded global_step_5"),
])
def test_each_phase_is_proven_or_named_with_its_line(save, resume, ok, proved, phase, words):
    result = smoke.verdict(save, resume)
    assert (result["ok"], result["proved"]) == (ok, proved), result
    if phase is None:
        assert result["failed"] is None
    else:
        assert result["failed"]["phase"] == phase and words in result["failed"]["line"], result["failed"]
    assert result["seconds"] == 40 + (30 if resume else 0)


def test_a_training_stopped_at_the_bound_names_the_phase_and_the_bound():
    result = smoke.verdict(save_run("(TaskRunner pid=8) starting the rollout\n", "timeout", ""))
    assert result["failed"]["phase"].startswith("load (no end within verl_compare_timeout)"), result
    assert result["proved"] == []


def test_the_checkpoint_listing_is_read_as_verl_leaves_it():
    assert smoke.saved_steps(SAVED12) == {"steps": [1, 2], "tracker": 2}
    assert smoke.saved_steps("global_step_10\nglobal_step_x\ntracker=abc\n") == {"steps": [10], "tracker": None}
    assert smoke.saved_steps("") == {"steps": [], "tracker": None}


def test_the_verdict_in_words_names_what_was_proven_or_the_phase_and_the_run():
    save, resume = save_run(), resume_run()
    passed = smoke.lines(smoke.verdict(save, resume), save, resume, "1100000", CKPTS)
    assert passed[0].startswith("Smoke launch of mask 1100000 passed in 70 s: load, rollout, update, save")
    assert passed[1] == "save run 40 s (steps logged: 1); resume run 30 s (steps logged: 2)"
    failed = save_run(OOM_UPDATE, "crashed", "")
    said = smoke.lines(smoke.verdict(failed), failed, None, "1100000", CKPTS)
    assert said[0].startswith("Smoke launch of mask 1100000 FAILED in update (the save run): RuntimeError: NPU out of memory")
    assert said[0].endswith("Proven before it: load, rollout.")
