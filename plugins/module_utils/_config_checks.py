# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Private to the verl.deploy collection: may change without notice.
#
# Parallelism and batch-size rules checked before launch. verl's DAPO entry point (main_dapo) skips
# verl's own validate_config, and Megatron only fails after minutes of model loading on every node,
# so the launcher re-implements the arithmetic here. The rule ids (R1, R2: the original design's two
# rules; C2 ... C18: verl's, Megatron's and vLLM's) and where each is enforced at run time are listed in
# docs/design.md, "The parallelism rules and their ids".
from __future__ import annotations

from ansible_collections.verl.deploy.plugins.module_utils._features import RECOMPUTE_NUM_LAYERS, VPP_SIZE


def _divisors(n):
    return [d for d in range(1, n + 1) if n % d == 0]


def valid_tp_pp(c):
    """The (TP, PP) pairs that satisfy every parallelism rule for this cluster and model."""
    pairs = []
    for tp in _divisors(c["num_kv_heads"]):
        if c["num_attention_heads"] % tp:
            continue
        for pp in _divisors(c["num_layers"]):
            mp = tp * pp
            if mp % c["npu_per_node"] or c["world_size"] % mp:
                continue
            if c["vpp"] and (pp < 2 or c["num_layers"] % (pp * VPP_SIZE)):
                continue
            pairs.append((tp, pp))
    return pairs


def _suggest(c):
    pairs = valid_tp_pp(c)
    if not pairs:
        return "No TP/PP pair fits %d NPUs per node x %d node(s) for this model." % (c["npu_per_node"], c["nnodes"])
    return "Pairs that fit: " + ", ".join("TP=%d PP=%d" % p for p in pairs[:6]) + "."


