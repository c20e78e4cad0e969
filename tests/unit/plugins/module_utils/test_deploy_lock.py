"""The deploy's identity for the lock on the head: token, holder text, environment for verl_control.sh."""
from __future__ import annotations

import os

import pytest

from ansible_collections.verl.deploy.plugins.module_utils._deploy_lock import deploy_lock, outer_lock, playbook_pid, taken_back_from


def test_the_holder_names_the_controller_the_pid_and_the_awx_job():
    lock = deploy_lock(300, "17", host="awx-1", pid=4242, started=1700000000)
    assert lock["holder"] == "the deploy of controller awx-1 pid 4242 (AWX job 17)"
    assert lock["token"] == "awx-1:4242:1700000000"
    assert lock["env"] == ["env", "VERL_DEPLOY_LOCK_TOKEN=awx-1:4242:1700000000",
                           "VERL_DEPLOY_LOCK_HOLDER=the deploy of controller awx-1 pid 4242 (AWX job 17)", "VERL_DEPLOY_LOCK_WAIT=300"]
    assert deploy_lock("60", "", host="cli", pid=7, started=1)["holder"] == "the deploy of controller cli pid 7"


def test_the_playbook_pid_is_the_topmost_ansible_playbook(tmp_path):
    def process(pid, parent, command):
        folder = tmp_path / str(pid)
        folder.mkdir()
        (folder / "stat").write_text("%d (%s) S %d 0 0" % (pid, command.split()[0], parent))
        (folder / "cmdline").write_bytes(command.replace(" ", "\0").encode())

    process(10, 1, "bash")
    process(20, 10, "/usr/bin/python3 /venv/bin/ansible-playbook deploy.yml")
    process(30, 20, "/usr/bin/python3 /venv/bin/ansible-playbook deploy.yml")  # a fork
    assert playbook_pid(30, proc=str(tmp_path)) == 20
    assert playbook_pid(10, proc=str(tmp_path)) == 10  # no playbook above: itself
    assert playbook_pid(proc="/nonexistent") == os.getpid()


def test_a_comparison_is_named_as_such_with_its_lease_and_the_deployments_lock_folder():
    lock = deploy_lock(300, "", host="c1", pid=11, started=5, kind="compare", lease=1920, folder="/logs/.verl-deploy")
    assert lock["holder"] == "the mask comparison (compare.yml) of controller c1 pid 11"
    assert lock["env"][-1] == "VERL_DEPLOY_LOCK_LEASE=1920" and "VERL_DEPLOY_LOCK_KEEP=1" not in lock["env"]
    assert (lock["folder"], lock["outer"]) == ("/logs/.verl-deploy", False)


def test_a_deploy_the_comparison_runs_takes_its_identity_and_keeps_the_lock():
    outer = deploy_lock(300, "9", host="c1", pid=11, started=5, kind="compare", lease=1920, folder="/logs/.verl-deploy")
    lock = deploy_lock(60, "", host="c1", pid=77, started=6, outer=outer_lock(outer["handed_down"]))
    assert (lock["token"], lock["holder"], lock["folder"], lock["outer"]) == (
        "c1:11:5", "the mask comparison (compare.yml) of controller c1 pid 11 (AWX job 9)", "/logs/.verl-deploy", True)
    assert lock["env"][1:] == ["VERL_DEPLOY_LOCK_TOKEN=c1:11:5", "VERL_DEPLOY_LOCK_HOLDER=" + outer["holder"],
                               "VERL_DEPLOY_LOCK_WAIT=60", "VERL_DEPLOY_LOCK_KEEP=1", "VERL_DEPLOY_LOCK_LEASE=1920"]


@pytest.mark.parametrize("text, expected", [
    ("", None), ("  ", None),
    ('{"token": "t:1:2", "holder": "h", "lease": 60, "folder": "/l"}', {"token": "t:1:2", "holder": "h", "lease": 60, "folder": "/l"}),
    ('{"token": "t:1:2", "holder": "h"}', {"token": "t:1:2", "holder": "h", "lease": None, "folder": ""}),
    ("not json", "is not the JSON"), ('{"token": "t"}', "must give token and holder"), ('["t", "h"]', "must give token and holder"),
    ('{"token": "t\\nforged=1", "holder": "h"}', "holds a new line"), ('{"token": "t", "holder": "h", "lease": 0}', "positive"),
    ('{"token": "t", "holder": "h", "lease": true}', "positive"),
])
def test_the_handed_down_identity_is_read_or_refused(text, expected):
    if isinstance(expected, str):
        with pytest.raises(ValueError, match=expected):
            outer_lock(text)
    else:
        assert outer_lock(text) == expected


DEAD = {"token": "c1:11:5", "holder": "the mask comparison (compare.yml) of controller c1 pid 11", "host": "c1", "pid": 11}


@pytest.mark.parametrize("saved, alive, expected", [
    (DEAD, False, {"token": "c1:11:5", "holder": DEAD["holder"]}),  # interrupted on this controller: taken back
    (DEAD, True, None),  # that run still goes: its lock is refused to this one, as to any deploy
    (dict(DEAD, host="c2"), False, None),  # another controller's: its process cannot be seen from here
    (dict(DEAD, pid="11"), False, None), (dict(DEAD, token=""), False, None), ({"pid": 11, "host": "c1"}, False, None),
    (None, False, None), ("c1:11:5", False, None),
])
def test_an_interrupted_comparisons_lock_is_taken_back_only_from_a_run_that_is_gone(saved, alive, expected):
    assert taken_back_from(saved, host="c1", alive=lambda pid: alive) == expected


def test_a_comparison_that_takes_back_the_lock_keeps_its_token_and_holder_and_says_so():
    lock = deploy_lock(300, "", host="c1", pid=42, started=9, kind="compare", lease=1920, taken_back=taken_back_from(
        DEAD, host="c1", alive=lambda pid: False))
    assert (lock["token"], lock["holder"], lock["taken_back"], lock["pid"], lock["host"]) == ("c1:11:5", DEAD["holder"], True, 42, "c1")
    assert lock["env"][1:3] == ["VERL_DEPLOY_LOCK_TOKEN=c1:11:5", "VERL_DEPLOY_LOCK_HOLDER=" + DEAD["holder"]]
    assert deploy_lock(300, "", host="c1", pid=42, started=9, kind="compare")["taken_back"] is False


def test_a_running_ansible_playbook_is_seen_as_alive(tmp_path):
    from ansible_collections.verl.deploy.plugins.module_utils import _deploy_lock
    assert _deploy_lock._runs_ansible_playbook(os.getpid()) is False  # pytest, not a playbook
    assert _deploy_lock._runs_ansible_playbook(2 ** 22 + 7) is False  # no such process
