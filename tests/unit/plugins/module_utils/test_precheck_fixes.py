# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""Every pre-check refusal whose fix is a setting, with that fix applied (issue 28): the value the refusal names, given,
makes the refusal go away. Refusals whose fix is on the host (a driver, a cable, a mount) say so instead."""
from __future__ import annotations

import re

import pytest

from ansible_collections.verl.deploy.plugins.module_utils import _precheck as pc
from tests.unit.plugins.module_utils.test_precheck import BUSY, LAUNCH, OWN, PIDS, checked, npu

IDLE = "001_info_910ProB-as-910B_8cards_v24.1.0_noproc.txt"
NETWORK = {"network": {"interfaces": ["eth0", "ib0"]}, "device_holders": [], "shm": {"size_kb": 2 ** 22}}


def _head_with_ports(*ports):
    return checked(npu(IDLE, {}), container={"exists": False}, facts=dict(NETWORK, listening_ports=list(ports)))


def _fix_ports(case, text):
    launch = dict(case["launch"])
    for name, value in re.findall(r"(verl_ray_port|verl_ray_dashboard_port)=(\d+)", text.split("Fix:")[1]):
        launch["ray_port" if name == "verl_ray_port" else "dashboard_port"] = int(value)
    return dict(case, launch=launch)


def _fix_hccl(case, text):
    base = re.search(r"HCCL_IF_BASE_PORT: (\d+)\}", text.split("Fix:")[1]).group(1)
    return dict(case, launch=dict(case["launch"], extra_env={"HCCL_IF_BASE_PORT": base}))


def _fix_hccl_range(case, text):
    value = re.search(r'HCCL_HOST_SOCKET_PORT_RANGE: "([\d-]+)"\}', text.split("Fix:")[1]).group(1)
    return dict(case, launch=dict(case["launch"], extra_env={"HCCL_HOST_SOCKET_PORT_RANGE": value}))


def _fix_npus(case, text):
    count = int(re.search(r"at most (\d+) NPUs", text.split("Fix:")[1]).group(1))
    return dict(case, launch=dict(case["launch"], npu_devices=case["launch"]["npu_devices"][:count]))


def _fix_ifname(case, text):
    first = re.search(r"\(([\w.-]+)[,)]", text).group(1)  # "give one of them": the first interface it lists
    return dict(case, launch=dict(case["launch"], socket_ifname=first))


# (rule, the failing case, the words of its refusal, how its fix is applied as a setting)
CASES = [
    (pc.ray_ports_taken, _head_with_ports(6379, 6380), "port(s) 6379 on 10.0.0.1 are in use", _fix_ports),
    (pc.ray_ports_taken, _head_with_ports(8265, 8266, 8267), "port(s) 8265 on 10.0.0.1 are in use", _fix_ports),
    (pc.ray_ports_taken, _head_with_ports(6379, 8265), "port(s) 6379, 8265", _fix_ports),
    (pc.hccl_ports_taken, checked(npu(IDLE, {}), facts=dict(NETWORK, listening_ports=[60003, 60040, 60064])),
     "port(s) 60003 of HCCL's range 60000-60031", _fix_hccl),
    (pc.hccl_ports_taken, checked(npu(IDLE, {}), launch=dict(LAUNCH, extra_env={"HCCL_HOST_SOCKET_PORT_RANGE": "60000-60050"}),
                                  facts=dict(NETWORK, listening_ports=[60050, 60100])),
     "port(s) 60050 of HCCL's host ports (HCCL_HOST_SOCKET_PORT_RANGE=60000-60050)", _fix_hccl_range),
    (pc.host_memory_short, checked(npu(IDLE, {}), facts=dict(NETWORK, listening_ports=[], memory={"available_kb": 20 * 2 ** 20})),
     "this host has 20.0 GiB of memory available (MemAvailable) for its 8 NPU workers", _fix_npus),
    (pc.socket_ifname_unknown, checked(npu(BUSY, dict.fromkeys(PIDS, OWN)), launch=dict(LAUNCH, socket_ifname="ib9"),
                                       facts=dict(NETWORK, listening_ports=[])),
     "verl_socket_ifname=ib9 is not an interface of this host (eth0, ib0)", _fix_ifname),
]


@pytest.mark.parametrize("rule, case, words, fix", CASES)
def test_the_fix_a_refusal_names_makes_it_pass(rule, case, words, fix):
    text = rule(case)
    assert words in text and "Fix:" in text, text
    assert rule(fix(case, text)) == "", text


@pytest.mark.parametrize("rule, change, host_side", [
    (pc.npu_smi_failed, {"npu": {"failed": True, "msg": "dcmi module initialize failed. ret is -8005"}}, "check the Ascend driver"),
    (pc.docker_unanswered, {"docker": {"can_talk_to_docker": False, "msg": "no socket"}}, "start Docker"),
    (pc.no_route_to_the_head, {"route": {"ok": False, "msg": ""}}, "check the network"),
    (pc.small_shm, {"facts": {"shm": {"size_kb": 65536}}}, "enlarge /dev/shm"),
    (pc.npu_address_not_hccn_conf, {"launch": dict(LAUNCH, nnodes=2), "facts": {"hccn": {
        "devices": {"0": {"address": "29.1.0.0", "netmask": "255.255.0.0"}}, "conf": {"0": "29.1.7.0"}}}}, "give each NPU the file's address"),
])
def test_a_refusal_whose_fix_is_on_the_host_says_what_to_do_there(rule, change, host_side):
    """No setting makes these go away: the host must change, and the refusal says how."""
    text = rule(dict(checked(npu(BUSY, dict.fromkeys(PIDS, OWN))), **change))
    assert "Fix: " + host_side in text or host_side in text.split("Fix:")[1], text
