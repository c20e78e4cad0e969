"""Fail fast: deploy.yml judges every node's settings, its --tags and --check on the controller,
before any node is contacted. The nodes here are 127.0.0.1 on a closed port over ssh: a node that
were contacted would show as UNREACHABLE, and the play recap would name it. (How soon, against
`--syntax-check`, is measured by benchmarks/failfast_bench.py, not here.)"""
from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from helpers.launch_helpers import REPO, SECRET_KEY

ANSIBLE_PLAYBOOK = str(Path(sys.executable).with_name("ansible-playbook"))
PATHS = {"verl_model_path": "/models/Qwen3-8B", "verl_train_file": "/data/train.parquet", "verl_test_file": "/data/test.parquet",
         "verl_ckpts_dir": "/ckpt"}
STAGE_TAGS = ["verl_precheck", "verl_container", "verl_swanlab", "verl_training", "verl_ray"]


@pytest.fixture(scope="module")
def closed_port():
    """A port on 127.0.0.1 that is bound but never listened on: every connection to it is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


def unreachable_inventory(tmp_path, port, host_vars=None, **group_vars):
    inventory = {"ray_cluster": {
        "vars": dict(PATHS, ansible_connection="ssh", ansible_host="127.0.0.1", ansible_port=port, **group_vars),
        "children": {"ray_head": {"hosts": {"head1": None}},
                     "ray_workers": {"hosts": {"worker1": None, "worker2": None, "worker3": None}}},
    }}
    for host, values in (host_vars or {}).items():
        group = "ray_head" if host == "head1" else "ray_workers"
        inventory["ray_cluster"]["children"][group]["hosts"][host] = values
    path = tmp_path / "hosts.yml"
    path.write_text(yaml.safe_dump(inventory))
    return path


def run(playbook, inventory, *args):
    cmd = [ANSIBLE_PLAYBOOK, "playbooks/%s" % playbook, "-i", str(inventory), "-e", "verl_confirm=true", *args]
    env = dict(os.environ, ANSIBLE_NOCOLOR="1")
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    proc.output = proc.stdout + proc.stderr
    return proc


def recap_hosts(stdout):
    return set(re.findall(r"^(\S+)\s+: ok=", stdout.split("PLAY RECAP")[-1], re.MULTILINE))


def assert_no_node_contacted(proc):
    assert proc.returncode != 0, proc.output
    assert "UNREACHABLE" not in proc.output and "Connection refused" not in proc.output, proc.output
    assert recap_hosts(proc.stdout) == {"localhost"}, proc.stdout


def test_a_bad_setting_is_refused_on_the_controller_although_every_node_is_unreachable(tmp_path, closed_port):
    proc = run("deploy.yml", unreachable_inventory(tmp_path, closed_port), "-e", "verl_train_tp=3")
    assert_no_node_contacted(proc)
    assert "no node was contacted and nothing was changed" in proc.stdout
    # The model's heads are only known once the pre-check has read its config.json; TP 3 x PP 2 breaks the cluster's rule:
    # one refusal (not also the original design's stricter rule, nor the rollout's replicas: the same cause), printed once.
    assert "1 setting(s) need fixing; no node was contacted" in proc.stdout, proc.stdout
    assert proc.stdout.count("which is not divisible by verl_train_tp x verl_train_pp = 3 x 2 = 6.") == 1, proc.stdout
    assert "Fix: choose TP and PP whose product divides" in proc.stdout
    assert "verl itself would run" not in proc.stdout


def test_each_nodes_own_settings_are_checked_and_the_node_named(tmp_path, closed_port):
    """host_vars may differ from the group's: a bad path on one worker, fewer NPUs on another."""
    inventory = unreachable_inventory(tmp_path, closed_port, host_vars={
        "worker2": {"verl_npu_devices": "0,1,2,3"},
        "worker3": {"verl_model_path": "models/Qwen3-8B"},
    })
    proc = run("deploy.yml", inventory, "-e", "verl_swanlab_apikey=%s" % SECRET_KEY)
    assert_no_node_contacted(proc)
    assert "- worker3: verl_model_path='models/Qwen3-8B'" in proc.stdout or "- worker3: verl_model_path=models/Qwen3-8B" in proc.stdout
    assert "verl_npu_devices gives 8 NPUs on head1, worker1, worker3; 4 NPUs on worker2." in proc.stdout
    # A key look-alike is refused on every node, its value shown nowhere.
    assert "- every node: verl_swanlab_apikey is not a setting of verl.deploy but looks like the SwanLab key's name" in proc.stdout
    assert SECRET_KEY not in proc.output


def test_a_login_mode_without_a_key_is_refused_before_any_node(tmp_path, closed_port):
    proc = run("deploy.yml", unreachable_inventory(tmp_path, closed_port, verl_swanlab_enabled=True, verl_swanlab_mode="cloud",
                                                   verl_swanlab_host="http://127.0.0.1:8000"))
    assert_no_node_contacted(proc)
    assert "verl_swanlab_api_key is empty" in proc.stdout


def test_good_settings_go_on_to_the_nodes_and_name_those_that_do_not_answer(tmp_path, closed_port):
    """Settings that refer to facts cannot be judged before the pre-check: they are left to the check after it."""
    inventory = unreachable_inventory(tmp_path, closed_port, host_vars={
        "head1": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable},
        "worker1": {"verl_node_ip": "{{ ansible_default_ipv4.address }}"}})
    proc = run("deploy.yml", inventory, "-e", "mask=1010000")
    assert proc.returncode != 0
    assert "need fixing" not in proc.stdout, proc.stdout
    assert "3 node(s) did not answer, so nothing was changed on any node. worker" in " ".join(proc.stdout.split()), proc.stdout


