# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""Parallelism and batch rules: each violation names the variable, the values and a fix."""
from __future__ import annotations

import re

import pytest

from ansible_collections.verl.deploy.plugins.module_utils._config_checks import check_parallelism, valid_tp_pp


def cluster(**changes):
    c = {
        "train_tp": 4, "train_pp": 2, "gen_tp": 4, "npu_per_node": 8, "nnodes": 1,
        "train_batch_size": 32, "ppo_mini_batch_size": 32, "n_resp_per_prompt": 8, "ppo_micro_batch_size_per_gpu": 2,
        "ref_log_prob_micro_batch_size_per_gpu": 4, "rollout_log_prob_micro_batch_size_per_gpu": 4,
        "max_prompt_length": 1024, "max_response_length": 4096, "overlong_buffer_len": 2048,
        "num_layers": 36, "num_attention_heads": 32, "num_kv_heads": 8, "max_position_embeddings": 40960, "vocab_size": 151936,
        "dynamic_bsz": False, "recompute": False, "vpp": False,
    }
    c.update(changes)
    c["world_size"] = c["npu_per_node"] * c["nnodes"]
    return c


def rules(**changes):
    return {e["rule"] for e in check_parallelism(cluster(**changes))}


def test_the_defaults_pass():
    assert check_parallelism(cluster()) == []
    assert check_parallelism(cluster(recompute=True, vpp=True)) == []


