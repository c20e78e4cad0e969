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
