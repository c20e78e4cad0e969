# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The run-time filters (ray_joins, ray_joining, worker_in_ray, training_left_as_found, training_plan, install_plan,
where_to_look) as the roles call them, in one render: each hands its arguments to plugins/module_utils/_run_time.py, whose rows are
test_run_time.py's."""
from __future__ import annotations

import hashlib

from ansible_collections.verl.deploy.plugins.module_utils._control_step import parse_training_state
from helpers.answers import answered, training


def test_the_run_time_filters_as_the_roles_call_them(render):
    joins = [{"item": "w1", "answered": True, "rejoined": True, "rc": 0, "stdout": answered("ray: joined\nchanged=true\n"),
              "said": ["ray: joined"]},
             {"item": "w2", "answered": False, "rejoined": False}]
    workers = [{"inventory_hostname": join["item"], "__ray_join_result": join, "__ray_start": {"ansible_job_id": "j"}} for join in joins]
    joined, listed, left, plan, install, where, joining = render([
        "workers | verl.deploy.ray_joins('10.0.0.1', 9182, {'rc': 3})",
        "'10.0.0.1=8,10.0.0.2=8' | verl.deploy.worker_in_ray('10.0.0.2', 8, raylet)",
        "'True' | verl.deploy.training_left_as_found(step_kept, [])",
        "state | verl.deploy.training_plan({'restart': false, 'status_stall_seconds': 1800}, ['w1'], 'n1')",
        "{'a.sh': 'IyEvYmluL3NoCg=='} | verl.deploy.install_plan(['a.sh'], {'a.sh': '755'}, [])",
        "launch | verl.deploy.where_to_look('n1', none, none, '')",
        "workers | verl.deploy.ray_joining(true, step_kept)",
    ], workers=workers, joins=joins, step_kept=True,
        state=parse_training_state(answered(training("running", pid="7"))), raylet=True,
        launch={"log_dir": "/logs", "training": {"log_name": "verl_"}, "experiment_name": "e", "master_addr": "10.0.0.1",
                "dashboard_port": 8265, "container_name": "verl", "swanlab_enabled": False, "tensorboard": None})
    assert (joined["unanswered"], joined["rejoined"], joined["problem"], joined["wait_failed"]) == (["w2"], ["w1"], "", True)
    assert joining == {"joining": ["w1", "w2"], "reach_needed": True}
    assert listed is True
    assert left is True
    assert install == {"wanted": ["755 %s a.sh" % hashlib.sha256(b"#!/bin/sh\n").hexdigest()], "differ": ["a.sh"],
                       "stdin": "755 a.sh IyEvYmluL3NoCg=="}
    assert plan["start"] is True and plan["stop_first"] is True and plan["why_again"].startswith("n1: the training's workers on w1 went")
    assert where["stats"]["image_verl"].startswith("unknown") and where["lines"][0] == "Training log: /logs/verl_e_*.log in container verl on n1"
