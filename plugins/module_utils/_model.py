# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Private to the verl.deploy collection: may change without notice.
"""The model folder (verl_model_path) as verl, Megatron and vLLM read it, as pure functions over what was read.

verl.deploy.node_facts reads the folder on each host (read_folder below: config.json, the weights' index, the first
bytes of each shard, the file names and sizes) and these functions turn it into facts and problems, so the shape
rules (plugins/module_utils/_config_checks.py) and the memory estimate (_memory_fit.py) use the model's own numbers.

Sources of the formats:
- config.json: Hugging Face transformers' PretrainedConfig (Qwen3Config, Qwen2Config): the keys read here are the
  ones verl's Megatron config converter (verl/models/mcore/config_converter.py, hf_to_mcore_config_dense) and vLLM's
  ModelConfig read (num_key_value_heads defaults to num_attention_heads, head_dim to hidden_size / heads).
- model.safetensors.index.json: {"metadata": {"total_size": N}, "weight_map": {tensor name: shard file}}
  (huggingface_hub / transformers' sharded save).
- a safetensors file: 8 bytes, the header's length N (unsigned little-endian), then N bytes of JSON
  {tensor: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}}, then the data; the offsets
  count from the end of the header, so the file is exactly 8 + N + the largest end (safetensors' format
  documentation). A shorter file is truncated (an interrupted copy); safetensors refuses it when it is opened.
- the tokenizer: tokenizer_config.json plus tokenizer.json (the fast tokenizer) or vocab.json and merges.txt
  (the slow BPE tokenizer Qwen's tokenizer class can build from); transformers' AutoTokenizer fails without either.
No Ansible imports.
"""
from __future__ import annotations

import hashlib
import json
import os
import struct

CONFIG = "config.json"
INDEX = "model.safetensors.index.json"
SINGLE = "model.safetensors"
TOKENIZER_CONFIG = "tokenizer_config.json"
TOKENIZER_SETS = (("tokenizer.json",), ("vocab.json", "merges.txt"))
# A safetensors header is a few kB per hundred tensors; more than this is not a header this check reads.
HEADER_LIMIT = 100 * 1024 * 1024
# Bytes of one element of each torch_dtype a config may name (bf16 when not given: Qwen's checkpoints).
DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4}
FACTS = ("architecture", "num_layers", "num_attention_heads", "num_kv_heads", "vocab_size", "max_position_embeddings",
         "tie_word_embeddings", "hidden_size", "intermediate_size", "head_dim", "torch_dtype")
_FIX_CONFIG = ("Fix: point verl_model_path at the Hugging Face model folder (the one holding config.json, the tokenizer and "
               "the *.safetensors shards), or copy the whole folder again (e.g. huggingface-cli download Qwen/Qwen3-8B "
               "--local-dir <verl_model_path>).")


class ModelError(ValueError):
    """A config.json the deploy cannot use; its message names the file and the fix."""


def _whole(config, key, path, default=None, minimum=1):
    value = config.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ModelError("%s: %s is %s, not a whole number of at least %d. %s" % (path, key, json.dumps(value), minimum, _FIX_CONFIG))
    return value


