# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The settings_problems filter: stage 0's check of every node's settings, read from Ansible's own hostvars.
What the filter adds to the check itself (tests/unit/plugins/module_utils/test_check_inventory.py): reading the
values as given, templated only when they can be, and never letting the SwanLab key through."""
from __future__ import annotations

import base64
import json

from ansible_collections.verl.deploy.plugins.filter.settings_problems import FilterModule, given, head_addresses, settings_problems
from helpers.launch_helpers import RULES, SPEC

KEY = "sk-verl-test-key-0123456789"
PATHS = {"verl_model_path": "/mnt/public/Qwen3-8B", "verl_train_file": "/mnt/project/data/train.parquet",
         "verl_test_file": "/mnt/project/data/test.parquet", "verl_ckpts_dir": "/mnt/project/ckpts/run"}


def inventory(head="", worker=""):
    """A head and a worker with the paths and the key set for all; `head`/`worker`: more of each host's flow mapping."""
    shared = "".join("\n    %s: %s" % item for item in PATHS.items())
    return """
all:
  vars:%s
    verl_swanlab_api_key: %s
  children:
    ray_head:
      hosts:
        head: {ansible_host: 10.0.0.1, verl_node_ip: 10.0.0.1 %s}
    ray_workers:
      hosts:
        w1: {ansible_host: 10.0.0.2 %s}
""" % (shared, KEY, head, worker)


def test_a_clean_inventory_has_no_problems(hostvars):
    assert settings_problems(hostvars(inventory()), "head", SPEC, RULES, ["w1"]) == []


def test_a_bad_value_names_the_variable_and_the_node(hostvars):
    problems = settings_problems(hostvars(inventory(worker=", verl_lr: fast")), "head", SPEC, RULES, ["w1"])
    assert [p["variable"] for p in problems] == ["verl_lr"] and problems[0]["hosts"] == ["w1"], problems


def test_a_setting_that_templates_to_the_key_is_refused_without_showing_it(hostvars):
    views = hostvars(inventory(worker=", verl_project_name: 'run-{{ verl_swanlab_api_key }}'"))
    problems = settings_problems(views, "head", SPEC, RULES, ["w1"])
    assert [p["variable"] for p in problems] == ["verl_project_name"], problems
    assert KEY not in json.dumps(problems) and "holds the SwanLab key" in problems[0]["msg"]


def test_the_keys_base64_form_counts_as_the_key(hostvars):
    encoded = base64.b64encode(KEY.encode()).decode()
    problems = settings_problems(hostvars(inventory(head=", verl_experiment_name: x%s" % encoded)), "head", SPEC, RULES, ["w1"])
    assert [p["variable"] for p in problems] == ["verl_experiment_name"], problems
    assert encoded not in json.dumps(problems) and KEY not in json.dumps(problems)


def test_a_value_only_the_hosts_facts_can_give_is_deferred_not_refused(hostvars):
    views = hostvars(inventory(head=", verl_node_ip: '{{ ansible_default_ipv4.address }}'"))
    assert given(views, "head", SPEC)["deferred"] is True
    assert head_addresses(views["head"], "head") == {"name": "head"}
    assert settings_problems(views, "head", SPEC, RULES, ["w1"]) == []


def test_the_key_is_never_a_setting_value_and_counts_as_set(hostvars):
    seen = given(hostvars(inventory()), "w1", SPEC)
    assert seen["api_key_set"] is True and "verl_swanlab_api_key" not in seen["settings"]
    assert seen["settings"]["verl_model_path"] == "/mnt/public/Qwen3-8B"


def test_an_unknown_verl_name_is_reported_not_passed_on(hostvars):
    seen = given(hostvars(inventory(worker=", verl_trian_tp: 4")), "w1", SPEC)
    assert seen["unknown"] == ["verl_trian_tp"] and "verl_trian_tp" not in seen["settings"]


def test_the_head_is_checked_once_when_also_listed_as_a_worker(hostvars):
    problems = settings_problems(hostvars(inventory(head=", verl_lr: fast")), "head", SPEC, RULES, ["head", "w1", "w1"])
    assert len(problems) == 1 and problems[0]["hosts"] == ["head"], problems


def test_registered_as_a_filter():
    assert FilterModule().filters() == {"settings_problems": settings_problems}
