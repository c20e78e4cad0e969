"""One deploy at a time, from its first change: deploy.yml takes its lock on the head's host before the container stage,
and a deploy refused there changed nothing on any node. deploy.yml's own play 4 is run here on two local hosts (a head
and a worker), its container stage replaced by a stand-in change (a file each node writes), with the real lock and unlock
of verl.deploy.training; then the order of deploy.yml's plays: nothing before the lock changes a node, and every stage
before Ray's releases the lock when it stops the deploy."""
from __future__ import annotations

import copy
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ansible_collections.verl.deploy.plugins.module_utils._deploy_lock import deploy_lock
from helpers.launch_helpers import REPO

DEPLOY = yaml.safe_load((REPO / "playbooks" / "deploy.yml").read_text())
CHANGING = {("verl.deploy.container", None), ("verl.deploy.swanlab", None), ("verl.deploy.swanlab", "tracker_keys"),
            ("verl.deploy.training", "install"), ("verl.deploy.ray", None), ("verl.deploy.training", "start")}


def _tasks(tasks):
    for task in tasks or []:
        yield task
        for nested in ("block", "rescue", "always"):
            yield from _tasks(task.get(nested))


def _role(task):
    include = task.get("ansible.builtin.include_role")
    return (include["name"], include.get("tasks_from")) if include else None


def stage_four(tmp_path, fail_on=""):
    """deploy.yml's play 4 with its container stage replaced by a stand-in change on every node (failing on fail_on)."""
    play = copy.deepcopy(next(play for play in DEPLOY if play.get("name", "").startswith("4. ")))
    block = next(task for task in play["tasks"] if "block" in task)
    block["block"] = [{"name": "A stand-in change on every node", "ansible.builtin.copy": {
        "content": "changed\n", "dest": str(tmp_path / "changed-{{ inventory_hostname }}"), "mode": "0644"}},
        {"name": "A node that stops the deploy", "ansible.builtin.fail": {"msg": "stand-in failure"},
         "when": "inventory_hostname == '%s'" % fail_on}]
    return play


def run_stage_four(tmp_path, lock, fail_on=""):
    logs = tmp_path / "logs"
    setup = {"name": "The settings check's facts", "hosts": "ray_head:ray_workers", "gather_facts": False, "tasks": [
        {"name": "Keep them", "ansible.builtin.set_fact": {"_verl_launch": {"log_dir": str(logs), "deploy_lock_timeout": 0}, "_verl_lock": lock}}]}
    (tmp_path / "play.yml").write_text(yaml.safe_dump([setup, stage_four(tmp_path, fail_on)], sort_keys=False))
    (tmp_path / "hosts.ini").write_text("[ray_head]\nhead1\n[ray_workers]\nworker1\n[all:vars]\nansible_connection=local\n"
                                        "ansible_python_interpreter=%s\n" % sys.executable)
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_STDOUT_CALLBACK="default", ANSIBLE_CONFIG=str(REPO / "ansible.cfg"))
    proc = subprocess.run([str(Path(sys.executable).with_name("ansible-playbook")), "-i", str(tmp_path / "hosts.ini"),
                           str(tmp_path / "play.yml")], cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    proc.output = proc.stdout + proc.stderr
    return proc, logs / ".verl-deploy" / "deploy.lock"


def test_a_deploy_refused_at_the_lock_changed_nothing_on_any_node(tmp_path):
    other = "token=c2:22:1\nholder=the deploy of controller c2 pid 22 (AWX job 5)\nsince=1700000000\npid=1\nlease=120\n"
    (tmp_path / "logs" / ".verl-deploy").mkdir(parents=True)
    (tmp_path / "logs" / ".verl-deploy" / "deploy.lock").write_text(other)
    proc, lock = run_stage_four(tmp_path, deploy_lock(0, before_ray=900))
    assert proc.returncode != 0, proc.output
    text = " ".join(proc.output.split())
    assert "head1 (head): another deploy is changing this cluster: the deploy of controller c2 pid 22 (AWX job 5) holds its lock since " in text
    assert "This deploy waited 0 s (verl_deploy_lock_timeout) and changed nothing. Fix: let that deploy end (or stop it)" in text
    assert not list(tmp_path.glob("changed-*")), "a node changed after the refusal"
    assert lock.read_text() == other, "the other deploy's lock was touched"


def test_a_stage_that_stops_the_deploy_releases_the_lock_it_took(tmp_path):
    mine = deploy_lock(0, before_ray=900)
    proc, lock = run_stage_four(tmp_path, mine, fail_on="worker1")
    assert proc.returncode != 0 and "stand-in failure" in proc.output, proc.output
    assert (tmp_path / "changed-head1").exists() and (tmp_path / "changed-worker1").exists()
    assert not lock.exists(), "the lock of a deploy that stopped before Ray's stage was left: " + proc.output[-3000:]
    proc, lock = run_stage_four(tmp_path, mine)
    assert proc.returncode == 0, proc.output
    assert "token=%s\n" % mine["token"] in lock.read_text() and "lease=3120\n" in lock.read_text(), "held to the end"
    # The take is the run's own bookkeeping: an unchanged re-run still reports 0 changed.
    took = proc.stdout.split("Take the deploy's lock on the head, before any node changes]", 1)[1].split("TASK [", 1)[0]
    assert "ok: [head1]" in took and "changed:" not in took, took


def test_nothing_before_the_lock_changes_a_node_and_every_stage_before_rays_releases_it_when_it_stops():
    plays = [play for play in DEPLOY if "hosts" in play]
    first = next(index for index, play in enumerate(plays) if any(_role(task) == ("verl.deploy.training", "lock")
                                                                  for task in _tasks(play.get("tasks"))))
    take = plays[first]
    assert take["hosts"] == "ray_head:ray_workers" and take["any_errors_fatal"], "a refusal on the head must stop every node"
    tasks = list(_tasks(take["tasks"]))
    assert _role(tasks[0]) == ("verl.deploy.training", "lock"), "the lock is the play's first task"
    assert all(_role(task) not in CHANGING for play in plays[:first] for task in _tasks(play.get("tasks")))
    # The stages before Ray's (4 container, 5 SwanLab, 6 scripts): each releases the lock in its `always` when it stops.
    for play in (play for play in plays if play["name"][:2] in ("4.", "5.", "6.")):
        assert any(_role(task) in CHANGING for task in _tasks(play["tasks"])), play["name"]
        assert any("always" in task and _role(task["always"][0]) == ("verl.deploy.training", "unlock") for task in play["tasks"]), play["name"]
    released = {tuple(task["tags"]) for task in _tasks(plays[-1]["tasks"]) if _role(task) == ("verl.deploy.training", "unlock")}
    assert released and all(set(tasks[0]["tags"]) <= set(tags) for tags in released), "released whatever stage tags were given"


@pytest.mark.parametrize("name", ["lock.yml", "unlock.yml"])
def test_the_lock_runs_on_the_heads_host_not_in_a_container(name):
    step = yaml.safe_load((REPO / "roles" / "training" / "tasks" / name).read_text())[0]["verl.deploy.node_step"]
    assert "lock_folder" in step and "container" not in step