# Each refusal with the fix its text suggests (the words it says, and those values applied): applied, nothing is refused.
@pytest.mark.parametrize("changes, rule, variable, said, fix", [
    ({"gen_tp": 2}, "R1", "verl_gen_tp", "set verl_gen_tp=4", {"gen_tp": 4}),
    ({"train_tp": 2, "gen_tp": 2, "train_pp": 1}, "R2", "verl_train_tp", "TP=4 PP=2", {"train_tp": 4, "gen_tp": 4, "train_pp": 2}),
    ({"train_tp": 8, "gen_tp": 8, "train_pp": 2, "npu_per_node": 8, "nnodes": 1}, "C2", "verl_train_tp", "TP=8 PP=1",
     {"train_tp": 8, "gen_tp": 8, "train_pp": 1}),
    ({"train_tp": 3, "gen_tp": 3, "train_pp": 8, "npu_per_node": 8, "nnodes": 3, "train_batch_size": 48, "num_layers": 48,
      "ppo_mini_batch_size": 48}, "C14", "verl_train_tp", "TP=4 PP=6", {"train_tp": 4, "gen_tp": 4, "train_pp": 6}),
    ({"vocab_size": 151938}, "C23", "verl_train_tp", "verl_train_tp that divides 151938 (1, 2). Pairs that fit: TP=2 PP=4.",
     {"train_tp": 2, "gen_tp": 2, "train_pp": 4}),
    ({"train_pp": 5, "train_tp": 8, "gen_tp": 8, "npu_per_node": 8, "nnodes": 5}, "C11", "verl_train_pp", "fits verl_train_tp=8: 1;",
     {"train_pp": 1, "train_batch_size": 40, "ppo_mini_batch_size": 40}),
    ({"vpp": True, "train_tp": 8, "gen_tp": 8, "train_pp": 1}, "C10", "verl_feature_mask", "turn bit 6 off", {"vpp": False}),
    ({"vpp": True, "train_tp": 2, "gen_tp": 2, "train_pp": 4}, "C11", "verl_train_pp", "or turn bit 6 off", {"vpp": False}),
    ({"recompute": True, "train_tp": 1, "gen_tp": 1, "train_pp": 6, "npu_per_node": 6, "num_kv_heads": 8}, "C13", "verl_feature_mask",
     "turn bit 4 off", {"recompute": False}),
    ({"train_batch_size": 16, "ppo_mini_batch_size": 32}, "C4", "verl_ppo_mini_batch_size", "at most 16", {"ppo_mini_batch_size": 16}),
    ({"ppo_micro_batch_size_per_gpu": 3}, "C4", "verl_ppo_micro_batch_size_per_gpu", "divides 256", {"ppo_micro_batch_size_per_gpu": 4}),
    ({"nnodes": 3}, "C6", "verl_ppo_mini_batch_size", "verl_ppo_mini_batch_size = 33",
     {"train_batch_size": 33, "ppo_mini_batch_size": 33, "ppo_micro_batch_size_per_gpu": 1}),
    ({"nnodes": 2, "train_batch_size": 1, "ppo_mini_batch_size": 1, "n_resp_per_prompt": 2, "ppo_micro_batch_size_per_gpu": 2},
     "C4", "verl_ppo_micro_batch_size_per_gpu", "divides 1", {"ppo_micro_batch_size_per_gpu": 1}),
    ({"overlong_buffer_len": 8192}, "C18", "verl_overlong_buffer_len", "at most 4096", {"overlong_buffer_len": 4096}),
    ({"train_batch_size": 48, "ppo_mini_batch_size": 32}, "C19", "verl_ppo_mini_batch_size", "(e.g. 24)", {"ppo_mini_batch_size": 24}),
    ({"vpp": True, "train_batch_size": 6, "ppo_mini_batch_size": 6, "n_resp_per_prompt": 1}, "C12", "verl_ppo_micro_batch_size_per_gpu",
     "turn bit 6 off", {"vpp": False}),
    ({"vpp": True, "rollout_log_prob_micro_batch_size_per_gpu": 256}, "C12", "verl_rollout_log_prob_micro_batch_size_per_gpu",
     "verl_rollout_log_prob_micro_batch_size_per_gpu=", {"rollout_log_prob_micro_batch_size_per_gpu": 16}),
    ({"vpp": True, "ref_log_prob_micro_batch_size_per_gpu": 256, "algorithm": "grpo"}, "C12",
     "verl_ref_log_prob_micro_batch_size_per_gpu", "verl_ref_log_prob_micro_batch_size_per_gpu=", {"ref_log_prob_micro_batch_size_per_gpu": 16}),
    ({"max_prompt_length": 256, "max_response_length": 512, "overlong_buffer_len": 256}, "C20", "verl_max_response_length",
     "at least 1024", {"max_response_length": 768}),
    ({"dynamic_bsz": True, "max_prompt_length": 2048, "max_response_length": 16384}, "C21", "verl_max_response_length",
     "at most 16384", {"max_response_length": 14336}),
    ({"max_prompt_length": 2048, "max_response_length": 40000, "overlong_buffer_len": 4096}, "C22", "verl_max_response_length",
     "at most 38912", {"max_response_length": 38912}),
])
def test_each_rule_fires_once_with_a_fix_that_works(changes, rule, variable, said, fix):
    errors = check_parallelism(cluster(**changes))
    assert [e["rule"] for e in errors] == [rule], errors  # one refusal for the one cause
    assert errors[0]["variable"] == variable
    assert "Fix:" in errors[0]["msg"] and said in errors[0]["msg"].split("Fix:", 1)[1], errors[0]["msg"]
    assert check_parallelism(cluster(**dict(changes, **fix))) == []


@pytest.mark.parametrize("nnodes, npn, tp, known", [(1, 8, 3, True), (1, 8, 3, False), (2, 16, 5, True), (3, 8, 6, True)])
def test_one_tp_mistake_is_one_refusal_whose_pairs_pass(nnodes, npn, tp, known):
    """Issue 28: verl_train_tp=3 on one 8-NPU node was refused three times (R2, C2, C7), R2 claiming verl would run it."""
    shape = {} if known else {"num_layers": None, "num_attention_heads": None, "num_kv_heads": None, "vocab_size": None}
    c = dict(shape, train_tp=tp, gen_tp=tp, nnodes=nnodes, npu_per_node=npn, train_batch_size=96, ppo_mini_batch_size=96)
    errors = check_parallelism(cluster(**c))
    assert len(errors) == 1 and errors[0]["variable"] == "verl_train_tp", errors
    assert "verl itself would run" not in errors[0]["msg"]
    pairs = re.findall(r"TP=(\d+) PP=(\d+)", errors[0]["msg"])
    assert pairs
    for tp_fit, pp_fit in pairs:
        fixed = {**c, "train_tp": int(tp_fit), "gen_tp": int(tp_fit), "train_pp": int(pp_fit), "ppo_micro_batch_size_per_gpu": 1}
        assert check_parallelism(cluster(**fixed)) == [], (tp_fit, pp_fit)


