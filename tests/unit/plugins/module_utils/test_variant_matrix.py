# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The variant matrix (issue 28): real setups through the settings check and the pre-check's rules, each with its verdict.

Each variant is a node (a real npu-smi capture: Atlas A2 with 8 x 910B3, Atlas A3 with 16 Ascend910 chips, a 310P card),
a model (a published config.json of its family, its weight files' headers in their real shapes: tests/sim/model_files.py),
settings, a tokenizer with or without a chat template (the container stage's prompt count) and a training data set of
some rows. A valid variant is accepted (no false refusal); an invalid one is refused once, with a fix that, applied,
makes it pass -- or, where no fix can be given, says why.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from ansible_collections.verl.deploy.plugins.module_utils import _model
from ansible_collections.verl.deploy.plugins.module_utils import _parquet
from ansible_collections.verl.deploy.plugins.module_utils import _precheck as pc
from ansible_collections.verl.deploy.plugins.module_utils import _prompt_lengths as pl
from ansible_collections.verl.deploy.plugins.module_utils._chips import device_view
from ansible_collections.verl.deploy.plugins.module_utils._launch_config import build
from helpers.launch_helpers import RULES, SPEC, settings
from tests.unit.plugins.module_utils.test_precheck import A2, OWN, PIDS, checked, npu

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "tests" / "sim"))
import model_files  # noqa: E402  (published config.json files, real-shaped headers)

A3 = "synthetic_info_A3_Ascend910_16chips_idle.txt"
P310 = "synthetic_info_310P3_1card_npu6_powerNA.txt"
PARQUET = Path(__file__).resolve().parents[3] / "fixtures" / "parquet" / "verl.parquet"
NO_TEMPLATE = ("ValueError: Cannot use chat template functions because tokenizer.chat_template is not set and no template "
               "argument was passed!")
EP = "actor_rollout_ref.actor.megatron.expert_model_parallel_size"
ETP1 = "actor_rollout_ref.actor.megatron.expert_tensor_parallel_size=1"
_READS = {}


def model_read(name):
    if name not in _READS:
        _READS[name] = _model.judge(model_files.real_read(model_files.FAMILIES[name][0], "/models/" + name))
    return _READS[name]


def refusals(variant):
    """Every refusal of a variant: the settings check's (with what the pre-check detected), the pre-check's rules on the
    node, the training data set's rows, and the container stage's prompt count."""
    node = npu(variant["chip"], dict.fromkeys(PIDS, OWN) if variant["chip"] == A2 else {})
    view = device_view(node)
    read = model_read(variant["model"])
    given = dict({"verl_npu_devices": view["device_ids"], "verl_model_path": read["path"]}, **variant.get("settings", {}))
    config, errors, _warnings = build(settings(**given), SPEC, RULES, host="node1", is_head=True, nnodes=variant.get("nodes", 1),
                                      head={"name": "node1", "ansible_host": "10.0.0.1"},
                                      detected={"chip": {"family": view["family"], "name": view["name"]}, "model": read["facts"],
                                                "device_ids": view["device_ids"]})
    if errors:
        return [error["msg"] for error in errors]
    found = list(pc.report(checked(node, launch=config, facts={
        "listening_ports": [], "network": {"interfaces": ["eth0"]}, "device_holders": [], "shm": {"size_kb": 2 ** 22},
        "model": read}))["problems"])
    schema = dict(_parquet.read_schema(str(PARQUET)), num_rows=variant.get("rows", 17398))
    found += _parquet.dataset_problems("verl_train_file", config["train_file"], schema, min_rows=config["train_batch_size"])
    entry = {"path": config["train_file"], "rows": schema["num_rows"], "over": 0, "longest": 900, "failed": 0, "first_error": None}
    if not variant.get("template", True):
        entry.update(over=schema["num_rows"], longest=0, failed=schema["num_rows"], first_error=NO_TEMPLATE)
    prompts = json.dumps({"max_prompt_length": config["max_prompt_length"], "files": [entry]})
    found += pl.verdict(json.dumps({"said": [], "answer": {"prompts": prompts}}), config)["problems"]
    return found


def applied(variant, fix):
    changed = dict(variant, **{key: value for key, value in fix.items() if key != "settings"})
    changed["settings"] = dict(variant.get("settings", {}), **fix.get("settings", {}))
    return changed


