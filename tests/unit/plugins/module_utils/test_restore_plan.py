# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""compare.yml and smoke.yml give the user's training back as it ran: the settings of its launch record, written after the
comparison's extra vars (its -e file, given last, wins), never the comparison's own (issue: a comparison with -e
verl_train_tp=8 -e verl_train_pp=1 restarted a TP 4 x PP 2 training with its TP and PP, refused for its checkpoint's layout).

Each case is checked with the real settings check: the user's settings, the comparison's extra vars on top, the restore's
file on top of those, built again: the record of what starts is the record of what ran (launch_drift finds nothing)."""
from __future__ import annotations

import base64
import json

import pytest

from ansible_collections.verl.deploy.plugins.module_utils import _compare as compare
from ansible_collections.verl.deploy.plugins.module_utils._launch_config import table
from ansible_collections.verl.deploy.plugins.module_utils._secrets import key_forms
from ansible_collections.verl.deploy.plugins.module_utils._training_state import launch_drift, launch_record
from helpers.launch_helpers import RULES, SECRET_KEY, SPEC, SWANLAB_ON, launch_ok

TABLE = table(SPEC, RULES)
# What compare.yml's extra vars and its own settings give every mask's deploy (roles/compare/vars/main.yml _compare_settings).
COMPARISON = {"verl_train_tp": 8, "verl_train_pp": 1, "verl_feature_mask": "1000000", "verl_log_dir": "/mnt/logs/compare",
              "verl_ckpts_dir": "/mnt/logs/compare/ckpts/m0000001", "verl_train_steps": 3, "verl_save_freq": -1, "verl_test_freq": -1,
              "verl_resume_mode": "disable", "verl_resume_from_path": "", "verl_experiment_name": "", "verl_gen_tp": 8,
              "verl_swanlab_enabled": False, "verl_loggers": ["console"], "verl_lr": 0.5, "verl_extra_env": {"HCCL_BUFFSIZE": "1"}}
USERS = {
    "TP 4 x PP 2 (the issue's)": {"verl_train_tp": 4, "verl_train_pp": 2, "verl_log_dir": "/mnt/logs"},
    "a mask, its own name, floats": {"verl_feature_mask": "1100000", "verl_experiment_name": "mine", "verl_lr": 3e-6,
                                     "verl_gpu_memory_utilization": 0.7, "verl_extra_env": {"HCCL_CONNECT_TIMEOUT": "1800"}},
    "resume_path from a checkpoint": {"verl_resume_mode": "resume_path", "verl_resume_from_path": "/ckpt/global_step_2"},
    "SwanLab, its server and workspace": dict(SWANLAB_ON, verl_swanlab_workspace="team", verl_loggers=["console", "tensorboard"],
                                              verl_tensorboard_dir="/mnt/tb"),
}


def _built(settings, api_key=""):
    overrides = {k: v for k, v in settings.items() if k.startswith("verl_")}
    return launch_ok(api_key=api_key, **overrides)


@pytest.mark.parametrize("user", list(USERS.values()), ids=list(USERS))
def test_the_training_started_again_is_the_one_that_ran_whatever_the_comparisons_extra_vars(user):
    key = SECRET_KEY if user.get("verl_swanlab_enabled") else ""
    ran = launch_record(_built(user, key))
    compared = launch_record(_built({**user, **COMPARISON}))
    assert launch_drift(ran, compared)  # the comparison's deploys run with its own settings
    plan = compare.restore_plan({"launch": ran}, TABLE)
    assert plan["problem"] == ""
    assert SECRET_KEY not in json.dumps(plan)
    again = launch_record(_built({**user, **COMPARISON, **plan["settings"]}, key))  # extra vars, then the file: it wins
    assert launch_drift(ran, again) == []


RESUMES = [
    # its resume settings, first and last step logged, save_freq -> what it is started again with
    ("auto", "", "0 1", "9 7", 2, ("auto", "")),
    ("resume_path", "/ckpt/global_step_2", "0 3", "9 7", 2, ("auto", "")),  # saved steps 4 and 6 since: go on from 6
    ("resume_path", "/ckpt/global_step_2", "0 3", "9 3", 2, ("resume_path", "/ckpt/global_step_2")),  # saved nothing since
    ("disable", "", "0 1", "9 5", 5, ("auto", "")),  # started over, saved step 5: resumes there, not from scratch
    ("disable", "", "0 1", "9 4", 5, ("disable", "")),
    ("disable", "", "0 1", "9 9", -1, ("disable", "")),  # saves nothing
    ("disable", "", "", "", 2, ("disable", "")),  # no step logged yet
]


@pytest.mark.parametrize("mode, path, first, last, save_freq, expected", RESUMES)
def test_a_training_that_saved_since_its_start_goes_on_from_its_latest_checkpoint(mode, path, first, last, save_freq, expected):
    ran = launch_record(_built({"verl_resume_mode": mode, "verl_resume_from_path": path, "verl_save_freq": save_freq}))
    plan = compare.restore_plan({"launch": ran, "first_step": first, "last_step": last}, TABLE)
    assert (plan["settings"]["verl_resume_mode"], plan["settings"]["verl_resume_from_path"]) == expected


def test_on_several_nodes_each_node_keeps_its_own_ip_interface_and_npus():
    ran = launch_record(launch_ok(host="h1", nnodes=2, verl_node_ip="10.0.0.1", verl_npu_devices="0,1,2,3,4,5,6,7"))
    plan = compare.restore_plan({"launch": ran}, TABLE, given="masks=each\nverl_train_tp=8")
    assert plan["problem"] == "" and not {"verl_node_ip", "verl_socket_ifname", "verl_npu_devices"} & set(plan["settings"])
    refused = compare.restore_plan({"launch": ran}, TABLE, given='{"verl_npu_devices": "0,1"}')
    assert refused["problem"] == ("this run's extra vars set verl_npu_devices for every node, and its launch record holds only "
                                  "the head's value, not each node's")
    # One node: its record is the whole cluster's.
    one = compare.restore_plan({"launch": launch_record(launch_ok(verl_npu_devices="0,1,2,3,4,5,6,7"))}, TABLE, given="verl_npu_devices=0")
    assert one["problem"] == "" and one["settings"]["verl_npu_devices"] == [0, 1, 2, 3, 4, 5, 6, 7]


@pytest.mark.parametrize("read", [None, {}, {"launch": None}, {"launch": {"run_training_sha256": "x"}}])
def test_a_training_without_a_launch_record_is_not_started_with_guessed_settings(read):
    plan = compare.restore_plan(read, TABLE)
    assert plan["settings"] == {} and "no launch record" in plan["problem"]


ARGV = ["/venv/bin/python3", "-m", "ansible.cli.playbook", "-i", "inv/hosts.yml", "-e", "verl_swanlab_api_key=" + SECRET_KEY,
        "-e", "masks=each", "-e", "@/home/u/.verl/deploy-user.json", "/c/playbooks/deploy.yml"]


def test_the_command_shown_is_the_one_run_without_its_secrets():
    shown = compare.shown_command(ARGV, ["verl_swanlab_api_key", "verl_wandb_api_key"])
    assert SECRET_KEY not in shown
    assert shown == ("/venv/bin/python3 -m ansible.cli.playbook -i inv/hosts.yml -e '<your -e with verl_swanlab_api_key>' "
                     "-e masks=each -e @/home/u/.verl/deploy-user.json /c/playbooks/deploy.yml")
    # A key given through another variable (the inventory's verl_swanlab_api_key: "{{ my_key }}"), in any of its forms.
    through = ARGV[:5] + ["-e", "my_key=" + base64.b64encode(SECRET_KEY.encode()).decode()] + ARGV[7:]
    shown = compare.shown_command(through, ["verl_swanlab_api_key"], key_forms(SECRET_KEY))
    assert "-e '<your -e with a secret>' -e masks=each" in shown and "my_key" not in shown


FAILED = [
    ({"settings": {}, "problem": "it has no launch record (...)"}, {},
     "The training that ran before the comparison was NOT started again: it has no launch record (...). Start it: run your own "
     "deploy.yml with the settings it ran with and -e verl_restart=true"),
    ({"settings": {"verl_train_tp": 4}, "problem": "this run's extra vars set verl_npu_devices for every node"}, {},
     "The training that ran before the comparison was NOT started again: this run's extra vars set verl_npu_devices for every "
     "node. Start it: in /w, CMD, without those extra vars"),
    ({"settings": {"verl_train_tp": 4}, "problem": ""}, {"rc": 2, "stdout": "fatal: [h1]: FAILED! => \n  msg: the layout differs\n"},
     "The training that ran before the comparison was NOT started again: the deploy that starts it failed: the layout differs "
     "(its output: /s/deploy-user.log). Start it: in /w, once that is fixed: CMD"),
]


@pytest.mark.parametrize("plan, deploy, line", FAILED)
def test_a_training_not_started_again_is_said_with_why_and_the_command_that_starts_it(plan, deploy, line):
    assert compare.restore_failed(plan, "the comparison", deploy, "CMD", "/w", "/s") == line


def test_the_state_keeps_the_users_training_for_an_interrupted_run_whatever_its_settings():
    read = {"launch": {"settings": {"train_tp": 4}}, "first_step": "1 1", "last_step": "9 5", "state": "running"}
    text = compare.save_state({}, "fp", "running", None, read)
    kept = {"launch": read["launch"], "first_step": "1 1", "last_step": "9 5"}
    assert compare.load_state(text, "fp")["user_read"] == kept
    other = compare.load_state(text, "other")  # a run of other settings after it still gives it back
    assert (other["user_training"], other["user_read"], other["results"]) == ("running", kept, {})
    assert compare.load_state(compare.save_state({}, "fp"), "fp")["user_read"] is None