def test_a_refusal_without_a_fix_says_why():
    """A vocabulary only TP=1 divides, on 8 NPUs per node with 36 layers: no TP x PP fits every rule, and the refusal says so."""
    errors = check_parallelism(cluster(vocab_size=151937, train_tp=2, gen_tp=2, train_pp=4))
    assert [e["rule"] for e in errors] == ["C23"]
    assert "No TP/PP pair fits 8 NPUs per node x 1 node(s) for this model." in errors[0]["msg"]


def test_a_gen_tp_that_verl_refuses_too_does_not_claim_verl_would_run_it():
    r1 = check_parallelism(cluster(gen_tp=3))
    assert [e["rule"] for e in r1] == ["R1"] and "verl itself would run" not in r1[0]["msg"]
    assert "'Total number of attention heads (32) must be divisible by tensor parallel size (3).'" in r1[0]["msg"]


def test_dynamic_batch_size_skips_the_micro_batch_rules():
    assert "C4" not in rules(ppo_micro_batch_size_per_gpu=3, dynamic_bsz=True)


def test_three_nodes_need_a_batch_that_splits_over_three_ranks():
    assert "C6" in rules(nnodes=3)
    assert rules(nnodes=3, train_batch_size=48, ppo_mini_batch_size=48) == set()


def test_suggestions_only_hold_valid_pairs():
    c = cluster(nnodes=2)
    pairs = valid_tp_pp(c)
    assert (4, 2) in pairs and (8, 1) in pairs and (8, 2) in pairs
    for tp, pp in pairs:
        assert (tp * pp) % 8 == 0 and 16 % (tp * pp) == 0 and 36 % pp == 0 and 8 % tp == 0


def test_container_volumes_mount_data_once_and_the_driver_read_only():
    from ansible_collections.verl.deploy.plugins.module_utils._launch_config import container_volumes

    paths = {"verl_model_path": "/mnt/public/Qwen3-8B", "verl_train_file": "/mnt/data/train.parquet",
             "verl_test_file": "/mnt/data/test.parquet", "verl_ckpts_dir": "/mnt/data/ckpts", "verl_log_dir": "/var/log/verl",
             "verl_swanlab_log_dir": None}
    volumes = container_volumes(paths, "/usr/local/sbin/npu-smi")
    assert volumes == [
        "/usr/local/Ascend/driver:/usr/local/Ascend/driver:ro", "/usr/local/dcmi:/usr/local/dcmi:ro",
        "/etc/ascend_install.info:/etc/ascend_install.info:ro", "/usr/local/sbin/npu-smi:/usr/local/sbin/npu-smi:ro",
        "/mnt/data:/mnt/data:rw", "/mnt/public/Qwen3-8B:/mnt/public/Qwen3-8B:rw", "/var/log/verl:/var/log/verl:rw",
    ]


def test_the_overlong_buffer_is_checked_for_dapo_only():
    """GRPO's command line has no overlong buffer (verl_overlong_buffer_len is not used), so it is not checked."""
    assert "C18" in rules(overlong_buffer_len=8192, algorithm="dapo")
    assert "C18" not in rules(overlong_buffer_len=8192, algorithm="grpo")


def test_a_mini_batch_that_does_not_divide_the_batch_fails_like_verls_step_one():
    """48 / 32 (the issue's example): verl/protocol.py's make_iterator assert, with the per-rank numbers it prints."""
    hits = [e for e in check_parallelism(cluster(train_batch_size=48, ppo_mini_batch_size=32)) if e["rule"] == "C19"]
    assert len(hits) == 1
    assert "AssertionError: 384 % 256 != 0" in hits[0]["msg"] and "verl_ppo_mini_batch_size" in hits[0]["msg"]
    assert "(e.g. 24)" in hits[0]["msg"]
    assert "C19" not in rules(train_batch_size=64, ppo_mini_batch_size=32)
    assert "C19" not in rules(train_batch_size=16, ppo_mini_batch_size=32)  # C4 says that one


