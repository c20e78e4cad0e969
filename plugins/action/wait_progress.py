# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Controller side of verl.deploy.wait_progress: poll a read-only probe, print its progress each time (docs: plugins/modules/wait_progress.py)."""
from __future__ import annotations

import json
import os
import time

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.verl.deploy.plugins.module_utils._report import progress_summary, terminal_text
from ansible_collections.verl.deploy.plugins.module_utils._control_step import CONTROL_STEPS, read_answer

display = Display()

ARGUMENT_SPEC = {
    "what": {"type": "str", "required": True},
    "argv": {"type": "list", "elements": "str"},
    "step": {"type": "str", "choices": list(CONTROL_STEPS)},
    "workdir": {"type": "str"},
    "args": {"type": "list", "elements": "str", "default": []},
    "lock_env": {"type": "list", "elements": "str", "default": []},
    "container": {"type": "str"},
    "chdir": {"type": "str"},
    "timeout": {"type": "int", "required": True},
    "interval": {"type": "int", "default": 5},
    "pending_rc": {"type": "int", "default": 3},
}
CONSTRAINTS = {"mutually_exclusive": [["step", "argv"]], "required_one_of": [["step", "argv"]],
               "required_by": {"step": ["workdir", "container"]}}


def progress_line(host, what, progress, elapsed, timeout):
    """The line shown after each poll, e.g. `[node1] Ray: 3/4 nodes, 24/32 NPU, 40/180 s`."""
    return "[%s] %s: %s, %d/%d s" % (host, what, progress or "no answer yet", elapsed, timeout)


# With the verl.deploy.report callback (which sets these for the workers): each node's line goes to the run's log, and at
# the terminal one line for all nodes at most this often, by the first node still waiting.
ENV_LOG = "VERL_DEPLOY_REPORT_LOG"
ENV_PROGRESS = "VERL_DEPLOY_REPORT_PROGRESS"
SUMMARY_EVERY = 20


def show(host, what, line, state, task_id, nodes):
    """Print this poll's line, or under the report callback log it and print one line for all nodes now and then."""
    log, folder = os.environ.get(ENV_LOG), os.environ.get(ENV_PROGRESS)
    if not (log and folder and os.path.isdir(folder)):
        display.display(line)
        return
    with open(log, "a", encoding="utf-8") as handle:
        handle.write(line + "\n")
    folder = os.path.join(folder, task_id)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, host + ".json"), "w", encoding="utf-8") as handle:
        json.dump(state, handle)
    states = {}
    for name in os.listdir(folder):
        if name.endswith(".json"):
            try:
                with open(os.path.join(folder, name), encoding="utf-8") as handle:
                    states[name[:-len(".json")]] = json.load(handle)
            except (OSError, ValueError):
                continue
    waiting = sorted(name for name, each in states.items() if not each.get("done"))
    if state.get("done") or not waiting or host != waiting[0]:
        return
    stamp = os.path.join(folder, ".shown")
    if os.path.exists(stamp) and time.time() - os.path.getmtime(stamp) < SUMMARY_EVERY:
        return
    with open(stamp, "w", encoding="utf-8"):
        pass
    display.display(progress_summary(what, states, max(nodes, len(states))))


def last_line(text):
    """The last sentence of a probe's answer (a control script's step: its document's said; a role's script: its last line)."""
    lines = [line.strip() for line in read_answer(text)["said"] if line.strip()]
    return terminal_text(lines[-1]) if lines else ""


class ActionModule(ActionBase):
    """Run the probe on the host (or in a container there) until it says done, fails, or the bound passes."""

    TRANSFERS_FILES = False

    def _probe(self, args, task_vars):
        # The probe runs as verl.deploy.node_step runs a step (its module, on the host).
        names = ("container", "step", "workdir", "args", "lock_env") if args["step"] else ("container", "argv", "chdir")
        module_args = {name: args[name] for name in names if args[name] is not None}
        return self._execute_module(module_name="verl.deploy.node_step", module_args=module_args, task_vars=task_vars)

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC, **CONSTRAINTS)
        if args["timeout"] < 1 or args["interval"] < 1:
            result.update(failed=True, msg="timeout=%d, interval=%d: give at least 1 second each." % (args["timeout"], args["interval"]))
            return result
        host = task_vars.get("inventory_hostname", "?")
        start = time.monotonic()
        polls, progress, answer = 0, "", {}
        while True:
            answer = self._probe(args, task_vars)
            if answer.get("skipped"):
                # The probe's module does not run in check mode: nothing to wait for, said so.
                result.update(changed=False, skipped=True, msg="%s: not waited for (%s)" % (args["what"], answer.get("msg", "skipped")))
                return result
            polls += 1
            elapsed = time.monotonic() - start
            progress = last_line(answer.get("stdout")) or progress
            rc = answer.get("rc")
            show(host, args["what"], progress_line(host, args["what"], progress, elapsed, args["timeout"]),
                 {"progress": progress, "elapsed": elapsed, "timeout": args["timeout"], "done": rc != args["pending_rc"]},
                 self._task._uuid, len(task_vars.get("ansible_play_batch") or [host]))
            result.update(changed=False, rc=rc, stdout=answer.get("stdout", ""), stderr=answer.get("stderr", ""), progress=progress,
                          polls=polls, waited=round(elapsed, 1), timed_out=False)
            if rc == 0:
                return result
            if rc != args["pending_rc"]:
                result.update(failed=True, msg="%s: the probe failed (rc %s) after %d s: %s" % (
                    args["what"], rc, elapsed, (last_line(answer.get("stderr")) or answer.get("msg") or progress or "no output")))
                return result
            if elapsed + args["interval"] > args["timeout"]:
                result.update(failed=True, timed_out=True, msg="%s: not done within %d s; the last progress: %s." % (
                    args["what"], args["timeout"], progress or "none"))
                return result
            time.sleep(args["interval"])
