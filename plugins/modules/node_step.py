#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
module: node_step
short_description: Run one step of the deploy on a node and return what it did, read
version_added: 0.2.0
description:
  - Runs one step of the control script C(verl_control.sh) in the training container (O(step)), or a role's script that
    answers as it does, in a container or on the host (O(argv)), in one round trip, and reads its answer in Python.
  - On the host the module runs the step with the Docker CLI (C(docker exec)); the values of O(env) go to the CLI's own
    environment, never to its arguments, so they do not show in the host's process list.
  - Ray's steps are decided here, in Python, between the control script's primitives, each one C(docker exec) on the host
    in the same round trip. V(ray) looks at the node's Ray (V(ray-look), on the head under the deploy's lock), leaves it
    alone or stops a stale Ray and starts it (V(ray-start)), and on the head lists the nodes alive and may release the
    lock. V(ray-check) is that look and decision alone. V(ray-progress) (O(args) the node count and the NPUs per node)
    counts the nodes and NPUs the head lists. V(verify-look) reads the training's facts (V(verify-facts)) and says whether
    it runs and its log grew, or it finished, or it ended before it ran.
  - A control script's step, and a role's script (O(argv)), answers with one JSON document, its sentences for people and
    its answer for the playbooks (every value a string, whatever bytes it holds), and the module returns the step's verdict
    on it as typed keys (RV(training), RV(facts), RV(members), RV(kept), RV(problem) and the others, from the table of steps). The task's
    C(changed) is what the answer's C(changed) says. A step that only looks (V(members), V(ray-progress), V(ray-check),
    V(training-state), V(verify-look), V(npus-look), V(status)) and V(lock) and V(unlock) (the run's own bookkeeping) never
    report changed. Without that answer, a step that ended with an exit code other than 0 may have changed something half-way and
    reports changed; one refused for another deploy's lock (exit code 4) did not. A role's script (O(argv)) changed
    something only when it says so.
  - A step that ran does not fail the task whatever its exit code (unless O(fail_on_rc)); the task that reads it decides,
    from RV(rc) and RV(answer). The task fails, without RV(rc), when the step could not run (the container is missing,
    stopped or paused, or the Docker engine does not answer).
  - With O(job), collects the result of a step started in the background (C(async), C(poll=0)) as
    M(ansible.builtin.async_status) does, and reads it the same way once it has finished (O(step) may name it; a step
    that only looks never reports changed).
  - With O(lock_folder), V(lock) and V(unlock) run on the host, without a container (the deploy takes its lock before its
    first change on any node, when there may be no container yet). It is the lock file in that folder, the host's side of
    the folder the container's C(verl_control.sh) keeps it in, taken, renewed and released by the same code.
  - It refuses its arguments before anything runs when O(container) is not a name Docker gives (one beginning with C(-) would be
    an option of C(docker exec)), a name in O(env) is not a variable name, or O(workdir) or O(chdir) is not an absolute path.
  - An action plugin.
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  container:
    description: The container to run in (C(docker exec)); without it, the host.
    type: str
  chdir:
    description: The folder the command runs in, on the host (without O(container)).
    type: str
  lock_folder:
    description: The deploy lock's folder on the host (C(<verl_log_dir>/.verl-deploy)), for O(step=lock) and O(step=unlock)
      run on the host.
    type: str
  argv:
    description: A role's script, as an argument list (no shell), instead of O(step). One of O(step), O(argv) and O(job) is
      required.
    type: list
    elements: str
  stdin:
    description: The script's standard input.
    type: str
  job:
    description: The job id of the same step started in the background; its result is collected instead of running the step.
    type: str
  fail_on_rc:
    description: Fail the task, with the step's last lines, when the step ends with an exit code other than 0.
    type: bool
    default: false
  env:
    description: Environment variables of the step in O(container) (values as strings).
    type: dict
extends_documentation_fragment:
  - verl.deploy.control_step
attributes:
  action:
    description: Indicates this has a corresponding action plugin so some parts of the options can be executed on the controller.
    support: full
  async:
    description: Supports being used with the C(async) keyword.
    support: full
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: none
    details: The step is not run in check mode (the task reports skipped).
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
"""

EXAMPLES = r"""
- name: Stop the training on the head
  verl.deploy.node_step:
    container: verl
    workdir: /verl
    step: stop-training
  register: stopped

- name: Say what the step did
  ansible.builtin.debug:
    msg: "{{ stopped.said }}"
  when: stopped is changed
"""

RETURN = r"""
rc:
  description: The step's exit code.
  returned: when the step ran
  type: int
stdout:
  description: The step's standard output, one JSON document (a control script's step and a role's script alike).
  returned: when the step ran
  type: str
stderr:
  description: The step's standard error.
  returned: when the step ran
  type: str
answer:
  description: The step's answer (its document's answer; empty when it printed no document).
  returned: always
  type: dict
  sample: {changed: "true", state: stopped}
said:
  description: The step's sentences for people, in order.
  returned: always
  type: list
  elements: str
training:
  description: For V(training-state) and V(status), the training (C(state), C(pid), C(exit_code), C(last_step), C(log),
    C(launch), ...); its state is V(unknown) when the step did not answer (and on a worker).
  returned: with O(step=training-state) or O(step=status)
  type: dict
