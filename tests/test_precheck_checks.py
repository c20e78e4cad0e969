"""roles/precheck/tasks/checks.yml against what verl.deploy.node_facts returns: one report names every problem.

A real ansible-playbook on this machine (connection local): the facts the pre-check would have read are given
as variables, with a launch configuration of the shape verl.deploy.verl's settings check produces.
"""
from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
ANSIBLE_PLAYBOOK = str(Path(sys.executable).with_name("ansible-playbook"))

LAUNCH = {
    "container_name": "verl", "master_addr": "172.19.0.3", "node_ip": "", "socket_ifname": "", "is_head": True,
    "npu_devices": [0, 1], "npu_devices_csv": "0,1", "ray_port": 9182, "dashboard_port": 8260,
    "container": {"devices": ["/dev/davinci0", "/dev/davinci1", "/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc"]},
}
NPU = {"failed": False, "npu_ids": [0, 1, 2], "busy_npu_ids": [], "processes": [], "npu_smi_path": "/usr/local/sbin/npu-smi",
       "npus": [{"npu_id": i, "name": "910B3", "health": "OK"} for i in range(3)]}
DOCKER = {"can_talk_to_docker": True, "containers": [], "images": []}
FACTS = {
    "paths": {}, "listening_ports": [22], "device_holders": [], "shm": {"exists": True, "size_kb": 2 ** 21, "free_kb": 2 ** 21},
    "network": {"interfaces": ["eth0", "lo"], "addresses": {"eth0": [{"address": "172.19.0.3", "prefixlen": 16}]},
                "routes": [{"dest": "172.19.0.0/16", "via": None, "dev": "eth0", "src": "172.19.0.3", "metric": 0, "type": "unicast"}],
                "head_route": {"ok": None}},
}

PLAY = """- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: The pre-check's checks
      ansible.builtin.include_role:
        name: verl.deploy.precheck
        tasks_from: checks
    - name: Show the address kept for Ray
      ansible.builtin.debug:
        msg: "node ip {{ _precheck_node.node_ip }}, container exists {{ _precheck_node.container.exists }}"
"""


def run_checks(tmp_path, launch=None, npu=None, docker=None, facts=None, extra_vars=None):
    data = tmp_path / "model"
    data.mkdir(exist_ok=True)
    (tmp_path / "train.parquet").write_text("x")
    launch = dict(copy.deepcopy(LAUNCH), **dict({"model_path": str(data), "train_file": str(tmp_path / "train.parquet"),
                                                 "test_file": str(tmp_path / "train.parquet")}, **(launch or {})))
    facts = copy.deepcopy(facts or FACTS)
    facts["paths"] = facts["paths"] or {str(data): {"exists": True, "isdir": True, "isreg": False},
                                        str(tmp_path / "train.parquet"): {"exists": True, "isdir": False, "isreg": True}}
    extra = tmp_path / "vars.json"
    extra.write_text(json.dumps({"_verl_launch": launch, "__precheck_npu": npu or NPU, "__precheck_docker": docker or DOCKER,
                                 "__precheck_facts": facts, "ansible_python_interpreter": sys.executable, **(extra_vars or {})}))
    (tmp_path / "play.yml").write_text(PLAY)
    proc = subprocess.run([ANSIBLE_PLAYBOOK, "-i", "localhost,", str(tmp_path / "play.yml"), "-e", "@%s" % extra], cwd=REPO,
                          env=dict(os.environ, ANSIBLE_NOCOLOR="1"), capture_output=True, text=True, timeout=180, check=False)
    # The whole text of each problem is a YAML list in the output (the log file's), where a quote is doubled.
    return proc.returncode, (proc.stdout + proc.stderr).replace("''", "'")


def test_a_good_host_passes_and_keeps_its_address(tmp_path):
    rc, out = run_checks(tmp_path)
    assert rc == 0, out
    assert "node ip 172.19.0.3, container exists False" in out, "the head routes to its own address over lo, from that address"