def parse_config(text, path=CONFIG):
    """config.json's text -> the facts in FACTS. Raises ModelError naming `path` and the fix."""
    if text is None:
        raise ModelError("%s does not exist or cannot be read. %s" % (path, _FIX_CONFIG))
    try:
        config = json.loads(text)
    except ValueError as exc:
        raise ModelError("%s is not JSON (%s). %s" % (path, exc, _FIX_CONFIG))
    if not isinstance(config, dict):
        raise ModelError("%s holds %s, not a JSON object. %s" % (path, type(config).__name__, _FIX_CONFIG))
    if "text_config" in config and "num_hidden_layers" not in config and isinstance(config["text_config"], dict):
        config = dict(config["text_config"], architectures=config.get("architectures"))  # a multimodal wrapper
    architectures = config.get("architectures")
    if not isinstance(architectures, list) or not architectures or not isinstance(architectures[0], str):
        raise ModelError("%s names no architectures (e.g. [\"Qwen3ForCausalLM\"]): it is not a transformers model's config. %s"
                         % (path, _FIX_CONFIG))
    heads = _whole(config, "num_attention_heads", path)
    hidden = _whole(config, "hidden_size", path)
    facts = {
        "architecture": architectures[0],
        "num_layers": _whole(config, "num_hidden_layers", path),
        "num_attention_heads": heads,
        "num_kv_heads": _whole(config, "num_key_value_heads", path, heads) if config.get("num_key_value_heads") is not None else heads,
        "vocab_size": _whole(config, "vocab_size", path),
        "max_position_embeddings": _whole(config, "max_position_embeddings", path),
        "tie_word_embeddings": bool(config.get("tie_word_embeddings", False)),
        "hidden_size": hidden,
        "intermediate_size": _whole(config, "intermediate_size", path),
        "head_dim": _whole(config, "head_dim", path) if config.get("head_dim") is not None else hidden // heads,
        "torch_dtype": str(config.get("torch_dtype") or config.get("dtype") or "bfloat16"),
    }
    if facts["num_attention_heads"] % facts["num_kv_heads"]:
        raise ModelError("%s: num_attention_heads=%d is not a multiple of num_key_value_heads=%d, which no grouped-query "
                         "attention model has. %s" % (path, heads, facts["num_kv_heads"], _FIX_CONFIG))
    facts.update(_moe_facts(config, facts, path))
    return facts


# The config keys of the experts, by family: Qwen2-MoE / Qwen3-MoE (num_experts, moe_intermediate_size,
# shared_expert_intermediate_size, decoder_sparse_step, mlp_only_layers), Mixtral (num_local_experts; the experts are
# intermediate_size wide), DeepSeek-V2/V3 (n_routed_experts, n_shared_experts x moe_intermediate_size,
# first_k_dense_replace, moe_layer_freq, and multi-head latent attention: q_lora_rank, kv_lora_rank, qk_nope_head_dim,
# qk_rope_head_dim, v_head_dim). transformers' Qwen2MoeConfig, Qwen3MoeConfig, MixtralConfig, DeepseekV3Config.
EXPERT_KEYS = ("num_experts", "num_local_experts", "n_routed_experts")
MLA_KEYS = ("q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")


def _moe_facts(config, facts, path):
    """The experts and the attention's shape beyond the dense keys: num_experts (0: dense), experts_per_token,
    moe_intermediate_size, shared_intermediate_size, moe_layers (how many layers have experts) and, for multi-head
    latent attention, the MLA_KEYS."""
    experts = next((config[key] for key in EXPERT_KEYS if config.get(key)), 0)
    found = {"num_experts": 0, "experts_per_token": 0, "moe_intermediate_size": 0, "shared_intermediate_size": 0, "moe_layers": 0}
    if experts:
        experts = _whole(config, next(key for key in EXPERT_KEYS if config.get(key)), path)
        width = _whole(config, "moe_intermediate_size", path) if config.get("moe_intermediate_size") else facts["intermediate_size"]
        if config.get("shared_expert_intermediate_size"):
            shared = _whole(config, "shared_expert_intermediate_size", path)
        else:
            shared = (config.get("n_shared_experts") or 0) * width
        step, dense_first = config.get("decoder_sparse_step") or 1, config.get("first_k_dense_replace") or 0
        frequency, dense = config.get("moe_layer_freq") or 1, set(config.get("mlp_only_layers") or [])
        layers = [layer for layer in range(facts["num_layers"])
                  if layer not in dense and (layer + 1) % step == 0 and layer >= dense_first and layer % frequency == 0]
        found.update(num_experts=experts, experts_per_token=config.get("num_experts_per_tok") or 1, moe_intermediate_size=width,
                     shared_intermediate_size=shared, moe_layers=len(layers))
    if config.get("kv_lora_rank"):
        found.update({key: config.get(key) or 0 for key in MLA_KEYS})
    return found


