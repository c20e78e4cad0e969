# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""Parallelism and batch rules: each violation names the variable, the values and a fix."""
from __future__ import annotations

import pytest

from ansible_collections.verl.deploy.plugins.module_utils._config_checks import check_parallelism, valid_tp_pp


def cluster(**changes):
    c = {
        "train_tp": 4, "train_pp": 2, "gen_tp": 4, "npu_per_node": 8, "nnodes": 1,
        "train_batch_size": 32, "ppo_mini_batch_size": 32, "n_resp_per_prompt": 8, "ppo_micro_batch_size_per_gpu": 2,
        "max_response_length": 4096, "overlong_buffer_len": 2048,
        "num_layers": 36, "num_attention_heads": 32, "num_kv_heads": 8,
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


@pytest.mark.parametrize("changes, rule, variable", [
    ({"gen_tp": 2}, "R1", "verl_gen_tp"),
    ({"train_tp": 2, "gen_tp": 2, "train_pp": 1}, "R2", "verl_train_tp"),
    ({"train_tp": 8, "gen_tp": 8, "train_pp": 2, "npu_per_node": 8, "nnodes": 1}, "C2", "verl_train_tp"),
    ({"train_tp": 3, "gen_tp": 3, "train_pp": 8, "npu_per_node": 8, "nnodes": 3, "train_batch_size": 48,
      "ppo_mini_batch_size": 48}, "C14", "verl_train_tp"),
    ({"train_pp": 5, "train_tp": 8, "gen_tp": 8, "npu_per_node": 8, "nnodes": 5}, "C11", "verl_train_pp"),
    ({"vpp": True, "train_tp": 8, "gen_tp": 8, "train_pp": 1}, "C10", "verl_feature_mask"),
    ({"vpp": True, "train_tp": 2, "gen_tp": 2, "train_pp": 4}, "C11", "verl_train_pp"),
    ({"recompute": True, "train_tp": 1, "gen_tp": 1, "train_pp": 6, "npu_per_node": 6, "num_kv_heads": 8}, "C13", "verl_feature_mask"),
    ({"train_batch_size": 16, "ppo_mini_batch_size": 32}, "C4", "verl_ppo_mini_batch_size"),
    ({"ppo_micro_batch_size_per_gpu": 3}, "C4", "verl_ppo_micro_batch_size_per_gpu"),
    ({"nnodes": 3}, "C6", "verl_ppo_mini_batch_size"),
    ({"nnodes": 2, "train_batch_size": 1, "ppo_mini_batch_size": 1, "n_resp_per_prompt": 2, "ppo_micro_batch_size_per_gpu": 2},
     "C3", "verl_train_batch_size"),
    ({"overlong_buffer_len": 8192}, "C18", "verl_overlong_buffer_len"),
])
def test_each_rule_fires_with_a_fix(changes, rule, variable):
    errors = check_parallelism(cluster(**changes))
    hits = [e for e in errors if e["rule"] == rule]
    assert hits, errors
    assert hits[0]["variable"] == variable
    assert "Fix:" in hits[0]["msg"]


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
