# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The control_values filter: verl_control.env, the values of the plain verl_control.sh, read back by bash as given."""
from __future__ import annotations

import subprocess

import pytest

from ansible_collections.verl.deploy.plugins.filter.control_values import FilterModule
from helpers.launch_helpers import launch_ok

control_values = FilterModule().filters()["control_values"]
NAMES = ("HOST", "ROLE", "NPU_PER_NODE", "NNODES", "RAY_PORT", "DASHBOARD_PORT", "TRAINING_PATTERN", "LOG_DIR", "LOG_PREFIX",
         "CKPTS_DIR", "LOCK_FOLDER", "RAY_TEMP_DIR")


def sourced(text, tmp_path):
    """What bash holds after sourcing the file as verl_control.sh does (set -euo pipefail), each value on its own line."""
    (tmp_path / "verl_control.env").write_text(text)
    program = "set -euo pipefail; . ./verl_control.env; printf '%s\\0' " + " ".join('"${%s}"' % name for name in NAMES)
    proc = subprocess.run(["bash", "-c", program], cwd=tmp_path, capture_output=True, text=True, check=True)
    return dict(zip(NAMES, proc.stdout.split("\0")))


@pytest.mark.parametrize("overrides, lock_folder", [
    ({}, ""),
    # The paths the settings check lets through (letters, digits and . _ - / @ % + ~), and a lock folder holding what a
    # shell would run (spaces, quotes, $ and backquotes stay text).
    ({"verl_log_dir": "/data/logs@x+y~%1", "verl_ckpts_dir": "/ckpt/run-1_a.b"}, "/data/logs of 'run' $(touch x) `touch x`"),
    # Ray's temporary folder moved by verl_ray_start_args (the last --temp-dir counts, as for ray start).
    ({"verl_ray_start_args": ["--num-cpus=8", "--temp-dir=/tmp/x", "--temp-dir=/data/ray tmp"]}, ""),
])
def test_bash_reads_back_every_value_as_given(overrides, lock_folder, tmp_path):
    config = launch_ok(**overrides)
    values = sourced(control_values(config, lock_folder), tmp_path)
    assert values == {
        "HOST": config["host"], "ROLE": "head", "NPU_PER_NODE": str(config["npu_per_node"]), "NNODES": "1",
        "RAY_PORT": str(config["ray_port"]), "DASHBOARD_PORT": str(config["dashboard_port"]),
        "TRAINING_PATTERN": config["training"]["pattern"], "LOG_DIR": config["log_dir"], "LOG_PREFIX": "verl_",
        "CKPTS_DIR": config["ckpts_dir"], "LOCK_FOLDER": lock_folder,
        "RAY_TEMP_DIR": "/data/ray tmp" if overrides.get("verl_ray_start_args") else ""}
    assert not (tmp_path / "x").exists()


def test_a_worker_is_named_as_one():
    text = control_values(launch_ok(host="node2", is_head=False, nnodes=2, verl_train_batch_size=16))
    assert "\nHOST=node2\nROLE=worker\n" in text and "\nNNODES=2\n" in text
    assert text.startswith("# verl_control.env: verl_control.sh's values for node2 (Ray worker)")


def test_each_ray_node_is_named_by_its_inventory_name(tmp_path):
    """RAY_NAMES: keep-alive names a node that left Ray by it (_keep_alive.node_names reads it back); a host whose address
    is not known yet is left out."""
    from ansible_collections.verl.deploy.plugins.module_utils._keep_alive import node_names
    text = control_values(launch_ok(), "", {"node1": "10.0.0.1", "gpu-b.rack2": "10.0.0.2", "node3": ""})
    (tmp_path / "verl_control.env").write_text(text)
    proc = subprocess.run(["bash", "-c", "set -euo pipefail; . ./verl_control.env; printf %s \"${RAY_NAMES}\""], cwd=tmp_path,
                          capture_output=True, text=True, check=True)
    assert node_names(proc.stdout) == {"10.0.0.1": "node1", "10.0.0.2": "gpu-b.rack2"}
    assert "\nRAY_NAMES=''\n" in control_values(launch_ok())


@pytest.mark.parametrize("overrides, project", [
    ({"verl_swanlab_enabled": True, "verl_swanlab_mode": "local"}, "verl_hlm"),
    ({"verl_swanlab_enabled": True, "verl_swanlab_mode": "disabled"}, ""),  # SwanLab records nothing: no charts either
    ({}, ""),
])
def test_the_npu_sampler_charts_in_swanlab_when_it_records(overrides, project):
    """NPU_SWANLAB_PROJECT and NPU_SWANLAB_EXPERIMENT: the training's project and experiment, for the sampler's own run."""
    config = launch_ok(**overrides)
    text = control_values(config)
    assert "\nNPU_SWANLAB_PROJECT=%s\n" % (project or "''") in text
    assert "\nNPU_SWANLAB_EXPERIMENT=%s\n" % (config["experiment_name"] if project else "''") in text
