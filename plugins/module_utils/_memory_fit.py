# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Private to the verl.deploy collection: may change without notice.
"""Whether the training fits the NPUs' memory: an estimate per NPU from config.json, the settings and the HBM npu-smi
reports, made before anything starts (docs/memory.md has the formula, its sources and what it leaves out).

verl 0.7.0's Megatron hybrid engine keeps the actor, the reference model and the vLLM rollout on the same NPUs:
- the actor (verl/utils/megatron_utils.py, offload_megatron_model_to_cpu's docstring): bf16 parameters and fp32
  gradients split by TP x PP, the distributed optimizer's fp32 master parameters and Adam's two fp32 moments split by
  TP x PP x DP (Megatron-LM's distributed optimizer: 6 + 12/DP bytes per parameter); Adam's moments appear at the first
  update (torch's Adam creates them lazily);
- init order (verl/workers/megatron_workers.py, init_model): the actor (its parameters and gradients offloaded at once
  with param_offload, its optimizer with optimizer_offload), then the rollout -- vLLM profiles now and keeps as KV cache
  what gpu_memory_utilization x HBM leaves after everything this process holds -- then the reference model;
- vLLM's KV cache per token and NPU: 2 (K and V) x layers x KV heads per rank x head_dim x 2 bytes (bf16), KV heads
  split by the rollout TP (replicated when TP exceeds them); vLLM needs room for at least one sequence of max_model_len,
  which verl sets to max_position_embeddings (verl/workers/rollout/vllm_rollout/vllm_async_server.py:198);
- each rollout (rollout_mode) wakes vLLM with the KV cache sized at init while the actor's optimizer state and the
  reference model stay (unless offloaded): from the second step on, that sum must fit the HBM.
Pure functions; no Ansible imports.
"""
from __future__ import annotations

from ansible_collections.verl.deploy.plugins.module_utils import _algorithms
from ansible_collections.verl.deploy.plugins.module_utils._config_checks import edge_stages, stage_layers, valid_tp_pp

GIB = 1024 ** 3
# What the CANN runtime and HCCL hold on each NPU outside PyTorch's allocator (workspace, HCCL buffers: HCCL_BUFFSIZE
# is 200 MB per communicator by default): an allowance, not a measurement.
RUNTIME_RESERVE = 2 * GIB
# Above this share of the HBM the training phase is "tight": activations, which the estimate leaves out, need the rest.
TIGHT = 0.85


def _gib(value):
    return "%.1f GiB" % (value / GIB)