def test_vpp_needs_a_multiple_of_pp_micro_batches_not_only_pp():
    """3 micro batches for PP 2 were accepted by the old `>= PP` rule; Megatron's interleaved schedule refuses them."""
    changes = {"vpp": True, "train_batch_size": 6, "ppo_mini_batch_size": 6, "n_resp_per_prompt": 1}
    hits = [e for e in check_parallelism(cluster(**changes)) if e["rule"] == "C12"]
    assert [e["variable"] for e in hits] == ["verl_ppo_micro_batch_size_per_gpu"]
    assert "3 micro batch(es)" in hits[0]["msg"] and "use verl_ppo_micro_batch_size_per_gpu=1 or 3" in hits[0]["msg"]
    assert "C12" not in rules(**{**changes, "ppo_micro_batch_size_per_gpu": 3})  # 2 micro batches
    assert "C12" not in rules(**{**changes, "vpp": False})
    assert "C12" not in rules(**{**changes, "dynamic_bsz": True})  # verl groups dynamic micro batches by PP itself


def test_vpp_checks_the_log_prob_passes_the_training_runs():
    """The old log-prob pass always runs; the reference model's only with a KL loss (GRPO here, not DAPO)."""
    assert "C12" not in rules(vpp=True, ref_log_prob_micro_batch_size_per_gpu=256, algorithm="dapo")
    grpo = [e["variable"] for e in check_parallelism(cluster(vpp=True, ref_log_prob_micro_batch_size_per_gpu=256, algorithm="grpo"))]
    assert grpo == ["verl_ref_log_prob_micro_batch_size_per_gpu"]
    assert rules(vpp=True, rollout_log_prob_micro_batch_size_per_gpu=128) == set()  # 256 / 128 = 2 micro batches


def test_vllm_refuses_fewer_batched_tokens_than_sequences():
    short = {"max_prompt_length": 256, "max_response_length": 512, "overlong_buffer_len": 256}
    hits = [e for e in check_parallelism(cluster(**short)) if e["rule"] == "C20"]
    assert len(hits) == 1
    assert "max_num_batched_tokens (768) must be greater than or equal to max_num_seqs (1024)." in hits[0]["msg"]
    assert "actor_rollout_ref.rollout.max_num_seqs=768" in hits[0]["msg"]
    assert "C20" not in rules(**short, extra_overrides=["actor_rollout_ref.rollout.max_num_seqs=768"])
    assert "C20" not in rules(**short, extra_overrides=["actor_rollout_ref.rollout.max_num_batched_tokens=1024"])
    assert "C20" in rules(**short, extra_overrides=["actor_rollout_ref.rollout.max_num_seqs=769"])
    assert "C20" not in rules(max_prompt_length=512, max_response_length=512, overlong_buffer_len=256)  # 1024 = 1024


def test_dynamic_batch_size_needs_room_for_the_longest_sequence():
    long = {"dynamic_bsz": True, "max_prompt_length": 2048, "max_response_length": 16384}
    hits = [e for e in check_parallelism(cluster(**long)) if e["rule"] == "C21"]
    assert len(hits) == 1
    assert "Got max_token_len=16384 and max_seq_len=18432" in hits[0]["msg"]
    assert "actor_rollout_ref.actor.ppo_max_token_len_per_gpu=18432" in hits[0]["msg"]
    assert "C21" not in rules(**{**long, "dynamic_bsz": False})
    assert "C21" not in rules(**long, extra_overrides=["+actor_rollout_ref.actor.ppo_max_token_len_per_gpu=18432"])
    # The log-prob passes follow the actor's value unless given their own.
    lower_ref = ["actor_rollout_ref.actor.ppo_max_token_len_per_gpu=20000", "actor_rollout_ref.ref.log_prob_max_token_len_per_gpu=16384"]
    hits = [e for e in check_parallelism(cluster(**long, extra_overrides=lower_ref)) if e["rule"] == "C21"]
    assert len(hits) == 1 and "actor_rollout_ref.ref.log_prob_max_token_len_per_gpu=16384 tokens" in hits[0]["msg"]


