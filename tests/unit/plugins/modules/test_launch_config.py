# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""verl.deploy.launch_config, driven through main() as Ansible would."""
from __future__ import annotations

import json

import pytest
import yaml
from ansible.module_utils.testing import patch_module_args

from ansible_collections.verl.deploy.plugins.modules import launch_config
from helpers.launch_helpers import RULES, SECRET_KEY, SPEC, SWANLAB_ON, settings


def run(capsys, **args):
    base = {"settings": settings(), "spec": SPEC, "rules": RULES, "host": "node1", "is_head": True, "nnodes": 1,
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
    assert [e["variable"] for e in result["errors"]] == ["verl_feature_mask", "verl_model_path", "verl_train_steps"]
    assert result["msg"].startswith("node1: 3 setting(s) need fixing before anything is changed:")


def test_a_login_mode_needs_only_to_know_that_a_key_was_given(capsys):
    result = run(capsys, settings=settings(**SWANLAB_ON), swanlab_api_key_set=True)
    assert "failed" not in result
    assert result["config"]["swanlab"]["host"] == "http://192.168.1.100:8000" and result["config"]["swanlab"]["needs_key"]
    refused = run(capsys, settings=settings(**SWANLAB_ON))
    assert [e["variable"] for e in refused["errors"]] == ["verl_swanlab_api_key"]


def test_the_module_takes_no_key():
    options = yaml.safe_load(launch_config.DOCUMENTATION)["options"]
    assert "swanlab_api_key" not in options and "swanlab_api_key_set" in options
    assert options["swanlab_api_key_set"]["type"] == "bool"


def test_a_key_in_the_environment_is_censored_in_the_invocation(capsys):
    result = run(capsys, settings=settings(verl_extra_env={"SWANLAB_API_KEY": SECRET_KEY}))
    assert result["failed"] is True and [e["variable"] for e in result["errors"]] == ["verl_extra_env"]
    assert SECRET_KEY not in json.dumps(result)


def test_the_key_may_not_travel_in_settings(capsys):
    result = run(capsys, settings=dict(settings(), verl_swanlab_api_key=SECRET_KEY))
    assert result["failed"] is True
    assert SECRET_KEY not in json.dumps(result)


def test_key_lookalikes_are_refused_by_name(capsys):
    result = run(capsys, unknown=["verl_swanlab_apikey", "verl_trian_tp"])
    assert result["failed"] is True and [e["variable"] for e in result["errors"]] == ["verl_swanlab_apikey"]
    assert "its value is not shown" in result["msg"]


def test_typos_are_warned_about(capsys):
    result = run(capsys, unknown=["verl_trian_tp"])
    assert "verl_trian_tp is not a setting of verl.deploy and is ignored. Did you mean verl_train_tp?" in json.dumps(result["warnings"])
