# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""keep-alive's decision (_keep_alive.decide), one table: the real first lines of failures (their sources in
_failures.SIGNATURES), what came before, and the bound. tests/test_control_script.py runs it from the real supervisor."""
from __future__ import annotations

import sys
import time

import pytest

from ansible_collections.verl.deploy.plugins.module_utils import _failures as fl
from ansible_collections.verl.deploy.plugins.module_utils._keep_alive import decide, node_names, ray_now, settled

NOW = 1_800_000_000.0
POLICY = {"max": 3, "window": 3600, "wait": 60}


def first(line, node="node1"):
    return fl.first_failure({node: fl.events(node, "training log", [line])})["first"]


HCCL = first("EI0006: Getting socket times out. Reason: Remote Rank did not send the data in time")  # vllm-ascend#1955
NOTIFY = first("EI0002: The wait execution of the Notify register times out.")  # vllm-ascend#1443
LOST = first("Device_Absent/Abnormal(EL0001): Device not found or invalid. Device[1] lost heartbeat.")  # vllm-ascend#8186
NPU_OOM = first("RuntimeError: NPU out of memory. Tried to allocate 22.00 MiB (NPU 0; 60.97 GiB total capacity)")  # vllm-ascend#1127
IMPORT = first("ModuleNotFoundError: No module named 'vllm_ascend.distributed'")  # vllm-ascend#1209
FOLLOWER = first("ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.")  # verl#2189


def restart(found, step, ago=60, node="node1"):
    return {"decision": "restart", "key": found["key"], "step": step, "time": NOW - ago, "node": node,
            "node_fault": found["node_fault"]}


CASES = [
    # (what failed, earlier decisions, step, policy, restarted, why (a part), wait)
    (HCCL, [], "12", POLICY, True, "HCCL connection timeout is transient: restart 1 of 3 within 3600 s", 60),
    (NOTIFY, [restart(HCCL, "5")], "12", POLICY, True, "restart 2 of 3", 120),
    (HCCL, [restart(HCCL, "5"), restart(NOTIFY, "9")], "12", POLICY, True, "restart 3 of 3", 240),
    # Restarts older than the window are not counted.
    (HCCL, [restart(HCCL, "5", ago=7200)] * 3, "12", POLICY, True, "restart 1 of 3", 60),
    (HCCL, [restart(HCCL, "5"), restart(NOTIFY, "9"), restart(HCCL, "11")], "12", POLICY, False,
     "3 restart(s) within the last 3600 s already (verl_keep_alive=3, verl_keep_alive_window=3600)", 0),
    (HCCL, [restart(HCCL, "12")], "12", POLICY, False, "HCCL connection timeout again at step 12, as before the last restart", 0),
    (NPU_OOM, [], "12", POLICY, False, "NPU out of memory is deterministic: a restart repeats it", 0),
    (IMPORT, [], "0", POLICY, False, "import or missing symbol is deterministic", 0),
    (FOLLOWER, [], "12", POLICY, False, "only a follower here (Ray actor died): the first failure is on another node", 0),
    (None, [], "12", POLICY, False, "no line of the failure table in this node's logs", 0),
    (HCCL, [], "12", dict(POLICY, max=0), False, "keep-alive is off (verl_keep_alive=0)", 0),
    # A node's own fault (its chip) a second time in the window: that node is named, not retried; once is retried.
    (LOST, [restart(LOST, "5")], "12", POLICY, False, "NPU lost on node1 a second time within 3600 s: take that node out", 0),
    (LOST, [restart(LOST, "5", node="node2")], "12", POLICY, True, "restart 2 of 3", 120),
    # The wait doubles, up to its bound.
    (HCCL, [restart(NOTIFY, str(step)) for step in range(8)], "99", dict(POLICY, max=20, wait=600), True, "restart 9 of 20", 1800),
]


# A node that left Ray (fewer NPUs alive than the training's, or one listed dead, by inventory name): restarted whatever the
# logs hold, within the bound; the same failure at the same step again gives up; an unknown count (the GCS did not answer)
# decides on the logs alone. The same node leaving twice in the window is named, with the inventory change to make.
def left(*nodes, ago=60, step="5"):
    return {"decision": "restart", "key": "node_left", "step": step, "time": NOW - ago, "node": ", ".join(nodes), "left": list(nodes)}


TAKE_OUT = "take that node out (remove it from the inventory's ray_head or ray_workers group, or fix it), then run deploy.yml"
LEFT = [
    (FOLLOWER, [], "12", (16, ["node2"], 24), True, "a node left the Ray cluster is transient: restart 1 of 3"),
    (None, [], "12", (16, [], 24), True, "a node left the Ray cluster is transient"),
    # It came back already (a new node alive, its old one dead since the attempt began).
    (FOLLOWER, [], "12", (24, ["node2"], 24), True, "a node left the Ray cluster is transient"),
    (FOLLOWER, [{"decision": "restart", "key": "node_left", "step": "12", "time": NOW - 60}], "12", (16, ["node2"], 24), False,
     "a node left the Ray cluster again at step 12"),
    # Every node alive all along: a worker's own error (the head holds only its follower) is not restarted.
    (FOLLOWER, [], "12", (24, [], 24), False, "only a follower here"),
    (FOLLOWER, [], "12", None, False, "only a follower here"),
    # The same node twice in the window: named, not retried (also at the same step); another node, or the first time
    # longer ago than the window, is retried; an IP stands for a node the head has no inventory name of.
    (FOLLOWER, [left("node2")], "12", (16, ["node2"], 24), False, "node2 left the Ray cluster a second time within 3600 s: " + TAKE_OUT),
    (FOLLOWER, [left("node2", step="12")], "12", (16, ["node2"], 24), False, "node2 left the Ray cluster a second time"),
    (FOLLOWER, [left("node3")], "12", (16, ["node2"], 24), True, "restart 2 of 3"),
    (FOLLOWER, [left("node2", ago=7200)], "12", (16, ["node2"], 24), True, "restart 1 of 3"),
    (HCCL, [left("node2", "10.0.0.4")], "12", (8, ["10.0.0.4", "node3"], 24), False, "10.0.0.4 left the Ray cluster a second time"),
    # A node's own fault earlier is not a node that left.
    (FOLLOWER, [restart(LOST, "5", node="node2")], "12", (16, ["node2"], 24), True, "restart 2 of 3"),
]


@pytest.mark.parametrize("found, history, step, policy, restarted, why, wait", CASES)
def test_keep_alive_decides(found, history, step, policy, restarted, why, wait):
    got = decide(found, history, NOW, step, policy)
    assert got[0] is restarted and why in got[1] and got[2] == wait, got


@pytest.mark.parametrize("found, history, step, npus, restarted, why", LEFT)
def test_a_node_that_left_ray_is_a_transient_cause(found, history, step, npus, restarted, why):
    got = decide(found, history, NOW, step, POLICY, npus)
    assert got[0] is restarted and why in got[1], got
    if npus and npus[1]:  # the record keeps the nodes by name, for the next decision and status
        assert got[3]["left"] == npus[1] and got[3]["node"] == ", ".join(npus[1]) and ", ".join(npus[1]) in got[3]["line"]
    assert ray_now("", 0, 24) is None and ray_now("127.0.0.1:1", 0, 24) is None  # no GCS, or no Ray here: nothing known


def test_the_table_marks_which_failures_are_a_nodes_own():
    assert {row["key"] for row in fl.SIGNATURES if row["node_fault"]} == {"npu_lost", "npu_health", "host_oom_kernel", "host_oom_ray"}
    assert all(row["transient"] for row in fl.SIGNATURES if row["node_fault"])


# Ray 2.60's words when a worker's node went away (the simulated cluster, a worker restarted): a follower.
UNAVAILABLE = first("ray.exceptions.ActorUnavailableError: The actor 7b4e130558fd153b9d8a89d001000000 is unavailable: The actor is "
                    "temporarily unavailable: RpcError: RPC error: Socket closed rpc_code: 14. The task may or may not have been "
                    "executed on the actor.")


def test_while_only_followers_are_known_keep_alive_waits_for_ray_to_list_the_node_dead():
    assert UNAVAILABLE["key"] == "actor_died" and UNAVAILABLE["only_followers"]
    looks, slept = iter([(24, [], 24), (24, [], 24), (16, ["node2"], 24)]), []
    assert settled(lambda: next(looks), UNAVAILABLE, sleep=slept.append) == (16, ["node2"], 24) and slept == [5, 5]
    assert decide(UNAVAILABLE, [], NOW, "5", POLICY, (16, ["node2"], 24))[0] is True
    # Every node alive for the whole 30 s: the worker's own error, not a node that left (not restarted).
    slept = []
    assert settled(lambda: (24, [], 24), UNAVAILABLE, sleep=slept.append) == (24, [], 24) and sum(slept) == 30
    # A cause of its own, or Ray silent: no wait.
    slept = []
    assert settled(lambda: (24, [], 24), HCCL, sleep=slept.append) == (24, [], 24) and slept == []
    assert settled(lambda: None, UNAVAILABLE, sleep=slept.append) is None and slept == []


@pytest.mark.parametrize("keep_alive, seconds", [("0", 0), ("3", 30)])
def test_with_keep_alive_off_the_decision_does_not_wait_for_rays_view(tmp_path, monkeypatch, capsys, keep_alive, seconds):
    """Off, nothing is started again: the decision (which status and the deploy wait for) reads Ray's view once."""
    from ansible_collections.verl.deploy.plugins.module_utils import _keep_alive as ka
    waited = []
    monkeypatch.setattr(ka, "settled", lambda look, first, seconds=30: waited.append(seconds))
    log = tmp_path / "train.log"
    log.write_text("ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n")
    argv = ["_keep_alive.py", "decide", str(tmp_path), str(log), str(tmp_path / "ray"), str(tmp_path / "ckpts"), "node1", "137"]
    assert ka.main(argv, {"KEEP_ALIVE": keep_alive, "KEEP_ALIVE_WINDOW": "3600", "KEEP_ALIVE_WAIT": "60"}) == 0
    assert waited == [seconds] and capsys.readouterr().out.startswith("give-up 0")