@pytest.mark.parametrize("changes, rule", [({"gen_tp": 2}, "R1"), ({"train_tp": 2, "gen_tp": 2, "train_pp": 1}, "R2")])
def test_the_original_designs_rules_say_they_are_stricter_than_verl(changes, rule):
    hits = [e for e in check_parallelism(cluster(**changes)) if e["rule"] == rule]
    assert hits and "stricter than verl on purpose" in hits[0]["msg"]
    assert all("stricter than verl" not in e["msg"] for e in check_parallelism(cluster(**changes)) if e["rule"] != rule)


def test_an_extra_overrides_value_is_the_last_line_of_its_key():
    from ansible_collections.verl.deploy.plugins.module_utils._hydra_overrides import value_of, whole_value_of

    key = "actor_rollout_ref.rollout.max_num_seqs"
    assert whole_value_of([], key, 1024) == 1024
    assert whole_value_of([key + "=256", "++" + key + "=128"], key, 1024) == 128
    # The last line of the key is what Hydra keeps: an interpolation there is no whole number (the default stands).
    assert whole_value_of([key + "=64", key + "=${oc.env:N}", key + "x=5", "trainer.nnodes=2"], key, 1024) == 1024
    assert value_of(["+trainer.checkpoint.save_contents=['model']", "~" + key + "=1"], "trainer.checkpoint.save_contents") == "['model']"
    assert value_of(["~" + key], key) is None and value_of(None, key) is None


# The model's numbers come from its config.json (tests/sim/model_files.py holds the real ones).
QWEN25_7B = {"num_layers": 28, "num_attention_heads": 28, "num_kv_heads": 4, "max_position_embeddings": 32768}


@pytest.mark.parametrize("changes, seen", [
    # Qwen2.5-7B with the defaults' TP 4 x PP 2 fits; TP 8 does not: Megatron's own words, as users reported them.
    ({"train_tp": 8, "gen_tp": 8, "train_pp": 1}, "'num_query_groups (4) must be a multiple of tensor_model_parallel_size (8).'"),
    ({"train_tp": 8, "gen_tp": 8, "train_pp": 1}, "Fix: use a verl_train_tp among 1, 2, 4"),
    # vLLM's word for the rollout: its heads, not its KV heads.
    ({"train_tp": 8, "gen_tp": 8, "train_pp": 1}, "'Total number of attention heads (28) must be divisible by tensor parallel size (8).'"),
    ({"train_pp": 8, "train_tp": 1, "gen_tp": 1}, "The model's 28 layers (num_hidden_layers in its config.json)"),
    ({"max_prompt_length": 2048, "max_response_length": 32000}, "more than the model's max_position_embeddings (32768"),
    ({"max_prompt_length": 2048, "max_response_length": 32000}, "lower verl_max_response_length to at most 30720"),
])
def test_a_qwen25_7b_folder_is_checked_with_its_own_numbers(changes, seen):
    errors = check_parallelism(cluster(**dict(QWEN25_7B, **changes)))
    assert any(seen in e["msg"] for e in errors), [e["msg"] for e in errors]


def test_the_defaults_fit_qwen25_7b():
    assert check_parallelism(cluster(**QWEN25_7B)) == []


def test_without_the_model_the_shape_rules_wait_for_the_pre_check():
    unknown = {"num_layers": None, "num_attention_heads": None, "num_kv_heads": None, "max_position_embeddings": None}
    # TP 3 and PP 5 break the shape rules of every model here; only the cluster's rules speak before the model is read.
    assert {"C14", "C11", "C22"}.isdisjoint(rules(**dict(unknown, train_tp=3, gen_tp=3, train_pp=8, nnodes=3, max_response_length=50000)))
    assert rules(**dict(unknown, train_tp=8, gen_tp=8, train_pp=1)) == set()
    assert (8, 1) in valid_tp_pp(cluster(**unknown))


