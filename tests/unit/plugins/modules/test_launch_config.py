# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""verl.deploy.launch_config, driven through main() as Ansible would."""
from __future__ import annotations

import json

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.verl.deploy.plugins.modules import launch_config
from launch_helpers import SECRET_KEY, SPEC, SWANLAB_ON, settings


def run(capsys, **args):
    base = {"settings": settings(), "spec": SPEC, "host": "node1", "is_head": True, "nnodes": 1,
            "head": {"name": "node1", "ansible_host": "10.0.0.1"}}
    base.update(args)
    with patch_module_args(base):
        with pytest.raises(SystemExit):
            launch_config.main()
    return json.loads(capsys.readouterr().out)


def test_returns_the_launch_configuration(capsys):
    result = run(capsys)
    assert result["changed"] is False
    config = result["config"]
    assert config["master_addr"] == "10.0.0.1" and config["role"] == "head"
    assert config["npu_devices"] == list(range(8)) and config["features"]["mask"] == "0000000"


def test_reports_every_problem_at_once(capsys):
    result = run(capsys, settings=settings(verl_train_steps="abc", verl_model_path="rel/path", verl_feature_mask="012"))
    assert result["failed"] is True
    assert [e["variable"] for e in result["errors"]] == ["verl_train_steps", "verl_feature_mask", "verl_model_path"]
    assert result["msg"].startswith("node1: 3 setting(s) need fixing before anything is changed:")


def test_the_key_is_never_returned(capsys):
    result = run(capsys, settings=settings(**SWANLAB_ON), swanlab_api_key=SECRET_KEY)
    assert "failed" not in result
    assert SECRET_KEY not in json.dumps(result)
    assert result["config"]["swanlab"]["host"] == "http://192.168.1.100:8000"


def test_the_key_may_not_travel_in_settings(capsys):
    result = run(capsys, settings=dict(settings(), verl_swanlab_api_key=SECRET_KEY))
    assert result["failed"] is True
    assert SECRET_KEY not in json.dumps(result)


def test_typos_are_warned_about(capsys):
    result = run(capsys, settings=dict(settings(), verl_trian_tp=2))
    assert "verl_trian_tp is not a setting of verl.deploy and is ignored. Did you mean verl_train_tp?" in json.dumps(result["warnings"])
