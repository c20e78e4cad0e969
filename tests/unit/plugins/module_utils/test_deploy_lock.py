"""The deploy's identity for the lock on the head: token, holder text, environment for verl_control.sh."""
from __future__ import annotations

import os

from ansible_collections.verl.deploy.plugins.module_utils._deploy_lock import deploy_lock, playbook_pid


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
