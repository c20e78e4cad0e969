# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""Every node's settings checked on the controller before any node is contacted (check_inventory):
the same checks as one host's, one line per distinct problem with the hosts it concerns, the rule
across nodes, and nothing required that only a node's facts could give."""
from __future__ import annotations

from ansible_collections.verl.deploy.plugins.module_utils._launch_config import check_inventory
from helpers.launch_helpers import RULES, SPEC, settings

HEAD = {"name": "n0", "ansible_host": "10.0.0.1"}


def nodes(count, **overrides):
    return {"n%d" % i: {"settings": settings(**overrides)} for i in range(count)}


def test_usable_settings_give_no_problem():
    assert check_inventory(nodes(4), SPEC, RULES, HEAD) == []


def test_a_problem_of_every_node_is_one_line_naming_the_variable_value_and_fix():
    problems = check_inventory(nodes(4, verl_train_tp="3"), SPEC, RULES, HEAD)
    # Before any node is read the model's heads are unknown (config.json is read by the pre-check): TP 3 x PP 2 does not
    # divide the 32 NPUs; one refusal for the one cause (not also the NPUs-per-node rule, nor the rollout's replicas).
    assert [p["variable"] for p in problems] == ["verl_train_tp"], problems
    heads = problems
    assert not [p for p in problems if "attention heads" in p["msg"]]
    assert len(heads) == 1 and heads[0]["hosts"] == ["n0", "n1", "n2", "n3"] and heads[0]["value"] == 3
    assert heads[0]["text"].startswith("- every node: The cluster has 32 NPUs (4 node(s) x 8), which is not divisible by "
                                       "verl_train_tp x verl_train_pp = 3 x 2 = 6.") and "Fix:" in heads[0]["text"]


def test_a_host_that_differs_is_named_alone():
    hosts = nodes(4)
    hosts["n2"]["settings"]["verl_ckpts_dir"] = "ckpt"
    problems = check_inventory(hosts, SPEC, RULES, HEAD)
    assert [(p["variable"], p["hosts"]) for p in problems] == [("verl_ckpts_dir", ["n2"])]
    assert problems[0]["text"].startswith("- n2: verl_ckpts_dir=")


def test_nodes_with_different_numbers_of_npus_are_refused_grouped_by_count():
    hosts = nodes(12)
    for name in ("n3", "n7"):
        hosts[name]["settings"]["verl_npu_devices"] = "0,1,2,3"
    problems = [p for p in check_inventory(hosts, SPEC, RULES, HEAD) if p["variable"] == "verl_npu_devices"]
    assert len(problems) == 1 and problems[0]["text"].startswith("- every node: Every node must train on the same number")
    assert "gives 8 NPUs on n0, n1, n2, n4, n5, n6, n8, n9 and 2 more; 4 NPUs on n3, n7." in problems[0]["msg"]


def test_the_heads_address_may_wait_for_its_facts_but_a_bad_one_is_refused():
    hosts = nodes(2, verl_master_addr="")
    assert check_inventory(hosts, SPEC, RULES, {"name": "n0"}) == []
    problems = check_inventory(hosts, SPEC, RULES, {"name": "n0", "ansible_host": "not an address"})
    assert [p["variable"] for p in problems] == ["verl_master_addr"] and problems[0]["text"].startswith("- every node:")


def test_a_login_mode_without_a_key_and_a_key_lookalike_are_refused():
    hosts = nodes(2, verl_swanlab_enabled="true", verl_swanlab_mode="cloud", verl_swanlab_host="http://192.168.1.100:8000")
    hosts["n1"]["unknown"] = ["verl_swanlab_apikey"]
    problems = {p["variable"]: p["hosts"] for p in check_inventory(hosts, SPEC, RULES, HEAD)}
    assert problems == {"verl_swanlab_api_key": ["n0", "n1"], "verl_swanlab_apikey": ["n1"]}
    hosts["n0"]["api_key_set"] = hosts["n1"]["api_key_set"] = True
    assert [p["variable"] for p in check_inventory(hosts, SPEC, RULES, HEAD)] == ["verl_swanlab_apikey"]


def test_the_mask_and_a_deferred_host():
    hosts = nodes(2)
    hosts["n0"]["mask"] = "10100"
    hosts["n1"] = {"settings": {"verl_train_tp": "x"}, "deferred": True}
    problems = check_inventory(hosts, SPEC, RULES, HEAD)
    assert [(p["hosts"], p["msg"][:30]) for p in problems] == [(["n0"], problems[0]["msg"][:30])]
    assert "10100" in problems[0]["msg"]
