"""playbooks/remove.yml on this machine, without a cluster or a Docker engine: it is behind the deploy's confirmation
(nobody to ask: refused before any node; "no" typed: nothing done), says what it removes and keeps before asking, and
with the confirmation a node that does not answer is named with what was not removed there. The Molecule scenario
three_nodes removes the containers of the simulated cluster and finds the checkpoints and logs kept.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pexpect
import yaml

from helpers.launch_helpers import REPO

ANSIBLE_PLAYBOOK = str(Path(sys.executable).with_name("ansible-playbook"))
# Nothing listens on port 9 of 127.0.0.1: a task that contacted a node would fail naming it.
INVENTORY = {"ray_cluster": {"children": {
    "ray_head": {"hosts": {"node1": {"ansible_host": "127.0.0.1", "ansible_port": 9}}},
    "ray_workers": {"hosts": {"node2": {"ansible_host": "127.0.0.1", "ansible_port": 9}}}}}}


def argv(tmp_path, *args):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump(INVENTORY))
    return [ANSIBLE_PLAYBOOK, "-i", str(inventory), "playbooks/remove.yml", *args]


def env():
    return dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")


def contacted(output):
    """The nodes the recap shows a task ran on (ok, changed, failed or unreachable), from the default callback's recap."""
    recap = output.rsplit("PLAY RECAP", 1)[-1] if "PLAY RECAP" in output else ""
    return [line.split()[0] for line in recap.splitlines() if line.startswith(("node1", "node2"))]


def test_without_a_terminal_or_verl_confirm_it_is_refused_before_any_node(tmp_path):
    proc = subprocess.run(argv(tmp_path), cwd=REPO, env=env(), stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=120, check=False)
    output = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode != 0
    assert "verl_confirm is not true and there is no terminal to ask on" in output, output
    assert "Fix: set verl_confirm=true (-e verl_confirm=true) to remove the containers without the question" in output
    assert contacted(proc.stdout) == [], "no node may be contacted"


def test_at_a_terminal_it_says_what_it_removes_and_keeps_and_no_removes_nothing(tmp_path):
    command = argv(tmp_path)
    child = pexpect.spawn(command[0], command[1:], cwd=str(REPO), env=env(), encoding="utf-8", timeout=120)
    child.expect(r"Remove the container verl on 2 node\(s\)\? Type yes to go on")
    shown = " ".join(child.before.split())
    child.sendline("no")
    child.expect(pexpect.EOF)
    child.close()
    output = " ".join((child.before or "").split())
    assert "Remove: the container verl on 2 node(s) (node1, node2)" in shown, shown
    assert "Kept: the checkpoints, logs, datasets and model" in shown and "the image" in shown
    assert child.exitstatus != 0 and "Not confirmed (the answer was not yes): nothing was changed" in output, output
    assert "Stop the training" not in output and "UNREACHABLE" not in output


def test_confirmed_a_node_that_does_not_answer_is_named_with_what_was_not_removed(tmp_path):
    proc = subprocess.run(argv(tmp_path, "-e", "verl_confirm=true"), cwd=REPO, env=env(), stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=300, check=False)
    output = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode != 0
    assert ("node1 (head): the node did not answer" in output
            and "the training and Ray on it were NOT STOPPED, and its container NOT REMOVED" in output), output
    assert ("Fix: check ansible_port (now 9) and that sshd runs on the node: `ssh -p 9 127.0.0.1 true` must log in, then run "
            "remove.yml again.") in output
    assert "removed, with Ray" not in output
