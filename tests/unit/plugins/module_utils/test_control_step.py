# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""How a step runs on a node (_control_step.py): its command, and whether `docker exec` ran it at all."""
from __future__ import annotations

import pytest

from ansible_collections.verl.deploy.plugins.module_utils._control_step import (
    CONTROL_STEPS, LOOK_STEPS, container_command, control_argv, not_run)


def test_the_steps_that_only_look_are_steps_of_the_script():
    assert LOOK_STEPS < set(CONTROL_STEPS)


def test_a_control_step_runs_the_script_in_its_folder_after_the_lock_identity():
    assert control_argv("/verl/", "ray", [2], ["env", "VERL_DEPLOY_LOCK_TOKEN=t"]) == [
        "env", "VERL_DEPLOY_LOCK_TOKEN=t", "bash", "/verl/verl_control.sh", "ray", "2"]


@pytest.mark.parametrize("env, stdin, expected", [
    (None, False, (["docker", "exec", "verl", "true"], {})),
    # Values only in the CLI's environment: `-e NAME` takes them from there, so no value is in the process list.
    ({"B": 2, "A": "secret"}, False, (["docker", "exec", "-e", "A", "-e", "B", "verl", "true"], {"A": "secret", "B": "2"})),
    ({}, True, (["docker", "exec", "-i", "verl", "true"], {})),
])
def test_the_command_that_runs_a_step_in_the_container(env, stdin, expected):
    assert container_command("docker", "verl", ["true"], env, stdin) == expected


@pytest.mark.parametrize("rc, stdout, stderr, expected", [
    # The Docker CLI's words when it could not start the step (Docker 20.10 and later, as the simulated nodes run it).
    (1, "", "Error response from daemon: No such container: verl\n", "Error response from daemon: No such container: verl"),
    (1, "", "Error response from daemon: Container 5d4e is not running", "Error response from daemon: Container 5d4e is not running"),
    (1, "", "Error response from daemon: Container verl is paused, unpause the container before exec",
     "Error response from daemon: Container verl is paused, unpause the container before exec"),
    (1, "", "Error: No such container: verl", "Error: No such container: verl"),
    (1, "", "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?",
     "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?"),
    # It ran: whatever it said, and whatever its exit code.
    (0, "", "Error response from daemon: No such container: verl", ""),
    (1, "ray: started\n", "Error response from daemon: No such container: x", ""),
    (1, "", "verl_control.sh on n1: a training already runs (pid 7); stop it first", ""),
    (3, "", "", ""),
    (4, "", "verl_control.sh on n1: another deploy is changing this cluster", ""),
])
def test_whether_docker_exec_ran_the_step(rc, stdout, stderr, expected):
    assert not_run(rc, stdout, stderr) == expected
