"""The deploy's identity for the lock on the head: token, holder text, environment for verl_control.sh; the lock's take and
release on the head's host, by the script's rules."""
from __future__ import annotations

import json
import os
import time

import pytest

from ansible_collections.verl.deploy.plugins.module_utils._deploy_lock import (
    LEASE, deploy_lock, holder_runs, holder_state, host_step, lease_before_ray, lease_of, lock_fields, lock_values, main, outer_lock, playbook_pid,
    release, take, taken_back_from)


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


# --- The lock on the head's host (node_step's lock and unlock with lock_folder): verl_control.sh's rules, in Python.

FOREIGN = {"token": "c2:22:1", "holder": "the deploy of controller c2 pid 22", "since": "1700000000", "pid": "4242"}


@pytest.mark.parametrize("fields, age, runs, expected", [
    (None, 0, False, "free"),
    (dict(FOREIGN, token="mine"), 10_000, False, "mine"),  # this run's, however old
    (FOREIGN, 0, False, "busy"), (FOREIGN, LEASE, False, "busy"),  # a step within the lease
    (FOREIGN, LEASE + 1, False, "gone"),  # no step for the lease, its call no longer runs
    (FOREIGN, LEASE + 1, True, "busy"),  # its call still runs (a long step)
    (dict(FOREIGN, lease="3000"), 2999, False, "busy"), (dict(FOREIGN, lease="3000"), 3001, False, "gone"),  # the lease it wrote
    (dict(FOREIGN, lease="soon"), LEASE + 1, False, "gone"),  # an unreadable lease: the script's
])
def test_whose_the_lock_is(fields, age, runs, expected):
    assert holder_state(fields, age, "mine", lambda pid: runs) == expected


def test_the_lock_files_fields_and_the_steps_values_are_read_as_the_script_writes_them():
    assert lock_fields("token=a=b\nholder=h\ntoken=second\njunk\n") == {"token": "a=b", "holder": "h"}
    assert lease_of({"lease": "900"}) == 900 and lease_of({}) == LEASE
    assert lock_values(["env", "VERL_DEPLOY_LOCK_TOKEN=c:1:2", "VERL_DEPLOY_LOCK_HOLDER=the deploy of c", "OTHER=1"]) == {
        "VERL_DEPLOY_LOCK_TOKEN": "c:1:2", "VERL_DEPLOY_LOCK_HOLDER": "the deploy of c"}


def test_a_deploys_first_take_has_the_lease_of_the_stages_before_ray():
    """deploy.yml takes its lock before the container stage: its lease outlasts the image's pull and the container's start
    (verl_docker_timeout each) and the other stages' bounded steps; a comparison's longer lease stays."""
    assert lease_before_ray(900) == LEASE + 1800 + 1200
    lock = deploy_lock(300, "", host="c1", pid=7, started=1, before_ray=900)
    assert lock["first_env"] == lock["env"] + ["VERL_DEPLOY_LOCK_LEASE=3120"]
    assert "first_env" not in deploy_lock(300, "", host="c1", pid=7, started=1)
    outer = deploy_lock(300, "", host="c1", pid=11, started=5, kind="compare", lease=9000, folder="/l/.verl-deploy")
    inner = deploy_lock(60, "", host="c1", pid=77, started=6, outer=outer_lock(outer["handed_down"]), before_ray=900)
    assert inner["first_env"][-1] == "VERL_DEPLOY_LOCK_LEASE=9000" and inner["first_env"].count("VERL_DEPLOY_LOCK_LEASE=9000") == 1


class Clock:
    """Seconds that pass only when the take sleeps; then() runs at a given second (another deploy's release)."""

    def __init__(self, then=None, at=None):
        self.start = self.now = time.time()  # the files' times are the real clock's
        self.then, self.at = then, at

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds
        if self.then and self.now - self.start >= self.at:
            self.then()
            self.then = None


def values(token, wait=10, **more):
    return dict({"VERL_DEPLOY_LOCK_TOKEN": token, "VERL_DEPLOY_LOCK_HOLDER": "the deploy of controller %s" % token,
                 "VERL_DEPLOY_LOCK_WAIT": str(wait)}, **more)


def answer(done):
    return json.loads(done["stdout"])


