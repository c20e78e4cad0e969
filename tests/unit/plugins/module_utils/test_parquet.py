"""The pure-Python parquet footer reader (plugins/module_utils/_parquet.py) and verl's data set rules, on parquet files
written by pyarrow (tests/fixtures/parquet/make_fixtures.py): verl's shape, raw GSM8K, and each part broken."""
from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.verl.deploy.plugins.module_utils import _parquet as pq

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "parquet"


def schema(name):
    return pq.read_schema(str(FIXTURES / name))


def test_verls_shape_is_read_from_the_footer():
    read = schema("verl.parquet")
    assert read["num_rows"] == 256
    assert read["columns"]["prompt"] == "list<struct<role: string, content: string>>"
    assert read["columns"]["reward_model"] == "struct<style: string, ground_truth: string>"
    assert read["columns"]["data_source"] == "string"
    assert read["fields"]["reward_model"] == {"style": "string", "ground_truth": "string"}
    assert read["columns"]["extra_info"] == "struct<split: string, index: int64, answer: string, question: string>"
    assert pq.dataset_problems("verl_train_file", "/d/train.parquet", read, min_rows=32) == []


def test_raw_gsm8k_is_refused_naming_the_column_and_the_fix():
    problems = pq.dataset_problems("verl_train_file", "/d/train.parquet", schema("gsm8k_raw.parquet"), min_rows=32)
    text = " ".join(problems)
    assert problems[0].startswith("verl_train_file=/d/train.parquet has no column 'prompt', the prompt column verl reads "
                                  "(data.prompt_key); it has the columns answer (string), question (string).")
    # Real text: verl fails at dataset load with KeyError: "None of [Index(['question'])] ..." when pointed at a raw column,
    # and with KeyError: 'prompt' / 'reward_model' when a column is missing.
    assert "KeyError: 'prompt'" in text and "KeyError: 'reward_model'" in text
    assert "has 4 row(s), fewer than one batch (verl_train_batch_size=32)" in problems[-1]
    assert "Fix: convert the data set to verl's format (verl's preprocessing scripts write this shape: " \
           "examples/data_preprocess/gsm8k.py (GSM8K)" in problems[-2]


@pytest.mark.parametrize("name, expected", [
    ("no_reward_model.parquet", "has no column 'reward_model' (a struct with ground_truth)"),
    ("prompt_as_text.parquet", "the column 'prompt' is string, but verl gives it to the chat template as a list of messages"),
    ("no_ground_truth.parquet", "the column 'reward_model' is struct<style: string>, without the field ground_truth"),
    ("verl_8_rows.parquet", "has 8 row(s), fewer than one batch (verl_train_batch_size=32): verl's train dataloader drops the last "
                            "partial batch, so it stops before the first step with 'AssertionError: Train dataloader is empty!'"),
])
def test_each_broken_part_is_named(name, expected):
    problems = pq.dataset_problems("verl_train_file", "/d/t.parquet", schema(name), min_rows=32)
    assert len(problems) == 1 and expected in problems[0], problems


def test_another_prompt_key():
    read = schema("verl.parquet")
    assert "has no column 'question'" in pq.dataset_problems("verl_test_file", "/d/t.parquet", read, prompt_key="question")[0]


@pytest.mark.parametrize("content, why", [
    (b"", "fewer than any parquet file"),
    (b"PAR1 simulated training data PAR1", "footer length"),
    (b"not parquet at all, just text", "does not start with the parquet magic"),
])
def test_not_parquet_is_an_error_not_a_crash(tmp_path, content, why):
    path = tmp_path / "x.parquet"
    path.write_bytes(content)
    read = pq.read_schema(str(path))
    assert why in read["error"], read
    assert pq.dataset_problems("verl_train_file", str(path), read)[0].startswith("verl_train_file=%s cannot be read as parquet" % path)


