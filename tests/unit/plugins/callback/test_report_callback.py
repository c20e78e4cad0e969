# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""verl.deploy.report fed as ansible-core feeds a stdout callback: the console is the short report, the log the whole stream."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from ansible import context
from ansible.executor.stats import AggregateStats
from ansible.executor.task_result import CallbackTaskResult
from ansible.inventory.host import Host
from ansible.module_utils.common.collections import ImmutableDict
from ansible.playbook.play import Play
from ansible.playbook.task import Task

from ansible_collections.verl.deploy.plugins.callback.report import CallbackModule

# The options ansible-core would give it (the default callback's documented defaults, ansible.cfg's yaml results).
OPTIONS = {"display_skipped_hosts": True, "display_ok_hosts": True, "display_failed_stderr": False, "show_custom_stats": False,
           "show_per_host_start": False, "check_mode_markers": False, "show_task_path_on_failure": False,
           "result_format": "yaml", "pretty_results": None}


class Console:
    """The real display's part the plugin uses: what it would print, line by line."""

    verbosity = 0
    columns = 80

    def __init__(self):
        self.lines, self.raw = [], []

    def display(self, msg, color=None, stderr=False, screen_only=False, log_only=False, newline=True):
        del color, stderr, screen_only, log_only, newline
        self.raw.append(str(msg))
        self.lines.extend(str(msg).splitlines())

    def banner(self, msg, color=None, cows=True):
        del color, cows
        self.display(msg)


class Playbook:
    def __init__(self, names):
        self._file_name = "/somewhere/playbooks/deploy.yml"
        self._plays = [Play.load({"name": name, "hosts": "all", "gather_facts": False}) for name in names]

    def get_plays(self):
        return self._plays


NODES = ["node%d" % n for n in range(1, 4)]


def callback_result(host, task, data):
    """The result a callback receives, built as the running ansible-core builds it: from 2.21 around a
    UnifiedTaskResult, before that around the result dict and the task's fields."""
    try:
        from ansible._internal._task import UnifiedTaskResult  # pylint: disable=import-outside-toplevel
    except ImportError:
        return CallbackTaskResult(host, task, data, {})
    return CallbackTaskResult(host, task, UnifiedTaskResult.from_action_result_dict(data))


@pytest.fixture(name="run")
def fixture_run(tmp_path, monkeypatch):
    """A report callback writing its log under tmp_path, and helpers that send it events."""
    for name in ("VERL_DEPLOY_REPORT_LOG", "VERL_DEPLOY_REPORT_PROGRESS"):
        monkeypatch.setenv(name, "")
    monkeypatch.setattr(context, "CLIARGS", ImmutableDict(check=False, diff=False, args=[]))
    console = Console()
    plugin = CallbackModule(display=console)
    options = dict(OPTIONS, log_dir=str(tmp_path / "logs"))
    monkeypatch.setattr(plugin, "get_option", options.__getitem__)
    stats = AggregateStats()

    class Run:
        def __init__(self):
            self.console, self.plugin, self.stats = console, plugin, stats

        def start(self, names):
            self.book = Playbook(names)
            plugin.v2_playbook_on_start(self.book)

        def play(self, index):
            plugin.v2_playbook_on_play_start(self.book.get_plays()[index])

        def task(self, name, action="command", args=None):
            task = Task.load({"name": name, action: args or {}})
            plugin.v2_playbook_on_task_start(task, False)
            return task

        def result(self, task, host, outcome, **data):
            if task.action == "debug":  # as the debug action returns it: shown at any verbosity
                data["_ansible_verbose_always"] = True
            node = Host(host)
            # As ansible-core makes the localhost of a controller play that the inventory does not list.
            node.implicit = host == "localhost"
            result = callback_result(node, task, dict(data, changed=outcome == "changed"))
            stats.increment({"unreachable": "dark", "failed": "failures"}.get(outcome, outcome), host)
            {"ok": plugin.v2_runner_on_ok, "changed": plugin.v2_runner_on_ok, "skipped": plugin.v2_runner_on_skipped,
             "failed": plugin.v2_runner_on_failed, "unreachable": plugin.v2_runner_on_unreachable}[outcome](result)

        def end(self):
            plugin.v2_playbook_on_stats(stats)
            return self.console.lines

        @property
        def log(self):
            return Path(os.environ["VERL_DEPLOY_REPORT_LOG"]).read_text()

    return Run()


