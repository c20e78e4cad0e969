# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The console report's decisions: stages from play names, lines, grouped messages, the nodes' progress as one line."""
from __future__ import annotations

import pytest

from ansible_collections.verl.deploy.plugins.module_utils._report import (
    grouped, host_list, label_of, problem_text, progress_summary, stage_line, stage_plan)


@pytest.mark.parametrize("names, plan, total", [
    (["0. On the controller, before any node is contacted - the collection, the inventory", "1. Every node answers and is read (NPUs, Docker)",
      "3. Confirm", "7. Ray on the head", "7. Ray on the workers", "7-8. Report the joins, then train"],
     ["0", "1", "3", "7", "7", "8"], 8),
    (["0. Find the collection", "1-2. Every node read, its settings checked", "3. The verdict"], ["0", "1-2", "3"], 3),
    (["0. Find the collection", "Stop the training and Ray"], ["0", "1"], 1),
    (["Status of every node"], ["0"], 0),
])
def test_stage_plan(names, plan, total):
    got, got_total = stage_plan(names)
    assert [key for key, _label in got] == plan and got_total == total


@pytest.mark.parametrize("title, label", [
    ("On the controller, before any node is contacted - the collection, the inventory", "On the controller, before any node is contacted"),
    ("Every node answers and is read (NPUs, Docker, the network; read-only)", "Every node answers and is read"),
    ("Confirm", "Confirm"),
    ("a " * 40, ("a " * 30).strip() + " ..."),
])
def test_label_of(title, label):
    assert label_of(title) == label


@pytest.mark.parametrize("states, line", [
    ({"n1": "changed", "n2": "changed", "n3": "ok"}, "[4/8] C: changed on 2, ok on 1 (40 s)"),
    ({"n1": "skipped"}, "[4/8] C: skipped (40 s)"),
    ({}, "[4/8] C: no host (40 s)"),
    ({"n1": "failed", "n2": "unreachable", "n3": "ok"}, "[4/8] C: FAILED on n1, UNREACHABLE: n2, ok on 1 (40 s)"),
    ({"n%d" % i: "failed" for i in range(10)}, "[4/8] C: FAILED on n0, n1, n2 and 7 more (40 s)"),
])
def test_stage_line(states, line):
    assert stage_line("4", 8, "C", states, 40.2) == line


@pytest.mark.parametrize("states, line", [
    ({"localhost": "ok"}, "[0/8] C: done on the controller (40 s)"),
    ({"localhost": "skipped"}, "[0/8] C: skipped (40 s)"),
    ({"localhost": "ok", "n1": "changed"}, "[0/8] C: changed on 1 (40 s)"),
    ({"localhost": "failed", "n1": "ok"}, "[0/8] C: FAILED on localhost, ok on 1 (40 s)"),
])
def test_stage_line_never_counts_the_controller(states, line):
    assert stage_line("0", 8, "C", states, 40.2, controller={"localhost"}) == line


def test_durations():
    assert stage_line("1", 1, "C", {}, 125).endswith("(2 min 05 s)")
    assert stage_line("1", 1, "C", {}, 7300).endswith("(2 h 01 min)")


def test_grouped_keeps_each_text_once_and_a_text_naming_its_own_host_is_one():
    messages = [("n1", "n1: ok"), ("n2", "n2: ok"), ("n3", "n3: NPU 2 busy"), ("n4", "same"), ("n5", "same")]
    assert grouped(messages) == [(["n1", "n2"], "n1: ok"), (["n3"], "n3: NPU 2 busy"), (["n4", "n5"], "same")]


def test_host_list():
    assert host_list(["b", "a"]) == "a, b"
    assert host_list(["d", "c", "b", "a"]) == "a, b, c and 1 more"


@pytest.mark.parametrize("result, text", [
    ({"msg": "refused. Fix: x"}, "refused. Fix: x"),
    ({"msg": ["a", "b"]}, "a\nb"),
    ({"stderr": "warn\nError: no such container\n"}, "Error: no such container"),
    ({"results": [{"failed": False, "msg": "fine"}, {"failed": True, "msg": "item broke"}]}, "item broke"),
    ({}, "failed (no message)"),
])
def test_problem_text(result, text):
    assert problem_text(result) == text


def test_progress_summary_names_the_longest_waits_and_counts_the_rest():
    states = {"n1": {"progress": "2/2 layers", "elapsed": 30, "timeout": 900, "done": True},
              "n2": {"progress": "1/2 layers", "elapsed": 35, "timeout": 900, "done": False},
              "n3": {"progress": "0/2 layers", "elapsed": 40, "timeout": 900, "done": False},
              "n4": {"progress": "", "elapsed": 10, "timeout": 900, "done": False}}
    assert progress_summary("pull", states, 48) == (
        "pull: 1/48 done; waiting for n3 (0/2 layers, 40/900 s), n2 (1/2 layers, 35/900 s) and 45 more")
    assert progress_summary("pull", {"n1": states["n1"]}, 1) == "pull: 1/1 done"
