# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The verdict on the container stage's count of the prompts longer than max_prompt_length."""
from __future__ import annotations

import json

import pytest

from ansible_collections.verl.deploy.plugins.filter.prompt_count import prompt_count
from ansible_collections.verl.deploy.plugins.filter.prompt_lengths import prompt_lengths
from ansible_collections.verl.deploy.plugins.module_utils import _prompt_lengths as pl

TRAIN, TEST = "/mnt/project/data/dapo-math-17k.parquet", "/mnt/project/data/aime-2024.parquet"
LAUNCH = {"is_head": True, "train_file": TRAIN, "test_file": TEST, "max_prompt_length": 2048, "train_batch_size": 32,
          "extra_overrides": []}


def output(*files, limit=2048, **top):
    """The container check's document, its prompts the count's JSON."""
    prompts = json.dumps(dict({"max_prompt_length": limit, "files": list(files)}, **top))
    return json.dumps({"said": ["torch_npu loads"], "answer": {"look": "x", "stack": "{}", "prompts": prompts}})


def entry(path=TRAIN, rows=17398, over=0, longest=1400, **more):
    return dict({"path": path, "rows": rows, "over": over, "longest": longest, "failed": 0, "first_error": None}, **more)


def launch(**changes):
    return dict(LAUNCH, **changes)


def test_prompts_that_fit_are_a_note():
    result = pl.verdict(output(entry(), entry(TEST, rows=30, longest=300)), LAUNCH)
    assert result["problems"] == [] and result["warnings"] == []
    assert result["notes"] == ["%s: 17398 prompts, the longest 1400 tokens (max_prompt_length 2048)." % TRAIN,
                               "%s: 30 prompts, the longest 300 tokens (max_prompt_length 2048)." % TEST]


def test_over_long_prompts_without_verls_filter_are_refused_with_the_real_error():
    result = pl.verdict(output(entry(over=12, longest=2106)), LAUNCH)
    assert result["problems"] == [
        "12 of 17398 prompts in %s (verl_train_file) are longer than max_prompt_length 2048 tokens (the longest 2106, with the chat "
        "template): verl 0.7.0 does not cut them (data.truncation is not applied by its agent loop) and the training stops at the "
        "first rollout whose batch holds one, with 'RuntimeError: Sizes of tensors must match except in dimension 0. Expected size "
        "2048 but got size 2106'. Fix: raise verl_max_prompt_length to at least 2106 (prompt + response must still fit the model), "
        "or let verl drop them when it loads the file (data.filter_overlong_prompts=True in verl_extra_overrides), or filter the "
        "data." % TRAIN]
    assert result["summary"] == result["problems"][0], "the deploy's last message repeats it"


@pytest.mark.parametrize("value", ["True", "true", "'True'"])
def test_with_verls_filter_the_dropped_prompts_are_a_warning(value):
    result = pl.verdict(output(entry(over=12, longest=2106)), launch(extra_overrides=["data.filter_overlong_prompts=%s" % value]))
    assert result["problems"] == []
    assert result["warnings"] == ["verl drops 12 of 17398 prompts of %s (verl_train_file) when it loads it: they are longer than "
                                  "max_prompt_length 2048 tokens (the longest 2106) and data.filter_overlong_prompts=True." % TRAIN]


@pytest.mark.parametrize("path, rows, over, words", [
    (TRAIN, 40, 10, "30 row(s) are left, fewer than one batch (train_batch_size 32), so verl stops before the first step "
                    "('AssertionError: Train dataloader is empty!')"),
    (TEST, 30, 30, "0 row(s) are left, fewer than one, so verl stops before the first step ('AssertionError: Validation dataloader "
                   "is empty!')"),
])
def test_with_verls_filter_too_few_rows_left_are_refused(path, rows, over, words):
    result = pl.verdict(output(entry(path, rows=rows, over=over, longest=4000)),
                        launch(extra_overrides=["+data.filter_overlong_prompts=True"]))
    assert len(result["problems"]) == 1 and words in result["problems"][0], result
    assert "Fix: raise verl_max_prompt_length to at least 4000" in result["problems"][0]


def test_rows_the_template_cannot_render_count_as_over_long():
    some = entry(TEST, rows=64, over=10, longest=2200, failed=3, first_error="UndefinedError: 'str object' has no attribute 'role'")
    problem = pl.verdict(output(some), LAUNCH)["problems"][0]
    assert "10 of 64 prompts in %s (verl_test_file)" % TEST in problem
    assert "(3 of them the chat template cannot render: UndefinedError: 'str object' has no attribute 'role')" in problem
    assert "at least 2200 (prompt + response must still fit the model) (and fix the 3 row(s)" in problem


def test_a_file_the_count_cannot_read_is_reported_not_refused():
    result = pl.verdict(output({"path": TRAIN, "error": "ModuleNotFoundError: No module named 'pyarrow'"}), LAUNCH)
    assert result["problems"] == []
    assert result["warnings"][0].startswith("The prompts of %s (verl_train_file) were not counted: ModuleNotFoundError: No module "
                                            "named 'pyarrow'." % TRAIN)


