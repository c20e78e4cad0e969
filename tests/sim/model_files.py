"""The model folders of the simulated cluster: real Hugging Face config.json files, a small tokenizer in the real
formats, and small stand-in weight shards with a consistent index.

    python3 tests/sim/model_files.py DEST            # writes DEST/Qwen3-8B and DEST/Qwen2.5-7B

What is real, and from where:
- config.json: Qwen3-8B's and Qwen2.5-7B's own files as published on the Hugging Face Hub (Qwen/Qwen3-8B,
  Qwen/Qwen2.5-7B): every key, every value.
- model.safetensors.index.json: the real layout -- every tensor name of the architecture (Qwen3: q/k norms, no
  q/k/v bias; Qwen2: q/k/v bias), the real shard names (model-0000N-of-0000M.safetensors), a weight_map naming
  each tensor's shard and metadata.total_size -- but total_size is the stand-ins' size, as the index of these files.
- the shards: real safetensors files (8-byte little-endian header length, JSON header with dtype, shape and
  data_offsets, then the data; the safetensors format documentation), whose tensors have the real names and dtype
  (BF16) but a tiny shape ([2]): nothing in the simulated cluster loads weights (the stand-in trainer reads only the
  config), and a truncated or missing shard is detectable exactly as in a real folder.
- the tokenizer: tokenizer_config.json with Qwen's keys (Qwen2Tokenizer, its special tokens; the chat template
  shortened), tokenizer.json in the tokenizers library's format (byte-level BPE) and vocab.json + merges.txt (the
  slow tokenizer's pair), with a 256-byte vocabulary and a few merges instead of Qwen's 151643 tokens.
"""
from __future__ import annotations

import json
import os
import struct
import sys

