"""playbooks/logs.yml on this machine, without a cluster: a head whose Docker engine does not answer and a
worker that does not answer at all. The logs that exist are collected, bounded and without the key; what
could not be collected is named; the run ends with one archive. The Molecule scenario three_nodes runs it
on the simulated cluster (real containers, Ray's logs, a stopped container, a paused node).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import yaml

from helpers.launch_helpers import REPO

ANSIBLE_PLAYBOOK = str(Path(sys.executable).with_name("ansible-playbook"))
KEY = "sk-logs-test-0123456789abcdefghij"
WANDB_KEY = "wandb-logs-test-9876543210zyxw"


def test_logs_from_a_head_without_docker_and_an_unreachable_worker(tmp_path):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"ray_cluster": {"children": {
        "ray_head": {"hosts": {"head1": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}}},
        # Nothing listens on port 1: the worker does not answer (traffic to 127.0.0.1 only).
        "ray_workers": {"hosts": {"gone2": {"ansible_host": "127.0.0.1", "ansible_port": 1, "ansible_connection": "ssh"}}},
    }}}))
    logs = tmp_path / "logs"
    (logs / ".verl-deploy").mkdir(parents=True)
    (logs / "verl_qwen3_8b_dapo_20261201.log").write_bytes(b"step:1 - loss 0.5\n" * 200000)  # 3.6 MB
    (logs / "start_verl.out").write_text("ray: started\nSWANLAB_API_KEY=%s leaked by something\nWANDB_API_KEY=%s too\n" % (KEY, WANDB_KEY))
    (logs / ".verl-deploy" / "launch.json").write_text('{"settings": {"mask": "0000000"}}\n')
    stage = tmp_path / "stage" / "verl"
    stage.mkdir(parents=True)
    for name in ("start_verl.sh", "run_training.sh", "verl_control.env", "verl_control.sh", "launch.json"):
        (stage / name).write_text("# %s\n" % name)
    # The host's Docker engine does not answer: the container's state cannot be read, the host's files still can.
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "docker").write_text("#!/bin/sh\necho 'Cannot connect to the Docker daemon at unix:///var/run/docker.sock.' >&2\nexit 1\n")
    (tools / "docker").chmod(0o755)
    out = tmp_path / "out"
    env = dict(os.environ, ANSIBLE_FORCE_COLOR="0", ANSIBLE_NOCOLOR="1", PATH="%s:%s" % (tools, os.environ["PATH"]))
    proc = subprocess.run(
        [ANSIBLE_PLAYBOOK, "-i", str(inventory), "playbooks/logs.yml", "-vvv", "-e", "verl_log_dir=%s" % logs,
         "-e", "verl_host_stage_dir=%s" % stage.parent, "-e", "verl_logs_dir=%s" % out, "-e", "verl_logs_max_mb=1",
         "-e", "verl_swanlab_api_key=%s" % KEY, "-e", "verl_wandb_api_key=%s" % WANDB_KEY],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-4000:]
    assert KEY not in output and WANDB_KEY not in output
    archives = list(out.glob("verl-logs-*.tar.gz"))
    assert len(archives) == 1 and "logs of 1 of 2 node(s): %s" % archives[0] in " ".join(proc.stdout.split())
    assert oct(archives[0].stat().st_mode & 0o777) == "0o600"
    run = archives[0].name[:-len(".tar.gz")]
    with tarfile.open(archives[0]) as tar:
        packed = {member.name[len(run) + 1:]: tar.extractfile(member).read() for member in tar if member.isfile()}
    assert set(packed) == {
        "collection.json", "first-failure.txt", "head1/MANIFEST.json", "head1/training/verl_qwen3_8b_dapo_20261201.log", "head1/training/start_verl.out",
        "head1/deploy-state/launch.json", "head1/scripts/start_verl.sh", "head1/scripts/run_training.sh",
        "head1/scripts/verl_control.env", "head1/scripts/verl_control.sh", "head1/scripts/launch.json", "head1/docker-ps.txt", "head1/container-inspect.json",
    } | ({"head1/npu-smi-info.txt"} if "npu-smi-info.txt" in " ".join(packed) else set())
    assert all(KEY.encode() not in data and WANDB_KEY.encode() not in data for data in packed.values())
    assert b"SWANLAB_API_KEY=<redacted> leaked" in packed["head1/training/start_verl.out"]
    assert b"WANDB_API_KEY=<redacted> too" in packed["head1/training/start_verl.out"]
    log = packed["head1/training/verl_qwen3_8b_dapo_20261201.log"]
    assert 1024 * 1024 < len(log) < 1024 * 1024 + 300 and log.endswith(b"step:1 - loss 0.5\n")
    # A healthy log names no failure (the first failure of a failed training: the failure table's tests).
    assert packed["first-failure.txt"].startswith(b"no line of the failure table")
    collection = json.loads(packed["collection.json"])
    assert collection["nodes"]["gone2"]["state"] == "unreachable"
    assert "Connection refused" in collection["nodes"]["gone2"]["reason"]
    head = collection["nodes"]["head1"]
    assert head["state"] == "collected" and head["container"].startswith("unknown: docker inspect failed: Cannot connect")
    assert head["truncated"] == ["training/verl_qwen3_8b_dapo_20261201.log"]
    assert {entry["name"] for entry in head["missing"]} >= {"ray", "cann-plog"}
    assert "gone2: NOT COLLECTED: the node did not answer" in " ".join(proc.stdout.split())
