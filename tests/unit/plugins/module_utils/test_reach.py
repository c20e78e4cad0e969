"""The judgement of the workers' connects to the head (plugins/module_utils/_reach.py), on lines as reach.sh prints them."""
from __future__ import annotations

import pytest

from ansible_collections.verl.deploy.plugins.module_utils import _reach as reach


@pytest.mark.parametrize("stdout, found", [
    ("ray=9182 ok\nrendezvous=41234 ok\n", {"ray": (9182, "ok"), "rendezvous": (41234, "ok")}),
    ("ray=9182 timed out after 10 s (no answer: packets dropped on the way)\n",
     {"ray": (9182, "timed out after 10 s (no answer: packets dropped on the way)")}),
    ("noise\nray=x ok\n", {}),
    ("", {}),
])
def test_the_lines_are_read(stdout, found):
    assert reach.parse(stdout) == found


@pytest.mark.parametrize("stdout, listener", [
    ("port=41234\nrange=32768-60999\n", {"port": 41234, "range": "32768-60999"}),
    ("", {"port": None, "range": ""}),
])
def test_the_listener_is_read(stdout, listener):
    assert reach.listened(stdout) == listener


def test_every_port_answered_is_no_problem():
    assert reach.unreached([{"host": "w1", "stdout": "ray=9182 ok\nrendezvous=41234 ok\n", "rc": 0}], "10.0.0.1") == []


@pytest.mark.parametrize("line, words", [
    ("ray=9182 timed out after 10 s (no answer: packets dropped on the way)", "10.0.0.1:9182 did not answer (ray; Ray's port (verl_ray_port)): timed out"),
    ("rendezvous=41234 failed: No route to host", "10.0.0.1:41234 did not answer (rendezvous; a free port the head listened on"),
])
def test_each_port_not_reached_names_the_worker_the_port_and_the_fix(line, words):
    problems = reach.unreached([{"host": "w1", "stdout": "ray=9182 ok\n" * line.startswith("rend") + line + "\n", "rc": 0},
                                {"host": "w2", "stdout": "ray=9182 ok\n", "rc": 0}], "10.0.0.1", "32768-60999")
    assert len(problems) == 1 and problems[0].startswith("w1: from its container, ") and words in problems[0], problems
    assert "Fix: allow TCP from w1 to 10.0.0.1 on Ray's port and the ephemeral ports 32768-60999 (firewall, security group" in problems[0]


def test_a_check_that_did_not_run_is_a_problem_not_a_pass():
    problems = reach.unreached([{"host": "w1", "stdout": "", "stderr": "python3: not found", "rc": 127}], "10.0.0.1")
    assert len(problems) == 1 and problems[0].startswith("w1: the check of the head's ports did not run in its container (rc 127: "
                                                         "python3: not found)"), problems
