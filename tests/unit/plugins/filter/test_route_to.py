"""verl.deploy.route_to and container_info: what the checks read out of node_facts' result."""
from __future__ import annotations

import pytest

from ansible_collections.verl.deploy.plugins.filter.container_info import container_info
from ansible_collections.verl.deploy.plugins.filter.npu_holders import npu_holders
from ansible_collections.verl.deploy.plugins.filter.route_to import route_to

NETWORK = {
    "addresses": {"eth0": [{"address": "172.19.0.3", "prefixlen": 16}]},
    "routes": [{"dest": "172.19.0.0/16", "via": None, "dev": "eth0", "src": "172.19.0.3", "metric": 0, "type": "unicast"}],
    "head_route": {"target": "head.example", "address": "10.1.1.1", "ok": True, "dev": "ib0", "src": "10.1.1.5", "via": None,
                   "how": "ip route get"},
}


@pytest.mark.parametrize("target, ok, dev, how", [
    ("head.example", True, "ib0", "ip route get"),   # the host answered for this name: its answer counts
    ("10.1.1.1", True, "ib0", "ip route get"),       # ... and for the address it resolved to
    ("172.19.0.9", True, "eth0", "table"),           # known only later: from the table
    ("10.9.9.9", False, None, "table"),
    ("other.example", None, None, "table"),           # a name the host was not asked about: ask it (checks.yml does)
])
def test_route_to(target, ok, dev, how):
    route = route_to(NETWORK, target)
    assert (route["ok"], route["dev"], route["how"], route["target"]) == (ok, dev, how, target)


def test_route_to_without_a_measured_route():
    assert route_to({"routes": NETWORK["routes"], "addresses": NETWORK["addresses"], "head_route": {"ok": None}}, "172.19.0.3")["dev"] == "lo"
    assert route_to({}, "172.19.0.3")["ok"] is False


CONTAINERS = [
    {"Id": "1", "Names": ["/verl"], "State": "running", "Labels": {}, "HostConfig": {"Devices": [{"PathOnHost": "/dev/davinci0"}]}},
    {"Id": "2", "Names": ["/vllm"], "State": "running", "Labels": {}, "HostConfig": {"Devices": [{"PathOnHost": "/dev/davinci0"}]}},
    {"Id": "3", "Names": ["/gone"], "State": "exited", "Labels": {}, "HostConfig": {"Devices": [], "Privileged": False}},
]


def test_npu_holders_reads_node_facts_containers_and_leaves_out_the_training_container():
    assert npu_holders(CONTAINERS, ["/dev/davinci0"], "verl") == ["vllm"]
    assert npu_holders([], ["/dev/davinci0"], "verl") == []


def test_container_info():
    assert container_info(CONTAINERS, "verl")["container"]["State"]["Running"] is True
    assert container_info(None, "verl") == {"exists": False, "container": None}
