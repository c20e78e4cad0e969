# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The npu_holders filter: which running containers compete for the NPUs."""
from __future__ import annotations

from ansible_collections.verl.deploy.plugins.filter.npu_holders import FilterModule, npu_holders


def info(name, devices=(), privileged=False, exists=True):
    return {"item": name, "exists": exists, "container": {
        "Name": "/" + name,
        "HostConfig": {"Privileged": privileged, "Devices": [{"PathOnHost": d, "PathInContainer": d} for d in devices] or None},
    } if exists else {}}


def test_names_containers_mapping_a_wanted_device_or_privileged_with_one_open():
    results = [
        info("vllm", ["/dev/davinci3", "/dev/davinci_manager"]),
        info("web"),
        info("old-verl", privileged=True),
        info("other-cards", ["/dev/davinci9"]),
        info("gone", exists=False),
    ]
    # A privileged container holds nothing until one of its processes opens a wanted device.
    assert npu_holders(results, ["/dev/davinci0", "/dev/davinci3"]) == ["vllm"]
    results[2]["container"]["Id"] = "a" * 64
    opened = [{"device": "/dev/davinci0", "pid": 5, "name": "python3", "container_id": "a" * 64}]
    assert npu_holders(results, ["/dev/davinci0", "/dev/davinci3"], holders=opened) == ["vllm", "old-verl"]


def test_nothing_to_check():
    assert npu_holders([], ["/dev/davinci0"]) == []
    assert npu_holders(None, ["/dev/davinci0"]) == []


def test_registered_as_a_filter():
    assert FilterModule().filters()["npu_holders"] is npu_holders