QWEN3_8B = {
    "architectures": ["Qwen3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0, "bos_token_id": 151643,
    "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02,
    "intermediate_size": 12288, "max_position_embeddings": 40960, "max_window_layers": 36, "model_type": "qwen3",
    "num_attention_heads": 32, "num_hidden_layers": 36, "num_key_value_heads": 8, "rms_norm_eps": 1e-06,
    "rope_scaling": None, "rope_theta": 1000000, "sliding_window": None, "tie_word_embeddings": False,
    "torch_dtype": "bfloat16", "transformers_version": "4.51.0", "use_cache": True, "use_sliding_window": False,
    "vocab_size": 151936,
}
QWEN25_7B = {
    "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643, "eos_token_id": 151643,
    "hidden_act": "silu", "hidden_size": 3584, "initializer_range": 0.02, "intermediate_size": 18944,
    "max_position_embeddings": 32768, "max_window_layers": 28, "model_type": "qwen2", "num_attention_heads": 28,
    "num_hidden_layers": 28, "num_key_value_heads": 4, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
    "sliding_window": 131072, "tie_word_embeddings": False, "torch_dtype": "bfloat16", "transformers_version": "4.40.1",
    "use_cache": True, "use_mrope": False, "use_sliding_window": False, "vocab_size": 152064,
}
MODELS = {"Qwen3-8B": (QWEN3_8B, 5), "Qwen2.5-7B": (QWEN25_7B, 4)}

# More families, as their published config.json files give them on the Hugging Face Hub (the keys the deploy reads and
# those that shape the weights; generation and tokenizer keys left out): dense Qwen3-4B (tied embeddings) and Llama 3.1,
# and MoE models of four layouts: Qwen3-MoE (Qwen/Qwen3-30B-A3B, Qwen/Qwen3-235B-A22B), Qwen2-MoE with a shared expert
# (Qwen/Qwen1.5-MoE-A2.7B), Mixtral (mistralai/Mixtral-8x7B-v0.1) and DeepSeek-V3 (latent attention, dense first layers,
# deepseek-ai/DeepSeek-V3). The parameters their model cards give are in PUBLISHED.
QWEN3_4B = dict(QWEN3_8B, hidden_size=2560, intermediate_size=9728, num_attention_heads=32, num_hidden_layers=36,
                num_key_value_heads=8, tie_word_embeddings=True)
LLAMA31_8B = {
    "architectures": ["LlamaForCausalLM"], "attention_bias": False, "head_dim": 128, "hidden_act": "silu", "hidden_size": 4096,
    "intermediate_size": 14336, "max_position_embeddings": 131072, "mlp_bias": False, "model_type": "llama",
    "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "rope_theta": 500000.0,
    "tie_word_embeddings": False, "torch_dtype": "bfloat16", "vocab_size": 128256,
}
QWEN3_30B_A3B = {
    "architectures": ["Qwen3MoeForCausalLM"], "attention_bias": False, "decoder_sparse_step": 1, "head_dim": 128,
    "hidden_act": "silu", "hidden_size": 2048, "intermediate_size": 6144, "max_position_embeddings": 40960, "mlp_only_layers": [],
    "model_type": "qwen3_moe", "moe_intermediate_size": 768, "norm_topk_prob": True, "num_attention_heads": 32, "num_experts": 128,
    "num_experts_per_tok": 8, "num_hidden_layers": 48, "num_key_value_heads": 4, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
    "tie_word_embeddings": False, "torch_dtype": "bfloat16", "vocab_size": 151936,
}
QWEN3_235B_A22B = dict(QWEN3_30B_A3B, hidden_size=4096, intermediate_size=12288, moe_intermediate_size=1536, num_attention_heads=64,
                       num_hidden_layers=94)
QWEN15_MOE_A27B = {
    "architectures": ["Qwen2MoeForCausalLM"], "decoder_sparse_step": 1, "hidden_act": "silu", "hidden_size": 2048,
    "intermediate_size": 5632, "max_position_embeddings": 8192, "model_type": "qwen2_moe", "moe_intermediate_size": 1408,
    "norm_topk_prob": False, "num_attention_heads": 16, "num_experts": 60, "num_experts_per_tok": 4, "num_hidden_layers": 24,
    "num_key_value_heads": 16, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "shared_expert_intermediate_size": 5632,
    "tie_word_embeddings": False, "torch_dtype": "bfloat16", "vocab_size": 151936,
}
MIXTRAL_8X7B = {
    "architectures": ["MixtralForCausalLM"], "hidden_act": "silu", "hidden_size": 4096, "intermediate_size": 14336,
    "max_position_embeddings": 32768, "model_type": "mixtral", "num_attention_heads": 32, "num_experts_per_tok": 2,
    "num_hidden_layers": 32, "num_key_value_heads": 8, "num_local_experts": 8, "rms_norm_eps": 1e-05, "rope_theta": 1000000.0,
    "sliding_window": None, "tie_word_embeddings": False, "torch_dtype": "bfloat16", "vocab_size": 32000,
}
DEEPSEEK_V3 = {
    "architectures": ["DeepseekV3ForCausalLM"], "first_k_dense_replace": 3, "hidden_act": "silu", "hidden_size": 7168,
    "intermediate_size": 18432, "kv_lora_rank": 512, "max_position_embeddings": 163840, "model_type": "deepseek_v3",
    "moe_intermediate_size": 2048, "moe_layer_freq": 1, "n_group": 8, "n_routed_experts": 256, "n_shared_experts": 1,
    "num_attention_heads": 128, "num_experts_per_tok": 8, "num_hidden_layers": 61, "num_key_value_heads": 128,
    "num_nextn_predict_layers": 1, "q_lora_rank": 1536, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "rms_norm_eps": 1e-06,
    "tie_word_embeddings": False, "topk_group": 4, "torch_dtype": "bfloat16", "v_head_dim": 128, "vocab_size": 129280,
}
# name: (config.json, total parameters, active parameters) as the model cards say them.
FAMILIES = {
    "Qwen3-8B": (QWEN3_8B, 8.2e9, 8.2e9), "Qwen2.5-7B": (QWEN25_7B, 7.61e9, 7.61e9), "Qwen3-4B": (QWEN3_4B, 4.0e9, 4.0e9),
    "Llama-3.1-8B": (LLAMA31_8B, 8.03e9, 8.03e9), "Qwen3-30B-A3B": (QWEN3_30B_A3B, 30.5e9, 3.3e9),
    "Qwen3-235B-A22B": (QWEN3_235B_A22B, 235e9, 22e9), "Qwen1.5-MoE-A2.7B": (QWEN15_MOE_A27B, 14.3e9, 2.7e9),
    "Mixtral-8x7B": (MIXTRAL_8X7B, 46.7e9, 12.9e9), "DeepSeek-V3": (DEEPSEEK_V3, 671e9, 37e9),
}


def real_shapes(config):
    """{tensor name: shape} of a checkpoint of `config` as transformers names and shapes it (Llama/Qwen2/Qwen3 dense and MoE,
    Mixtral's block_sparse_moe, DeepSeek-V3's latent attention and shared experts; DeepSeek's multi-token-prediction layer
    left out)."""
    h, heads = config["hidden_size"], config["num_attention_heads"]
    kv, hd = config.get("num_key_value_heads") or heads, config.get("head_dim") or h // heads
    experts = config.get("num_experts") or config.get("num_local_experts") or config.get("n_routed_experts") or 0
    width = config.get("moe_intermediate_size") or config["intermediate_size"]
    shapes = {"model.embed_tokens.weight": [config["vocab_size"], h], "model.norm.weight": [h]}
    if not config.get("tie_word_embeddings"):
        shapes["lm_head.weight"] = [config["vocab_size"], h]
    for layer in range(config["num_hidden_layers"]):
        at = "model.layers.%d." % layer
        shapes.update({at + "input_layernorm.weight": [h], at + "post_attention_layernorm.weight": [h]})
        if config.get("kv_lora_rank"):
            q_dim = heads * (config["qk_nope_head_dim"] + config["qk_rope_head_dim"])
            shapes.update({at + "self_attn.q_a_proj.weight": [config["q_lora_rank"], h],
                           at + "self_attn.q_a_layernorm.weight": [config["q_lora_rank"]],
                           at + "self_attn.q_b_proj.weight": [q_dim, config["q_lora_rank"]],
                           at + "self_attn.kv_a_proj_with_mqa.weight": [config["kv_lora_rank"] + config["qk_rope_head_dim"], h],
                           at + "self_attn.kv_a_layernorm.weight": [config["kv_lora_rank"]],
                           at + "self_attn.kv_b_proj.weight": [heads * (config["qk_nope_head_dim"] + config["v_head_dim"]),
                                                               config["kv_lora_rank"]],
                           at + "self_attn.o_proj.weight": [h, heads * config["v_head_dim"]]})
        else:
            shapes.update({at + "self_attn.q_proj.weight": [heads * hd, h], at + "self_attn.k_proj.weight": [kv * hd, h],
                           at + "self_attn.v_proj.weight": [kv * hd, h], at + "self_attn.o_proj.weight": [h, heads * hd]})
            if config.get("model_type", "").startswith("qwen3"):
                shapes.update({at + "self_attn.q_norm.weight": [hd], at + "self_attn.k_norm.weight": [hd]})
        sparse = experts and layer not in (config.get("mlp_only_layers") or []) and layer >= (config.get("first_k_dense_replace") or 0)
        if not sparse:
            shapes.update({at + "mlp.%s_proj.weight" % part: [config["intermediate_size"], h] for part in ("gate", "up")})
            shapes[at + "mlp.down_proj.weight"] = [h, config["intermediate_size"]]
            continue
        if config["model_type"] == "mixtral":
            shapes[at + "block_sparse_moe.gate.weight"] = [experts, h]
            for e in range(experts):
                base = at + "block_sparse_moe.experts.%d." % e
                shapes.update({base + "w1.weight": [width, h], base + "w3.weight": [width, h], base + "w2.weight": [h, width]})
            continue
        shapes[at + "mlp.gate.weight"] = [experts, h]
        for e in range(experts):
            base = at + "mlp.experts.%d." % e
            shapes.update({base + "gate_proj.weight": [width, h], base + "up_proj.weight": [width, h], base + "down_proj.weight": [h, width]})
        shared = config.get("shared_expert_intermediate_size") or (config.get("n_shared_experts") or 0) * width
        if shared:
            base = at + ("mlp.shared_expert." if config.get("shared_expert_intermediate_size") else "mlp.shared_experts.")
            shapes.update({base + "gate_proj.weight": [shared, h], base + "up_proj.weight": [shared, h], base + "down_proj.weight": [h, shared]})
            if config.get("shared_expert_intermediate_size"):
                shapes[at + "mlp.shared_expert_gate.weight"] = [1, h]
    return shapes


def real_headers(config, shard_count=4):
    """{shard file: {'size', 'head'}} as the model check reads a folder (_model.read_folder's 'shards'), for the headers of
    real-sized BF16 shards of `config` (real_shapes), with the index's text: safetensors headers (8-byte length, JSON with
    dtype, shape, data_offsets) whose files are as long as their data, without writing the data."""
    names = sorted(real_shapes(config).items())
    files = ["model-%05d-of-%05d.safetensors" % (i + 1, shard_count) for i in range(shard_count)]
    shards, weight_map = {}, {}
    for number, shard in enumerate(files):
        header, offset = {"__metadata__": {"format": "pt"}}, 0
        for tensor, shape in names[number::shard_count]:
            count = 1
            for dim in shape:
                count *= dim
            header[tensor] = {"dtype": "BF16", "shape": shape, "data_offsets": [offset, offset + 2 * count]}
            offset += 2 * count
            weight_map[tensor] = shard
        text = json.dumps(header, separators=(",", ":")).encode()
        text += b" " * (-len(text) % 8)
        shards[shard] = {"size": 8 + len(text) + offset, "head": struct.pack("<Q", len(text)) + text}
    index = json.dumps({"metadata": {"total_size": sum(entry["size"] for entry in shards.values())}, "weight_map": weight_map})
    return shards, index


SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
TOKEN_KEYS = ("content", "lstrip", "normalized", "rstrip", "single_word", "special")


def tensor_names(config):
    """Every tensor of the checkpoint, in the order transformers saves a Qwen2/Qwen3 decoder."""
    per_layer = ["input_layernorm.weight", "mlp.down_proj.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight",
                 "post_attention_layernorm.weight", "self_attn.k_proj.weight", "self_attn.o_proj.weight",
                 "self_attn.q_proj.weight", "self_attn.v_proj.weight"]
    if config["model_type"] == "qwen3":
        per_layer += ["self_attn.k_norm.weight", "self_attn.q_norm.weight"]
    else:
        per_layer += ["self_attn.k_proj.bias", "self_attn.q_proj.bias", "self_attn.v_proj.bias"]
    names = ["model.embed_tokens.weight"]
    names += ["model.layers.%d.%s" % (layer, name) for layer in range(config["num_hidden_layers"]) for name in sorted(per_layer)]
    names += ["model.norm.weight"] + ([] if config["tie_word_embeddings"] else ["lm_head.weight"])
    return names


def safetensors_bytes(names):
    """A safetensors file holding each tensor as BF16 of shape [2] (4 bytes, the bf16 pattern of 1.0 twice)."""
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name in names:
        header[name] = {"dtype": "BF16", "shape": [2], "data_offsets": [offset, offset + 4]}
        offset += 4
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the format pads the header to 8 bytes with spaces
    return struct.pack("<Q", len(text)) + text + b"\x80\x3f" * 2 * len(names)


def real_read(config, path="/models/real"):
    """What _model.read_folder would read from a real-sized copy of a model of `config`: config.json, the index, each shard's
    header (real_headers: the tensors' real shapes and the files' full sizes) and the file names; the data is not written."""
    shards, index = real_headers(config)
    return {"path": path, "isdir": True, "config": json.dumps(config), "index": index, "shards": shards,
            "names": sorted(["config.json", "model.safetensors.index.json", "tokenizer_config.json", "tokenizer.json"] + list(shards))}


def tokenizer_files():
    """{file name: text} of a small byte-level BPE tokenizer in Qwen's file formats."""
    # Byte-level BPE's alphabet: each byte as the character GPT-2's bytes_to_unicode() gives it (printable Latin-1
    # as itself, the rest from U+0100 on: a space is "\u0120"), which the ByteLevel pre-tokenizer maps the text to.
    printable = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    others = [byte for byte in range(256) if byte not in printable]
    alphabet = dict([(byte, chr(byte)) for byte in printable] + [(byte, chr(256 + n)) for n, byte in enumerate(others)])
    vocab = {alphabet[byte]: byte for byte in range(256)}
    merges = [("t", "h"), ("th", "e"), ("i", "n"), ("a", "n")]
    for left, right in merges:
        vocab[left + right] = len(vocab)
    added = [{"id": len(vocab) + i, "content": token, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for i, token in enumerate(SPECIAL_TOKENS)]
    tokenizer = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": {"type": "NFC"},
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": True},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
        "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "", "end_of_word_suffix": "",
                  "fuse_unk": False, "byte_fallback": False, "ignore_merges": False, "vocab": vocab,
                  "merges": [[left, right] for left, right in merges]},
    }
    config = {
        "add_bos_token": False, "add_prefix_space": False,
        "added_tokens_decoder": {str(token["id"]): {k: token[k] for k in TOKEN_KEYS} for token in added},
        "additional_special_tokens": ["<|im_start|>", "<|im_end|>"], "bos_token": None,
        # Qwen's template, shortened to the messages (no tools, no thinking).
        "chat_template": ("{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
                          "'<|im_end|>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"),
        "clean_up_tokenization_spaces": False, "eos_token": "<|im_end|>", "errors": "replace", "model_max_length": 131072,
        "pad_token": "<|endoftext|>", "split_special_tokens": False, "tokenizer_class": "Qwen2Tokenizer", "unk_token": None,
    }
    return {
        "tokenizer_config.json": json.dumps(config, indent=2) + "\n",
        "tokenizer.json": json.dumps(tokenizer, indent=2, ensure_ascii=False) + "\n",
        "vocab.json": json.dumps(vocab, ensure_ascii=False) + "\n",
        "merges.txt": "#version: 0.2\n" + "".join("%s %s\n" % pair for pair in merges),
    }