def test_every_problem_is_named_in_one_report(tmp_path):
    facts = copy.deepcopy(FACTS)
    facts["listening_ports"] = [9182, 22]
    facts["paths"] = {"/nope": {"exists": False, "isdir": False, "isreg": False}}
    rc, out = run_checks(tmp_path, launch={"socket_ifname": "ib9"}, facts=facts,
                         npu={"failed": True, "msg": "dcmi module initialize failed. ret is -8005", "dcmi_code": -8005},
                         docker={"can_talk_to_docker": False, "msg": "cannot read the Docker engine", "containers": [], "images": []})
    assert rc != 0
    for words in ("npu-smi failed: dcmi module initialize failed. ret is -8005", "set verl_npu_smi_path",
                  "the Docker engine does not answer (cannot read the Docker engine)",
                  "verl_socket_ifname=ib9 is not an interface of this host (eth0, lo)",
                  "port(s) 9182 on 172.19.0.3 are in use"):
        assert words in " ".join(out.split()), (words, out[-3000:])


def test_busy_npus_holders_and_missing_paths(tmp_path):
    npu = dict(NPU, busy_npu_ids=[1], processes=[{"npu_id": 1, "pid": 412122, "name": "vllm"}])
    docker = dict(DOCKER, containers=[{"Id": "c" * 64, "Names": ["/vllm"], "State": "running", "Status": "Up", "Labels": {},
                                       "HostConfig": {"Devices": [{"PathOnHost": "/dev/davinci1"}], "Privileged": False}}])
    rc, out = run_checks(tmp_path, launch={"npu_devices": [0, 1, 5], "npu_devices_csv": "0,1,5", "model_path": "/no/model"},
                         npu=npu, docker=docker)
    text = " ".join(out.split())
    assert rc != 0
    assert "verl_npu_devices=0,1,5 names NPU(s) 5 that npu-smi does not list (it lists 0, 1, 2)" in text, text[-3000:]
    # Each problem is named once, in at most two lines of 120 characters (the failure only counts them); its whole text
    # once more, for the log file only (a debug task's var, which the console report does not show).
    named = out.split("Name every problem of this host")[1].split("TASK [")[0]
    assert named.count("names NPU(s) 5 that npu-smi does not list") == 1 and "localhost: 3 problem(s), each named above" in text
    shown = [line.strip() for line in named.split("msg: |-")[1].splitlines() if line.strip()]
    assert len(shown) == 1 + 3 * 2 and all(len(line) <= 120 for line in shown), shown
    whole = out.split("Keep the whole text of this host's problems")[1].split("TASK [")[0]
    assert " ".join(whole.split()).count("names NPU(s) 5 that npu-smi does not list (it lists 0, 1, 2)") == 1, whole
    assert "NPU(s) 1 already run processes of something other than this deployment's container verl: pid 412122 (vllm" in text
    assert "container vllm was given /dev/davinci1 (--device): NPU(s) 1 of this deploy are taken" in text
    assert "verl_model_path=/no/model is not an existing directory on this host" in text, "a path not read before is read now"


def test_no_route_and_warnings(tmp_path):
    facts = copy.deepcopy(FACTS)
    facts["shm"]["size_kb"] = 65536
    facts["device_holders"] = [{"device": "/dev/davinci0", "pid": 77, "name": "python3", "container_id": None}]
    rc, out = run_checks(tmp_path, launch={"master_addr": "10.9.9.9"}, facts=facts)
    text = " ".join(out.split())
    assert rc != 0
    assert "no route to the head 10.9.9.9 (verl_master_addr): no matching route" in text, text[-3000:]
    assert "/dev/shm has only 64 MiB" in text and "/dev/davinci0 is open in pid 77 (python3, on the host)" in text


@pytest.mark.parametrize("size_kb", [2 ** 21])
def test_a_busy_head_port_is_fine_while_the_training_container_runs(tmp_path, size_kb):
    facts = copy.deepcopy(FACTS)
    facts["listening_ports"] = [9182, 8260]
    facts["shm"]["size_kb"] = size_kb
    docker = dict(DOCKER, containers=[{"Id": "v" * 64, "Names": ["/verl"], "State": "running", "Status": "Up", "Labels": {},
                                       "HostConfig": {"Devices": [{"PathOnHost": "/dev/davinci0"}], "Privileged": False}}])
    rc, out = run_checks(tmp_path, facts=facts, docker=docker)
    assert rc == 0, out[-3000:]
    assert "container exists True" in out