class _Node:  # a GcsNodeInfo as Ray's GcsClient.get_all_node_info() answers it: the fields ray_now reads
    def __init__(self, ip, state, npus, end=0):
        self.node_manager_address, self.state, self.resources_total, self.end_time_ms = ip, state, {"NPU": npus}, end


def test_ray_now_names_the_nodes_ray_lists_dead_since_the_attempt_began(monkeypatch):
    """Ray's node IPs, mapped to inventory names (verl_control.env's RAY_NAMES); a node dead before the attempt is not counted,
    one that left twice is named once; an IP the head has no name of stays an IP."""
    alive, dead = 0, 1
    nodes = {1: _Node("10.0.0.1", alive, 8), 2: _Node("10.0.0.2", dead, 8, end=2_000_000), 3: _Node("10.0.0.2", dead, 8, end=3_000_000),
             4: _Node("10.0.0.2", alive, 8), 5: _Node("10.0.0.3", dead, 8, end=500_000), 6: _Node("10.0.0.9", dead, 8, end=2_500_000)}
    raylet = type(sys)("ray._raylet")
    raylet.GcsClient = lambda address: type("Gcs", (), {"get_all_node_info": lambda self, timeout: nodes})()
    generated = type(sys)("ray.core.generated")
    generated.gcs_pb2 = type("gcs_pb2", (), {"GcsNodeInfo": type("GcsNodeInfo", (), {"ALIVE": alive, "DEAD": dead})})
    for name, module in (("ray", type(sys)("ray")), ("ray._raylet", raylet), ("ray.core", type(sys)("ray.core")),
                         ("ray.core.generated", generated)):
        monkeypatch.setitem(sys.modules, name, module)
    names = node_names("10.0.0.1=node1,10.0.0.2=node2,10.0.0.3=node3")
    assert names == {"10.0.0.1": "node1", "10.0.0.2": "node2", "10.0.0.3": "node3"} and node_names("") == {}
    assert ray_now("10.0.0.1:6379", 1000, 24, names) == (16, ["node2", "10.0.0.9"], 24)


def test_status_names_the_nodes_that_left_ray():
    """status' keep-alive line and verl_status.keep_alive (its stats): which nodes left Ray, how often; the give-up names
    the node to take out."""
    from ansible_collections.verl.deploy.plugins.module_utils._training_state import keep_alive_summary
    first_left = dict(left("node2"), resume_from="4", **{"class": "a node left the Ray cluster"})
    again = decide(FOLLOWER, [first_left], NOW, "9", POLICY, (16, ["node2"], 24))
    give_up = {"decision": "give-up", "why": again[1], "exit_code": "1", "left": again[3]["left"], "node": again[3]["node"]}
    lines, stats = keep_alive_summary({"keep_alive": [first_left, give_up]})
    assert "a node left the Ray cluster at step 5 (node2), resumed from step 4; left Ray: node2 (2x)" in lines[0]
    # The record's time is time.time()'s, a float: shown as a time (it read "an unknown time" on CI).
    assert lines[0].startswith("keep-alive: 1 restart(s); the last at %s: " % time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(NOW - 60)))
    assert lines[1].startswith("keep-alive: not restarted after exit code 1: node2 left the Ray cluster a second time")
    assert stats["left"] == {"node2": 2} and stats["restarts"] == 1