facts:
  description: For V(status), its answer but the tails, with C(in_ray) (V(yes), V(no), or V(unknown) when the node's
    addresses could not be resolved); empty unless it ended well.
  returned: with O(step=status)
  type: dict
tails:
  description: For V(status), the head's last start output (C(start_output)) and log lines (C(log)), and the NPU sampler's
    last records (C(npu_samples)).
  returned: with O(step=status)
  type: dict
other_release:
  description: For V(status), whether a control script of an earlier release answered (no document, so nothing it said is read).
  returned: with O(step=status)
  type: bool
members:
  description: For V(members), the Ray nodes alive, each C(IP=NPUS); empty when the head could not be asked. For the head's
    V(ray), those its GCS listed alive after the step.
  returned: with O(step=members) or O(step=ray)
  type: list
  elements: str
complete:
  description: For the head's V(ray), whether the nodes alive hold every node's NPUs.
  returned: with O(step=ray)
  type: bool
kept:
  description: For the head's V(ray), whether its Ray was left alone and this deploy took the lock without waiting for
    another one.
  returned: with O(step=ray)
  type: bool
released:
  description: For the head's V(ray), whether the step released the deploy's lock itself.
  returned: with O(step=ray)
  type: bool
say:
  description: For the head's V(ray), whether its sentences are worth showing (how it took the lock, what it did to Ray).
  returned: with O(step=ray)
  type: bool
lock:
  description: For the head's V(ray) and V(lock), how the deploy's lock was taken (V(held), V(free), V(waited),
    V(taken-over)); empty when it was not.
  returned: with O(step=ray) or O(step=lock)
  type: str
problem:
  description: For the head's V(ray) and V(lock), why the deploy stops here, naming the head, or empty.
  returned: with O(step=ray) or O(step=lock)
  type: str
finished:
  description: With O(job), whether the job has ended.
  returned: with O(job)
  type: bool
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.verl.deploy.plugins.module_utils._control_step import (
    CONTROL_STEPS, DECIDED_STEPS, argument_problem, control_argv, decided_step, run_command)
from ansible_collections.verl.deploy.plugins.module_utils._deploy_lock import host_step

# The options, as documented above; the action plugin (plugins/action/node_step.py) validates them with the same spec,
# collects a background job (job) and judges fail_on_rc; this module runs the step on the host.
ARGUMENT_SPEC = {
    "container": {"type": "str"},
    "chdir": {"type": "str"},
    "lock_folder": {"type": "str"},
    "step": {"type": "str", "choices": list(CONTROL_STEPS)},
    "workdir": {"type": "str"},
    "args": {"type": "list", "elements": "str", "default": []},
    "lock_env": {"type": "list", "elements": "str", "default": []},
    "argv": {"type": "list", "elements": "str"},
    "stdin": {"type": "str"},
    "job": {"type": "str"},
    "fail_on_rc": {"type": "bool", "default": False},
    "env": {"type": "dict"},
}
CONSTRAINTS = {"mutually_exclusive": [["step", "argv"], ["argv", "job"], ["container", "chdir"], ["lock_folder", "container"],
                                      ["lock_folder", "workdir"]],
               "required_one_of": [["step", "argv", "job"]],
               "required_by": {"env": ["container"]}}


def execute(argv, params, docker=None):
    """argv run as the step's options say (_control_step.run_command)."""
    return run_command(argv, params["container"], docker, params["env"], params["stdin"], params["chdir"])


class _NotRun(Exception):
    """A primitive of a decided step that docker exec could not start: the step did not run."""


def run(params, docker=None):
    """The step run: {rc, stdout, stderr}, or {failed, msg} when it could not run. A step of DECIDED_STEPS runs the script's
    primitives it needs, one `docker exec` each on this host, and is decided here (_control_step.decided_step). With
    lock_folder, the lock's step runs on the host (_deploy_lock.host_step)."""
    if params.get("lock_folder"):
        return host_step(params["step"], params["lock_folder"], params["lock_env"])
    if params["step"] in DECIDED_STEPS:
        def primitive(name, args, lock_env):
            done = execute(control_argv(params["workdir"], name, args, lock_env), params, docker)
            if done.get("failed"):
                raise _NotRun(done)
            return done
        try:
            return decided_step(params["step"], params["args"], params["lock_env"], primitive)
        except _NotRun as exc:
            return exc.args[0]
    argv = (control_argv(params["workdir"], params["step"], params["args"], params["lock_env"]) if params["step"]
            else params["lock_env"] + params["argv"])
    return execute(argv, params, docker)


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=False, **CONSTRAINTS)
    if module.params["job"]:
        module.fail_json(msg="job: a background step is collected by the action plugin, not run here")
    problem = argument_problem(module.params)
    if problem:
        module.fail_json(msg=problem)
    docker = module.get_bin_path("docker", required=True) if module.params["container"] else None
    result = run(module.params, docker)
    if result.get("failed"):
        module.fail_json(changed=False, **{key: value for key, value in result.items() if key != "failed"})
    # Whether it changed something is read from its answer by the action plugin (step_result).
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
