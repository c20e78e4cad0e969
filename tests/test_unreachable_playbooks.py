"""A verdict whatever is down: every playbook that contacts the nodes, run with every node unreachable (the usual first
failure, a wrong key, user or port), ends with a verdict that names each node with why and what to check, never an
internal error, and changes nothing. The nodes here: 127.0.0.1 on a port nothing listens on (traffic to 127.0.0.1 only).
One inventory for all; each run stops at its first contact, in a few seconds.

The reasons and fixes by OpenSSH's message (a refused key, an unknown name, a time-out) are table-tested in
tests/unit/plugins/module_utils/test_readiness.py; one unreachable node beside a reachable one in the playbooks' own tests
(test_check_playbook.py, test_logs_playbook.py, test_remove_playbook.py)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
ANSIBLE_PLAYBOOK = str(Path(sys.executable).with_name("ansible-playbook"))
FIX = "Fix: check ansible_port (now 9) and that sshd runs on the node: `ssh -p 9 ops@127.0.0.1 true` must log in"


@pytest.fixture(scope="module")
def inventory(tmp_path_factory):
    folder = tmp_path_factory.mktemp("unreachable")
    hosts = folder / "hosts.yml"
    down = {"ansible_host": "127.0.0.1", "ansible_port": 9, "ansible_user": "ops"}
    hosts.write_text(yaml.safe_dump({"all": {
        "vars": {"verl_model_path": "/models/Qwen3-8B", "verl_train_file": "/data/train.parquet", "verl_test_file": "/data/test.parquet",
                 "verl_ckpts_dir": str(folder / "ckpts"), "verl_log_dir": str(folder / "logs"), "verl_compare_dir": str(folder / "compare"),
                 "verl_output_dir": str(folder / "out"), "verl_logs_dir": str(folder / "collected"),
                 "verl_host_stage_dir": str(folder / "stage"), "verl_confirm": True},
        "children": {"ray_head": {"hosts": {"node1": down}}, "ray_workers": {"hosts": {"node2": down}}}}}))
    return folder


@pytest.mark.parametrize(("playbook", "args", "said"), [
    ("check.yml", ("-e", "mask=0000000"), "NOT READY: 0 of 2 node(s) ready to deploy to (2 did not answer)"),
    ("deploy.yml", (), "2 node(s) did not answer, so nothing was changed on any node."),
    ("status.yml", (), "so its container, Ray, NPUs and the training were NOT REPORTED"),
    ("stop.yml", (), "so the training and Ray on it were NOT STOPPED"),
    ("remove.yml", (), "were NOT STOPPED, and its container NOT REMOVED"),
    ("logs.yml", (), "No node's logs were collected (0 of 2 node(s))"),
    ("compare.yml", ("-e", "masks=0000000"), "The comparison trained nothing and changed nothing: 2 node(s) did not answer."),
    ("smoke.yml", (), "The smoke launch trained nothing and changed nothing: 2 node(s) did not answer."),
])
def test_with_every_node_unreachable_each_playbook_names_them_with_the_fix(inventory, playbook, args, said):
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0", ANSIBLE_STDOUT_CALLBACK="verl.deploy.report",
               VERL_DEPLOY_LOG_DIR=str(inventory / "runs"))
    proc = subprocess.run([ANSIBLE_PLAYBOOK, "playbooks/" + playbook, "-i", str(inventory / "hosts.yml"), *args], cwd=REPO, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300, check=False)
    text = " ".join(proc.stdout.split())
    # Failed with the verdict (2), not Ansible's end at unreachable nodes (4) nor an internal error.
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert said in text, proc.stdout
    # Each node named with why and what to check (the fix said once for the nodes it fits, or once per node).
    assert all(text.split("Result:", maxsplit=1)[0].count(" %s" % node) >= 1 for node in ("node1", "node2")), proc.stdout
    assert text.count(FIX) >= 1, proc.stdout
    assert "has no attribute" not in text and "is undefined" not in text, proc.stdout
    assert "changed on 0" in text or "changed on 1" in text  # the controller's own state file only (compare, smoke)
    if playbook == "check.yml":
        verdict = json.loads((inventory / "out" / "check.json").read_text())
        assert verdict["ready"] is False and verdict["counts"]["did not answer"] == 2
        assert all(FIX in node["problem"] for node in verdict["nodes"].values()), verdict


@pytest.mark.parametrize(("playbook", "args", "said"), [
    ("compare.yml", ("-e", "masks=0000000"), "The comparison trained nothing and changed nothing: 1 node(s) did not answer."),
    ("smoke.yml", (), "The smoke launch trained nothing and changed nothing: 1 node(s) did not answer."),
])
def test_with_the_head_unreachable_the_comparison_and_the_smoke_launch_name_it(inventory, playbook, args, said):
    """The internal error of issue 56 ('HostVarsVars' has no attribute '_verl_identity'): the head down, the worker (this
    machine) up; nothing is created on the worker either."""
    hosts = inventory / "head-down.yml"
    down = {"ansible_host": "127.0.0.1", "ansible_port": 9, "ansible_user": "ops"}
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    plain = yaml.safe_load((inventory / "hosts.yml").read_text())
    plain["all"]["vars"]["verl_log_dir"] = str(inventory / "head-down-logs")
    plain["all"]["children"] = {"ray_head": {"hosts": {"node1": down}}, "ray_workers": {"hosts": {"node2": local}}}
    hosts.write_text(yaml.safe_dump(plain))
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0", ANSIBLE_STDOUT_CALLBACK="verl.deploy.report",
               VERL_DEPLOY_LOG_DIR=str(inventory / "runs"))
    proc = subprocess.run([ANSIBLE_PLAYBOOK, "playbooks/" + playbook, "-i", str(hosts), *args], cwd=REPO, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300, check=False)
    text = " ".join(proc.stdout.split())
    assert proc.returncode == 2 and said in text and "node1 (head): DID NOT ANSWER" in text and FIX in text, proc.stdout
    assert "node2 (worker): DID NOT ANSWER" not in text and "has no attribute" not in text, proc.stdout
    assert not (inventory / "head-down-logs").exists()