def test_a_take_waits_for_another_deploys_lock_and_says_so(tmp_path):
    first = take(str(tmp_path), values("a"), "the Ray head h1", runs=lambda pid: False)
    assert answer(first) == {"said": ["lock: free for the deploy of controller a"],
                             "answer": {"changed": "true", "state": "held", "lock": "free"}}
    clock = Clock(then=(tmp_path / "deploy.lock").unlink, at=4)
    second = take(str(tmp_path), values("b"), "the Ray head h1", runs=lambda pid: True, clock=clock, sleep=clock.sleep)
    said = answer(second)["said"]
    assert said[0].startswith("lock: the deploy of controller a holds the cluster's lock since ") and said[0].endswith("; waiting at most 10 s.")
    assert said[1:] == ["lock: taken after waiting 4 s for another deploy.", "lock: waited for the deploy of controller b"]
    assert answer(second)["answer"]["lock"] == "waited" and "token=b\n" in (tmp_path / "deploy.lock").read_text()


def test_a_take_refused_names_the_holder_and_changes_nothing(tmp_path):
    take(str(tmp_path), values("a", VERL_DEPLOY_LOCK_LEASE="3120"), "x")
    before = (tmp_path / "deploy.lock").read_bytes()
    clock = Clock()
    refused = take(str(tmp_path), values("b", wait=6), "the Ray head h1", runs=lambda pid: True, clock=clock, sleep=clock.sleep)
    assert refused["rc"] == 4 and answer(refused)["answer"] == {}
    assert refused["stderr"].startswith("the Ray head h1: another deploy is changing this cluster: the deploy of controller a holds its "
                                        "lock since ")
    assert refused["stderr"].endswith(" This deploy waited 6 s (verl_deploy_lock_timeout) and changed nothing. Fix: let that deploy end "
                                      "(or stop it), then run again; the lock of a deploy that is gone is taken over 3120 s after its "
                                      "last step.")
    assert (tmp_path / "deploy.lock").read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["deploy.lock"]


def test_the_holders_take_renews_its_lock_with_this_steps_lease(tmp_path):
    take(str(tmp_path), values("a", VERL_DEPLOY_LOCK_LEASE="3120"), "x")
    os.utime(tmp_path / "deploy.lock", (1, 1))
    held = take(str(tmp_path), values("a"), "x")
    assert answer(held)["answer"] == {"changed": "false", "state": "held", "lock": "held"}
    assert lock_fields((tmp_path / "deploy.lock").read_text())["lease"] == str(LEASE)
    assert (tmp_path / "deploy.lock").stat().st_mtime > 1


@pytest.mark.parametrize("token, keep, expected", [
    ("a", "", ("lock: released", "released", False)),
    ("a", "1", ("lock: kept for the deploy of controller a, which releases it when it ends", "kept", True)),
    ("b", "", ("lock: not held by this deploy", "not-held", True)),
    ("", "", ("lock: not held by this deploy", "not-held", True)),
])
def test_the_release_on_the_host_is_the_scripts(tmp_path, token, keep, expected):
    take(str(tmp_path), values("a"), "x")
    done = release(str(tmp_path), dict(values(token), **({"VERL_DEPLOY_LOCK_KEEP": keep} if keep else {})))
    assert (answer(done)["said"], answer(done)["answer"]["state"], (tmp_path / "deploy.lock").exists()) == (
        [expected[0]], expected[1], expected[2])
    assert answer(release(str(tmp_path / "none"), values("a")))["answer"]["state"] == "not-held"


def test_the_host_step_refuses_without_identity_and_names_the_fix_when_the_folder_cannot_be_written(tmp_path):
    assert "step 'lock' needs VERL_DEPLOY_LOCK_TOKEN" in host_step("lock", str(tmp_path), ["env"], where="h1")["stderr"]
    (tmp_path / "file").write_text("")
    done = host_step("lock", str(tmp_path / "file" / ".verl-deploy"), ["env", "VERL_DEPLOY_LOCK_TOKEN=a"], where="h1")
    assert done["rc"] == 1 and done["stderr"].startswith("h1: the deploy's lock in %s/file/.verl-deploy: " % tmp_path)
    assert done["stderr"].endswith("Fix: make verl_log_dir writable by the Ansible user on the head (or connect as root), then run again.")