DEPLOY = ["0. On the controller, before any node is contacted - the collection", "1. Every node answers and is read (NPUs)",
          "4. The training container on every node", "7. Ray on the head", "7. Ray on the workers",
          "7-8. Report the joins, then train on the head and verify"]


def test_one_line_per_stage_the_messages_once_and_the_log_holds_every_host(run):
    run.start(DEPLOY)
    run.play(0)
    task = run.task("Check the settings")
    run.result(task, "localhost", "ok")
    run.play(1)
    task = run.task("Read the node")
    for node in NODES:
        run.result(task, node, "ok")
    run.play(2)
    task = run.task("Skipped everywhere")
    for node in NODES:
        run.result(task, node, "skipped")
    task = run.task("Start the training container")
    for node in NODES:
        run.result(task, node, "changed")
    task = run.task("Say the stack", action="debug", args={"msg": "x"})
    for node in NODES:
        run.result(task, node, "ok", msg="%s: verl 0.7.0, torch_npu 2.7.1" % node)
    run.play(3)
    task = run.task("Start Ray")
    run.result(task, "node1", "changed")
    run.play(4)
    task = run.task("Join")
    for node in NODES[1:]:
        run.result(task, node, "changed")
    run.play(5)
    task = run.task("Where to look", action="debug", args={"msg": "x"})
    run.result(task, "node1", "ok", msg=["Training runs on node1.", "log: /logs/train.log"])
    lines = run.end()
    stages = [line for line in lines if line.startswith("[")]
    assert [line.split(" (")[0] for line in stages] == [
        "[0/8] On the controller, before any node is contacted: done on the controller",
        "[1/8] Every node answers and is read: ok on 3",
        "[4/8] The training container on every node: changed on 3",
        "[7/8] Ray on the head: changed on 3",
        "[8/8] Report the joins, then train on the head and verify: ok on 1",
    ]
    # The per-node message once, with the count of the others; the summary as one block, last before the result.
    assert "node1: verl 0.7.0, torch_npu 2.7.1 (the same on 2 more node(s))" in lines
    assert lines.index("log: /logs/train.log") == lines.index(stages[-1]) - 1
    # The nodes only: the controller (the implicit localhost) is no host of the count.
    assert lines[-1].startswith("Result: 3 host(s), changed on 3 (")
    assert lines[-1].endswith(" s). Full log: " + os.environ["VERL_DEPLOY_REPORT_LOG"])
    assert lines[0] == "deploy.yml: the full log is " + os.environ["VERL_DEPLOY_REPORT_LOG"]
    assert len(lines) <= 15
    log = run.log
    for node in NODES:
        assert "changed: [%s]" % node in log and "skipping: [%s]" % node in log
    assert "TASK [Start the training container]" in log and "PLAY RECAP" in log
    assert "node3: verl 0.7.0" in log
    assert oct(os.stat(os.environ["VERL_DEPLOY_REPORT_LOG"]).st_mode & 0o777) == "0o600"


def test_a_failure_is_named_once_with_its_nodes(run):
    run.start(DEPLOY)
    run.play(0)
    run.result(run.task("Settings"), "localhost", "ok")
    run.play(1)
    task = run.task("Read the node")
    run.result(task, "node1", "ok")
    for node in NODES[1:]:
        run.result(task, node, "failed", msg="%s: NPU 3 is busy (pid 77). Fix: stop pid 77 on %s." % (node, node))
    run.result(task, "node4", "unreachable", msg="Failed to connect to the host via ssh: Connection refused")
    lines = run.end()
    failed = [line for line in lines if line.startswith("FAILED on")]
    assert failed == ["FAILED on node2, node3: node2: NPU 3 is busy (pid 77). Fix: stop pid 77 on node2."]
    assert "UNREACHABLE on node4: Failed to connect to the host via ssh: Connection refused" in lines
    assert [line for line in lines if line.startswith("[1/8]")][0].startswith(
        "[1/8] Every node answers and is read: FAILED on node2, node3, UNREACHABLE: node4, ok on 1 (")
    assert "FAILED on node2, node3" in lines[-1] and "UNREACHABLE: node4" in lines[-1]
    assert run.log.count("FAILED! =>") == 2 and "fatal: [node4]: UNREACHABLE!" in run.log, "every host's failure is in the log"


