"""Issue 28's variant matrix, the node rules' share: real setups with the verdict each must get from the pre-check,
and for every refusal the fix it names, applied, making the refusal go away.

Privileged agents: Ascend's npu-exporter and similar monitoring agents run privileged and open no /dev/davinciN
(they read the NPUs through the driver's management device); a serving container (vLLM, MindIE) given or opening
the devices does hold them. The prerequisite: community.docker 4.x's API modules list `requests` as their one
Python requirement on the node and fail with ansible-core's "Failed to import the required Python library
(requests) on <host>'s Python <interpreter>" without it.
"""
from __future__ import annotations

import copy

import pytest

from ansible_collections.verl.deploy.plugins.module_utils import _precheck as pc

OWN, EXPORTER, VLLM = "a" * 64, "e" * 64, "b" * 64
LAUNCH = {"container_name": "verl", "npu_devices": [0, 1, 2, 3], "npu_devices_csv": "0,1,2,3",
          "container": {"devices": ["/dev/davinci%d" % d for d in range(4)] + ["/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc"]}}


def container(cid, name, privileged=False, devices=()):
    return {"Id": cid, "Names": ["/" + name], "State": "running", "Labels": {},
            "HostConfig": {"Privileged": privileged, "Devices": [{"PathOnHost": d} for d in devices]}}


def node(containers=(), holders=(), missing=()):
    return {"launch": copy.deepcopy(LAUNCH), "npu": {"failed": True}, "docker": {"containers": list(containers)},
            "facts": {"device_holders": list(holders),
                      "python": {"executable": "/usr/bin/python3", "version": "3.9.9", "missing": list(missing)}}}


def opened(cid, device, pid=4242, name="python3"):
    return {"device": device, "pid": pid, "name": name, "container_id": cid}


def verdict(checked):
    problems = [rule(checked) for rule in (pc.containers_holding_the_npus, pc.node_python_lacks)]
    warnings = [rule(checked) for rule in (pc.idle_privileged_containers, pc.devices_open_outside)]
    return [p for p in problems if p], [w for w in warnings if w]


def leave_out(checked, npus):
    launch = checked["launch"]
    launch["npu_devices"] = [d for d in launch["npu_devices"] if d not in npus]
    launch["container"]["devices"] = ["/dev/davinci%d" % d for d in launch["npu_devices"]] + launch["container"]["devices"][-3:]
    return checked


def stop(checked, name):
    checked["docker"]["containers"] = [c for c in checked["docker"]["containers"] if c["Names"] != ["/" + name]]
    stopped = {c["Id"] for c in node()["docker"]["containers"]}
    checked["facts"]["device_holders"] = [h for h in checked["facts"]["device_holders"] if h["container_id"] not in stopped]
    return checked


def install(checked):
    checked["facts"]["python"]["missing"] = []
    return checked


# (setup, the node as read, refused?, warned?, the words of the verdict, the fix applied).
MATRIX = [
    ("a privileged npu-exporter that opens no NPU", node([container(OWN, "verl"), container(EXPORTER, "npu-exporter", True)]),
     False, True, "privileged container(s) npu-exporter run here", None),
    ("the deploy's own privileged training container holding its NPUs", node([container(OWN, "verl", True)], [opened(OWN, "/dev/davinci0")]),
     False, False, "", None),
    ("a privileged container whose vLLM has NPU 2 open", node([container(VLLM, "vllm", True)], [opened(VLLM, "/dev/davinci2")]),
     True, False, "container vllm (privileged) has /dev/davinci2 open (pid 4242 (python3))",
     lambda c: leave_out(c, [2])),
    ("the same, stopped", node([container(VLLM, "vllm", True)], [opened(VLLM, "/dev/davinci2")]),
     True, False, "docker stop vllm, or have it not open /dev/davinci2 (it is privileged: it sees every NPU)",
     lambda c: stop(c, "vllm")),
    ("a container given NPUs 1 and 3 (--device)", node([container(VLLM, "mindie", devices=["/dev/davinci1", "/dev/davinci3"])]),
     True, False, "container mindie was given /dev/davinci1, /dev/davinci3 (--device)", lambda c: leave_out(c, [1, 3])),
    ("a container given NPUs this deploy does not use", node([container(VLLM, "mindie", devices=["/dev/davinci6"])]),
     False, False, "", None),
    ("a privileged agent with another NPU open", node([container(EXPORTER, "probe", True)], [opened(EXPORTER, "/dev/davinci7")]),
     False, False, "", None),
    ("a node whose Python lacks requests", node(missing=["requests"]),
     True, False, "(/usr/bin/python3, 3.9.9) cannot import requests", install),
]


@pytest.mark.parametrize("setup, checked, refused, warned, words, fix", MATRIX, ids=[row[0] for row in MATRIX])
def test_the_verdict_of_each_setup_and_its_fix(setup, checked, refused, warned, words, fix):
    problems, warnings = verdict(checked)
    assert bool(problems) is refused, (setup, problems)
    assert bool(warnings) is warned, (setup, warnings)
    if words:
        assert words in " ".join(problems + warnings), (setup, problems, warnings)
    if refused:
        assert len(problems) == 1, "one refusal per cause"
        assert "Fix: " in problems[0]
        assert verdict(fix(checked))[0] == [], (setup, "the fix applied must pass")


def test_the_prerequisite_refusal_names_the_interpreter_the_package_and_the_install_command():
    text = pc.node_python_lacks(node(missing=["requests"]))
    assert "Failed to import the required Python library (requests)" in text
    assert "apt-get install -y python3-requests" in text and "/usr/bin/python3 -m pip install requests" in text
    assert "ansible_python_interpreter" in text
