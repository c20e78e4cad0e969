# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The deploy_lock filter: this deploy's lock identity, as the tasks give it to verl_control.sh."""
from __future__ import annotations

import os
import re

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.verl.deploy.plugins.filter.deploy_lock import FilterModule

deploy_lock = FilterModule().filters()["deploy_lock"]


def test_the_token_is_this_controller_and_playbook_run():
    lock = deploy_lock(300)
    host, pid, started = lock["token"].split(":")
    assert host == os.uname().nodename and int(pid) > 0 and int(started) > 0
    assert lock["holder"] == "the deploy of controller %s pid %s" % (host, pid)


def test_the_env_prefix_the_control_script_reads():
    lock = deploy_lock("120", "42")
    assert lock["env"][0] == "env"
    assert lock["env"][1:] == ["VERL_DEPLOY_LOCK_TOKEN=" + lock["token"], "VERL_DEPLOY_LOCK_HOLDER=" + lock["holder"],
                               "VERL_DEPLOY_LOCK_WAIT=120"]
    assert lock["holder"].endswith(" (AWX job 42)")


def test_no_awx_job_id_names_no_job():
    for job in ("", "  ", None):
        assert "AWX" not in deploy_lock(300, job)["holder"]


def test_the_token_holds_no_character_the_lock_file_cannot_keep():
    # verl_control.sh writes it with printf into a token= line; a new line would forge another field.
    assert re.fullmatch(r"[A-Za-z0-9._-]+:\d+:\d+", deploy_lock(300)["token"])


def test_a_deploy_under_a_comparison_takes_its_identity_from_the_controllers_environment(monkeypatch):
    outer = deploy_lock(300, kind="compare", lease=1920, folder="/logs/.verl-deploy")
    monkeypatch.setenv("VERL_DEPLOY_OUTER_LOCK", outer["handed_down"])
    lock = deploy_lock(60)
    assert (lock["token"], lock["outer"], lock["folder"]) == (outer["token"], True, "/logs/.verl-deploy")
    assert "VERL_DEPLOY_LOCK_KEEP=1" in lock["env"]
    # The comparison's own identity is never taken from the environment.
    assert deploy_lock(60, kind="compare")["outer"] is False
    monkeypatch.setenv("VERL_DEPLOY_OUTER_LOCK", "{broken")
    with pytest.raises(AnsibleFilterError, match="VERL_DEPLOY_OUTER_LOCK is not the JSON"):
        deploy_lock(60)


def test_a_comparison_resumed_after_an_interruption_takes_back_the_lock_of_its_run_that_is_gone():
    gone = {"token": "%s:4194311:5" % os.uname().nodename, "holder": "the mask comparison (compare.yml) of controller x pid 4194311",
            "host": os.uname().nodename, "pid": 2 ** 22 + 7}  # no such process: the run was interrupted
    lock = deploy_lock(300, kind="compare", lease=1920, resume=gone)
    assert (lock["token"], lock["holder"], lock["taken_back"]) == (gone["token"], gone["holder"], True)
    assert lock["pid"] != gone["pid"]  # the state then keeps this run's pid: a run after it sees that this one still goes
    assert deploy_lock(300, kind="compare", resume=dict(gone, host="another-controller"))["taken_back"] is False
    assert deploy_lock(300, kind="compare", resume=None)["taken_back"] is False
    assert deploy_lock(300, kind="deploy", resume=gone)["token"] != gone["token"]  # a deploy never resumes a comparison