def kv_bytes_per_token(facts, rollout_tp):
    """The KV cache of one token on one NPU of a rollout replica. Multi-head latent attention (DeepSeek-V2/V3) caches one
    latent vector and the shared rope key per layer, on every rank (vLLM's MLA backends)."""
    if facts.get("kv_lora_rank"):
        return facts["num_layers"] * (facts["kv_lora_rank"] + facts.get("qk_rope_head_dim", 0)) * 2
    kv_per_rank = max(1, facts["num_kv_heads"] // rollout_tp)
    return 2 * facts["num_layers"] * kv_per_rank * facts["head_dim"] * 2


def estimate(c):
    """The estimate per NPU, in bytes. c: parameters (the model read's one count), expert_parameters (the routed experts'
    share, 0 for a dense model), ep and etp (expert parallel and expert TP sizes), facts (config.json's), hbm_bytes, train_tp, train_pp, gen_tp,
    world_size, algorithm, gpu_memory_utilization, max_prompt_length, max_response_length, max_num_batched_tokens,
    max_num_seqs, train_batch_size, n_resp_per_prompt, offload, swap_optimizer (the feature bits 2 and 5)."""
    facts, params = c["facts"], c["parameters"]
    tp, pp, gen_tp = c["train_tp"], c["train_pp"], c["gen_tp"]
    dp = max(1, c["world_size"] // (tp * pp))
    # A MoE model's routed experts are split by Megatron's expert layout instead: expert TP (default the TP) x expert
    # parallel x PP, and their optimizer state over the expert data-parallel ranks, world / (ETP x EP x PP)
    # (megatron/core/parallel_state.py, initialize_model_parallel).
    experts = c.get("expert_parameters") or 0
    ep, etp = c.get("ep") or 1, c.get("etp") or tp
    expert_dp = max(1, c["world_size"] // (etp * ep * pp))
    # The largest pipeline stage decides: with Megatron's uneven first and last stages (verl_extra_overrides) it holds
    # more than layers / PP.
    stages = stage_layers(facts["num_layers"], pp, *edge_stages(c))[0] if facts.get("num_layers") else None
    per_stage = max(stages) / facts["num_layers"] if stages else 1 / pp
    shard = ((params - experts) / tp + experts / (etp * ep)) * per_stage
    optimizer_shard = ((params - experts) / tp / dp + experts / (etp * ep) / expert_dp) * per_stage
    actor = {"parameters": 2 * shard, "gradients": 4 * shard, "master": 4 * optimizer_shard, "adam": 8 * optimizer_shard}
    offload, swap = c["offload"], c["swap_optimizer"]
    # Bit 2 sets param_offload (the actor's parameters and gradients, and the reference model's) and optimizer_offload,
    # except with Swap Optimizer (bit 5), which keeps the optimizer state on the host itself (_features.py).
    optimizer_away = offload or swap
    # Only an algorithm with a KL loss runs a reference model (the algorithm table's reference_model rule).
    reference = 2 * shard if _algorithms.applies(c.get("algorithm") or _algorithms.DEFAULT, "reference_model") else 0
    at_init = (0 if offload else actor["parameters"] + actor["gradients"]) + (0 if optimizer_away else actor["master"])
    rollout_weights = 2 * params / gen_tp
    tokens = c["max_num_batched_tokens"]
    activations = tokens * (facts["hidden_size"] + facts["intermediate_size"] // gen_tp) * 2 * 4 + \
        min(c["max_num_seqs"], tokens) * facts["vocab_size"] * 4
    budget = c["gpu_memory_utilization"] * c["hbm_bytes"]
    kv_cache = budget - at_init - rollout_weights - activations - RUNTIME_RESERVE
    per_token = kv_bytes_per_token(facts, gen_tp)
    replicas = max(1, c["world_size"] // gen_tp)
    sequences = -(-c["train_batch_size"] * c["n_resp_per_prompt"] // replicas)
    later = (0 if offload else reference) + (0 if optimizer_away else actor["adam"])
    return {
        "hbm": c["hbm_bytes"], "dp": dp, "actor": actor, "reference": reference, "at_init": at_init,
        "rollout_weights": rollout_weights, "activations": activations, "kv_cache": kv_cache, "kv_per_token": per_token,
        "kv_one_sequence": per_token * facts["max_position_embeddings"],
        "kv_rollout": per_token * sequences * (c["max_prompt_length"] + c["max_response_length"]), "sequences": sequences,
        "rollout_peak": budget + later,
        "train_peak": sum(actor.values()) - (actor["master"] + actor["adam"] if swap else 0) + (0 if offload else reference)
        + RUNTIME_RESERVE,
    }


def verdict(c):
    """(problems, warnings) of the estimate: each a sentence with the numbers and what would fit."""
    e = estimate(c)
    hbm = e["hbm"]
    problems, warnings = [], []
    head = ("Memory estimate per NPU (%s HBM, TP %d x PP %d x DP %d, rollout TP %d, %.2g B parameters): " % (
        _gib(hbm), c["train_tp"], c["train_pp"], e["dp"], c["gen_tp"], c["parameters"] / 1e9))
    if e["kv_cache"] < e["kv_one_sequence"]:
        # vLLM's own words (vllm/v1/core/kv_cache_utils.py, check_enough_kv_cache_memory; vllm-ascend's worker).
        if e["kv_cache"] <= 0:
            seen = "'No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.'"
        else:
            seen = ("'To serve at least one request with the model's max seq len (%d), (%s KV cache) is needed, which is larger "
                    "than the available KV cache memory'" % (c["facts"]["max_position_embeddings"], _gib(e["kv_one_sequence"])))
        problems.append(head + (
            "vLLM gets verl_gpu_memory_utilization=%s x HBM = %s; the actor holds %s of it when vLLM starts, the rollout weights "
            "%s, its profiling about %s, the runtime %s, which leaves %s for the KV cache, less than one sequence of %d tokens "
            "(max_position_embeddings) needs (%s): vLLM stops at start with %s. Fix: %s." % (
                c["gpu_memory_utilization"], _gib(c["gpu_memory_utilization"] * hbm), _gib(e["at_init"]), _gib(e["rollout_weights"]),
                _gib(e["activations"]), _gib(RUNTIME_RESERVE), _gib(e["kv_cache"]) if e["kv_cache"] > 0 else "nothing", c["facts"]["max_position_embeddings"],
                _gib(e["kv_one_sequence"]), seen, fixes(c, "kv"))))
    elif e["rollout_peak"] + RUNTIME_RESERVE > hbm:
        problems.append(head + (
            "from the second step on, each rollout wakes vLLM's %s (verl_gpu_memory_utilization=%s) while the actor's optimizer "
            "moments%s stay on the NPU (%s more): %s of %s, so the second rollout fails with 'NPU out of memory'. Fix: %s." % (
                _gib(c["gpu_memory_utilization"] * hbm), c["gpu_memory_utilization"],
                " and the reference model" if e["reference"] else "", _gib(e["rollout_peak"] - c["gpu_memory_utilization"] * hbm),
                _gib(e["rollout_peak"] + RUNTIME_RESERVE), _gib(hbm), fixes(c, "rollout"))))
    elif e["kv_cache"] < e["kv_rollout"]:
        warnings.append(head + (
            "the KV cache (%s) holds fewer tokens than the %d sequences of a rollout per replica at verl_max_prompt_length + "
            "verl_max_response_length need (%s): vLLM will queue and preempt them, so the rollout is slower. More room: %s." % (
                _gib(e["kv_cache"]), e["sequences"], _gib(e["kv_rollout"]), fixes(c, "kv_tight"))))
    if e["train_peak"] > hbm:
        problems.append(head + (
            "the actor's update needs %s (parameters %s, gradients %s, master weights %s, Adam %s%s, runtime %s) before "
            "activations, more than the %s HBM: the first update fails with 'NPU out of memory'. Fix: %s." % (
                _gib(e["train_peak"]), _gib(e["actor"]["parameters"]), _gib(e["actor"]["gradients"]), _gib(e["actor"]["master"]),
                _gib(e["actor"]["adam"]), ", reference model %s" % _gib(e["reference"]) if e["reference"] and not c["offload"] else "",
                _gib(RUNTIME_RESERVE), _gib(hbm), fixes(c, "train"))))
    elif e["train_peak"] > TIGHT * hbm:
        warnings.append(head + (
            "the actor's update needs %s of %s before activations, so little is left for them; an 'NPU out of memory' at the "
            "update is likely with long sequences. More room: %s." % (_gib(e["train_peak"]), _gib(hbm), fixes(c, "train_tight"))))
    return problems, warnings


def troubles(c):
    """The labels of what does not fit ('kv', 'rollout', 'train') or is tight ('kv_tight', 'train_tight')."""
    e = estimate(c)
    found = set()
    if e["kv_cache"] < e["kv_one_sequence"]:
        found.add("kv")
    elif e["rollout_peak"] + RUNTIME_RESERVE > e["hbm"]:
        found.add("rollout")
    elif e["kv_cache"] < e["kv_rollout"]:
        found.add("kv_tight")
    if e["train_peak"] > e["hbm"]:
        found.add("train")
    elif e["train_peak"] > TIGHT * e["hbm"]:
        found.add("train_tight")
    return found


def fixes(c, which):
    """The changes, one at a time, under which the estimate has no problem at all (named as the user sets them)."""
    found = []
    if not c["offload"]:
        found.append(("turn on Offload (bit 2 of the mask)", dict(c, offload=True)))
    if not c["swap_optimizer"]:
        found.append(("turn on Swap Optimizer (bit 5)", dict(c, swap_optimizer=True)))
    utilization = c["gpu_memory_utilization"]
    steps = [round(0.3 + 0.05 * i, 2) for i in range(14)]
    for value in (sorted(steps, reverse=True) if which == "rollout" else steps):  # nearest first
        if (value < utilization) if which == "rollout" else (value > utilization):
            found.append(("verl_gpu_memory_utilization=%s" % value, dict(c, gpu_memory_utilization=value)))
    experts = (c["facts"].get("num_experts") or 0) if c.get("expert_parameters") else 0
    for ep in c.get("expert_sizes") or ():
        if ep > (c.get("ep") or 1) and experts % ep == 0:
            found.append(("add actor_rollout_ref.actor.megatron.expert_model_parallel_size=%d to verl_extra_overrides" % ep, dict(c, ep=ep)))
    for tp, pp in c.get("layouts") or ():
        if (tp, pp) != (c["train_tp"], c["train_pp"]):
            found.append(("verl_train_tp=%d verl_train_pp=%d" % (tp, pp), dict(c, train_tp=tp, train_pp=pp, gen_tp=tp)))
    fitting, utilization_named = [], False
    for words, changed in found:
        left = troubles(changed)
        if which in left or left & {"kv", "rollout", "train"}:
            continue
        if words.startswith("verl_gpu_memory_utilization"):
            if utilization_named:
                continue  # the first value that fits is enough
            utilization_named = True
        fitting.append(words)
    if not fitting:
        return ("no single change of Offload, Swap Optimizer, verl_gpu_memory_utilization, TP x PP%s fits; %s" % (
            " or expert parallelism" if experts else "", more_nodes(c)))
    return "any one of: " + "; ".join(fitting[:5])


def host_bytes(c):
    """{'sleep', 'offload', 'extra'}: host memory one NPU worker holds beyond its start, in bytes. vLLM-Ascend sleeps at
    level 1 only (verl/third_party/vllm/__init__.py: "sleep_mode=2 is not supported on vllm-ascend"), which moves the
    rollout's weights to host memory while the actor trains (verl#224: "vllm会offload参数到cpu memory", 11 GB per rollout
    process); Offload (bit 2) keeps the actor's parameters, gradients and optimizer state (and the reference model) there
    while vLLM runs, Swap Optimizer (bit 5) the optimizer state. The two phases alternate: the larger one is the peak."""
    e = estimate(c)
    actor = e["actor"]
    offload = 0
    if c["offload"]:
        offload += actor["parameters"] + actor["gradients"] + e["reference"]
    if c["offload"] or c["swap_optimizer"]:
        offload += actor["master"] + actor["adam"]
    sleep = e["rollout_weights"]
    return {"sleep": sleep, "offload": offload, "extra": max(sleep, offload)}


MAX_NODES = 128


def _fits(case):
    return not troubles(case) & {"kv", "rollout", "train"}


def more_nodes(c):
    """The smallest node count (of c's NPUs per node, up to MAX_NODES) at which some layout the rules allow fits, with the
    mask as it is or with Offload (bit 2) on: said at once, so that the first fix is not followed by a second refusal."""
    shape = c.get("shape")
    if not shape:
        return "use more NPUs or a smaller model"
    npn, nodes = shape["npu_per_node"], shape["world_size"] // shape["npu_per_node"]
    masks = [("", dict(c))] + ([(", with Offload (bit 2) on", dict(c, offload=True))] if not c["offload"] else [])
    for count in range(nodes + 1, MAX_NODES + 1):
        world = npn * count
        for words, base in masks:
            for tp, pp in valid_tp_pp(dict(shape, world_size=world, nnodes=count, train_tp=c["train_tp"], train_pp=c["train_pp"])):
                if _fits(dict(base, world_size=world, train_tp=tp, train_pp=pp, gen_tp=tp)):
                    return ("it fits from %d nodes of %d NPUs on (%d NPUs: verl_train_tp=%d verl_train_pp=%d%s, batch sizes "
                            "dividing into %d data-parallel ranks); or use a smaller model" % (
                                count, npn, world, tp, pp, words, world // (tp * pp)))
    return "it does not fit on %d nodes of %d NPUs either; use a smaller model" % (MAX_NODES, npn)