def _attention(facts):
    hidden, heads = facts["hidden_size"], facts["num_attention_heads"]
    if facts.get("kv_lora_rank"):
        # Multi-head latent attention (DeepSeek-V2/V3): q through a rank-q_lora_rank bottleneck (or straight), k/v through
        # one of kv_lora_rank plus the shared rope key, the output from the heads' v_head_dim.
        q_dim = heads * (facts["qk_nope_head_dim"] + facts["qk_rope_head_dim"])
        rank = facts.get("q_lora_rank")
        q = hidden * rank + rank + rank * q_dim if rank else hidden * q_dim
        kv = hidden * (facts["kv_lora_rank"] + facts["qk_rope_head_dim"]) + facts["kv_lora_rank"] + \
            facts["kv_lora_rank"] * heads * (facts["qk_nope_head_dim"] + facts["v_head_dim"])
        return q + kv + heads * facts["v_head_dim"] * hidden
    kv, head_dim = facts["num_kv_heads"], facts["head_dim"]
    return hidden * head_dim * (heads + 2 * kv) + heads * head_dim * hidden + 2 * head_dim


def parameter_counts(facts):
    """(total, active, experts) parameters of a decoder from its config: embeddings, the output layer unless tied, and per
    layer the attention, the norms and either the gated MLP or, in its MoE layers, every expert's gated MLP, the shared
    experts and the router. active counts the experts_per_token routed experts a token passes; experts is the routed
    experts' share of total (what expert parallelism splits). Qwen3-8B: 8.19e9 (its index's total_size of 16.38 GB in
    bf16); Qwen3-30B-A3B 30.5e9 / 3.3e9; Qwen3-235B-A22B 235e9 / 22e9; Mixtral-8x7B 46.7e9 / 12.9e9; DeepSeek-V3
    671e9 / 37e9 (their model cards; the q/k/v biases of Qwen2 are left out)."""
    hidden = facts["hidden_size"]
    base = _attention(facts) + 2 * hidden
    dense_mlp = 3 * hidden * facts["intermediate_size"]
    moe_layers = facts.get("moe_layers") or 0
    expert = 3 * hidden * (facts.get("moe_intermediate_size") or 0)
    shared = 3 * hidden * (facts.get("shared_intermediate_size") or 0)
    router = (facts.get("num_experts") or 0) * hidden
    routed = moe_layers * facts.get("num_experts", 0) * expert
    embeddings = facts["vocab_size"] * hidden * (1 if facts["tie_word_embeddings"] else 2) + hidden
    common = facts["num_layers"] * base + (facts["num_layers"] - moe_layers) * dense_mlp + moe_layers * (shared + router) + embeddings
    active = common + moe_layers * facts.get("experts_per_token", 0) * expert
    return common + routed, active, routed


def parameter_count(facts):
    """The total parameters config.json's shape gives (parameter_counts)."""
    return parameter_counts(facts)[0]


# safetensors' dtypes of packed integer weights (GPTQ/AWQ qweight in I32, int4 in U8): their shape is not a parameter count.
_PACKED = ("I32", "U32", "I8", "U8", "I4", "U4")


def weights_parameters(shards, files):
    """The parameters the weight files hold: the elements of every tensor their safetensors headers declare (dtype and
    shape), or None when a header is missing or unreadable, or the weights are packed integers (a quantized checkpoint,
    whose shapes are not parameter counts). What is on the disk is what verl loads and saves: the simulated cluster's
    stand-in shards (shape [2]) are a small model, as their checkpoints are small."""
    total = 0
    for name in files:
        head = (shards.get(name) or {}).get("head")
        if head is None or len(head) < 8:
            return None
        (length,) = struct.unpack("<Q", head[:8])
        try:
            header = json.loads(head[8:8 + length].decode("utf-8"))
        except ValueError:
            return None
        for tensor, entry in header.items() if isinstance(header, dict) else ():
            if tensor == "__metadata__" or not isinstance(entry, dict):
                continue
            shape = entry.get("shape")
            if not isinstance(shape, list) or not all(isinstance(dim, int) and dim >= 0 for dim in shape):
                return None
            if entry.get("dtype") in _PACKED and tensor.endswith(("weight", "qweight")) and len(shape) == 2:
                return None
            count = 1
            for dim in shape:
                count *= dim
            total += count
    return total if files else None


