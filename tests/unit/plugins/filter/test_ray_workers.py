# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The ray_workers filter as a play calls it, on the play's groups (its cases: tests/unit/plugins/module_utils/test_ray_nodes.py)."""
from __future__ import annotations

from ansible_collections.verl.deploy.plugins.filter.ray_workers import FilterModule
from ansible_collections.verl.deploy.plugins.module_utils import _ray_nodes

GROUPS = {"all": ["h", "w1", "w2"], "ungrouped": [], "ray_head": ["h"], "ray_workers": ["w1", "w2"]}


def test_it_is_the_one_definition(monkeypatch):
    """The filter hands its call to _ray_nodes.ray_workers and decides nothing itself."""
    monkeypatch.setattr(_ray_nodes, "ray_workers", lambda groups: ("decided by _ray_nodes", groups))
    assert FilterModule().filters()["ray_workers"](GROUPS) == ("decided by _ray_nodes", GROUPS)


def test_as_a_play_calls_it(render):
    assert render(["groups | verl.deploy.ray_workers"], groups=GROUPS) == [["w1", "w2"]]
