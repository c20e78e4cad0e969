# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The launch_drift filter: what this run would change in the record the running training started from (it is
restarted only for a difference, and the deploy names it), on records as they come back from the head (JSON)."""
from __future__ import annotations

import json

from ansible_collections.verl.deploy.plugins.filter.launch_drift import FilterModule
from ansible_collections.verl.deploy.plugins.module_utils._training_state import launch_record
from helpers.launch_helpers import launch_ok

launch_drift = FilterModule().filters()["launch_drift"]


def test_a_record_read_back_from_the_head_compares_equal():
    record = launch_record(launch_ok(), "echo train")
    assert launch_drift(json.loads(json.dumps(record)), launch_record(launch_ok(), "echo train")) == []


def test_a_changed_setting_is_named():
    assert launch_drift(launch_record(launch_ok(), "x"), launch_record(launch_ok(verl_train_steps=8), "x")) == ["train_steps 4 -> 8"]


def test_a_training_started_without_a_record_is_drift():
    assert "no launch record" in launch_drift(None, launch_record(launch_ok(), "x"))[0]