def test_a_file_cut_short_is_an_error(tmp_path):
    data = (FIXTURES / "verl.parquet").read_bytes()
    path = tmp_path / "cut.parquet"
    path.write_bytes(data[:len(data) // 2])
    assert "does not end with the parquet magic" in pq.read_schema(str(path))["error"]
    path.write_bytes(data[:4] + data[-20:])
    assert "error" in pq.read_schema(str(path))


def test_a_missing_file_is_an_error(tmp_path):
    assert "No such file" in pq.read_schema(str(tmp_path / "none.parquet"))["error"]


def test_the_precheck_report_judges_both_data_sets_on_the_head():
    from ansible_collections.verl.deploy.plugins.module_utils import _precheck as pc

    good, raw = str(FIXTURES / "verl.parquet"), str(FIXTURES / "gsm8k_raw.parquet")
    read = {good: schema("verl.parquet"), raw: schema("gsm8k_raw.parquet")}
    launch = {"is_head": True, "train_file": good, "test_file": raw, "train_batch_size": 48, "extra_overrides": []}
    text = pc.datasets_not_verls({"launch": launch, "facts": {"parquet": read}})
    assert text.startswith("verl_test_file=%s has no column 'prompt'" % raw) and "verl_train_file" not in text
    assert "verl_train_file=%s has 256 row(s), fewer than one batch (verl_train_batch_size=512)" % good in pc.datasets_not_verls(
        {"launch": dict(launch, train_batch_size=512), "facts": {"parquet": read}})
    assert pc.datasets_not_verls({"launch": dict(launch, is_head=False), "facts": {"parquet": read}}) == ""


def test_a_verl_format_set_with_too_few_rows_is_told_the_batch_not_the_format():
    """Issue 28: 8 rows in verl's format were told to "convert to verl's format"; the fix applied (a batch of 8) passes."""
    read = schema("verl_8_rows.parquet")
    problems = pq.dataset_problems("verl_train_file", "/d/t.parquet", read, min_rows=32)
    assert len(problems) == 1 and "convert" not in problems[0]
    assert "Fix: lower verl_train_batch_size to at most 8 (and verl_ppo_mini_batch_size with it), or use a data set with at " \
           "least 32 rows." in problems[0]
    assert pq.dataset_problems("verl_train_file", "/d/t.parquet", read, min_rows=8) == []
    no_rows = dict(read, num_rows=0)
    assert pq.dataset_problems("verl_test_file", "/d/t.parquet", no_rows)[0].endswith(
        "'AssertionError: Validation dataloader is empty!'. Fix: give a verl_test_file with rows.")


# --------------------------------------------------------------------------- the first rows' values

@pytest.mark.parametrize("name", ["values_snappy.parquet", "values_gzip_v2_plain.parquet", "values_none_small_pages.parquet"])
def test_the_first_rows_are_read_as_pyarrow_wrote_them(name):
    """SNAPPY with a dictionary and data page v1 (pyarrow's and `datasets`' defaults), GZIP with PLAIN values in data page v2,
    no compression in pages of 512 bytes: the same values (make_fixtures.py's broken_values: rows 5, 9 my_dataset, 11
    aime-2025; row 3 ground truth '', row 7 null)."""
    values = pq.read_values(str(FIXTURES / name), (("data_source",), ("reward_model", "ground_truth")), 300)
    rows = 64 if "small" not in name else 300
    assert len(values["data_source"]) == rows and len(values["reward_model.ground_truth"]) == rows
    assert values["data_source"][5] == values["data_source"][9] == "my_dataset" and values["data_source"][11] == "aime-2025"
    assert values["reward_model.ground_truth"][3] == "" and values["reward_model.ground_truth"][7] is None
    assert values["reward_model.ground_truth"][8] == "72" and values["data_source"][0] == "openai/gsm8k"
    assert pq.sample(str(FIXTURES / name)) == {"rows": min(rows, 256), "empty_ground_truth": [3, 7],
                                               "data_sources": {"openai/gsm8k": 0, "my_dataset": 5, "aime-2025": 11}}


def test_what_the_reader_does_not_decode_is_left_out_not_judged():
    assert pq.sample(str(FIXTURES / "values_zstd.parquet")) == {"rows": 0}  # ZSTD: no stdlib codec
    assert pq.sample(str(FIXTURES / "no_ground_truth.parquet")) == {"rows": 64, "data_sources": {"openai/gsm8k": 0}}
    assert pq.values_problems("verl_train_file", "/d/t.parquet", {"rows": 0}) == []


def test_snappy_copies_that_overlap_what_they_write():
    # "abcd" then a 1-byte-offset copy of 8 bytes from 4 back: 'abcdabcdabcd'.
    assert pq.snappy_decompress(bytes([12, 3 << 2]) + b"abcd" + bytes([(4 << 2) | 1, 4])) == b"abcdabcdabcd"


def test_a_data_source_without_a_reward_function_and_empty_ground_truth_are_refused_naming_the_rows():
    """verl 0.7.0's default_compute_score: `NotImplementedError: Reward function is not implemented for data_source=''`
    (verl #3450, AReaL #105; verl #5558 in the validation before training)."""
    from ansible_collections.verl.deploy.plugins.module_utils import _precheck as pc

    path = str(FIXTURES / "values_snappy.parquet")
    read = {path: dict(schema("values_snappy.parquet"), sample=pq.sample(path))}
    launch = {"is_head": True, "train_file": path, "test_file": "", "train_batch_size": 16, "extra_overrides": []}
    text = pc.datasets_not_verls({"launch": launch, "facts": {"parquet": read}})
    assert ("verl_train_file=%s: data_source='my_dataset' (from row 5) in its first 64 rows: no reward function of verl's knows "
            "it" % path) in text, text
    assert "NotImplementedError: Reward function is not implemented for data_source='my_dataset'" in text
    assert "aime-2025" not in text  # any aime* has one
    assert "reward_model.ground_truth is empty or null in rows 3, 7 (of its first 64)" in text, text
    # A custom reward function set: verl's own do not score the rows, nothing is said of their values.
    custom = dict(launch, extra_overrides=["custom_reward_function.path=/mnt/project/reward.py", "custom_reward_function.name=score"])
    assert pc.datasets_not_verls({"launch": custom, "facts": {"parquet": read}}) == ""
    # The fix applied to the rows: a known data source, the ground truth filled in.
    fixed = {path: dict(read[path], sample={"rows": 64, "data_sources": {"openai/gsm8k": 0, "aime-2025": 11}, "empty_ground_truth": []})}
    assert pc.datasets_not_verls({"launch": launch, "facts": {"parquet": fixed}}) == ""
    # verl's own shape (every fixture of verl's preprocessing) passes.
    good = str(FIXTURES / "verl.parquet")
    read = {good: dict(schema("verl.parquet"), sample=pq.sample(good))}
    assert pc.datasets_not_verls({"launch": dict(launch, train_file=good), "facts": {"parquet": read}}) == ""


@pytest.mark.parametrize("source, known", [
    ("openai/gsm8k", True), ("lighteval/MATH", True), ("math_dapo", True), ("aime-2024", True), ("aime25", True),
    ("searchR1_nq", True), ("hiyouga/geometry3k", True), ("", False), (None, False), ("/mnt/data/gsm8k", False), ("gsm8k", False),
])
def test_the_data_sources_verls_default_reward_knows(source, known):
    assert pq.has_reward_function(source) is known
