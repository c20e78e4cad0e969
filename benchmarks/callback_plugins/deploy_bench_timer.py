# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Timing callback of benchmarks/deploy_bench.py: per play (stage) wall time, per host task counts.

Enabled only by the benchmark (ANSIBLE_CALLBACK_PLUGINS=benchmarks/callback_plugins,
ANSIBLE_CALLBACKS_ENABLED=deploy_bench_timer); writes JSON to the file named by DEPLOY_BENCH_TIMES.
"""
from __future__ import annotations

import json
import os
import time

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = r"""
name: deploy_bench_timer
type: aggregate
short_description: Per play wall time and per host task counts, written as JSON (benchmarks only)
description:
  - Writes the plays (name, seconds) and, per host, how many tasks ran, changed, were skipped or failed to the file
    named by the environment variable E(DEPLOY_BENCH_TIMES).
requirements:
  - enabled in the callbacks (benchmarks/deploy_bench.py does it)
"""


class CallbackModule(CallbackBase):
    """Collects timings; prints nothing."""

    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "deploy_bench_timer"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        self._start = time.monotonic()
        self._plays = []
        self._hosts = {}
        self._tasks = []

    def _close_play(self):
        if self._plays and self._plays[-1]["seconds"] is None:
            self._plays[-1]["seconds"] = round(time.monotonic() - self._plays[-1]["_t"], 2)

    def v2_playbook_on_play_start(self, play):
        self._close_play()
        self._plays.append({"name": play.get_name().strip(), "_t": time.monotonic(), "seconds": None, "tasks": 0})

    def v2_playbook_on_task_start(self, task, is_conditional):
        if self._plays:
            self._plays[-1]["tasks"] += 1
        now = time.monotonic()
        self._tasks.append({"name": task.get_name().strip(), "_t": now, "_end": now, "hosts": 0})

    def v2_playbook_on_handler_task_start(self, task):
        self.v2_playbook_on_task_start(task, False)

    def _count(self, result, outcome):
        if self._tasks:
            self._tasks[-1]["_end"] = time.monotonic()
            self._tasks[-1]["hosts"] += outcome == "ran"
        host = self._hosts.setdefault(result._host.get_name(), {"ran": 0, "changed": 0, "skipped": 0, "failed": 0})
        host[outcome] += 1
        if outcome == "ran" and result._result.get("changed"):
            host["changed"] += 1

    def v2_runner_on_ok(self, result):
        self._count(result, "ran")

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._count(result, "ran")
        if not ignore_errors:
            self._count(result, "failed")

    def v2_runner_on_unreachable(self, result):
        self._count(result, "failed")

    def v2_runner_on_skipped(self, result):
        self._count(result, "skipped")

    def v2_playbook_on_stats(self, stats):
        self._close_play()
        path = os.environ.get("DEPLOY_BENCH_TIMES")
        if not path:
            return
        data = {
            "seconds": round(time.monotonic() - self._start, 2),
            "plays": [{k: v for k, v in play.items() if not k.startswith("_")} for play in self._plays],
            "hosts": self._hosts,
            "slowest_tasks": sorted(({"name": t["name"], "hosts": t["hosts"], "seconds": round(t["_end"] - t["_t"], 2)} for t in self._tasks),
                                    key=lambda t: -t["seconds"])[:15],
            "changed": {host: stats.summarize(host)["changed"] for host in stats.processed},
        }
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=1)