@pytest.mark.parametrize("vocab, refused", [(151936, False), (152064, False), (151937, True), (151938, False)])
def test_the_training_tp_divides_the_vocabulary(vocab, refused):
    errors = [e for e in check_parallelism(cluster(vocab_size=vocab, train_tp=2, gen_tp=2, train_pp=4)) if e["rule"] == "C23"]
    assert bool(errors) == refused
    if refused:
        assert "'AssertionError: 151937 is not divisible by 2'" in errors[0]["msg"] and "Fix:" in errors[0]["msg"]


def test_a_budget_that_fits_the_positions_exactly_passes():
    assert "C22" not in rules(max_prompt_length=8192, max_response_length=40960 - 8192, overlong_buffer_len=1024)


# MoE (issue 28): the expert parallel size verl_extra_overrides gives must divide the model's experts (Megatron's MoE layer
# asserts it) and, with expert TP x PP, the NPUs (Megatron's initialize_model_parallel). Each refusal's fix applied passes.
EP = "actor_rollout_ref.actor.megatron.expert_model_parallel_size"
QWEN3_30B_A3B = {"num_layers": 48, "num_attention_heads": 32, "num_kv_heads": 4, "max_position_embeddings": 40960,
                 "vocab_size": 151936, "num_experts": 128}
MIXTRAL = {"num_layers": 32, "num_attention_heads": 32, "num_kv_heads": 8, "max_position_embeddings": 32768, "vocab_size": 32000,
           "num_experts": 8}


ETP1 = "actor_rollout_ref.actor.megatron.expert_tensor_parallel_size=1"


@pytest.mark.parametrize("model, changes, ep, rule, said, fixed_ep", [
    (MIXTRAL, {"train_tp": 8, "gen_tp": 8, "train_pp": 1, "nnodes": 2}, 16, "C24", "does not divide the model's 8 experts", 2),
    (QWEN3_30B_A3B, {"train_tp": 4, "gen_tp": 4, "train_pp": 4, "npu_per_node": 16, "extra": [ETP1]}, 3, "C24",
     "Fix: set it to one of 1, 2, 4 ", 4),
    (QWEN3_30B_A3B, {"train_tp": 2, "gen_tp": 2, "train_pp": 4, "extra": [ETP1]}, 4, "C25",
     "'RuntimeError: decoder world_size (8) is not divisible by expert_tensor_model_pipeline_parallel size (16)'", 2),
    ({}, {}, 2, "C24", "the model is dense", 1),
])
def test_the_expert_parallel_size_fits_the_experts_and_the_npus(model, changes, ep, rule, said, fixed_ep):
    c = dict(model, **changes)
    extra = c.pop("extra", [])
    errors = check_parallelism(cluster(**c, extra_overrides=extra + ["%s=%d" % (EP, ep)]))
    assert [e["rule"] for e in errors] == [rule], errors
    assert errors[0]["variable"] == "verl_extra_overrides" and said in errors[0]["msg"], errors[0]["msg"]
    assert check_parallelism(cluster(**c, extra_overrides=extra + ["%s=%d" % (EP, fixed_ep)])) == []


def test_a_moe_model_without_expert_parallelism_passes_the_shape_rules():
    assert check_parallelism(cluster(**QWEN3_30B_A3B)) == []


# --------------------------------------------------------------------------- Megatron's uneven first and last stages

OVERRIDE = "+actor_rollout_ref.actor.megatron.override_transformer_config."
# DeepSeek-V3 (deepseek-ai/DeepSeek-V3 config.json: 61 layers, 128 heads, vocabulary 129280, 256 experts) on 16 Atlas A3
# nodes of 16 NPUs with PP 16: verl's own 671B recipes give Megatron the uneven stages (recipe/dapo/
# test_dapo_dspk_671b_megatron_96gb.sh: first 3, last 2; 3 + 14 x 4 + 2 = 61).
DEEPSEEK = {"num_layers": 61, "num_attention_heads": 128, "num_kv_heads": 128, "vocab_size": 129280, "num_experts": 256,
            "max_position_embeddings": 163840, "npu_per_node": 16, "nnodes": 16, "train_tp": 4, "gen_tp": 4, "train_pp": 16,
            "train_batch_size": 64, "ppo_mini_batch_size": 64, "ppo_micro_batch_size_per_gpu": 1,
            "ref_log_prob_micro_batch_size_per_gpu": 1, "rollout_log_prob_micro_batch_size_per_gpu": 1}
