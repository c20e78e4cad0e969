"""deploy.yml, status.yml and stop.yml end to end on the simulated three-node Ascend cluster.

Real Docker engines (one per node), real containers, a real Ray cluster, the stand-in trainer that
validates its Hydra overrides against verl 0.7.0's schema, replayed npu-smi captures.
The steps build on each other (failures first, on fresh nodes; then the deploy, a re-run, status,
stop), so they run as one test: pytest-xdist cannot split them over workers.
"""
from __future__ import annotations

import fcntl
import json
import re
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SIM = [sys.executable, str(REPO / "tests/sim/simcluster.py")]
PLAYBOOK = str(Path(sys.executable).with_name("ansible-playbook"))
INVENTORY = str(REPO / "inventories/sim/hosts.yml")
NODES = ["verl-sim-node1", "verl-sim-node2", "verl-sim-node3"]
BUSY = "011_info_910B2_8cards_v24.1.0_procs_mindie.txt"
IDLE = "001_info_910ProB-as-910B_8cards_v24.1.0_noproc.txt"

# One cluster at a time: with pytest-xdist, run with --dist loadgroup (as .ci/run does).
pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("verl-sim")]


def sh(*cmd, timeout=900, check=True):
    proc = subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout, check=False)
    if check and proc.returncode:
        raise AssertionError("%s failed (%d):\n%s\n%s" % (" ".join(cmd), proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:]))
    return proc


def playbook(name, *extra, timeout=1200):
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
    return subprocess.run([PLAYBOOK, "-i", INVENTORY, "playbooks/%s" % name, *extra], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=timeout, check=False)


def in_node(node, *cmd, check=True):
    return sh("docker", "exec", node, *cmd, check=check)


def in_verl(node, script, check=True):
    return in_node(node, "docker", "exec", "verl", "bash", "-c", script, check=check)


def recap_changed(output):
    recap = output.split("PLAY RECAP")[-1]
    return {line.split()[0]: int(line.split("changed=")[1].split()[0]) for line in recap.splitlines() if "changed=" in line}


@pytest.fixture(scope="module")
def cluster():
    # One simulated cluster at a time on this engine, whatever the test workers do.
    lock_path = REPO / ".cache" / "sim" / "tests.lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield from _cluster()


def _cluster():
    sh(*SIM, "up", "--nodes", "3", timeout=1800)
    info = json.loads(sh(*SIM, "info", "--json").stdout)
    prepared = playbook("../tests/sim/prepare.yml")
    assert prepared.returncode == 0, prepared.stdout[-3000:]
    yield info
    if not os.environ.get("VERL_SIM_KEEP"):  # keep it up to look around after a failure
        sh(*SIM, "down", check=False)


@pytest.fixture(scope="module")
def deploy_args(cluster):
    return ["-e", "verl_image=%s" % cluster["verl_image"], "-e", "verl_confirm=true", "-e", "mask=0000000"]


def inner_containers(node):
    return in_node(node, "docker", "ps", "-aq").stdout.split()


def _step_busy_worker_stops_the_deploy_in_precheck(cluster, deploy_args):
    in_node("verl-sim-node2", "sh", "-c", "mkdir -p /etc/sim-npu-smi && echo %s > /etc/sim-npu-smi/fixture" % BUSY)
    try:
        proc = playbook("deploy.yml", *deploy_args)
    finally:
        in_node("verl-sim-node2", "sh", "-c", "echo %s > /etc/sim-npu-smi/fixture" % IDLE)
    assert proc.returncode != 0
    assert "verl-sim-node2" in proc.stdout and "already run processes" in proc.stdout, proc.stdout[-4000:]
    assert "412122" in proc.stdout  # a pid of the capture: the message says what holds the NPUs
    for node in NODES:
        assert inner_containers(node) == [], "%s changed despite the failed pre-check" % node


