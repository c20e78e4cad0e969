"""The confirmation summary (roles/verl/templates/confirm_summary.j2), rendered by Ansible's template engine
with the collection's filters: the algorithm, where the training resumes from, the image of each node and why,
and the NPUs detected on an Atlas A3 node."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from ansible_collections.verl.deploy.plugins.module_utils._chips import device_view
from ansible_collections.verl.deploy.plugins.module_utils._launch_config import build
from ansible_collections.verl.deploy.plugins.module_utils._npu_smi import parse_info
from ansible_collections.verl.deploy.plugins.module_utils import _model
from helpers.launch_helpers import DEFAULTS, REPO, RULES, SPEC, launch_ok, settings

sys.path.insert(0, str(REPO / "tests" / "sim"))
import model_files  # noqa: E402  (the simulated cluster's model folders)

FIXTURES = REPO / "tests" / "fixtures" / "npu-smi"
A3 = parse_info((FIXTURES / "synthetic_info_A3_Ascend910_16chips_idle.txt").read_text())
A2 = parse_info((FIXTURES / "007_info_910B3_8cards_v24.1.rc2_procs_emptyname_mixed.txt").read_text())
HEAD = {"name": "node1", "ansible_host": "10.0.0.1"}


def config(host, npu, **overrides):
    chip = {key: device_view(npu)[key] for key in ("family", "name")}
    result, errors, _warnings = build(settings(**overrides), SPEC, RULES, host=host, is_head=host == "node1", nnodes=2, head=HEAD,
                                      detected={"chip": chip})
    assert not errors, errors
    return result


# Rendered in a fresh interpreter: Ansible's collection loader must be installed before anything imports
# ansible_collections (this process imported it as a plain package), or the collection's filters are not found.
RENDER = """
import json, sys
from ansible.plugins.loader import init_plugin_loader
init_plugin_loader([sys.argv[1]])
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template
variables = json.load(sys.stdin)
print(Templar(loader=DataLoader(), variables=variables).template(trust_as_template(open(sys.argv[2]).read())))
"""


def summary(nodes, model=None):
    """The summary's lines for {host: (launch configuration, npu_info result)}, the first host the head (model: node_facts'
    model read on every host)."""
    hosts = list(nodes)
    hostvars = {host: {"_verl_launch": launch, "_precheck_node": {"npu": npu}} for host, (launch, npu) in nodes.items()}
    if model is not None:
        for host in hosts:
            hostvars[host]["_precheck_node"]["model_summary"] = model.get("summary", "")
    variables = {"_verl_launch": nodes[hosts[0]][0], "ansible_play_hosts": hosts, "groups": {"ray_head": hosts[:1]}, "hostvars": hostvars}
    proc = subprocess.run([sys.executable, "-c", RENDER, str(REPO / ".collections"), str(REPO / "roles/verl/templates/confirm_summary.j2")],
                          input=json.dumps(variables), capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.splitlines()


def test_an_a3_cluster_is_told_which_image_was_chosen_and_its_16_npus():
    devices = list(range(16))
    lines = summary({host: (config(host, A3, verl_npu_devices=devices, verl_train_tp=8), A3) for host in ("node1", "node2")})
    assert lines[1] == ("  node1 (head), node2: NPUs 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15 (16), Ascend910 (A3: one device per chip) "
                        "detected: 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15")
    images = [line for line in lines if line.startswith("Image: ")]
    assert images == ["Image: %s (chosen for Atlas A3 / Ascend910_93 (npu-smi: Ascend910); set verl_image to override)"
                      % DEFAULTS["verl_image_by_chip"]["a3"]]


def test_alike_nodes_share_one_line_and_a_node_that_differs_has_its_own():
    """48 nodes: the NPU lines do not grow with the cluster (the full list is in the run's log file)."""
    hosts = ["node%d" % number for number in range(1, 49)]
    nodes = {host: (config(host, A2, verl_train_batch_size=48), A2) for host in hosts[:-1]}
    nodes[hosts[-1]] = (config(hosts[-1], A2, verl_train_batch_size=48), {})  # its npu-smi not read
    lines = summary(nodes)
    npu_lines = [line for line in lines[1:] if line.startswith("  ")]
    assert npu_lines == [
        "  node1 (head), node2, node3 and 44 more (47 nodes): NPUs 0,1,2,3,4,5,6,7 (8), 910B3 detected: 0,1,2,3,4,5,6,7",
        "  node48: NPUs 0,1,2,3,4,5,6,7 (8)",
    ], npu_lines


def test_a_stated_image_is_said_to_be_stated():
    lines = summary({"node1": (config("node1", A3, verl_image="registry.local/verl:mine", verl_npu_devices=list(range(16)),
                                      verl_train_tp=8), A3)})
    assert "Image: registry.local/verl:mine (set by verl_image; its tag names no chip: it must be built for Atlas A3 / Ascend910_93)" in lines
    lines = summary({"node1": (config("node1", A3, verl_image="registry.local/verl:verl-8.3.rc1-a3-v0.7.0", verl_npu_devices=list(range(16)),
                                      verl_train_tp=8), A3)})
    assert "Image: registry.local/verl:verl-8.3.rc1-a3-v0.7.0 (set by verl_image)" in lines


def test_nodes_with_different_chips_each_get_their_image_named_with_their_nodes():
    lines = summary({"node1": (config("node1", A2, verl_train_batch_size=16), A2),
                     "node2": (config("node2", A3, verl_train_batch_size=16), A3)})
    images = [line for line in lines if line.startswith("Image: ")]
    assert images == [
        "Image: %s (chosen for Atlas A2 / 910B (npu-smi: 910B3); set verl_image to override) on node1 " % DEFAULTS["verl_image_by_chip"]["910b"],
        "Image: %s (chosen for Atlas A3 / Ascend910_93 (npu-smi: Ascend910); set verl_image to override) on node2 "
        % DEFAULTS["verl_image_by_chip"]["a3"],
    ]


@pytest.mark.parametrize("overrides, algorithm, resume", [
    ({}, "Algorithm: DAPO (verl's DAPO recipe, Megatron, vLLM rollout)",
     "Resume: auto, from the newest checkpoint in /ckpt if there is one"),
    ({"verl_algorithm": "grpo", "verl_resume_mode": "disable"},
     "Algorithm: GRPO (verl's PPO trainer with the GRPO advantage estimator, Megatron, vLLM rollout)",
     "Resume: disable, from scratch (checkpoints are kept)"),
    ({"verl_algorithm": "grpo", "verl_resume_mode": "resume_path", "verl_resume_from_path": "/ckpt/global_step_40"},
     "Algorithm: GRPO (verl's PPO trainer with the GRPO advantage estimator, Megatron, vLLM rollout)",
     "Resume: from /ckpt/global_step_40"),
    ({"verl_algorithm": "gspo"},
     "Algorithm: GSPO (verl's PPO trainer with the GSPO policy loss, Megatron, vLLM rollout)",
     "Resume: auto, from the newest checkpoint in /ckpt if there is one"),
])
def test_the_summary_names_the_algorithm_and_the_resume(overrides, algorithm, resume):
    lines = summary({"node1": (launch_ok(**overrides), {})})
    assert algorithm in lines and resume in lines, lines
    assert any(line.startswith("Feature mask 0000000: Remove Padding off") for line in lines), lines


def test_the_summary_shows_the_model_as_read_on_the_head(tmp_path):
    read = _model.judge(_model.read_folder(model_files.write(str(tmp_path), "Qwen3-8B")))
    lines = summary({"node1": (launch_ok(), {})}, model=read)
    assert "Model: Qwen3ForCausalLM, 36 layers, 32/8 heads, 40960 positions (its config.json on the head)" in lines, lines
    assert "Model: not read (its config.json on the head)" in summary({"node1": (launch_ok(), {})})
