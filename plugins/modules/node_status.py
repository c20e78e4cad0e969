#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) verl-deploy maintainers

from __future__ import annotations

DOCUMENTATION = r"""
---
module: node_status
short_description: Read one node's status for status.yml in one call - its container, Ray and the training, its NPUs, and a failed training's error lines
version_added: 0.5.0
description:
  - status.yml's one round trip per node. On the host it reads the training container (C(docker container inspect)), runs
    the control script's C(status) step in it when it runs (as M(verl.deploy.node_step) runs it, with its verdict), reads the
    NPUs (C(npu-smi info), as M(verl.deploy.npu_info)), and, for a training that failed, the node's error lines (as
    M(verl.deploy.failure_scan), with the same C(npu-smi info)).
  - On the Ray head the C(status) step lists the Ray nodes alive itself, and the module decides whether the training failed
    (crashed, orphaned, restarting, or stalled past O(stall_seconds)); only then are the error lines read. A worker is given
    the head's list (O(members)) and, when the head's training failed, its start (O(scan_since)).
  - Nothing that cannot be read fails the module; its part of the result says why.
options:
  container:
    description: The training container.
    type: str
    required: true
  workdir:
    description: The folder in the container that holds C(verl_control.sh).
    type: str
    required: true
  log_lines:
    description: How many of the training log's last lines the head returns.
    type: int
    default: 20
  members:
    description: For a worker, the Ray nodes the head lists alive (C(IP=NPUS) each), for whether this node is in the cluster.
      Omitted on the head, which lists them itself; on a worker, omitted when the head's list is not known (its C(in_ray)
      is then V(unknown)).
    type: list
    elements: str
  stall_seconds:
    description: On the head, a running training that logged no step for longer is stalled (failed).
    type: int
    default: 1800
  scan_since:
    description: For a worker, the head's failed training's start (epoch seconds); the node's error lines are read when given.
      Files not written since, less ten minutes for the nodes' clocks, are an earlier run's.
    type: float
  ray_temp_dir:
    description: Ray's temp folder in the container (C(ray start --temp-dir)), for the error lines.
    type: str
    default: /tmp/ray
  npu_smi_path:
    description: The host's npu-smi; searched on E(PATH) and in C(/usr/local/sbin) when not given.
    type: path
  sent_at:
    description:
      - The controller's clock (epoch seconds) when it sent the call; the node's clock less it is RV(clock_offset). The time
        the call takes to start is in it on every node alike, so the nodes' lines are ordered on one clock.
    type: float
extends_documentation_fragment:
  - verl.deploy.attributes.read_only
notes:
  - Nothing is changed on the host or in the container.
author:
  - verl-deploy maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Read the head
  verl.deploy.node_status:
    container: verl
    workdir: /verl
  register: head_status

- name: Read a worker, with the head's Ray members
  verl.deploy.node_status:
    container: verl
    workdir: /verl
    members: "{{ head_status.status.facts.listed.split(',') }}"
"""

RETURN = r"""
container:
  description: The container - C(exists), C(running), C(id) and C(line) (its state as status shows it, with the exit code of a
    stopped one, or why it could not be read).
  returned: always
  type: dict
  sample: {exists: true, running: true, id: 3f2a, line: running}
status:
  description: The C(status) step's result as M(verl.deploy.node_step) returns it (C(rc), C(stdout), C(stderr), C(facts) with
    C(in_ray), C(tails), C(training), C(other_release)); C(skipped) when the container does not run.
  returned: always
  type: dict
npu:
  description: What M(verl.deploy.npu_info) returns, with C(failed) false; or C(failed), C(msg) and C(dcmi_code).
  returned: always
  type: dict
failure_scan:
  description: The node's error lines, as M(verl.deploy.failure_scan) returns them; null when the training did not fail.
  returned: always
  type: dict
clock_offset:
  description: This node's clock less the controller's O(sent_at), when the error lines were read; else null.
  returned: always
  type: float
"""
import json
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.verl.deploy.plugins.module_utils._control_step import (
    argument_problem, control_argv, failed, run_command, step_result)
from ansible_collections.verl.deploy.plugins.module_utils._failure_scan import DEFAULTS, scan
from ansible_collections.verl.deploy.plugins.module_utils._npu_smi import read_npu


def inspect(docker, name):
    """The container as status shows it: {exists, running, id, line}."""
    done = run_command([docker, "container", "inspect", name], timeout=30)
    if done.get("failed") or done["rc"] != 0:
        said = (done.get("msg") or done["stderr"]).strip()
        if "no such" in said.lower():
            return {"exists": False, "running": False, "id": "", "line": "absent"}
        return {"exists": False, "running": False, "id": "", "line": "not read: %s" % (said.splitlines() or ["no answer"])[-1]}
    state = json.loads(done["stdout"])[0]
    running = bool(state["State"]["Running"])
    line = state["State"]["Status"] + ("" if running else " (exit code %s)" % state["State"]["ExitCode"])
    return {"exists": True, "running": running, "id": state["Id"], "line": line}


def main():
    module = AnsibleModule(
        argument_spec=dict(
            container=dict(type="str", required=True),
            workdir=dict(type="str", required=True),
            log_lines=dict(type="int", default=20),
            members=dict(type="list", elements="str"),
            stall_seconds=dict(type="int", default=1800),
            scan_since=dict(type="float"),
            ray_temp_dir=dict(type="str", default=DEFAULTS["ray_temp_dir"]),
            npu_smi_path=dict(type="path"),
            sent_at=dict(type="float"),
        ),
        supports_check_mode=True,
    )
    params = module.params
    started = time.time()
    problem = argument_problem({"container": params["container"], "workdir": params["workdir"]})
    if problem:
        module.fail_json(msg=problem)
    docker = module.get_bin_path("docker")
    container = inspect(docker, params["container"]) if docker else {
        "exists": False, "running": False, "id": "", "line": "not read: no docker client on the host"}
    status = {"skipped": True}
    if container["running"]:
        done = run_command(control_argv(params["workdir"], "status", [",".join(params["members"] or []), str(params["log_lines"])]),
                           params["container"], docker)
        status = dict(done, **step_result("status", done)) if not done.get("failed") else {"stderr": done["msg"]}
        facts = status.get("facts") or {}
        if params["members"] is None and facts.get("role") == "worker" and "in_ray" in facts:
            facts["in_ray"] = "unknown"  # the head's list was not given: it did not answer, or its script is another release's
    answered = []
    npu = read_npu(module, params["npu_smi_path"], "verl_npu_smi_path", answered=answered)
    since = params["scan_since"]
    training = status.get("training") or {}
    if since is None and (status.get("facts") or {}).get("role") == "head" and failed(training, params["stall_seconds"]):
        since = float(training.get("started_at") or 0)
    found, offset = None, None
    if since is not None and container["running"]:
        found = scan(module, dict(DEFAULTS, container=params["container"], ray_temp_dir=params["ray_temp_dir"],
                                  since=since - 600), docker, answered[0])
        offset = started - params["sent_at"] if params["sent_at"] is not None else None
    module.exit_json(changed=False, container=container, status=status, npu=npu, failure_scan=found, clock_offset=offset)


if __name__ == "__main__":
    main()