def _step_without_confirmation_nothing_changes(cluster):
    proc = playbook("deploy.yml", "-e", "verl_image=%s" % cluster["verl_image"], "-e", "mask=0000000")
    assert proc.returncode != 0
    assert "Not confirmed: nothing was changed" in proc.stdout, proc.stdout[-3000:]
    for node in NODES:
        assert inner_containers(node) == []


def _step_deploy_starts_training_on_every_node(cluster, deploy_args):
    proc = playbook("deploy.yml", *deploy_args)
    assert proc.returncode == 0, proc.stdout[-6000:]
    status = in_verl("verl-sim-node1", "ray status").stdout
    assert "24.0 NPU" in status, status
    assert in_verl("verl-sim-node1", "pgrep -f -- '-m [r]ecipe.dapo.main_dapo'").stdout.strip()
    for worker in NODES[1:]:
        assert in_verl(worker, "pgrep -f -- '-m [r]ecipe.dapo.main_dapo'", check=False).returncode == 1, "training must run on the head only"
    marker = json.loads(in_verl("verl-sim-node1", "cat /sim/ckpts/qwen3-8b-dapo/stand_in_started.json").stdout)
    assert marker["nnodes"] == 3 and marker["n_gpus_per_node"] == 8
    # The scripts differ between nodes only where they must.
    scripts = {node: in_verl(node, "cat /verl/start_verl.sh").stdout for node in NODES}
    assert 'ROLE="head"' in scripts["verl-sim-node1"] and 'ROLE="worker"' in scripts["verl-sim-node2"]
    per_node = re.compile(r"ROLE=|for host verl-sim-node|start_verl.sh on verl-sim-node")
    assert len({"\n".join(line for line in text.splitlines() if not per_node.search(line)) for text in scripts.values()}) == 1
    training = {in_verl(node, "cat /verl/run_training.sh").stdout.split("\n", 3)[3] for node in NODES}
    assert len(training) == 1


def _step_second_deploy_changes_nothing_and_keeps_the_training(cluster, deploy_args):
    pid = in_verl("verl-sim-node1", "pgrep -f -- '-m [r]ecipe.dapo.main_dapo'").stdout.strip()
    proc = playbook("deploy.yml", *deploy_args)
    assert proc.returncode == 0, proc.stdout[-6000:]
    assert set(recap_changed(proc.stdout).values()) == {0}, proc.stdout.split("PLAY RECAP")[-1]
    assert in_verl("verl-sim-node1", "pgrep -f -- '-m [r]ecipe.dapo.main_dapo'").stdout.strip() == pid


def _step_status_reports_every_node(cluster):
    proc = playbook("status.yml")
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert "Ray dashboard: http://" in proc.stdout
    assert "stand-in" in proc.stdout or "step:" in proc.stdout, proc.stdout[-4000:]
    for node in NODES:
        assert node in proc.stdout


def _step_stop_stops_training_and_ray_but_keeps_everything_else(cluster):
    proc = playbook("stop.yml")
    assert proc.returncode == 0, proc.stdout[-4000:]
    for node in NODES:
        assert in_verl(node, "pgrep -f -- '-m [r]ecipe.dapo.main_dapo'", check=False).returncode == 1
        assert in_verl(node, "ray status", check=False).returncode != 0
        assert in_node(node, "docker", "inspect", "-f", "{{.State.Running}}", "verl").stdout.strip() == "true"
    assert in_verl("verl-sim-node1", "ls /sim/logs/verl_qwen3_8b_*.log").stdout.strip()
    assert in_verl("verl-sim-node1", "test -f /sim/ckpts/qwen3-8b-dapo/stand_in_started.json", check=False).returncode == 0


def test_deploy_flow_on_the_simulated_cluster(cluster, deploy_args):
    _step_busy_worker_stops_the_deploy_in_precheck(cluster, deploy_args)
    _step_without_confirmation_nothing_changes(cluster)
    _step_deploy_starts_training_on_every_node(cluster, deploy_args)
    _step_second_deploy_changes_nothing_and_keeps_the_training(cluster, deploy_args)
    _step_status_reports_every_node(cluster)
    _step_stop_stops_training_and_ray_but_keeps_everything_else(cluster)
