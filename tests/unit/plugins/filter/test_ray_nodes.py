# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The ray_head, ray_workers and ray_nodes filters: the deployment's head and nodes, defined once."""
from __future__ import annotations

import pytest

from ansible_collections.verl.deploy.plugins.filter.ray_nodes import FilterModule

FILTERS = FilterModule().filters()


@pytest.mark.parametrize("groups, head, workers, nodes", [
    ({"ray_head": ["h"], "ray_workers": ["w1", "w2"]}, "h", ["w1", "w2"], ["h", "w1", "w2"]),
    # One node: no group ray_workers at all, or an empty one.
    ({"ray_head": ["h"]}, "h", [], ["h"]), ({"ray_head": ["h"], "ray_workers": []}, "h", [], ["h"]),
    # A host in both groups is the head, and counted once (Ansible lists a host once per group).
    ({"ray_head": ["h"], "ray_workers": ["h", "w1"]}, "h", ["w1"], ["h", "w1"]),
    # No head (stage 0 refuses such an inventory; the day-2 playbooks still name what they have).
    ({"ray_workers": ["w1"]}, "", ["w1"], ["w1"]), ({"all": ["x"]}, "", [], []), (None, "", [], []),
    ({"ray_head": None, "ray_workers": None}, "", [], []),
])
def test_the_head_the_workers_and_the_nodes(groups, head, workers, nodes):
    assert (FILTERS["ray_head"](groups), FILTERS["ray_workers"](groups), FILTERS["ray_nodes"](groups)) == (head, workers, nodes)


def test_as_a_play_calls_them(render):
    groups = {"all": ["h", "w1"], "ray_head": ["h"], "ray_workers": ["w1"], "ungrouped": []}
    assert render(["groups | verl.deploy.ray_head", "groups | verl.deploy.ray_workers", "groups | verl.deploy.ray_nodes"],
                  groups=groups) == ["h", ["w1"], ["h", "w1"]]
