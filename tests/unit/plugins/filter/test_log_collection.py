# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The log_collection filter: what logs.yml got from each node, one line per node, also for the nodes that
did not answer or failed (a node never silently missing from the report)."""
from __future__ import annotations

from ansible_collections.verl.deploy.plugins.filter.log_collection import FilterModule, log_collection, node_collection

PONG = {"ping": "pong"}
BUNDLE = {"files": [{"name": "verl_qwen3_8b_1.log", "truncated": True}, {"name": "ray/session_latest/logs/raylet.out"}],
          "missing": [{"name": "start_verl.out", "why": "no such file"}], "container_state": "running"}


def test_every_node_named_whatever_happened():
    nodes = {
        "head": {"__day2_logs_ping": PONG, "__day2_logs_bundle": BUNDLE},
        "w1": {"__day2_logs_ping": {"unreachable": True, "msg": "ssh: connect to host 10.0.0.2 port 22: No route to host"},
               "ansible_host": "10.0.0.2", "ansible_user": "ops"},
        "w2": {"__day2_logs_ping": PONG, "_day2_logs_error": "tar: /var/log/verl: Cannot open: Permission denied"},
    }
    report = log_collection(["head", "w1", "w2"], nodes, 50)
    assert report["head"]["state"] == "collected"
    assert report["head"]["summary"] == ("head: 2 file(s), 1 cut to their last 50 MB; container running; not found: start_verl.out")
    assert report["head"]["truncated"] == ["verl_qwen3_8b_1.log"]
    reason = ("the node did not answer: 10.0.0.2 port 22 cannot be reached (ssh: connect to host 10.0.0.2 port 22: No route to host): "
              "the node is down, or a firewall or a wrong address is in the way. Fix: check that the node is up and its address "
              "(ansible_host, now 10.0.0.2) and port (ansible_port, now 22): `ssh -p 22 ops@10.0.0.2 true` must log in")
    assert report["w1"] == {"state": "unreachable", "reason": reason, "summary": "w1: NOT COLLECTED: " + reason}
    assert report["w2"]["state"] == "failed" and "Permission denied" in report["w2"]["summary"]


def test_a_node_with_no_result_at_all_is_unreachable():
    assert node_collection("w3", {}, 50)["state"] == "unreachable"


def test_an_answer_without_a_bundle_is_a_failure():
    found = node_collection("w4", {"__day2_logs_ping": PONG, "__day2_logs_bundle": {}}, 50)
    assert found["state"] == "failed" and found["reason"] == "the collection failed: nothing was packed"


def test_a_long_ssh_error_is_cut():
    found = node_collection("w5", {"__day2_logs_ping": {"msg": "x" * 5000}}, 50)
    assert len(found["reason"]) < 600  # the message cut to 200 characters, then the fix


def test_registered_as_a_filter():
    assert FilterModule().filters() == {"log_collection": log_collection}
