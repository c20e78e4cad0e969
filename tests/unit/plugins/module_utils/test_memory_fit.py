# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The memory estimate per NPU: the actor, the reference model and the rollout against the HBM npu-smi reports."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from ansible_collections.verl.deploy.plugins.module_utils import _memory_fit as fit
from ansible_collections.verl.deploy.plugins.module_utils import _model as model

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "tests" / "sim"))
import model_files  # noqa: E402

GIB = 1024 ** 3
HBM_910B3 = 65536 * 1024 ** 2  # npu-smi's HBM total of an Atlas 800T A2 (910B3): 65536 MB


def case(name="Qwen3-8B", **changes):
    facts = model.parse_config(json.dumps(model_files.MODELS[name][0]))
    c = {"facts": facts, "parameters": model.parameter_count(facts), "hbm_bytes": HBM_910B3, "train_tp": 4, "train_pp": 2,
         "gen_tp": 4, "world_size": 8, "algorithm": "dapo", "gpu_memory_utilization": 0.8, "max_prompt_length": 1024,
         "max_response_length": 4096, "max_num_batched_tokens": 5120, "max_num_seqs": 1024, "train_batch_size": 32,
         "n_resp_per_prompt": 8, "offload": False, "swap_optimizer": False, "layouts": [(4, 2), (8, 1), (2, 4)]}
    c.update(changes)
    return c


def test_the_arithmetic_of_the_default_layout():
    e = fit.estimate(case())
    shard = 8190735360 / 8
    assert e["actor"] == {"parameters": 2 * shard, "gradients": 4 * shard, "master": 4 * shard, "adam": 8 * shard}
    # 2 (K, V) x 36 layers x 8 KV heads / rollout TP 4 x 128 x 2 bytes
    assert e["kv_per_token"] == 2 * 36 * 2 * 128 * 2
    assert e["kv_one_sequence"] == e["kv_per_token"] * 40960
    assert e["rollout_weights"] == 2 * 8190735360 / 4
    assert e["reference"] == 0  # DAPO has no reference model
    assert fit.estimate(case(algorithm="grpo"))["reference"] == 2 * shard


def test_kv_heads_are_replicated_beyond_their_number():
    facts = model.parse_config(json.dumps(model_files.QWEN25_7B))
    assert fit.kv_bytes_per_token(facts, 8) == fit.kv_bytes_per_token(facts, 4) == 2 * 28 * 1 * 128 * 2


def test_the_data_parallel_ranks_share_the_optimizer():
    one, four = fit.estimate(case(world_size=8)), fit.estimate(case(world_size=32))
    assert four["actor"]["adam"] == one["actor"]["adam"] / 4
    assert four["actor"]["parameters"] == one["actor"]["parameters"]


@pytest.mark.parametrize("changes", [{}, {"algorithm": "grpo"}, {"offload": True}, {"swap_optimizer": True}, {"world_size": 16}])
def test_the_reference_layouts_fit_an_a2(changes):
    assert fit.verdict(case(**changes)) == ([], [])


@pytest.mark.parametrize("changes, words, fix", [
    # TP 1 x PP 1: the actor holds 49.6 GiB when vLLM profiles; 0.8 x 64 GiB leaves nothing for the cache blocks.
    ({"train_tp": 1, "train_pp": 1, "gen_tp": 1},
     "'No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.'",
     "turn on Offload (bit 2 of the mask)"),
    # Some KV cache, but not one sequence of 40960 tokens.
    ({"gpu_memory_utilization": 0.26},
     "'To serve at least one request with the model's max seq len (40960)", "verl_gpu_memory_utilization=0.3"),
    # 32 GiB NPUs: vLLM's 0.8 plus the optimizer's moments from the second step on.
    ({"hbm_bytes": 32 * GIB}, "the second rollout fails with 'NPU out of memory'", "verl_gpu_memory_utilization=0.65"),
    ({"hbm_bytes": 32 * GIB, "train_tp": 1, "train_pp": 1, "gen_tp": 1, "offload": True, "gpu_memory_utilization": 0.6},
     "the first update fails with 'NPU out of memory'", "verl_train_tp=4 verl_train_pp=2"),
])
def test_an_impossible_layout_is_refused_with_the_numbers_and_what_fits(changes, words, fix):
    problems, _warnings = fit.verdict(case(**changes))
    assert problems and any(words in p for p in problems), problems
    text = " ".join(problems)
    assert "GiB" in text and "Fix: any one of:" in text and fix in text


def test_a_suggested_fix_does_fit():
    c = case(hbm_bytes=32 * GIB)
    assert fit.verdict(dict(c, gpu_memory_utilization=0.65))[0] == []
    assert fit.verdict(dict(c, offload=True))[0] == []


@pytest.mark.parametrize("changes, words", [
    ({"gpu_memory_utilization": 0.3}, "vLLM will queue and preempt them"),
    ({"train_tp": 2, "train_pp": 1, "gen_tp": 2, "offload": True, "gpu_memory_utilization": 0.5},
     "vLLM will queue and preempt them"),
])
def test_a_tight_layout_is_a_warning(changes, words):
    problems, warnings = fit.verdict(case(**changes))
    assert problems == [] and any(words in w for w in warnings), (problems, warnings)


def test_nothing_fits_says_so():
    problems, _w = fit.verdict(case(hbm_bytes=8 * GIB, layouts=[]))
    assert "no single change" in " ".join(problems)


def test_nothing_fits_on_one_node_says_at_once_how_many_nodes_fit():
    """Qwen3-8B on one node of 8 NPUs of 8 GiB: no single change fits there; the refusal names the smallest node count
    (and its layout) at which the rules and the memory both pass, and that setup fits."""
    shape = {"num_layers": 36, "num_attention_heads": 32, "num_kv_heads": 8, "vocab_size": 151936, "npu_per_node": 8,
             "world_size": 8, "vpp": False}
    c = case(hbm_bytes=16 * GIB, layouts=[], shape=shape, train_batch_size=64)
    text = " ".join(fit.verdict(c)[0])
    assert "no single change" in text and "it fits from " in text, text
    found = re.search(r"fits from (\d+) nodes .*verl_train_tp=(\d+) verl_train_pp=(\d+)", text)
    nodes, tp, pp = [int(n) for n in found.groups()]
    assert nodes > 1
    offload = ", with Offload (bit 2) on" in text
    fixed = dict(c, world_size=8 * nodes, train_tp=tp, train_pp=pp, gen_tp=tp, offload=offload)
    assert fit.verdict(fixed)[0] == []
    smaller = dict(fixed, world_size=8 * (nodes - 1))
    assert nodes == 2 or fit.verdict(smaller)[0] != []


def test_uneven_pipeline_stages_size_the_largest_stage():
    """Megatron's uneven split (first 12 layers on one stage of PP 2: 12 + 24) puts 24 of 36 layers on the last stage."""
    even = fit.estimate(case())
    uneven = fit.estimate(case(extra_overrides=["+actor_rollout_ref.actor.megatron.override_transformer_config."
                                                "num_layers_in_first_pipeline_stage=12"]))
    assert uneven["actor"]["parameters"] == pytest.approx(even["actor"]["parameters"] * 24 / 18)


def test_latent_attention_caches_one_vector_per_layer():
    facts = model.parse_config(json.dumps(model_files.FAMILIES["DeepSeek-V3"][0]))
    assert fit.kv_bytes_per_token(facts, 8) == fit.kv_bytes_per_token(facts, 1) == 61 * (512 + 64) * 2