def summary(facts):
    """One line for the confirmation: 'Qwen3ForCausalLM, 36 layers, 32/8 heads, 40960 positions' (', 128 experts, 8 per
    token' for a MoE model)."""
    experts = ", %d experts, %d per token" % (facts["num_experts"], facts["experts_per_token"]) if facts.get("num_experts") else ""
    return "%s, %d layers, %d/%d heads, %d positions%s" % (
        facts["architecture"], facts["num_layers"], facts["num_attention_heads"], facts["num_kv_heads"], facts["max_position_embeddings"],
        experts)


def header_end(head):
    """The size a safetensors file must have, from its first bytes (`head`: at least 8 + the header length), or
    (None, why) when they are not a safetensors header."""
    if len(head) < 8:
        return None, "shorter than the 8 bytes of a safetensors header length"
    (length,) = struct.unpack("<Q", head[:8])
    if length > HEADER_LIMIT:
        return None, "its first 8 bytes give a header of %d bytes, so it is not a safetensors file" % length
    if len(head) < 8 + length:
        return None, "it ends inside its %d-byte header" % length
    try:
        header = json.loads(head[8:8 + length].decode("utf-8"))
    except ValueError as exc:
        return None, "its header is not JSON (%s)" % exc
    if not isinstance(header, dict):
        return None, "its header is not a JSON object"
    ends = [entry.get("data_offsets", [0, 0])[1] for name, entry in header.items() if name != "__metadata__" and isinstance(entry, dict)]
    if not all(isinstance(end, int) and end >= 0 for end in ends):
        return None, "its header has data_offsets that are not byte counts"
    return 8 + length + max(ends or [0]), ""


def judge_weights(index_text, shards):
    """The weights' problems (a list of sentences, empty when complete) and what was read.

    index_text: model.safetensors.index.json's text, or None when the folder has none; shards: {file name: {'size': bytes,
    'head': the file's first bytes (enough for its header), or None when the file is absent}} of every *.safetensors file
    of the folder and of every file the index names. Returns {'problems', 'shards': the files the weights are in,
    'missing', 'truncated': [{'file', 'size', 'expected'}]}."""
    problems, missing, truncated, bad = [], [], [], []
    if index_text is None:
        files = [SINGLE] if SINGLE in shards else []
        if not files:
            present = sorted(name for name, entry in shards.items() if entry.get("head") is not None)
            problems.append("the folder has neither %s nor %s%s, so no weights can be loaded" % (
                INDEX, SINGLE, " (it has %s)" % ", ".join(present[:5]) if present else ""))
    else:
        try:
            index = json.loads(index_text)
            weight_map = index["weight_map"]
            files = sorted(set(weight_map.values()))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            problems.append("%s cannot be read (%s: %s)" % (INDEX, type(exc).__name__, exc))
            files = []
    for name in files:
        entry = shards.get(name) or {}
        if entry.get("head") is None:
            missing.append(name)
            continue
        expected, why = header_end(entry["head"])
        if expected is None:
            bad.append("%s: %s" % (name, why))
        elif entry["size"] < expected:
            truncated.append({"file": name, "size": entry["size"], "expected": expected})
    if missing:
        problems.append("%d of the %d weight shard(s) %s names are missing: %s" % (
            len(missing), len(files), INDEX, ", ".join(missing[:8]) + (" and %d more" % (len(missing) - 8) if len(missing) > 8 else "")))
    if truncated:
        problems.append("truncated shard(s) (an interrupted copy): %s; loading them stops with 'safetensors_rust.SafetensorError: "
                        "Error while deserializing header: MetadataIncompleteBuffer'" % "; ".join(
                            "%s has %d bytes, its header says %d" % (t["file"], t["size"], t["expected"]) for t in truncated))
    if bad:
        problems.append("unreadable shard(s): %s" % "; ".join(bad))
    return {"problems": problems, "shards": files, "missing": missing, "truncated": truncated}