# id: (variant, None when valid, else (words the one refusal holds, the fix it names as a change to the variant, or None
# when the refusal says why no fix can be given)).
MATRIX = {
    "qwen3-8b-a2x8": ({"chip": A2, "model": "Qwen3-8B"}, None),
    "qwen3-8b-a2x8-2-nodes": ({"chip": A2, "model": "Qwen3-8B", "nodes": 2}, None),
    "qwen3-8b-a3x16": ({"chip": A3, "model": "Qwen3-8B", "settings": {"verl_train_tp": 8}}, None),
    "qwen2.5-7b-a2x8": ({"chip": A2, "model": "Qwen2.5-7B"}, None),
    "qwen3-4b-tied-a2x8": ({"chip": A2, "model": "Qwen3-4B"}, None),
    "llama-3.1-8b-a2x8": ({"chip": A2, "model": "Llama-3.1-8B"}, None),
    # verl's own Qwen3-30B-A3B recipe on A3 (recipe/dapo/run_dapo_qwen3_moe_30b_megatron_npu.sh): 16 NPUs, everything offloaded.
    "qwen3-30b-a3b-a3x16-offload": ({"chip": A3, "model": "Qwen3-30B-A3B", "settings": {"verl_train_pp": 4, "verl_feature_mask": "0010000"}},
                                    None),
    "qwen3-30b-a3b-a3x16-ep4": ({"chip": A3, "model": "Qwen3-30B-A3B", "settings": {
        "verl_train_pp": 4, "verl_feature_mask": "0010000", "verl_extra_overrides": [ETP1, EP + "=4"]}}, None),
    "qwen1.5-moe-a2x8-offload": ({"chip": A2, "model": "Qwen1.5-MoE-A2.7B", "settings": {"verl_feature_mask": "0010000"}}, None),
    "large-data-with-template": ({"chip": A2, "model": "Qwen3-8B", "rows": 17398, "template": True}, None),
    # Invalid: refused once, with a fix that works.
    "qwen3-8b-tp3": ({"chip": A2, "model": "Qwen3-8B", "settings": {"verl_train_tp": 3}},
                     ("which is not divisible by verl_train_tp x verl_train_pp = 3 x 2 = 6", {"settings": {"verl_train_tp": 4}})),
    "qwen2.5-7b-tp8": ({"chip": A2, "model": "Qwen2.5-7B", "settings": {"verl_train_tp": 8, "verl_train_pp": 1}},
                       ("num_query_groups (4) must be a multiple of tensor_model_parallel_size (8)",
                        {"settings": {"verl_train_tp": 4, "verl_train_pp": 2}})),
    "qwen3-30b-a3b-a2x8": ({"chip": A2, "model": "Qwen3-30B-A3B"},
                           ("31 B parameters", {"settings": {"verl_feature_mask": "0000010"}})),
    # Every expert counted: 14.3e9, not the 2.7e9 a token passes; the optimizer's moments beside vLLM's share do not fit.
    "qwen1.5-moe-a2x8": ({"chip": A2, "model": "Qwen1.5-MoE-A2.7B"},
                         ("14 B parameters", {"settings": {"verl_feature_mask": "0010000"}})),
    "qwen3-30b-a3b-a3x16": ({"chip": A3, "model": "Qwen3-30B-A3B", "settings": {"verl_train_pp": 4}},
                            ("31 B parameters", {"settings": {"verl_feature_mask": "0010000"}})),
    "mixtral-8x7b-2xa2x8": ({"chip": A2, "model": "Mixtral-8x7B", "nodes": 2, "settings": {"verl_train_tp": 8, "verl_train_pp": 2}},
                            ("47 B parameters", {"settings": {"verl_feature_mask": "0010000"}})),
    "qwen3-30b-a3b-ep3": ({"chip": A3, "model": "Qwen3-30B-A3B", "settings": {
        "verl_train_pp": 4, "verl_feature_mask": "0010000", "verl_extra_overrides": [ETP1, EP + "=3"]}},
        ("does not divide the model's 128 experts", {"settings": {"verl_extra_overrides": [ETP1, EP + "=4"]}})),
    "dense-with-ep": ({"chip": A2, "model": "Qwen3-8B", "settings": {"verl_extra_overrides": [EP + "=2"]}},
                      ("the model is dense", {"settings": {"verl_extra_overrides": []}})),
    "no-chat-template": ({"chip": A2, "model": "Qwen3-8B", "template": False}, ("has no chat template", {"template": True})),
    "small-data": ({"chip": A2, "model": "Qwen3-8B", "rows": 16},
                   ("has 16 row(s), fewer than one batch", {"settings": {"verl_train_batch_size": 16, "verl_ppo_mini_batch_size": 16}})),
    "310p-whatever-the-image": ({"chip": P310, "model": "Qwen3-8B", "settings": {"verl_image": "registry:5000/verl:mine"}},
                                ("a chip verl publishes no image for", None)),
}


@pytest.mark.parametrize("name", sorted(MATRIX))
def test_each_variant_gets_its_verdict(name):
    variant, expected = MATRIX[name]
    found = refusals(variant)
    if expected is None:
        assert found == [], found  # a valid setup is accepted
        return
    words, fix = expected
    assert len(found) == 1 and words in found[0], found  # refused once, for its cause
    assert "Fix:" in found[0]
    if fix is None:
        assert "leave this host out" in found[0] or "no single change" in found[0], found[0]  # why no setting fixes it
        return
    assert refusals(applied(variant, fix)) == []