UNEVEN = [OVERRIDE + "num_layers_in_first_pipeline_stage=3", OVERRIDE + "num_layers_in_last_pipeline_stage=2"]


def _lines_of(fix):
    return re.findall(r"\+\S+_pipeline_stage=\d+", fix)


def test_deepseek_v3_with_pp_16_and_uneven_stages_is_accepted():
    assert check_parallelism(cluster(**DEEPSEEK, extra_overrides=UNEVEN)) == []
    assert (4, 16) in valid_tp_pp(cluster(**DEEPSEEK, extra_overrides=UNEVEN))


def test_pp_16_without_the_uneven_stages_names_them_and_they_pass():
    errors = check_parallelism(cluster(**DEEPSEEK))
    assert [e["rule"] for e in errors] == ["C11"] and "divides 61 (1)" in errors[0]["msg"]
    fix = errors[0]["msg"].split("Fix:", 1)[1]
    assert "3 + 14 x 4 + 2 = 61 layers" in fix and _lines_of(fix) == UNEVEN
    assert check_parallelism(cluster(**DEEPSEEK, extra_overrides=_lines_of(fix))) == []


@pytest.mark.parametrize("lines, vpp, megatron", [
    # Megatron-core's TransformerConfig.__post_init__ words (its f-strings join the lines without a space).
    ([OVERRIDE + "num_layers_in_first_pipeline_stage=4", OVERRIDE + "num_layers_in_last_pipeline_stage=2"], False,
     "number of layers at middle stage: 55 must be divisible bythe middle pipeline model parallel size 14"),
    ([OVERRIDE + "num_layers_in_first_pipeline_stage=3", OVERRIDE + "num_layers_in_last_pipeline_stage=2"], True,
     "number of layers at first stage: 3must be divisible by virtual pipelineparallel degree 2"),
    ([OVERRIDE + "num_layers_in_first_pipeline_stage=0"], False, "num_layers_in_first_pipeline_stage must be larger than 0"),
])
def test_an_uneven_split_megatron_refuses_is_refused_with_one_that_works(lines, vpp, megatron):
    errors = check_parallelism(cluster(**DEEPSEEK, extra_overrides=lines, vpp=vpp))
    assert [e["rule"] for e in errors] == ["C11"] and errors[0]["variable"] == "verl_extra_overrides", errors
    assert "'ValueError: %s'" % megatron in errors[0]["msg"]
    fix = errors[0]["msg"].split("Fix:", 1)[1]
    if vpp:  # 61 layers cannot be split into even stages: the fix is VPP off, the split kept
        assert "turn bit 6 off" in fix and check_parallelism(cluster(**DEEPSEEK, extra_overrides=lines)) == []
        return
    assert check_parallelism(cluster(**DEEPSEEK, extra_overrides=_lines_of(fix))) == []