def test_a_node_that_answers_but_cannot_be_read_is_named_with_what_failed(tmp_path, closed_port):
    """The pre-check's read is the first contact: a node whose read fails is not reported as one that did not answer."""
    inventory = unreachable_inventory(tmp_path, closed_port, host_vars={
        "head1": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable},
        "worker1": {"ansible_connection": "local", "ansible_python_interpreter": str(tmp_path / "no-python3")}})
    proc = run("deploy.yml", inventory, "-e", "mask=1010000")
    assert proc.returncode != 0
    text = " ".join(proc.stdout.split())
    assert ("2 node(s) did not answer, so nothing was changed on any node. worker2 (worker): DID NOT ANSWER: nothing listens for "
            "SSH on 127.0.0.1 port") in text, text
    assert "The pre-check could not read 1 node(s), so nothing was changed on any node: worker1: " in text, text
    assert "worker1 (worker): DID NOT ANSWER" not in text


@pytest.mark.parametrize("tags", ["verl_swanlb", "verl_ray,precheck"])
def test_a_tag_that_names_no_stage_is_refused_before_any_node(tmp_path, closed_port, tags):
    proc = run("deploy.yml", unreachable_inventory(tmp_path, closed_port), "--tags", tags)
    assert_no_node_contacted(proc)
    unknown = [tag for tag in tags.split(",") if tag not in STAGE_TAGS]
    assert "--tags %s names no stage of this playbook" % ",".join(unknown) in proc.stdout
    assert "Fix: give one or more of %s." % ", ".join(STAGE_TAGS) in proc.stdout


def test_a_stage_tag_still_runs_the_always_stages_and_any_skip_tags_is_taken(tmp_path, closed_port):
    """--skip-tags of a tag nobody uses skips nothing, so it is not refused (Molecule passes --skip-tags notest)."""
    inventory = unreachable_inventory(tmp_path, closed_port, host_vars={
        "head1": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}})
    proc = run("deploy.yml", inventory, "--tags", "verl_swanlab", "--skip-tags", "molecule-notest,notest")
    assert "names no stage" not in proc.stdout
    assert "3 node(s) did not answer" in proc.stdout, proc.stdout


@pytest.mark.parametrize("playbook", ["deploy.yml", "status.yml", "stop.yml", "render.yml"])
def test_check_mode_is_refused_at_once(tmp_path, closed_port, playbook):
    proc = run(playbook, unreachable_inventory(tmp_path, closed_port), "--check")
    assert_no_node_contacted(proc)
    assert "--check is not supported" in proc.stdout and "Fix: run without --check" in proc.stdout


def test_status_has_no_stages_to_select(tmp_path, closed_port):
    proc = run("status.yml", unreachable_inventory(tmp_path, closed_port), "--tags", "verl_ray")
    assert_no_node_contacted(proc)
    assert "this playbook has no stages to select" in proc.stdout


def _includes(tasks):
    for task in tasks or []:
        for key in ("ansible.builtin.include_role", "ansible.builtin.include_tasks", "include_role", "include_tasks"):
            if key in task:
                yield task, task[key]
        for nested in ("block", "rescue", "always"):
            yield from _includes(task.get(nested))


@pytest.mark.parametrize("playbook", sorted(p.name for p in (REPO / "playbooks").glob("*.yml")))
def test_every_tagged_include_passes_its_tags_on_to_its_tasks(playbook):
    """An include's `tags` only decide whether the include runs; without the same `apply: tags` a
    --tags run would run the include and none of its tasks (nothing, silently)."""
    for play in yaml.safe_load((REPO / "playbooks" / playbook).read_text()):
        for task, include in _includes(play.get("tasks")):
            tags = task.get("tags") or []
            applied = ((include or {}).get("apply") or {}).get("tags") or [] if isinstance(include, dict) else []
            assert sorted(tags) == sorted(applied), "%s: %r has tags %s but applies %s" % (playbook, task.get("name"), tags, applied)


def test_deploy_refuses_exactly_the_tags_it_does_not_use():
    plays = yaml.safe_load((REPO / "playbooks" / "deploy.yml").read_text())
    used = {tag for play in plays for task, _include in _includes(play.get("tasks")) for tag in task.get("tags") or []}
    assert used - {"always"} == set(STAGE_TAGS)
    assert plays[0]["vars"]["_verl_preflight_tags"] == STAGE_TAGS
    names = [play["name"] for play in plays]
    assert [name.split(".")[0] for name in names] == ["0", "1", "2", "3", "4", "5", "6", "7", "7", "7", "7", "7", "7-8"], names


def test_more_nodes_than_forks_is_warned_about(tmp_path, closed_port):
    proc = run("deploy.yml", unreachable_inventory(tmp_path, closed_port), "-f", "3", "--tags", "verl_ray,verl_rya")
    assert "--tags verl_rya names no stage" in proc.stdout
    assert "The inventory has 4 nodes but Ansible works on at most 3 at once (forks)" in proc.stdout, proc.stdout
    assert "-f 4" in proc.stdout
    assert_no_node_contacted(proc)