def test_many_nodes_print_no_more_lines_than_three(run):
    names = ["node%03d" % n for n in range(128)]
    run.start(DEPLOY[:3])
    run.play(0)
    run.result(run.task("Settings"), "localhost", "ok")
    run.play(1)
    task = run.task("Read")
    for node in names:
        run.result(task, node, "ok")
    run.play(2)
    task = run.task("Say", action="debug", args={"msg": "x"})
    for node in names:
        run.result(task, node, "ok", msg="%s: verl 0.7.0" % node)
    task = run.task("Fail some")
    for node in names[:10]:
        run.result(task, node, "failed", msg="the image pull timed out. Fix: raise verl_docker_timeout.")
    lines = run.end()
    assert len(lines) <= 10, lines
    assert "FAILED on node000, node001, node002 and 7 more: the image pull timed out. Fix: raise verl_docker_timeout." in lines
    assert "node000: verl 0.7.0 (the same on 127 more node(s))" in lines


def test_a_play_without_a_number_is_the_next_stage(run):
    run.start(["0. Find the collection, check the inventory", "Stop the training and Ray"])
    run.play(0)
    run.result(run.task("Link"), "localhost", "ok")
    run.play(1)
    run.result(run.task("Stop"), "node1", "changed")
    lines = run.end()
    assert [line.split(" (")[0] for line in lines if line.startswith("[")] == [
        "[0/1] Find the collection, check the inventory: done on the controller", "[1/1] Stop the training and Ray: changed on 1"]


# What a node reports, hostile: ESC[1A ESC[2K rewrites the line above, ESC[2J clears the screen, a carriage return, a record
# separator and a Unicode line separator start a line of their own, a bidi override turns the text around.
HOSTILE = "step:3 \x1b[1A\x1b[2Kdone\x1b[2J\rforged\x1e\u2028forged\u202eevil\x85"


def test_what_a_node_reports_reaches_the_console_inert_and_the_log_raw(run):
    run.start(DEPLOY)
    run.play(0)
    run.result(run.task("Status", "debug"), "node1", "ok", msg=["log: /logs/x\x1b]0;title\x07.log", HOSTILE])
    run.result(run.task("Verify"), "node2", "failed", msg="the training ended: " + HOSTILE)
    lines = run.end()
    assert all(line.isprintable() for message in run.console.raw for line in message.split("\n")), run.console.raw
    assert "step:3 \\x1b[1A\\x1b[2Kdone\\x1b[2J\\x0dforged\\x1eU+2028forgedU+202Eevil\\x85" in lines
    assert "log: /logs/x\\x1b]0;title\\x07.log" in lines
    assert any(line.startswith("FAILED on node2: the training ended: step:3 \\x1b[1A") for line in lines), lines
    # The log file keeps the whole message as Ansible's default callback renders it.
    assert run.log.count("step:3 ") == 2 and "forged\u202eevil" in run.log


def test_a_node_that_did_not_answer_a_task_ignoring_it_is_left_to_the_verdict(run):
    """The first contact ignores unreachable nodes (ignore_unreachable) and the playbook's verdict names each with why and
    the fix: the console does not say the raw message too; the stage and the result count it, the log keeps it whole."""
    run.start(DEPLOY)
    run.play(1)
    task = Task.load({"name": "Read the node", "command": "true", "ignore_unreachable": True})
    run.plugin.v2_playbook_on_task_start(task, False)
    run.result(task, "node2", "unreachable", msg="Failed to connect to the host via ssh: ssh: connect to host 10.0.0.2 port 22: "
                                                 "Connection refused")
    lines = run.end()
    assert not any(line.startswith("UNREACHABLE on") for line in lines), lines
    assert any("UNREACHABLE: node2" in line for line in lines) and "Connection refused" in run.log