def check_parallelism(c):
    """Return a list of error dicts {rule, variable, value, msg}; empty when the configuration is launchable.

    `c` holds the normalised settings: train_tp, train_pp, gen_tp, npu_per_node, nnodes, world_size,
    train_batch_size, ppo_mini_batch_size, n_resp_per_prompt, ppo_micro_batch_size_per_gpu,
    max_response_length, overlong_buffer_len, num_layers, num_attention_heads, num_kv_heads,
    dynamic_bsz, recompute, vpp (booleans from the feature mask), algorithm (dapo or grpo; default dapo).
    """
    errors = []

    def fail(rule, variable, value, msg):
        errors.append({"rule": rule, "variable": variable, "value": value, "msg": msg})

    tp, pp, gen_tp = c["train_tp"], c["train_pp"], c["gen_tp"]
    npn, nnodes, world = c["npu_per_node"], c["nnodes"], c["world_size"]
    layers = c["num_layers"]
    mp = tp * pp

    if gen_tp != tp:
        fail("R1", "verl_gen_tp", gen_tp,
             "verl_gen_tp=%d differs from verl_train_tp=%d: the rollout tensor parallel size must equal the training one. "
             "Fix: set verl_gen_tp=%d, or leave verl_gen_tp unset (it follows verl_train_tp)." % (gen_tp, tp, tp))
    if mp % npn:
        fail("R2", "verl_train_tp", tp,
             "verl_train_tp x verl_train_pp = %d x %d = %d is not a multiple of the NPUs per node (%d, the length of verl_npu_devices). "
             "Fix: choose TP and PP whose product is a multiple of %d. %s" % (tp, pp, mp, npn, npn, _suggest(c)))
    if world % mp:
        fail("C2", "verl_train_tp", tp,
             "The cluster has %d NPUs (%d node(s) x %d), which is not divisible by verl_train_tp x verl_train_pp = %d x %d = %d. "
             "Fix: choose TP and PP whose product divides %d. %s" % (world, nnodes, npn, tp, pp, mp, world, _suggest(c)))
    for variable, value in (("verl_train_tp", tp), ("verl_gen_tp", gen_tp)):
        if c["num_attention_heads"] % value or c["num_kv_heads"] % value:
            fail("C14", variable, value,
                 "%s=%d does not divide the model's %d attention heads and %d key/value heads (verl_model_num_attention_heads, "
                 "verl_model_num_kv_heads). Fix: use one of %s." % (
                     variable, value, c["num_attention_heads"], c["num_kv_heads"],
                     ", ".join(str(d) for d in _divisors(c["num_kv_heads"]) if c["num_attention_heads"] % d == 0)))
    if world % gen_tp:
        fail("C7", "verl_gen_tp", gen_tp,
             "The cluster's %d NPUs cannot be split into rollout replicas of verl_gen_tp=%d NPUs. Fix: use a verl_gen_tp that divides %d."
             % (world, gen_tp, world))
    if layers % pp:
        fail("C11", "verl_train_pp", pp,
             "The model's %d layers (verl_model_num_layers) cannot be split evenly over verl_train_pp=%d pipeline stages. "
             "Fix: use a verl_train_pp that divides %d (%s)." % (layers, pp, layers, ", ".join(str(d) for d in _divisors(layers) if d <= 16)))
    if c["vpp"]:
        if pp < 2:
            fail("C10", "verl_feature_mask", "VPP (bit 6)",
                 "VPP (bit 6) needs pipeline parallelism, but verl_train_pp=%d. Fix: set verl_train_pp to 2 or more, or turn bit 6 off." % pp)
        elif layers % (pp * VPP_SIZE):
            fail("C11", "verl_train_pp", pp,
                 "With VPP (bit 6) the model's %d layers are split into verl_train_pp x %d = %d chunks, which is not even. "
                 "Fix: use a verl_train_pp with %d %% (PP x %d) == 0, or turn bit 6 off." % (layers, VPP_SIZE, pp * VPP_SIZE, layers, VPP_SIZE))
    if c["recompute"] and pp and layers % pp == 0:
        stages = pp * (VPP_SIZE if c["vpp"] and pp >= 2 else 1)
        per_stage = layers // stages
        if per_stage < RECOMPUTE_NUM_LAYERS:
            fail("C13", "verl_feature_mask", "Recompute (bit 4)",
                 "Recompute (bit 4) recomputes %d layers per pipeline stage, but each stage holds only %d of the model's %d layers "
                 "(verl_train_pp=%d%s). Fix: lower verl_train_pp, or turn bit 4 off." % (
                     RECOMPUTE_NUM_LAYERS, per_stage, layers, pp, ", VPP on" if stages != pp else ""))

    # Batch arithmetic: verl's Megatron worker turns the mini batch into n x mini / DP sequences per rank.
    bsz, mini, n = c["train_batch_size"], c["ppo_mini_batch_size"], c["n_resp_per_prompt"]
    micro = c["ppo_micro_batch_size_per_gpu"]
    if world % mp == 0:
        dp = world // mp
        if bsz < mini:
            fail("C4", "verl_ppo_mini_batch_size", mini,
                 "verl_ppo_mini_batch_size=%d is larger than verl_train_batch_size=%d. Fix: set verl_ppo_mini_batch_size to at most %d "
                 "(it defaults to verl_train_batch_size)." % (mini, bsz, bsz))
        if (mini * n) % dp:
            fail("C6", "verl_ppo_mini_batch_size", mini,
                 "A mini batch of verl_ppo_mini_batch_size x verl_n_resp_per_prompt = %d x %d = %d sequences cannot be split evenly over "
                 "the %d data-parallel ranks (%d NPUs / (TP %d x PP %d)); verl would stop with 'only support equal chunk'. "
                 "Fix: make %d x %d a multiple of %d (e.g. verl_train_batch_size and verl_ppo_mini_batch_size = %d)." % (
                     mini, n, mini * n, dp, world, tp, pp, mini, n, dp, _round_up(mini, dp // _gcd(dp, n))))
        elif not c["dynamic_bsz"]:
            per_rank = mini * n // dp
            if per_rank % micro:
                fail("C4", "verl_ppo_micro_batch_size_per_gpu", micro,
                     "Each data-parallel rank gets %d sequences per mini batch, which is not a multiple of verl_ppo_micro_batch_size_per_gpu=%d. "
                     "Fix: use a micro batch size that divides %d." % (per_rank, micro, per_rank))
            elif c["vpp"] and pp >= 2 and per_rank // micro < pp:
                fail("C12", "verl_ppo_micro_batch_size_per_gpu", micro,
                     "With VPP each rank needs at least verl_train_pp=%d micro batches per mini batch, but gets %d (%d sequences / micro batch %d). "
                     "Fix: lower verl_ppo_micro_batch_size_per_gpu or raise verl_ppo_mini_batch_size." % (pp, per_rank // micro, per_rank, micro))
        if not c["dynamic_bsz"] and (bsz * n) % (dp * micro):
            fail("C3", "verl_train_batch_size", bsz,
                 "verl_train_batch_size x verl_n_resp_per_prompt = %d x %d = %d is not a multiple of data-parallel ranks x micro batch "
                 "= %d x %d = %d. Fix: choose a verl_train_batch_size with %d x n a multiple of %d." % (
                     bsz, n, bsz * n, dp, micro, dp * micro, bsz, dp * micro))

    # Only DAPO reads the overlong buffer (GRPO's command line leaves it out).
    if c.get("algorithm", "dapo") == "dapo" and c["max_response_length"] < c["overlong_buffer_len"]:
        fail("C18", "verl_overlong_buffer_len", c["overlong_buffer_len"],
             "The DAPO overlong buffer (verl_overlong_buffer_len=%d) is longer than the maximum response (verl_max_response_length=%d). "
             "Fix: set verl_overlong_buffer_len to at most %d." % (c["overlong_buffer_len"], c["max_response_length"], c["max_response_length"]))
    return errors


def _gcd(a, b):
    while b:
        a, b = b, a % b
    return a


def _round_up(value, multiple):
    return ((value + multiple - 1) // multiple) * multiple