def test_the_settings_check_accepts_deepseek_v3_on_16_a3_nodes_with_uneven_stages():
    """The whole settings check (what the pre-check detected: DeepSeek-V3's config.json), not only the rules."""
    import json
    import sys
    from pathlib import Path

    from ansible_collections.verl.deploy.plugins.module_utils import _launch_config as lc
    from ansible_collections.verl.deploy.plugins.module_utils import _model
    from helpers.launch_helpers import RULES, SPEC, settings

    sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "tests" / "sim"))
    import model_files  # noqa: E402  pylint: disable=import-outside-toplevel

    facts = _model.parse_config(json.dumps(model_files.FAMILIES["DeepSeek-V3"][0]))
    given = {"verl_npu_devices": list(range(16)), "verl_train_tp": 4, "verl_train_pp": 16, "verl_feature_mask": "0010000",
             "verl_train_batch_size": 64, "verl_ppo_mini_batch_size": 64, "verl_ppo_micro_batch_size_per_gpu": 1,
             "verl_extra_overrides": ["actor_rollout_ref.actor.megatron.expert_tensor_parallel_size=1",
                                      "actor_rollout_ref.actor.megatron.expert_model_parallel_size=16"]}

    def errors(lines):
        given["verl_extra_overrides"] = given["verl_extra_overrides"][:2] + lines
        return lc.build(settings(**given), SPEC, RULES, host="node1", nnodes=16, head={"name": "node1", "ansible_host": "10.0.0.1"},
                        detected={"model": facts})[1]

    assert errors(UNEVEN) == []
    refused = errors([])
    assert len(refused) == 1 and "divides 61 (1)" in refused[0]["msg"]
    assert errors(_lines_of(refused[0]["msg"].split("Fix:", 1)[1])) == []


# --------------------------------------------------------------------------- HCCL_BUFFSIZE against the rollout's EP and batch

# DeepSeek-V3's MoE shape (config.json: hidden_size 7168, num_experts_per_tok 8, 256 routed experts) with the rollout's
# expert parallelism at 16, as vllm-ascend#2674 ran it ("HCCL_BUFFSIZE to 50 with ep_size >= 16": "The DDR address of the
# MTE instruction is out of range" instead of CANN's "HCCL_BUFFSIZE is too SMALL").
MOE_ROLLOUT = dict(DEEPSEEK, hidden_size=7168, experts_per_token=8,
                   extra_overrides=UNEVEN + ["actor_rollout_ref.rollout.expert_parallel_size=16"])


def test_the_hccl_window_is_canns_formula_for_the_rollouts_mc2_batch():
    from ansible_collections.verl.deploy.plugins.module_utils._config_checks import hccl_buffsize_need
    # min(max_num_seqs 1024, 512) tokens over rollout TP 4: 128 per rank; 16 experts per rank. Dispatch token Align512(14336 + 44)
    # = 14848 B, combine 14336 B: (128 x 14848 x 16 x 16 + 128 x 14336 x 8) x 2 = 1002438656 B -> 956 MB (CANN adds 1).
    need = hccl_buffsize_need(cluster(**MOE_ROLLOUT))
    assert need == {"mb": 957, "ep": 16, "tp": 4, "max_bs": 128, "seqs": 1024, "local": 16}
    # Fewer sequences, a smaller window: max_num_seqs 16 -> 4 tokens per rank.
    fewer = {**MOE_ROLLOUT, "extra_overrides": MOE_ROLLOUT["extra_overrides"] + ["actor_rollout_ref.rollout.max_num_seqs=16"]}
    assert hccl_buffsize_need(cluster(**fewer))["mb"] == 30
    # A dense model, or no expert parallelism in the rollout: no MC2, nothing needed.
    assert hccl_buffsize_need(cluster(**{**MOE_ROLLOUT, "num_experts": 0})) is None
    assert hccl_buffsize_need(cluster(**{**MOE_ROLLOUT, "extra_overrides": UNEVEN})) is None


def test_a_too_small_hccl_buffsize_is_refused_and_its_fix_passes():
    errors = check_parallelism(cluster(**MOE_ROLLOUT, extra_env={"HCCL_BUFFSIZE": "50"}))
    assert [(e["rule"], e["variable"], e["value"]) for e in errors] == [("C26", "verl_extra_env", "HCCL_BUFFSIZE=50")]
    for said in ("needs at least 957 MB", "vllm-ascend#2674", "The DDR address of the MTE instruction is out of range",
                 "Fix: set HCCL_BUFFSIZE to 957 or more"):
        assert said in errors[0]["msg"]
    assert check_parallelism(cluster(**MOE_ROLLOUT, extra_env={"HCCL_BUFFSIZE": "957"})) == []
    assert check_parallelism(cluster(**MOE_ROLLOUT)) == []  # removed: the deploy exports the need (training_entry)
