# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""compare.yml's and smoke.yml's plan (the compare filter's `plan`): a problem of the settings themselves (a folder, a
number) stops the comparison before anything is written, also with one mask, where nothing tells it from the mask's own
problems but the baseline's check beside it; a mask's own problem still only refuses that mask. Each refusal's fix passes."""
from __future__ import annotations

import pytest

from ansible_collections.verl.deploy.plugins.filter.compare import _plan
from helpers.launch_helpers import RULES, SPEC

NODE = {"verl_model_path": "/mnt/public/Qwen3-8B", "verl_train_file": "/mnt/project/data/train.parquet",
        "verl_test_file": "/mnt/project/data/test.parquet", "verl_ckpts_dir": "/mnt/project/ckpts/run", "ansible_host": "10.0.0.1",
        "verl_compare_dir": "/tmp/verl_compare"}


def plan(masks, **given):
    return _plan({"node1": dict(NODE, **given)}, masks, "node1", SPEC, RULES)


@pytest.mark.parametrize("masks", ["0000000", "1100000", "0000000,1100000"])
@pytest.mark.parametrize(("given", "fixed", "named"), [
    ({"verl_compare_dir": "//etc"}, {"verl_compare_dir": "/tmp/verl_compare"}, "verl_compare_dir='//etc' is the root or a system folder (/etc)"),
    ({"verl_compare_steps": "1e3"}, {"verl_compare_steps": "1000"}, "verl_compare_steps='1e3' is not a whole number"),
    ({"verl_project_name": False}, {"verl_project_name": "no"}, "is a YAML boolean"),
])
def test_a_problem_of_the_settings_stops_the_comparison_whatever_the_masks(masks, given, fixed, named):
    refused = plan(masks, **given)
    assert any(named in text for text in refused["problems"]), refused
    assert not any(row["reasons"] for row in refused["rows"]), refused
    fine = plan(masks, **fixed)
    assert fine["problems"] == [] and [row["action"] for row in fine["rows"]] == ["run"] * len(masks.split(","))


def test_a_mask_of_its_own_refused_is_listed_and_the_baseline_beside_it_is_not():
    # VPP needs more than one pipeline stage: the mask's own problem, not the settings'.
    alone = plan("0000001", verl_train_pp=1, verl_train_tp=8)
    assert alone["problems"] == [] and [row["mask"] for row in alone["rows"]] == ["0000001"]
    assert alone["rows"][0]["action"] == "refused" and "verl_train_pp" in " ".join(alone["rows"][0]["reasons"])
    assert plan("0000001")["rows"][0]["action"] == "run"