def model_files(name):
    """{file name: bytes} of the model folder `name` (a key of MODELS)."""
    config, shard_count = MODELS[name]
    names = tensor_names(config)
    shards = ["model-%05d-of-%05d.safetensors" % (i + 1, shard_count) for i in range(shard_count)]
    per_shard = -(-len(names) // shard_count)
    files, weight_map, total = {}, {}, 0
    for number, shard in enumerate(shards):
        chunk = names[number * per_shard:(number + 1) * per_shard]
        files[shard] = safetensors_bytes(chunk)
        weight_map.update((tensor, shard) for tensor in chunk)
        total += 4 * len(chunk)
    index = {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}
    files["model.safetensors.index.json"] = (json.dumps(index, indent=2) + "\n").encode()
    files["config.json"] = (json.dumps(config, indent=2) + "\n").encode()
    files["generation_config.json"] = (json.dumps({"bos_token_id": config["bos_token_id"], "eos_token_id": config["eos_token_id"],
                                                   "do_sample": True, "temperature": 0.6, "top_p": 0.95}, indent=2) + "\n").encode()
    files.update((file, text.encode()) for file, text in tokenizer_files().items())
    return files


def write(dest, name):
    folder = os.path.join(dest, name)
    os.makedirs(folder, exist_ok=True)
    for file, data in model_files(name).items():
        with open(os.path.join(folder, file), "wb") as handle:
            handle.write(data)
    return folder


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: model_files.py DEST")
    for model in MODELS:
        print(write(sys.argv[1], model))
