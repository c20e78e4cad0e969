# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The model folder read: config.json's facts, the weights' index against the shards, the tokenizer files."""
from __future__ import annotations

import json
import os
import struct
import sys
from pathlib import Path

import pytest

from ansible_collections.verl.deploy.plugins.module_utils import _model as model

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "tests" / "sim"))
import model_files  # noqa: E402  (the simulated cluster's model folders)


def config_text(**changes):
    config = dict(model_files.QWEN3_8B)
    config.update(changes)
    return json.dumps({k: v for k, v in config.items() if v is not None})


def test_qwen3_8b_as_read():
    facts = model.parse_config(config_text())
    assert facts == {"architecture": "Qwen3ForCausalLM", "num_layers": 36, "num_attention_heads": 32, "num_kv_heads": 8,
                     "vocab_size": 151936, "max_position_embeddings": 40960, "tie_word_embeddings": False, "hidden_size": 4096,
                     "intermediate_size": 12288, "head_dim": 128, "torch_dtype": "bfloat16", "num_experts": 0, "experts_per_token": 0,
                     "moe_intermediate_size": 0, "shared_intermediate_size": 0, "moe_layers": 0}
    assert model.summary(facts) == "Qwen3ForCausalLM, 36 layers, 32/8 heads, 40960 positions"
    # The published index's total_size is 16381470720 bytes of bf16.
    assert model.parameter_count(facts) * 2 == 16381470720


def test_qwen25_7b_as_read():
    facts = model.parse_config(json.dumps(model_files.QWEN25_7B))
    assert (facts["num_layers"], facts["num_attention_heads"], facts["num_kv_heads"], facts["vocab_size"],
            facts["max_position_embeddings"], facts["head_dim"]) == (28, 28, 4, 152064, 32768, 128)
    # Qwen2.5-7B has 7.62e9 parameters (the count leaves out its q/k/v biases, 0.1 M).
    assert abs(model.parameter_count(facts) - 7.6156e9) < 1e7


@pytest.mark.parametrize("changes, default_key, expected", [
    ({"num_key_value_heads": None}, "num_kv_heads", 32),   # no GQA: as many KV heads as heads
    ({"head_dim": None}, "head_dim", 128),                 # hidden / heads
    ({"torch_dtype": None}, "torch_dtype", "bfloat16"),
    ({"tie_word_embeddings": None}, "tie_word_embeddings", False),
])
def test_defaults_as_transformers_gives_them(changes, default_key, expected):
    assert model.parse_config(config_text(**changes))[default_key] == expected


@pytest.mark.parametrize("text, words", [
    (None, "does not exist or cannot be read"),
    ("{\"architectures\": [", "is not JSON"),
    ("[1, 2]", "not a JSON object"),
    (config_text(architectures=[]), "names no architectures"),
    (config_text(num_hidden_layers="36"), "num_hidden_layers is \"36\""),
    (config_text(num_attention_heads=0), "num_attention_heads is 0"),
    (config_text(max_position_embeddings=None), "max_position_embeddings is null"),
    (config_text(num_key_value_heads=5), "not a multiple of num_key_value_heads=5"),
])
def test_unusable_config_names_the_file_and_the_fix(text, words):
    with pytest.raises(model.ModelError) as caught:
        model.parse_config(text, "/mnt/public/Qwen3-8B/config.json")
    assert words in str(caught.value)
    assert "/mnt/public/Qwen3-8B/config.json" in str(caught.value)
    assert "Fix: point verl_model_path" in str(caught.value)


def shards_of(files, drop=(), cut=None):
    """{name: {size, head}} as read_folder reads them, with shards dropped or one cut short."""
    shards = {}
    for name, data in files.items():
        if not name.endswith(".safetensors") or name in drop:
            continue
        if cut and name == cut[0]:
            data = data[:cut[1]]
        shards[name] = {"size": len(data), "head": data[:8 + struct.unpack("<Q", data[:8])[0]] if len(data) >= 8 else data}
    return shards


FILES = model_files.model_files("Qwen3-8B")
INDEX_TEXT = FILES["model.safetensors.index.json"].decode()
FIRST = "model-00001-of-00005.safetensors"


