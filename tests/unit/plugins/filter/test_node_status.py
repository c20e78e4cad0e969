# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The node_status filter: what status.yml shows of a node, the status step's sentences for people, never its KEY=VALUE
answer (status_report reads that), or why the step said nothing."""
from __future__ import annotations

import pytest

from ansible_collections.verl.deploy.plugins.filter.node_status import FilterModule

node_status = FilterModule().filters()["node_status"]
HEAD = ["container verl: running", "NPUs in use: 0-7 by the training"]


@pytest.mark.parametrize("stdout, expected", [
    # What a step prints on a head that waited for another deploy's lock, then started Ray.
    ("lock: taken after waiting 4 s for another deploy.\nray: started\nchanged=true\nstate=started\nlock=waited\n"
     "members=10.0.0.1=8\ncomplete=false\n",
     ["lock: taken after waiting 4 s for another deploy.", "ray: started"]),
    # A sentence holding "=" is a sentence (its part before "=" is not a name).
    ("ray: nodes alive with their NPUs: 10.0.0.1=8\nin_ray=yes\n", ["ray: nodes alive with their NPUs: 10.0.0.1=8"]),
    # Empty lines say nothing; an answer without sentences says nothing.
    ("\nray: in the cluster\n\nin_ray=yes\n", ["ray: in the cluster"]), ("in_ray=no\nstate=not-running\n", []),
    ("", []), (None, []),
])
def test_the_sentences_never_the_answer(stdout, expected):
    assert node_status({"rc": 0, "stdout": stdout}, "verl", "running", "0-7 by the training", "/verl/verl_control.sh") == HEAD + expected


@pytest.mark.parametrize("result, last", [
    ({"rc": 127, "stdout": "", "stderr": "bash: /verl/verl_control.sh: No such file or directory"},
     ["not deployed: no /verl/verl_control.sh in the container (run deploy.yml)"]),
    ({"rc": 1, "stdout": "", "stderr": "verl_control.sh: verl_control.env is missing beside it in /verl. Fix: run deploy.yml again.\n"},
     ["verl_control.sh: verl_control.env is missing beside it in /verl. Fix: run deploy.yml again."]),
    ({"skipped": True, "changed": False}, []),  # the container is down: its line says so
])
def test_why_a_node_said_nothing(result, last):
    assert node_status(result, "verl", "running", "0-7 by the training", "/verl/verl_control.sh") == HEAD + last


def test_as_status_yml_calls_it(render):
    lines, = render(["r | verl.deploy.node_status('verl', 'exited (exit code 137)', '-', '/verl/verl_control.sh')"],
                    r={"rc": 0, "stdout": "ray: NOT in the cluster\nin_ray=no\n"})
    assert lines == ["container verl: exited (exit code 137)", "NPUs in use: -", "ray: NOT in the cluster"]
