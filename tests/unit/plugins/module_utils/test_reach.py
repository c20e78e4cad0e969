"""verl's rank-0 node and the judgement of every node's connects (plugins/module_utils/_reach.py), on reach.py's answers
(one JSON document, read by node_step: answer and said; written here as KEY=VALUE lines)."""
from __future__ import annotations

import pytest

from ansible_collections.verl.deploy.plugins.filter.rank0_node import rank0_node as rank0_filter
from ansible_collections.verl.deploy.plugins.module_utils import _reach as reach
from helpers.answers import parse_lines, sentences

LISTENER = {"port": 41234, "range": "32768-60999"}


def checked(text):
    """A node's check as reach.yml keeps it from node_step's result: its answer and its sentences."""
    return {"answer": parse_lines(text), "said": sentences(text)}


@pytest.mark.parametrize("nodes, rank0", [
    # The issue's case: verl sorts the nodes' addresses as text, so a worker at 10.0.0.10 is rank 0 before a head at 10.0.0.5.
    ([("head", "10.0.0.5"), ("worker", "10.0.0.10")], ("worker", "10.0.0.10")),
    ([("head", "10.0.0.1"), ("w1", "10.0.0.2"), ("w2", "10.0.0.3")], ("head", "10.0.0.1")),
    ([("head", "192.168.1.9"), ("w1", "192.168.1.10"), ("w2", "192.168.1.100")], ("w1", "192.168.1.10")),
    ([("head", "172.17.0.2"), ("w1", "10.0.0.7")], ("w1", "10.0.0.7")),
    ([("only", "10.0.0.5")], ("only", "10.0.0.5")),
    # An address unknown (the pre-check did not run): that node is left out; none known: the head, no address.
    ([("head", "10.0.0.5"), ("w1", None), ("w2", "10.0.0.10")], ("w2", "10.0.0.10")),
    ([("head", ""), ("w1", None)], ("head", "")),
    ([], ("", "")),
])
def test_rank0_is_the_first_node_by_address_as_text(nodes, rank0):
    assert reach.rank0_node(nodes) == rank0


def test_the_filter_reads_each_nodes_address_as_the_precheck_handed_it_on():
    hostvars = [{"inventory_hostname": "head", "_precheck_node": {"node_ip": "10.0.0.5"}},
                {"inventory_hostname": "worker", "_precheck_node": {"node_ip": "10.0.0.10"}},
                {"inventory_hostname": "skipped"}]
    assert rank0_filter(hostvars) == {"name": "worker", "address": "10.0.0.10"}


@pytest.mark.parametrize("stdout, found", [
    ("ray=10.0.0.5:9182 ok\nrendezvous=10.0.0.10:41234 ok\n",
     {"ray": ("10.0.0.5", 9182, "ok"), "rendezvous": ("10.0.0.10", 41234, "ok")}),
    ("ray=10.0.0.5:9182 timed out after 10 s (no answer: packets dropped on the way)\n",
     {"ray": ("10.0.0.5", 9182, "timed out after 10 s (no answer: packets dropped on the way)")}),
    ("noise\nray=10.0.0.5:x ok\nrendezvous=41234 ok\n", {}),
    ("", {}),
])
def test_the_answer_is_read(stdout, found):
    assert reach.parse(parse_lines(stdout)) == found


def test_a_value_stays_whole():
    # A name given with a line break, U+2028 or a record separator stays in its value.
    forged = {"ray": "10.0.0.5:9182 refused\nrendezvous=10.0.0.10:1 ok\u2028x=1:2 ok\x1ey=1:3 ok"}
    assert reach.parse(forged) == {"ray": ("10.0.0.5", 9182, "refused\nrendezvous=10.0.0.10:1 ok\u2028x=1:2 ok\x1ey=1:3 ok")}


@pytest.mark.parametrize("stdout, listener", [
    ("port=41234\nrange=32768-60999\n", {"port": 41234, "range": "32768-60999"}),
    ("", {"port": None, "range": ""}),
])
def test_the_listener_is_read(stdout, listener):
    assert reach.listened(parse_lines(stdout)) == listener


def test_every_port_answered_is_no_problem():
    results = [{"host": "head", **checked("rendezvous=10.0.0.10:41234 ok\n"), "rc": 0},
               {"host": "worker", **checked("ray=10.0.0.5:9182 ok\nrendezvous=10.0.0.10:41234 ok\n"), "rc": 0}]
    assert reach.unreached(results, "worker", LISTENER) == []


def test_one_node_connects_to_itself():
    assert reach.unreached([{"host": "only", **checked("rendezvous=10.0.0.5:41234 ok\n"), "rc": 0}], "only", LISTENER) == []
    dropped = "rendezvous=10.0.0.5:41234 timed out after 10 s (no answer: packets dropped on the way)\n"
    problems = reach.unreached([{"host": "only", **checked(dropped), "rc": 0}], "only", LISTENER)
    assert len(problems) == 1 and problems[0].startswith("only: from its container, 10.0.0.5:41234 did not answer "
                                                         "(rendezvous; "), problems
    assert "Fix: allow TCP from only to 10.0.0.5 on the ephemeral ports 32768-60999" in problems[0]


@pytest.mark.parametrize("host, line, words, fix", [
    ("worker", "ray=10.0.0.5:9182 timed out after 10 s (no answer: packets dropped on the way)",
     "10.0.0.5:9182 did not answer (ray; the head's Ray port (verl_ray_port)): timed out",
     "Fix: allow TCP from worker to 10.0.0.5 on Ray's ports (firewall, security group"),
    # The head is not rank 0 here: it is the one that must reach the worker (issue 30's case).
    ("head", "rendezvous=10.0.0.10:41234 failed: No route to host",
     "10.0.0.10:41234 did not answer (rendezvous; a free port worker listened on as verl's rendezvous (torch.distributed's "
     "TCPStore, MASTER_ADDR:MASTER_PORT) picks one from the range 32768-60999; worker is verl's rank 0, the first node by "
     "address as text): failed: No route to host",
     "Fix: allow TCP from head to 10.0.0.10 on the ephemeral ports 32768-60999 (firewall, security group"),
])
def test_each_port_not_reached_names_the_node_the_address_the_port_and_the_fix(host, line, words, fix):
    others = {"head": "rendezvous=10.0.0.10:41234 ok\n", "worker": "ray=10.0.0.5:9182 ok\nrendezvous=10.0.0.10:41234 ok\n"}
    results = [{"host": name, **checked(line if name == host else text), "rc": 0} for name, text in others.items()]
    problems = reach.unreached(results, "worker", LISTENER)
    assert len(problems) == 1 and problems[0].startswith("%s: from its container, " % host) and words in problems[0], problems
    assert fix in problems[0], problems


def test_a_check_that_did_not_run_is_a_problem_not_a_pass():
    problems = reach.unreached([{"host": "w1", "answer": {}, "said": [], "stderr": "python3: not found", "rc": 127}], "head", LISTENER)
    assert len(problems) == 1 and problems[0].startswith("w1: the check of the head's and rank 0's ports did not run in its "
                                                         "container (rc 127: python3: not found)"), problems


def test_a_listener_that_did_not_start_is_a_problem_not_a_pass():
    problems = reach.unreached([{"host": "w1", **checked("ray=10.0.0.5:9182 ok\n"), "rc": 0}], "head", reach.listened({}))
    assert problems == ["head: the listener for the rendezvous check did not start in its container (verl's rank-0 node, "
                        "where every node's workers meet). Fix: check the container (docker exec <container> python3 -V) "
                        "and run deploy.yml again."]