@pytest.mark.parametrize("drop, cut, words", [
    ((), None, None),
    (("model-00003-of-00005.safetensors",), None,
     "1 of the 5 weight shard(s) model.safetensors.index.json names are missing: model-00003-of-00005.safetensors"),
    ((), (FIRST, len(FILES[FIRST]) - 1), "truncated shard(s) (an interrupted copy): model-00001-of-00005.safetensors has %d "
                                         "bytes, its header says %d" % (len(FILES[FIRST]) - 1, len(FILES[FIRST]))),
    ((), (FIRST, 100), "unreadable shard(s): model-00001-of-00005.safetensors: it ends inside its"),
    ((), (FIRST, 5), "shorter than the 8 bytes"),
])
def test_weights_against_the_index(drop, cut, words):
    judged = model.judge_weights(INDEX_TEXT, shards_of(FILES, drop, cut))
    if cut and cut[1] > 1000:  # the words safetensors itself stops with, as users reported them
        assert "Error while deserializing header: MetadataIncompleteBuffer" in judged["problems"][0]
    assert judged["shards"] == ["model-%05d-of-00005.safetensors" % n for n in range(1, 6)]
    if words is None:
        assert judged["problems"] == []
    else:
        assert any(words in problem for problem in judged["problems"]), judged["problems"]


@pytest.mark.parametrize("index_text, shards, words", [
    (None, {}, "neither model.safetensors.index.json nor model.safetensors"),
    ("{\"metadata\": {}}", {}, "model.safetensors.index.json cannot be read (KeyError"),
    ("not json", {}, "model.safetensors.index.json cannot be read"),
])
def test_no_usable_weights(index_text, shards, words):
    assert any(words in problem for problem in model.judge_weights(index_text, shards)["problems"])


def test_a_single_file_checkpoint_needs_no_index():
    data = model_files.safetensors_bytes(["model.embed_tokens.weight"])
    assert model.judge_weights(None, {"model.safetensors": {"size": len(data), "head": data}})["problems"] == []


def test_a_header_length_no_file_has():
    assert model.header_end(struct.pack("<Q", 2 ** 40))[0] is None


@pytest.mark.parametrize("names, words", [
    (["tokenizer_config.json", "tokenizer.json"], ""),
    (["tokenizer_config.json", "vocab.json", "merges.txt"], ""),
    (["tokenizer.json"], "tokenizer_config.json missing"),
    (["tokenizer_config.json", "vocab.json"], "tokenizer.json or vocab.json + merges.txt missing"),
    ([], "tokenizer_config.json and tokenizer.json or vocab.json + merges.txt missing"),
])
def test_tokenizer_files(names, words):
    problem = model.judge_tokenizer(names)
    assert (words in problem and problem) if words else problem == ""


def write(folder, files):
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return str(folder)


def test_the_simulated_folder_is_complete(tmp_path):
    judged = model.judge(model.read_folder(model_files.write(str(tmp_path), "Qwen3-8B")))
    assert judged["problems"] == []
    assert judged["summary"] == "Qwen3ForCausalLM, 36 layers, 32/8 heads, 40960 positions"
    assert len(judged["shards"]) == 5
    json.dumps(judged)  # what the module returns: plain JSON, never the shards' bytes


@pytest.mark.parametrize("change, words", [
    ("drop:config.json", "config.json does not exist or cannot be read"),
    ("drop:model-00002-of-00005.safetensors", "are missing: model-00002-of-00005.safetensors"),
    ("cut:model-00005-of-00005.safetensors", "model-00005-of-00005.safetensors has"),
    ("drop:tokenizer_config.json", "the tokenizer is incomplete: tokenizer_config.json missing"),
])
def test_a_broken_folder_names_what_and_the_fix(tmp_path, change, words):
    files = dict(FILES)
    kind, name = change.split(":")
    if kind == "drop":
        del files[name]
    else:
        files[name] = files[name][:-10]
        files.pop("vocab.json")  # the tokenizer stays complete through tokenizer.json
    path = write(tmp_path / "Qwen3-8B", files)
    judged = model.judge(model.read_folder(path))
    text = " ".join(judged["problems"])
    assert words in text
    assert path in text and "Fix:" in text