@pytest.mark.parametrize("out, words", [
    ('{"said": [], "answer": {"stack": "{}"}}', "the container stage's check answered no prompts"),
    ('{"said": [], "answer": {"prompts": "not json"}}', "the container stage's check answered no prompts"),
    ('prompts={"max_prompt_length": 2048, "files": []}\n', "the container stage's check answered no prompts"),  # an older check's line
    (output(error="the count did not answer within 180 s"), "were not counted: the count did not answer within 180 s."),
])
def test_no_answer_is_a_warning(out, words):
    result = pl.verdict(out, LAUNCH)
    assert result["problems"] == [] and words in " ".join(result["warnings"])


def test_no_count_off_the_head_and_no_warning_for_it():
    assert pl.count_inputs(launch(is_head=False))["files"] == ""
    assert pl.verdict("stack={}\n", launch(is_head=False)) == {"problems": [], "warnings": [], "notes": [], "summary": ""}


def test_a_count_stopped_by_its_deadline_says_how_far_it_got():
    partial = entry(rows=900000, over=3, longest=2300, partial=True, counted=120000)
    result = pl.verdict(output(partial), LAUNCH)
    assert "3 of the 120000 counted prompts in %s" % TRAIN in result["problems"][0]
    fine = pl.verdict(output(entry(rows=900000, partial=True, counted=120000)), LAUNCH)
    assert fine["warnings"] == ["In %s (verl_train_file), 120000 of 900000 prompts counted within 120 s (the next run goes on from "
                                "there): none of them longer than max_prompt_length 2048 tokens (the longest 1400)." % TRAIN]


def test_the_counts_inputs():
    assert prompt_count(launch(extra_overrides=["data.prompt_key=question"])) == {
        "files": json.dumps([TRAIN, TEST]), "max_prompt_length": "2048", "prompt_key": "question", "seconds": "120"}
    assert prompt_lengths(output(entry()), LAUNCH) == pl.verdict(output(entry()), LAUNCH)


NO_TEMPLATE_ERROR = ("ValueError: Cannot use chat template functions because tokenizer.chat_template is not set and no template "
                     "argument was passed! For information about writing templates and setting the tokenizer.chat_template attribute, "
                     "please see the documentation at https://huggingface.co/docs/transformers/main/en/chat_templating")


def test_a_tokenizer_without_a_chat_template_is_refused_once_with_its_real_fix():
    """Issue 28: a base model's tokenizer (no chat_template) was "prompts longer than max_prompt_length (the longest 0)", told to
    raise the limit "to at least 0". verl's rollout workers stop at start without a template (verl issue #390's error)."""
    files = [entry(TRAIN, rows=17398, over=17398, longest=0, failed=17398, first_error=NO_TEMPLATE_ERROR),
             entry(TEST, rows=30, over=30, longest=0, failed=30, first_error=NO_TEMPLATE_ERROR)]
    result = pl.verdict(output(*files), launch(model_path="/mnt/public/Qwen3-8B-Base"))
    assert len(result["problems"]) == 1, result["problems"]
    problem = result["problems"][0]
    assert "The tokenizer of verl_model_path=/mnt/public/Qwen3-8B-Base has no chat template" in problem
    assert "'ValueError: Cannot use chat template functions because tokenizer.chat_template is not set" in problem
    assert "at least 0" not in problem and "max_prompt_length" not in problem
    # The fix applied: a tokenizer with a template renders the prompts, and they fit.
    fixed = pl.verdict(output(entry(TRAIN), entry(TEST, rows=30, longest=300)), launch(model_path="/mnt/public/Qwen3-8B-Base"))
    assert fixed["problems"] == []


def test_rows_none_of_which_render_are_told_the_data_format_not_a_limit():
    bad = entry(TEST, rows=64, over=64, longest=0, failed=64, first_error="UndefinedError: 'str object' has no attribute 'role'")
    problem = pl.verdict(output(bad), LAUNCH)["problems"][0]
    assert "None of the 64 prompts in %s (verl_test_file) can be rendered" % TEST in problem
    assert "at least 0" not in problem and "a list of {\"role\": ..., \"content\": ...} messages" in problem


def test_some_unrenderable_rows_within_the_limit_are_not_told_to_raise_it():
    mixed = entry(TEST, rows=64, over=2, longest=900, failed=2, first_error="UndefinedError: 'str object' has no attribute 'role'")
    problem = pl.verdict(output(mixed), LAUNCH)["problems"][0]
    assert "raise verl_max_prompt_length" not in problem and "data.filter_overlong_prompts=True" in problem
    # The fix applied (verl drops them when it loads the file): a warning, not a refusal.
    assert pl.verdict(output(mixed), launch(extra_overrides=["data.filter_overlong_prompts=True"]))["problems"] == []
