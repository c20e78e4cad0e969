# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The container_info filter: one container of the pre-check's `docker ps -a` read, in the shape of
community.docker.docker_container_info's result (what the later stages read)."""
from __future__ import annotations

import pytest

from ansible_collections.verl.deploy.plugins.filter.container_info import FilterModule, container_info

PS = [  # `docker ps -a --format '{{json .}}'`-derived entries as node_facts returns them
    {"Id": "a" * 64, "Names": ["/verl"], "Image": "quay.io/ascend/verl:a2", "State": "running",
     "Labels": {"verl.deploy.launch": "1"}, "HostConfig": {"Devices": [{"PathOnHost": "/dev/davinci0"}]}},
    {"Id": "b" * 64, "Names": ["/old"], "Image": "x", "State": "exited"},
]


@pytest.mark.parametrize(("state", "running"), [("running", True), ("paused", True), ("restarting", True), ("exited", False),
                                                ("created", False), ("", False)])
def test_running_as_docker_inspect_says(state, running):
    entry = dict(PS[0], State=state)
    assert container_info([entry], "verl")["container"]["State"] == {"Status": state, "Running": running}


def test_the_named_container_in_docker_container_infos_shape():
    found = container_info(PS, "verl")
    assert found["exists"] is True
    assert found["container"]["Name"] == "/verl" and found["container"]["Id"] == "a" * 64
    assert found["container"]["Config"] == {"Labels": {"verl.deploy.launch": "1"}, "Image": "quay.io/ascend/verl:a2"}
    assert found["container"]["HostConfig"]["Devices"] == [{"PathOnHost": "/dev/davinci0"}]


@pytest.mark.parametrize("containers", [PS, [], None])
def test_absent(containers):
    assert container_info(containers, "verl-other") == {"exists": False, "container": None}


def test_registered_as_a_filter():
    assert FilterModule().filters() == {"container_info": container_info}