def test_a_missing_folder_is_left_to_the_paths_rule(tmp_path):
    assert model.judge(model.read_folder(str(tmp_path / "nothing")))["problems"] == []


def test_an_unreadable_shard_is_missing(tmp_path):
    path = write(tmp_path / "m", FILES)
    os.chmod(os.path.join(path, FIRST), 0)
    if os.access(os.path.join(path, FIRST), os.R_OK):
        pytest.skip("running as root: every file is readable")
    assert FIRST in model.judge(model.read_folder(path))["missing"]


@pytest.mark.parametrize("name", sorted(model_files.MODELS))
def test_the_simulated_clusters_folders_are_what_the_generator_writes(name):
    # tests/sim/prepare.yml copies tests/sim/models; regenerate with `python3 tests/sim/model_files.py tests/sim/models`.
    folder = Path(model_files.__file__).parent / "models" / name
    assert {path.name: path.read_bytes() for path in folder.iterdir()} == model_files.model_files(name)
    judged = model.judge(model.read_folder(str(folder)))
    assert judged["problems"] == [] and judged["facts"]["architecture"] == model_files.MODELS[name][0]["architectures"][0]


def judged_copy(tmp_path, name, change=None):
    """A node's copy of the simulated Qwen3-8B folder, optionally changed, as node_facts judges it."""
    path = Path(model_files.write(str(tmp_path / name), "Qwen3-8B"))
    if change:
        change(path)
    return model.judge(model.read_folder(str(path)))


def _edit_config(**changes):
    def edit(path):
        config = json.loads((path / "config.json").read_text())
        config.update(changes)
        (path / "config.json").write_text(json.dumps(config, indent=2))
    return edit


def _cut(name):
    def cut(path):
        data = (path / name).read_bytes()
        (path / name).write_bytes(data[:-4])
    return cut


def _drop(name):
    return lambda path: (path / name).unlink()


def _reformat(path):
    (path / "config.json").write_text(json.dumps(json.loads((path / "config.json").read_text())))


@pytest.mark.parametrize("change, words", [
    (_edit_config(num_hidden_layers=28, vocab_size=152064),
     "config.json differs (num_hidden_layers 28 here, 36 on the head; vocab_size 152064 here, 151936 on the head)"),
    (_edit_config(rope_theta=10000), "config.json differs (rope_theta 10000 here, 1000000 on the head)"),
    (_reformat, "config.json differs (in formatting only, not in any value)"),
    (_cut("model-00002-of-00005.safetensors"), "shard sizes differ: model-00002-of-00005.safetensors"),
    (_drop("model-00004-of-00005.safetensors"), "1 shard(s) only on the head: model-00004-of-00005.safetensors"),
])
def test_a_workers_copy_that_is_not_the_heads_model_is_named(tmp_path, change, words):
    head = judged_copy(tmp_path, "head")
    mine = judged_copy(tmp_path, "worker", change)
    text = model.not_the_heads(mine, head, "worker-1", "head-1", "/mnt/public/Qwen3-8B")
    assert text.startswith("the model folder verl_model_path=/mnt/public/Qwen3-8B on worker-1 is not the same model as on the head "
                           "head-1: ")
    assert words in text, text
    assert "Fix: copy the head's folder to this node (e.g. rsync -a --delete head-1:/mnt/public/Qwen3-8B/ /mnt/public/Qwen3-8B/)" in text


def test_the_same_model_on_both_nodes_passes(tmp_path):
    head, mine = judged_copy(tmp_path, "head"), judged_copy(tmp_path, "worker")
    assert model.differences(mine["identity"], head["identity"]) == []
    assert model.not_the_heads(mine, head, "worker-1", "head-1", "/m") == ""
    json.dumps(head["identity"])  # part of what node_facts returns


@pytest.mark.parametrize("mine_folder, head_folder", [(False, True), (True, False), (False, False)])
def test_a_node_without_the_folder_is_left_to_the_paths_rule(tmp_path, mine_folder, head_folder):
    present = judged_copy(tmp_path, "present")
    absent = model.judge(model.read_folder(str(tmp_path / "absent")))
    text = model.not_the_heads(present if mine_folder else absent, present if head_folder else absent, "w", "h", "/m")
    assert text == ""


