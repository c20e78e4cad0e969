"""The confirmation summary (roles/verl/templates/confirm_summary.j2) names the algorithm and where the
training resumes from, rendered by Ansible's template engine for a launch configuration."""
from __future__ import annotations

import pytest
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from launch_helpers import REPO, launch_ok

TEMPLATE = REPO / "roles" / "verl" / "templates" / "confirm_summary.j2"


def summary(config):
    variables = {"_verl_launch": config, "ansible_play_hosts": ["node1"], "groups": {"ray_head": ["node1"]},
                 "hostvars": {"node1": {"_verl_launch": config}}}
    return Templar(loader=DataLoader(), variables=variables).template(trust_as_template(TEMPLATE.read_text())).splitlines()


@pytest.mark.parametrize("settings, algorithm, resume", [
    ({}, "Algorithm: DAPO (verl's DAPO recipe, Megatron, vLLM rollout)",
     "Resume: auto, from the newest checkpoint in /ckpt if there is one"),
    ({"verl_algorithm": "grpo", "verl_resume_mode": "disable"},
     "Algorithm: GRPO (verl's PPO trainer with the GRPO advantage estimator, Megatron, vLLM rollout)",
     "Resume: disable, from scratch (checkpoints are kept)"),
    ({"verl_algorithm": "grpo", "verl_resume_mode": "resume_path", "verl_resume_from_path": "/ckpt/global_step_40"},
     "Algorithm: GRPO (verl's PPO trainer with the GRPO advantage estimator, Megatron, vLLM rollout)",
     "Resume: from /ckpt/global_step_40"),
])
def test_the_summary_names_the_algorithm_and_the_resume(settings, algorithm, resume):
    lines = summary(launch_ok(**settings))
    assert algorithm in lines and resume in lines, lines
    assert any(line.startswith("Feature mask 0000000: Remove Padding off") for line in lines), lines
