# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Private to the verl.deploy collection: may change without notice.
#
# How a step runs on a node: the control script's steps, and the command that runs a step on the host or in the training
# container there (the node_step module runs it, for itself and as wait_progress's probe). Pure functions, table-tested in
# tests/unit/plugins/module_utils/test_control_step.py; standard library only, for the module ships it to every host.
from __future__ import annotations

import re

# The control script's steps the playbooks run (verl_control.sh's `case`, but supervise, which start-training runs
# itself). Those that only look change nothing whatever they answer; unlock is the run's own bookkeeping.
# tests/test_control_script.py holds this list equal to the script's.
CONTROL_STEPS = ("members", "ray-progress", "ray", "ray-check", "training-state", "start-training", "verify-look", "npus-look",
                 "status", "stop-training", "stop-ray", "unlock", "lock")
LOOK_STEPS = frozenset(("members", "ray-progress", "ray-check", "training-state", "verify-look", "npus-look", "status", "unlock"))

# What the Docker CLI says when `docker exec` could not start the step at all (the container is missing, stopped,
# restarting or paused, or the engine does not answer): the step did not run, so it neither failed nor changed anything.
_NOT_RUN = re.compile(r"^(Error response from daemon: (No such container|[Cc]ontainer \S+ is (not running|paused|restarting))"
                      r"|Error: No such container|Cannot connect to the Docker daemon)")


def control_argv(workdir, step, args=(), lock_env=()):
    """The command of a control script's step in the container: lock_env (this run's lock identity,
    `env VERL_DEPLOY_LOCK_TOKEN=...`), then bash <workdir>/verl_control.sh STEP ARGS."""
    return list(lock_env) + ["bash", workdir.rstrip("/") + "/verl_control.sh", step] + [str(arg) for arg in args]


def container_command(docker, container, argv, env=None, stdin=False):
    """(command, environment) that runs argv in the container as `docker exec` does. The environment's values go to the
    Docker CLI's own environment and are named with `-e NAME` only, so that no value shows in the host's process list."""
    env = {str(name): str(value) for name, value in (env or {}).items()}
    command = [docker, "exec"] + (["-i"] if stdin else [])
    for name in sorted(env):
        command += ["-e", name]
    return command + [container] + list(argv), env


def not_run(rc, stdout, stderr):
    """Why `docker exec` did not run the step (its CLI's first line), or "" when the step ran, whatever its exit code."""
    first = (stderr or "").strip().splitlines()[:1]
    if rc in (1, 125) and not (stdout or "").strip() and first and _NOT_RUN.match(first[0]):
        return first[0]
    return ""
