# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The deployment's head, workers and nodes from the inventory's groups, defined once (_ray_nodes)."""
from __future__ import annotations

import pytest

from ansible_collections.verl.deploy.plugins.module_utils._ray_nodes import ray_head, ray_nodes, ray_workers


@pytest.mark.parametrize("groups, head, workers, nodes", [
    ({"ray_head": ["h"], "ray_workers": ["w1", "w2"]}, "h", ["w1", "w2"], ["h", "w1", "w2"]),
    # One node: no group ray_workers at all, or an empty one.
    ({"ray_head": ["h"]}, "h", [], ["h"]), ({"ray_head": ["h"], "ray_workers": []}, "h", [], ["h"]),
    # A host in both groups is the head, and counted once.
    ({"ray_head": ["h"], "ray_workers": ["h", "w1"]}, "h", ["w1"], ["h", "w1"]),
    # No head (stage 0 refuses such an inventory; the day-2 playbooks still name what they have).
    ({"ray_workers": ["w1"]}, "", ["w1"], ["w1"]), ({"all": ["x"]}, "", [], []), (None, "", [], []),
    ({"ray_head": None, "ray_workers": None}, "", [], []),
])
def test_the_head_the_workers_and_the_nodes(groups, head, workers, nodes):
    assert (ray_head(groups), ray_workers(groups), ray_nodes(groups)) == (head, workers, nodes)