# One parameter count per model (issue 28): config.json's shape for dense and MoE models of several families, against the
# totals and active counts their model cards give; the weight files' headers (real shapes) give the same count.
@pytest.mark.parametrize("name", sorted(model_files.FAMILIES))
def test_the_parameters_of_each_family_from_config_json(name):
    config, total, active = model_files.FAMILIES[name]
    facts = model.parse_config(json.dumps(config))
    found_total, found_active, experts = model.parameter_counts(facts)
    assert found_total == pytest.approx(total, rel=0.02), found_total
    assert found_active == pytest.approx(active, rel=0.03), found_active
    assert (experts > 0) == bool(facts["num_experts"])


@pytest.mark.parametrize("name", ["Qwen3-8B", "Qwen3-4B", "Llama-3.1-8B", "Qwen3-30B-A3B", "Qwen1.5-MoE-A2.7B", "Mixtral-8x7B",
                                  "DeepSeek-V3"])
def test_the_weights_headers_give_the_count_and_judge_takes_it(name):
    config = model_files.FAMILIES[name][0]
    shards, index = model_files.real_headers(config)
    facts = model.parse_config(json.dumps(config))
    counted = model.weights_parameters(shards, sorted(shards))
    assert counted == sum(_elements(shape) for shape in model_files.real_shapes(config).values())
    assert counted == pytest.approx(model.parameter_count(facts), rel=2e-3)  # the two sources of one count agree
    read = {"path": "/m", "isdir": True, "config": json.dumps(config), "index": index, "shards": shards,
            "names": ["config.json", "tokenizer_config.json", "tokenizer.json"] + sorted(shards)}
    judged = model.judge(read)
    assert judged["problems"] == [] and judged["parameters"] == counted and judged["parameters_from"] == "weights"
    assert (judged["expert_parameters"] > 0) == bool(facts["num_experts"])


def test_the_weights_on_disk_are_the_count_and_config_json_the_fallback():
    """The simulated cluster's stand-in shards declare shape [2]: a small model, as their checkpoints are small. A quantized
    checkpoint packs its weights in integers, and a missing shard has no header: config.json counts then."""
    files = model_files.model_files("Qwen3-8B")
    shards = {name: {"size": len(data), "head": data} for name, data in files.items() if name.endswith(".safetensors")}
    read = {"path": "/m", "isdir": True, "config": files["config.json"].decode(), "index": files["model.safetensors.index.json"].decode(),
            "shards": shards, "names": sorted(files)}
    judged = model.judge(read)
    assert judged["parameters_from"] == "weights" and judged["parameters"] == 2 * len(model_files.tensor_names(model_files.QWEN3_8B))
    del shards["model-00002-of-00005.safetensors"]
    judged = model.judge(read)
    assert judged["problems"] and judged["parameters_from"] == "config.json"
    assert judged["parameters"] == model.parameter_count(judged["facts"])
    packed = {"a.safetensors": {"head": _header({"model.embed_tokens.weight": ("BF16", [151936, 4096]),
                                                 "model.layers.0.mlp.down_proj.qweight": ("I32", [1536, 4096])})}}
    assert model.weights_parameters(packed, ["a.safetensors"]) is None
    assert model.weights_parameters({}, ["a.safetensors"]) is None


def test_a_moe_summary_names_its_experts():
    facts = model.parse_config(json.dumps(model_files.QWEN3_30B_A3B))
    assert model.summary(facts) == "Qwen3MoeForCausalLM, 48 layers, 32/4 heads, 40960 positions, 128 experts, 8 per token"
    assert facts["moe_layers"] == 48
    deepseek = model.parse_config(json.dumps(model_files.DEEPSEEK_V3))
    assert (deepseek["num_experts"], deepseek["moe_layers"], deepseek["shared_intermediate_size"]) == (256, 58, 2048)


def _elements(shape):
    count = 1
    for dim in shape:
        count *= dim
    return count


def _header(tensors):
    import struct

    header, offset = {}, 0
    for name, (dtype, shape) in tensors.items():
        size = _elements(shape) * (4 if dtype == "I32" else 2)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text
