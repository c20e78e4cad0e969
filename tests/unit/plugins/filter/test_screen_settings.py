# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The screen_settings filter: what reaches the launch_config module at all; a value too large to pass on
is replaced by a short description before Ansible serialises it."""
from __future__ import annotations

from ansible_collections.verl.deploy.plugins.filter.screen_settings import FilterModule
from ansible_collections.verl.deploy.plugins.module_utils import _inputs as inputs

screen = FilterModule().filters()["screen_settings"]


def test_ordinary_settings_pass_as_they_are():
    settings = {"verl_train_tp": 4, "verl_extra_env": {"HCCL_CONNECT_TIMEOUT": "1200"}, "verl_extra_overrides": ["a=1"]}
    assert screen(settings) == settings


def test_a_huge_or_deep_value_is_described_not_passed():
    deep = current = {}
    for _level in range(inputs.SCREEN_MAX_DEPTH + 3):
        current["x"] = {}
        current = current["x"]
    screened = screen({"verl_extra_env": deep, "verl_project_name": "x" * (inputs.SCREEN_MAX_CHARS + 1),
                       "verl_extra_overrides": ["a=1"] * (inputs.SCREEN_MAX_NODES + 1), "verl_train_tp": 4})
    assert screened["verl_train_tp"] == 4
    for name in ("verl_extra_env", "verl_project_name", "verl_extra_overrides"):
        assert set(screened[name]) == {inputs.OVERSIZED}, name
        assert len(screened[name][inputs.OVERSIZED]) < 200


def test_nothing_given():
    assert screen(None) == {} and screen({}) == {}
