"""check.yml's verdict: from what each node's check left to the report and the machine-readable verdict."""
from __future__ import annotations

import pytest

from ansible_collections.verl.deploy.plugins.module_utils._readiness import check_nodes, check_verdict


def node(name, answered=True, problem=""):
    return {"name": name, "answered": answered, "problem": problem}


@pytest.mark.parametrize("nodes, ready, counts, lines", [
    ([node("n1"), node("n2")], True, (2, 0, 0),
     ["READY: 2 of 2 node(s) ready to deploy to; nothing was changed on any node.", "ready: n1 (head), n2"]),
    ([node("n2", problem="n2: verl_npu_devices=0,1 has 2 NPUs. Fix: ..."), node("n1")], False, (1, 1, 0),
     ["NOT READY: 1 of 2 node(s) ready to deploy to (1 not ready); nothing was changed on any node.", "ready: n1 (head)",
      "n2: NOT READY: verl_npu_devices=0,1 has 2 NPUs. Fix: ..."]),
    ([node("n1", answered=False), node("n2")], False, (1, 0, 1),
     ["NOT READY: 1 of 2 node(s) ready to deploy to (1 did not answer); nothing was changed on any node.", "ready: n2",
      "n1 (head): DID NOT ANSWER: the node did not answer (unreachable, or its SSH login failed), so nothing on it was checked"]),
    ([], False, (0, 0, 0), ["NOT READY: 0 of 0 node(s) ready to deploy to; nothing was changed on any node."]),
], ids=["all-ready", "one-refused-head-first", "head-unreachable", "no-node"])
def test_the_verdict_and_its_report(nodes, ready, counts, lines):
    verdict = check_verdict(nodes, head="n1")
    assert verdict["ready"] is ready
    assert tuple(verdict["counts"].values()) == counts
    assert verdict["lines"] == lines
    assert list(verdict["nodes"])[:1] == (["n1"] if any(n["name"] == "n1" for n in nodes) else [])


def test_a_large_cluster_reports_its_ready_nodes_in_one_line():
    verdict = check_verdict([node("n%03d" % i) for i in range(128)], head="n000")
    assert len(verdict["lines"]) == 2 and verdict["lines"][1].endswith("and 120 more")


def test_the_nodes_read_from_hostvars():
    hostvars = {"a": {"__verl_check_answered": True}, "b": {"__verl_check_problem": "b: refused"}, "c": {}}
    assert check_nodes(["a", "b", "c"], hostvars) == [node("a"), node("b", problem="b: refused"), node("c", answered=False)]
