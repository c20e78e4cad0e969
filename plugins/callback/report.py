# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: report
type: stdout
short_description: A short console report of a run, the full default task stream in a log file
version_added: 0.4.0
description:
  - "At the terminal, one line per stage as it ends, with its time (C([4/8] The training container on every node: changed on 3)),
    the stages keyed on the playbooks' numbered play names; a message shown by a task on one host (a summary, a
    refusal) as one block; a message of many hosts once, with the count of the others; a failed task's message once,
    with the nodes it failed on; the progress of a wait on many nodes as one line (P(verl.deploy.wait_progress#module));
    at the end the nodes' outcome and the log file."
  - The log file holds what the default callback prints (every task, every host), written by this plugin.
  - The repository's C(ansible.cfg) sets it. C(ANSIBLE_STDOUT_CALLBACK=default) gives the whole stream at the terminal
    again. Under AWX (ansible-runner) the job's own callback is used and this plugin is not loaded.
author:
  - verl-deploy maintainers (!UNKNOWN)
extends_documentation_fragment:
  - ansible.builtin.default_callback
  - ansible.builtin.result_format_callback
options:
  log_dir:
    description:
      - The folder of the log files, one per run, named after the playbook and the time (C(deploy-20261203-141530.log)),
        made with mode 0700; each file 0600.
    type: path
    default: ~/.ansible/verl-deploy-logs
    env:
      - name: VERL_DEPLOY_LOG_DIR
    ini:
      - section: callback_verl_report
        key: log_dir
requirements:
  - set as stdout in configuration (C(stdout_callback = verl.deploy.report))
"""

import os
import re
import time
from datetime import datetime

from ansible import constants as C
from ansible.playbook.task_include import TaskInclude
from ansible.plugins.callback.default import CallbackModule as DefaultCallback

from ansible_collections.verl.deploy.plugins.module_utils._report import (
    grouped, host_list, message_text, problem_text, stage_line, stage_plan, duration, terminal_lines)

# Read by the wait_progress action in the worker processes (forked after they are set): where a poll's per-node line
# goes (the log) and where the nodes' progress meets (one line for all of them at the terminal).
ENV_LOG = "VERL_DEPLOY_REPORT_LOG"
ENV_PROGRESS = "VERL_DEPLOY_REPORT_PROGRESS"
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_DEBUG = ("debug", "ansible.builtin.debug", "ansible.legacy.debug")
_ORDER = {"skipped": 0, "ok": 1, "changed": 2, "unreachable": 3, "failed": 4}


class _LogDisplay:
    """What the default callback prints, written to the log file instead (no colour); anything else is the real display's."""

    def __init__(self, handle, real):
        self._handle = handle
        self._real = real

    def display(self, msg, color=None, stderr=False, screen_only=False, log_only=False, newline=True, **_kwargs):
        del color, stderr, log_only
        if screen_only:
            return
        self._handle.write(_ANSI.sub("", str(msg)) + ("\n" if newline else ""))
        self._handle.flush()

    def banner(self, msg, color=None, cows=True):
        del color, cows
        msg = str(msg).strip()
        self.display("\n%s %s" % (msg, "*" * max(3, 79 - len(msg))))

    def _error(self, error, stderr=False):
        """A failed task's error block (core 2.19 prints it beside the result): in the log only; the report says it once."""
        del stderr
        event = getattr(error, "event", None)
        self.display("[ERROR]: %s" % (getattr(event, "msg", None) or error))

    def __getattr__(self, name):
        return getattr(self._real, name)


class CallbackModule(DefaultCallback):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "stdout"
    CALLBACK_NAME = "verl.deploy.report"

    def __init__(self, display=None):
        super().__init__()
        if display is not None:
            self._display = display
        self._console = self._display
        self._log_path = None
        self._plan, self._total, self._play_index = [], 0, -1
        self._stage = None
        self._pending = []
        self._last_task = None
        self._outcome = {}
        # The implicit localhost: the controller itself, never counted as a node.
        self._controller = set()
        self._started = time.monotonic()

    # The log ----------------------------------------------------------------------------------------------------

    def _open_log(self, playbook_name):
        folder = os.path.expanduser(self.get_option("log_dir"))
        os.makedirs(folder, mode=0o700, exist_ok=True)
        stem = os.path.splitext(os.path.basename(playbook_name or "run"))[0]
        path = os.path.join(folder, "%s-%s.log" % (stem, datetime.now().strftime("%Y%m%d-%H%M%S")))
        handle = os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), "a", encoding="utf-8")
        self._log_path = path
        self._display = _LogDisplay(handle, self._console)
        progress = path[:-len(".log")] + ".progress"
        os.makedirs(progress, mode=0o700, exist_ok=True)
        os.environ[ENV_LOG] = path
        os.environ[ENV_PROGRESS] = progress

    def _say(self, text, color=None):
        # Every console line passes the one gate: what a node reported never acts on the terminal.
        for line in terminal_lines(str(text).rstrip("\n")):
            self._console.display(line, color=color)

    # Stages -----------------------------------------------------------------------------------------------------

    def _end_stage(self):
        self._flush()
        if self._stage is None:
            return
        key, label, states, start = self._stage
        line = stage_line(key, self._total, label, states, time.monotonic() - start, controller=self._controller)
        failed = any(state in ("failed", "unreachable") for state in states.values())
        self._say(line, color=C.COLOR_ERROR if failed else None)
        self._stage = None

    def _note(self, result, state):
        host = result.host.get_name()
        if getattr(result.host, "implicit", False):
            self._controller.add(host)
        if self._stage is not None:
            states = self._stage[2]
            if _ORDER[state] > _ORDER.get(states.get(host, "skipped"), 0) or host not in states:
                states[host] = state
        if _ORDER[state] > _ORDER.get(self._outcome.get(host, "skipped"), 0) or host not in self._outcome:
            self._outcome[host] = state

    def _keep(self, result, kind, text):
        """A message of the running task, shown when the task ends (each text once)."""
        task = result.task._uuid
        if self._last_task != task:
            self._flush()
            self._last_task = task
        self._pending.append((kind, result.host.get_name(), text))

    def _flush(self):
        pending, self._pending, self._last_task = self._pending, [], None
        for kind in ("said", "failed", "unreachable"):
            messages = [(host, text) for each, host, text in pending if each == kind]
            for hosts, text in grouped(messages):
                if kind == "said":
                    others = len(hosts) - 1
                    self._say(text + (" (the same on %d more node(s))" % others if others else ""))
                else:
                    word = "FAILED" if kind == "failed" else "UNREACHABLE"
                    self._say("%s on %s: %s" % (word, host_list(hosts), text), color=C.COLOR_ERROR)

    # The callback API -------------------------------------------------------------------------------------------

    def v2_playbook_on_start(self, playbook):
        self._open_log(getattr(playbook, "_file_name", "run"))
        super().v2_playbook_on_start(playbook)
        self._plan, self._total = stage_plan([play.get_name() for play in playbook.get_plays()])
        self._say("%s: the full log is %s" % (os.path.basename(getattr(playbook, "_file_name", "run")), self._log_path))

    def v2_playbook_on_play_start(self, play):
        super().v2_playbook_on_play_start(play)
        self._play_index += 1
        key, label = self._plan[self._play_index] if self._play_index < len(self._plan) else (str(self._play_index), play.get_name())
        if self._stage is not None and self._stage[0] == key:
            return
        self._end_stage()
        self._stage = (key, label, {}, time.monotonic())

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._flush()
        super().v2_playbook_on_task_start(task, is_conditional)

    def v2_runner_on_ok(self, result):
        super().v2_runner_on_ok(result)
        if isinstance(result.task, TaskInclude):
            return
        self._note(result, "changed" if result.result.get("changed") else "ok")
        if result.task.action in _DEBUG and "msg" in result.result:
            self._keep(result, "said", message_text(result.result["msg"]))

    def v2_runner_on_failed(self, result, ignore_errors=False):
        super().v2_runner_on_failed(result, ignore_errors)
        if ignore_errors:
            self._note(result, "ok")
            return
        self._note(result, "failed")
        self._keep(result, "failed", problem_text(result.result))

    def v2_runner_on_unreachable(self, result):
        super().v2_runner_on_unreachable(result)
        self._note(result, "unreachable")
        # A task that ignores unreachable nodes hands them to the playbook's verdict, which names each with why and the
        # fix: its raw message is said once there (and whole in the log file), not here too.
        if not getattr(result.task, "ignore_unreachable", False):
            self._keep(result, "unreachable", problem_text(result.result))

    def v2_runner_on_skipped(self, result):
        super().v2_runner_on_skipped(result)
        self._note(result, "skipped")

    def v2_playbook_on_stats(self, stats):
        self._end_stage()
        super().v2_playbook_on_stats(stats)
        hosts = sorted(stats.processed.keys())
        failed = [host for host in hosts if stats.summarize(host)["failures"]]
        unreachable = [host for host in hosts if stats.summarize(host)["unreachable"]]
        hosts = [host for host in hosts if host not in self._controller]
        changed = [host for host in hosts if stats.summarize(host)["changed"]]
        parts = ["%d host(s)" % len(hosts), "changed on %d" % len(changed)]
        if failed:
            parts.append("FAILED on %s" % host_list(failed))
        if unreachable:
            parts.append("UNREACHABLE: %s" % host_list(unreachable))
        line = "Result: %s (%s)." % (", ".join(parts), duration(time.monotonic() - self._started))
        self._say("%s Full log: %s" % (line, self._log_path), color=C.COLOR_ERROR if failed or unreachable else C.COLOR_OK)
        if self._log_path:
            self._display.display("\n" + _ANSI.sub("", line))
        progress = os.environ.get(ENV_PROGRESS)
        if progress and os.path.isdir(progress):
            for root, folders, files in os.walk(progress, topdown=False):
                for name in files:
                    os.unlink(os.path.join(root, name))
                for name in folders:
                    os.rmdir(os.path.join(root, name))
            os.rmdir(progress)