def test_a_holders_call_is_seen_running_on_the_host_also_from_its_container(tmp_path):
    """A container's step writes its pid as the container sees it (NSpid's last number); the host sees the same process."""
    def process(pid, command, nspid):
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "cmdline").write_bytes(command.replace(" ", "\0").encode())
        (tmp_path / str(pid) / "status").write_text("Name:\tbash\nNSpid:\t%s\n" % nspid)

    process(5000, "bash /verl/verl_control.sh start-training", "5000\t73")
    process(5001, "sleep 60", "5001\t74")
    (tmp_path / "self").mkdir()
    assert holder_runs("73", proc=str(tmp_path)) and holder_runs("5000", proc=str(tmp_path))
    assert not holder_runs("74", proc=str(tmp_path)) and not holder_runs("", proc=str(tmp_path))
    assert not holder_runs("99", proc=str(tmp_path))


def test_a_lock_taken_over_but_taken_first_by_another_deploy_is_waited_for_not_claimed(tmp_path, monkeypatch):
    """Two deploys take over the same dead lock: the one that loses the new lock's create waits for the winner, as for any
    deploy (it never answers taken-over for a lock it does not hold)."""
    from ansible_collections.verl.deploy.plugins.module_utils import _deploy_lock
    lock = tmp_path / "deploy.lock"
    lock.write_text("token=dead\nholder=the deploy of controller c9 pid 99\nsince=1700000000\npid=999999\n")
    os.utime(lock, (1, 1))
    real = _deploy_lock._create

    def create_lost(path, _values, clock, pid):  # the other deploy creates its lock between this one's rename and create
        monkeypatch.setattr(_deploy_lock, "_create", real)
        real(path, values("winner"), clock, pid)
        return False

    monkeypatch.setattr(_deploy_lock, "_create", create_lost)
    clock = Clock()
    done = take(str(tmp_path), values("loser", wait=4), "h1", runs=lambda pid: False, clock=clock, sleep=clock.sleep)
    assert done["rc"] == 4 and "the deploy of controller winner holds its lock" in done["stderr"], done
    assert "token=winner\n" in lock.read_text()


def test_the_control_scripts_lock_is_this_same_code(tmp_path, capsys):
    """verl_control.sh takes, ends and releases the lock through this file beside it (main): take prints how, then its
    sentences, its call's pid written as the holder's; end keeps a step's lock fresh (0, 3) or releases it (a failure, but a
    comparison's); unlock answers the host's document; a refusal is the host's words on stderr, exit 4."""
    folder, where = str(tmp_path), "verl_control.sh on h1"
    assert main(["_deploy_lock.py", "take", folder, where, "4242"], values("a")) == 0
    assert capsys.readouterr().out == "free\n" and "pid=4242\n" in (tmp_path / "deploy.lock").read_text()
    assert main(["_deploy_lock.py", "take", folder, where, "4343"], values("a", VERL_DEPLOY_LOCK_LEASE="600")) == 0
    assert capsys.readouterr().out == "held\n" and "pid=4343\nlease=600\n" in (tmp_path / "deploy.lock").read_text()
    assert main(["_deploy_lock.py", "take", folder, where, "1"], values("b", wait=0)) == 4
    said = capsys.readouterr()
    assert said.out == "\n", said
    assert said.err.startswith("verl_control.sh on h1: another deploy is changing this cluster: the deploy of controller a "), said
    for code, kept in (("0", True), ("3", True), ("1", False)):
        main(["_deploy_lock.py", "take", folder, where, "1"], values("a"))
        assert main(["_deploy_lock.py", "end", code, folder, where, "1"], values("a")) == 0
        assert (tmp_path / "deploy.lock").exists() is kept, code
    main(["_deploy_lock.py", "take", folder, where, "1"], values("a"))
    main(["_deploy_lock.py", "end", "1", folder, where, "1"], values("a", VERL_DEPLOY_LOCK_KEEP="1"))
    assert (tmp_path / "deploy.lock").exists()
    capsys.readouterr()
    assert main(["_deploy_lock.py", "unlock", folder, where, "1"], values("a")) == 0
    assert json.loads(capsys.readouterr().out)["answer"] == {"changed": "true", "state": "released"}
    assert main(["_deploy_lock.py", "lock", folder], {}) == 2