def judge_tokenizer(names):
    """The tokenizer's problem ('' when complete) among the folder's file names."""
    names = set(names)
    lacking = [] if TOKENIZER_CONFIG in names else [TOKENIZER_CONFIG]
    if not any(all(name in names for name in files) for files in TOKENIZER_SETS):
        lacking.append(" or ".join(" + ".join(files) for files in TOKENIZER_SETS))
    if not lacking:
        return ""
    return "the tokenizer is incomplete: %s missing, so transformers' AutoTokenizer cannot load it" % " and ".join(lacking)


def identity(read):
    """What makes two copies of a model folder the same model, for comparing the nodes' copies with the head's:
    config.json (its sha256 and its top-level keys, to say what differs) and the size of every *.safetensors file it
    could read (one missing or unreadable is absent here)."""
    text = read.get("config")
    try:
        config = json.loads(text) if text is not None else None
    except ValueError:
        config = None
    return {"config_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest() if text is not None else None,
            "config": config if isinstance(config, dict) else None,
            "shard_sizes": dict((name, entry.get("size")) for name, entry in sorted((read.get("shards") or {}).items())
                                if entry.get("head") is not None)}


def _shown(value):
    return json.dumps(value, sort_keys=True)[:80]


def differences(mine, head):
    """How this node's identity() differs from the head's: a list of short phrases, empty when the same model."""
    found = []
    if mine.get("config_sha256") != head.get("config_sha256"):
        here, there = mine.get("config") or {}, head.get("config") or {}
        absent = object()
        keys = sorted(key for key in set(here) | set(there) if here.get(key, absent) != there.get(key, absent))
        shown = ["%s %s here, %s on the head" % (key, _shown(here[key]) if key in here else "absent",
                                                 _shown(there[key]) if key in there else "absent") for key in keys[:6]]
        more = " and %d more key(s)" % (len(keys) - 6) if len(keys) > 6 else ""
        found.append("config.json differs (%s)" % ("; ".join(shown) + more if shown else "in formatting only, not in any value"))
    here, there = mine.get("shard_sizes") or {}, head.get("shard_sizes") or {}
    only_head = sorted(set(there) - set(here))
    only_here = sorted(set(here) - set(there))
    sized = sorted(name for name in set(here) & set(there) if here[name] != there[name])
    if only_head:
        found.append("%d shard(s) only on the head: %s" % (len(only_head), ", ".join(only_head[:5]) + (" ..." if len(only_head) > 5 else "")))
    if only_here:
        found.append("%d shard(s) only here: %s" % (len(only_here), ", ".join(only_here[:5]) + (" ..." if len(only_here) > 5 else "")))
    if sized:
        found.append("shard sizes differ: %s" % "; ".join(
            "%s %d bytes here, %d on the head" % (name, here[name], there[name]) for name in sized[:5]))
    return found


def not_the_heads(mine, head, host, head_host, path):
    """The refusal of a worker whose copy of verl_model_path is not the head's model ('' when it is, or when either
    node has no folder there: the paths rule names a missing one). Every rank loads the weights and the tokenizer from
    its own node's folder (verl's Megatron workers, vLLM's rollout), so another model on one node trains a mix."""
    if not (mine or {}).get("identity") or not (head or {}).get("identity"):
        return ""
    found = differences(mine["identity"], head["identity"])
    if not found:
        return ""
    return ("the model folder verl_model_path=%s on %s is not the same model as on the head %s: %s. Every node loads the model "
            "from its own copy, so the ranks would train different weights or fail to load them. Fix: copy the head's folder to "
            "this node (e.g. rsync -a --delete %s:%s/ %s/), or point verl_model_path at storage every node shares."
            % (path, host, head_host, "; ".join(found), head_host, path.rstrip("/"), path.rstrip("/")))


