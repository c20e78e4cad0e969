# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""keep-alive's decision (_keep_alive.decide), one table: the real first lines of failures (their sources in
_failures.SIGNATURES), what came before, and the bound. tests/test_control_script.py runs it from the real supervisor."""
from __future__ import annotations

import pytest

from ansible_collections.verl.deploy.plugins.module_utils import _failures as fl
from ansible_collections.verl.deploy.plugins.module_utils._keep_alive import decide, ray_now, settled

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
# A node that left Ray (fewer NPUs alive than the training's): restarted whatever the logs hold, within the bound; the same
# node count at the same step again gives up; an unknown count (the GCS did not answer) decides on the logs alone.
LEFT = [
    (FOLLOWER, [], "12", (16, 1, 24), True, "a node left the Ray cluster is transient: restart 1 of 3"),
    (None, [], "12", (16, 0, 24), True, "a node left the Ray cluster is transient"),
    # It came back already (a new node alive, its old one dead since the attempt began).
    (FOLLOWER, [], "12", (24, 1, 24), True, "a node left the Ray cluster is transient"),
    (FOLLOWER, [{"decision": "restart", "key": "node_left", "step": "12", "time": NOW - 60}], "12", (16, 1, 24), False,
     "a node left the Ray cluster again at step 12"),
    # Every node alive all along: a worker's own error (the head holds only its follower) is not restarted.
    (FOLLOWER, [], "12", (24, 0, 24), False, "only a follower here"),
    (FOLLOWER, [], "12", None, False, "only a follower here"),
]


@pytest.mark.parametrize("found, history, step, policy, restarted, why, wait", CASES)
def test_keep_alive_decides(found, history, step, policy, restarted, why, wait):
    got = decide(found, history, NOW, step, policy)
    assert got[0] is restarted and why in got[1] and got[2] == wait, got


@pytest.mark.parametrize("found, history, step, npus, restarted, why", LEFT)
def test_a_node_that_left_ray_is_a_transient_cause(found, history, step, npus, restarted, why):
    got = decide(found, history, NOW, step, POLICY, npus)
    assert got[0] is restarted and why in got[1], got
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
    looks, slept = iter([(24, 0, 24), (24, 0, 24), (16, 1, 24)]), []
    assert settled(lambda: next(looks), UNAVAILABLE, sleep=slept.append) == (16, 1, 24) and slept == [5, 5]
    assert decide(UNAVAILABLE, [], NOW, "5", POLICY, (16, 1, 24))[0] is True
    # Every node alive for the whole 30 s: the worker's own error, not a node that left (not restarted).
    slept = []
    assert settled(lambda: (24, 0, 24), UNAVAILABLE, sleep=slept.append) == (24, 0, 24) and sum(slept) == 30
    # A cause of its own, or Ray silent: no wait.
    slept = []
    assert settled(lambda: (24, 0, 24), HCCL, sleep=slept.append) == (24, 0, 24) and slept == []
    assert settled(lambda: None, UNAVAILABLE, sleep=slept.append) is None and slept == []
