# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The action plugin of verl.deploy.launch_config: what it returns is the module's evaluate(), with the key masked."""
from __future__ import annotations

import json

from ansible_collections.verl.deploy.plugins.action.launch_config import masked
from ansible_collections.verl.deploy.plugins.module_utils._launch_config import evaluate
from helpers.launch_helpers import RULES, SECRET_KEY, SPEC, settings


def params(**changes):
    base = {"scope": "launch", "settings": settings(), "spec": SPEC, "rules": RULES, "swanlab_api_key_set": False, "unknown": [],
            "mask": None, "host": "node1", "is_head": True, "nnodes": 1, "detected": {},
            "head": {"name": "node1", "node_ip": None, "ansible_host": "10.0.0.1", "default_ipv4": None}}
    base.update(changes)
    return base


def test_good_settings_give_the_launch_configuration():
    result, _warnings, secrets = evaluate(params())
    assert result["changed"] is False and result["config"]["role"] == "head" and not secrets


def test_a_key_given_as_an_environment_variable_is_refused_and_masked_everywhere():
    result, warnings, secrets = evaluate(params(settings=settings(verl_extra_env={"SWANLAB_API_KEY": SECRET_KEY})))
    assert result["failed"] is True and "verl_extra_env" in result["msg"]
    shown = masked({"result": result, "warnings": list(warnings)}, sorted(secrets, key=len, reverse=True))
    assert SECRET_KEY in secrets and SECRET_KEY not in json.dumps(shown)


def test_masked_replaces_inside_nested_values_only_the_secret():
    value = {"a": ["x %s y" % SECRET_KEY, 3, None], "b": {"c": SECRET_KEY}}
    assert masked(value, [SECRET_KEY]) == {"a": ["x ******** y", 3, None], "b": {"c": "********"}}