def judge(read):
    """What read_folder() read -> {'path', 'facts' (FACTS, or None), 'parameters', 'problems': [sentence, ...], 'shards', ...}.
    Each problem names the path and its fix."""
    path = read["path"]
    result = {"path": path, "facts": None, "parameters": None, "parameters_from": None, "active_parameters": None,
              "expert_parameters": None, "problems": [], "summary": ""}
    if not read.get("isdir"):
        return result  # the paths rule names a missing folder
    try:
        facts = parse_config(read.get("config"), os.path.join(path, CONFIG))
    except ModelError as exc:
        result["problems"].append(str(exc))
        facts = None
    weights = judge_weights(read.get("index"), read.get("shards") or {})
    if facts:
        # One parameter count per model, for the memory, checkpoint space and parallelism rules: the weight files' own
        # (their headers), else config.json's shape; active and the routed experts' share from config.json.
        total, active, experts = parameter_counts(facts)
        found = weights_parameters(read.get("shards") or {}, weights["shards"]) if not weights["problems"] else None
        if found:
            experts, active = round(experts * found / total), round(active * found / total)
        result.update(facts=facts, parameters=found or total, parameters_from="weights" if found else "config.json",
                      active_parameters=active, expert_parameters=experts, summary=summary(facts))
    result.update(shards=weights["shards"], missing=weights["missing"], truncated=weights["truncated"])
    result["identity"] = identity(read)
    found = list(weights["problems"])
    tokenizer = judge_tokenizer(read.get("names") or [])
    if tokenizer:
        found.append(tokenizer)
    if found:
        result["problems"].append("the model folder verl_model_path=%s is incomplete: %s. Fix: copy the model folder again, "
                                  "completely (e.g. huggingface-cli download Qwen/Qwen3-8B --local-dir %s, which resumes), or point "
                                  "verl_model_path at a complete copy." % (path, "; ".join(found), path))
    return result


def _read_text(path, limit):
    try:
        with open(path, "rb") as handle:
            return handle.read(limit).decode("utf-8", "replace")
    except OSError:
        return None


def _head(path):
    try:
        with open(path, "rb") as handle:
            head = handle.read(8)
            if len(head) == 8:
                (length,) = struct.unpack("<Q", head)
                head += handle.read(min(length, HEADER_LIMIT))
            return head
    except OSError:
        return None


def read_folder(path):
    """Read what judge() needs from the folder on this host: a few small files and each shard's header (never the weights)."""
    read = {"path": path, "isdir": os.path.isdir(path)}
    if not read["isdir"]:
        return read
    try:
        names = sorted(os.listdir(path))
    except OSError:
        names = []
    read["names"] = names
    read["config"] = _read_text(os.path.join(path, CONFIG), 1024 * 1024)
    read["index"] = _read_text(os.path.join(path, INDEX), 64 * 1024 * 1024) if INDEX in names else None
    wanted = {name for name in names if name.endswith(".safetensors")}
    if read["index"] is not None:
        try:
            wanted.update(json.loads(read["index"]).get("weight_map", {}).values())
        except (ValueError, AttributeError, TypeError):
            pass
    shards = {}
    for name in sorted(wanted):
        if not isinstance(name, str) or "/" in name:
            continue
        full = os.path.join(path, name)
        try:
            size = os.stat(full).st_size
        except OSError:
            shards[name] = {"size": 0, "head": None}
            continue
        shards[name] = {"size": size, "head": _head(full)}
    read["shards"] = shards
    return read
