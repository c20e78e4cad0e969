"""status.yml's reading of the NPU samplers' lines (_npu_telemetry): each node's use over its last samples, and the node
whose NPUs idle while the others work. The records are those roles/training/files/npu_sampler.py writes."""
from __future__ import annotations

import json

import pytest

from ansible_collections.verl.deploy.plugins.module_utils._control_step import status_answer
from ansible_collections.verl.deploy.plugins.module_utils._npu_telemetry import idle_nodes, node_use, use_lines

NOW = 1700000100


def sample(at, aicore, hbm=30000, temp=45, power=90.0, health="OK", chips=2, every=30):
    """A sampler's record at NOW - at: `chips` A2 chips, each at aicore %."""
    npus = [{"id": str(i), "hbm_used_mb": hbm, "hbm_total_mb": 65536, "aicore_pct": aicore, "temp_c": temp + i, "health": health,
             "power_w": power} for i in range(chips)]
    return {"time": NOW - at, "node": "n", "every": every, "processes": chips, "npus": npus}


def use(*records, clock=NOW):
    return node_use(list(records), clock)


def test_the_answers_lines_are_read_and_a_damaged_one_skipped():
    lines = "\n".join([json.dumps(sample(60, 10)), '{"time": 17000', "not json", json.dumps({"time": "x"}), json.dumps(sample(30, 20))])
    assert [record["npus"][0]["aicore_pct"] for record in status_answer({"npu_samples": lines})[1]["npu_samples"]] == [10, 20]
    assert status_answer({})[1]["npu_samples"] == []


@pytest.mark.parametrize("records, clock, expected", [
    ([], NOW, None),
    ([sample(60, 10), sample(30, 30)], NOW,
     {"aicore_pct": 20.0, "hbm_used_gb": 58.6, "hbm_total_gb": 128.0, "temp_max_c": 46, "power_w": 180.0, "samples": 2,
      "age": 30, "recent": True, "unhealthy": [], "error": None}),
    # Old samples (a training that ended, a sampler that stopped): shown, not recent.
    ([sample(400, 10)], NOW, {"age": 400, "recent": False}),
    # The floor: a short interval's samples are recent for 90 s.
    ([sample(80, 10, every=10)], NOW, {"recent": True}),
    ([sample(10, 10)], None, {"age": None, "recent": False}),
    ([sample(10, 0, health="Alarm", chips=1)], NOW, {"unhealthy": ["0 (Alarm)"], "aicore_pct": 0.0}),
    # The newest record an error: its words, and the figures of the samples before it.
    ([sample(60, 10), {"time": NOW - 5, "node": "n", "every": 30, "error": "npu-smi failed with dcmi error -8005\x1b[2J"}], NOW,
     {"error": "npu-smi failed with dcmi error -8005\\x1b[2J", "aicore_pct": 10.0, "age": 5, "samples": 1}),
    ([{"time": NOW - 5, "node": "n", "every": 30, "error": "npu-smi not found"}], NOW,
     {"error": "npu-smi not found", "aicore_pct": None, "samples": 0}),
    # The sampler's SwanLab charts went off (its SDK's words, written once after that sample): the figures stay.
    ([sample(60, 10), {"time": NOW - 60, "node": "n", "every": 30, "swanlab": "ModuleNotFoundError: No module named 'swanlab'"},
      sample(30, 30)], NOW, {"swanlab": "ModuleNotFoundError: No module named 'swanlab'", "aicore_pct": 20.0, "samples": 2,
                             "error": None}),
], ids=["none", "two-samples", "old", "short-interval", "no-clock", "unhealthy", "error-after-samples", "error-only", "swanlab-off"])
def test_a_nodes_use(records, clock, expected):
    found = node_use(records, clock)
    if expected is None:
        assert found is None
        return
    assert {key: found[key] for key in expected} == expected


@pytest.mark.parametrize("aicores, idle", [
    ({"a": 40, "b": 38, "c": 41}, []),
    ({"a": 40, "b": 2, "c": 41}, [("b", 2.0, 40.5)]),
    # A rollout's decoding: low figures everywhere, one node lower still.
    ({"a": 8, "b": 7, "c": 1}, [("c", 1.0, 7.5)]),
    # Nobody works: nobody is named.
    ({"a": 2, "b": 0, "c": 1}, []),
    ({"a": 40, "b": 0}, [("b", 0.0, 40.0)]),
    ({"a": 40}, []),
    ({"a": 40, "b": 9}, []),
])
def test_the_node_idle_while_the_others_work(aicores, idle):
    assert idle_nodes({node: use(sample(20, pct)) for node, pct in aicores.items()}) == idle


def test_only_recent_samples_count_for_idle():
    uses = {"a": use(sample(20, 40)), "b": use(sample(900, 0)), "c": use(sample(20, 38)), "d": None}
    assert idle_nodes(uses) == []


def test_the_status_lines():
    uses = {"h": use(sample(60, 40), sample(30, 42), {"time": NOW - 30, "node": "h", "swanlab": "RuntimeError: refused"}),
            "w1": use(sample(20, 1)), "w2": use(sample(700, 30)), "w3": None,
            "w4": use({"time": NOW - 3, "node": "w4", "every": 30, "error": "npu-smi not found in the container"})}
    lines = use_lines(uses, running=True)
    assert lines == [
        "NPU use (each node's last samples, verl_npu_sample_seconds):",
        "  h: AICore 41 % mean, HBM 58.6/128 GB, max 46 C, 180 W; 2 sample(s), newest 30 s ago; SwanLab charts off: "
        "RuntimeError: refused",
        "  w1: AICore 1 % mean, HBM 58.6/128 GB, max 46 C, 180 W; 1 sample(s), newest 20 s ago",
        "  w2: AICore 30 % mean, HBM 58.6/128 GB, max 46 C, 180 W; 1 sample(s), newest 700 s ago (not recent)",
        "  w3: no sample (its sampler has written none: it starts with Ray, and samples while the training holds the NPUs)",
        "  w4: the sampler's npu-smi failed 3 s ago: npu-smi not found in the container",
        "NPUs IDLE on w1: AICore 1 % while the other nodes average 41 %: its workers wait on the others (unbalanced work, or a "
        "slow link: check its HCCN links with hccn_tool, and its log lines)",
        "NPUs not sampled recently on w2, w3 while the training runs (on h, w1, w4 they are): no process of the training holds "
        "them, or the sampler there stopped (it starts with this node's Ray)",
    ]
    # A training that does not run: the figures only, no node named.
    assert use_lines(uses, running=False) == lines[:6]
    assert use_lines({"h": None, "w1": None}, running=True) == []