def test_the_checkpoint_to_resume_from_is_checked_on_the_head(tmp_path):
    rc, out = run_checks(tmp_path, launch={"resume_mode": "resume_path", "resume_from_path": "/no/ckpt/global_step_9"})
    text = " ".join(out.split())
    assert rc != 0
    assert "verl_resume_from_path=/no/ckpt/global_step_9 is not an existing directory on this host" in text, text[-3000:]
    assert "or use verl_resume_mode=auto" in text
    rc, out = run_checks(tmp_path, launch={"resume_mode": "auto", "resume_from_path": "/no/ckpt/global_step_9"})
    assert rc == 0, out[-3000:]


def test_the_checkpoint_folder_is_judged_from_what_node_facts_read(tmp_path):
    """vars/main.yml hands the rules node_facts' read of verl_ckpts_dir: a half-written newest checkpoint is refused."""
    from ansible_collections.verl.deploy.plugins.module_utils._ckpts import read_ckpts_dir

    ckpts = tmp_path / "ckpts"
    (ckpts / "global_step_2" / "actor" / "dist_ckpt").mkdir(parents=True)
    (ckpts / "latest_checkpointed_iteration.txt").write_text("2")
    facts = copy.deepcopy(FACTS)
    facts["ckpts"] = read_ckpts_dir(str(ckpts))
    rc, out = run_checks(tmp_path, launch={"ckpts_dir": str(ckpts), "resume_mode": "auto", "nnodes": 1}, facts=facts)
    text = " ".join(out.split())
    assert rc != 0
    assert "%s/global_step_2, the checkpoint latest_checkpointed_iteration.txt names, is incomplete" % ckpts in text, text[-3000:]
    (ckpts / "global_step_2" / "actor" / "dist_ckpt" / "metadata.json").write_text("{}")
    for name in ("data.pt", "actor/huggingface/config.json"):
        (ckpts / "global_step_2" / name).parent.mkdir(parents=True, exist_ok=True)
        (ckpts / "global_step_2" / name).write_text("x")
    facts["ckpts"] = read_ckpts_dir(str(ckpts))
    rc, out = run_checks(tmp_path, launch={"ckpts_dir": str(ckpts), "resume_mode": "auto", "nnodes": 1}, facts=facts)
    assert rc == 0, out[-3000:]


def test_an_incomplete_model_folder_is_refused_by_the_checks(tmp_path):
    sys.path.insert(0, str(REPO / "tests" / "sim"))
    import model_files
    from ansible_collections.verl.deploy.plugins.module_utils import _model
    folder = Path(model_files.write(str(tmp_path), "Qwen3-8B"))
    (folder / "model-00003-of-00005.safetensors").unlink()
    facts = dict(copy.deepcopy(FACTS), model=_model.judge(_model.read_folder(str(folder))))
    rc, out = run_checks(tmp_path, facts=facts)
    text = " ".join(out.split())
    assert rc != 0
    assert "the model folder verl_model_path=%s is incomplete: 1 of the 5 weight shard(s) model.safetensors.index.json names are " \
           "missing: model-00003-of-00005.safetensors" % folder in text, text[-3000:]


def test_a_worker_whose_model_is_not_the_heads_is_refused_by_the_checks(tmp_path):
    """The head's read stands in for hostvars[head]: this one-host play is the worker."""
    sys.path.insert(0, str(REPO / "tests" / "sim"))
    import model_files
    from ansible_collections.verl.deploy.plugins.module_utils import _model
    head = Path(model_files.write(str(tmp_path / "head"), "Qwen3-8B"))
    mine = Path(model_files.write(str(tmp_path / "worker"), "Qwen3-8B"))
    shard = mine / "model-00005-of-00005.safetensors"
    shard.write_bytes(shard.read_bytes() + b"\0" * 16)  # another copy of the last shard: same header, more bytes
    facts = dict(copy.deepcopy(FACTS), model=_model.judge(_model.read_folder(str(mine))))
    head_read = _model.judge(_model.read_folder(str(head)))
    rc, out = run_checks(tmp_path, launch={"is_head": False}, facts=facts,
                         extra_vars={"_precheck_head_host": "head-1", "_precheck_model_head": head_read})
    text = " ".join(out.split())
    assert rc != 0
    size = shard.stat().st_size
    assert ("the model folder verl_model_path=%s on localhost is not the same model as on the head head-1: shard sizes "
            "differ: model-00005-of-00005.safetensors %d bytes here, %d on the head" % (mine, size, size - 16)) in text, text[-3000:]
