# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The npu_usage filter: the status line's words for what holds a host's NPUs, on a real npu-smi capture."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest

from ansible_collections.verl.deploy.plugins.filter.npu_usage import FilterModule, npu_usage
from ansible_collections.verl.deploy.plugins.module_utils._npu_smi import parse_info

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"

MINDIE = parse_info((FIXTURES / "npu-smi" / "011_info_910B2_8cards_v24.1.0_procs_mindie.txt").read_text(encoding="utf-8"))
IDLE = parse_info((FIXTURES / "npu-smi" / "010_info_910B3_1card_npu4_v23.0.1_noproc.txt").read_text(encoding="utf-8"))
OURS = "c" * 64


def held_by(container, seen=True):
    info = copy.deepcopy(MINDIE)
    for process in info["processes"]:
        process.update(container_id=container, seen=seen)
    return info


def test_an_idle_node():
    assert npu_usage(IDLE) == "none"


def test_the_deploys_own_training_is_one_range():
    assert npu_usage(held_by(OURS), OURS) == "0-7 by the training (pids 412122, 412124, 412126, 412128, 412140, 412147, 412154, 412161)"


def test_host_processes_are_named_per_npu():
    words = npu_usage(MINDIE, OURS)
    assert words.startswith("0 by pid 412122 (mindie_llm_back, on the host, in no container); 1 by pid 412124")
    assert words.count("mindie_llm_back") == 8


def test_another_container_and_an_unseen_pid():
    assert "container dddddddddddd)" in npu_usage(held_by("d" * 64), OURS)
    assert "a pid this host does not show" in npu_usage(held_by(None, seen=False), OURS)


@pytest.mark.parametrize(("npu", "expected"), [({"failed": True, "msg": "dcmi"}, "?"), (None, "none"), ("garbage", "none")])
def test_unread_or_missing(npu, expected):
    assert npu_usage(npu, None) == expected


def test_registered_as_a_filter():
    assert FilterModule().filters() == {"npu_usage": npu_usage}
