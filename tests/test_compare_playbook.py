"""playbooks/compare.yml (and smoke.yml, which runs through its steps) without a cluster: its refusals before any node is contacted, and one comparison on this
machine as its one node (local connection, no npu-smi), where the mask's deploy is refused by deploy.yml's own
pre-check: the mask is recorded as failed in the deploy with the deploy's words, a mask the settings refuse is listed
with the reason, the report files are written, and a run again resumes (nothing is deployed twice); the user's training an
interrupted run stopped is started again with its launch record's layout, not this run's extra vars, and when that deploy
is refused the last message says so first, with the command that starts it.

The comparison on the simulated cluster, with real trainings, an interruption and the user's training started again, is
the Molecule scenario one_node's (extensions/molecule/one_node/tests/test_5_compare.py)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
ANSIBLE_PLAYBOOK = str(Path(sys.executable).with_name("ansible-playbook"))


def run(tmp_path, *args, playbook="compare.yml"):
    hosts = tmp_path / "hosts.yml"
    hosts.write_text(yaml.safe_dump({"all": {
        "vars": {"verl_model_path": "/models/Qwen3-8B", "verl_train_file": "/data/train.parquet", "verl_test_file": "/data/test.parquet",
                 "verl_ckpts_dir": str(tmp_path / "ckpts"), "verl_log_dir": str(tmp_path / "logs"),
                 "verl_compare_dir": str(tmp_path / "out"), "verl_host_stage_dir": str(tmp_path / "stage")},
        "children": {"ray_head": {"hosts": {"node1": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}}}}))
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
    proc = subprocess.run([ANSIBLE_PLAYBOOK, "playbooks/" + playbook, "-i", str(hosts), *args], cwd=REPO, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=900, check=False)
    proc.said = " ".join(proc.stdout.split())
    return proc


def contacted(proc):
    return [line for line in proc.stdout.rsplit("PLAY RECAP", 1)[-1].splitlines() if line.startswith("node1")]


def test_no_masks_is_refused_before_any_node(tmp_path):
    proc = run(tmp_path)
    assert proc.returncode == 2, proc.stdout
    assert "masks is not given: nothing to compare" in proc.said and "-e masks=0000000,1100000,1100100" in proc.said
    assert not contacted(proc) and not (tmp_path / "out").exists()


def test_a_bad_mask_is_named(tmp_path):
    proc = run(tmp_path, "-e", "masks=0000000,11000x0,each")
    assert proc.returncode == 2 and "11000x0 is neither a mask nor a shorthand" in proc.said, proc.stdout
    assert not contacted(proc)


def test_a_setting_every_mask_refuses_stops_the_comparison(tmp_path):
    proc = run(tmp_path, "-e", "masks=0000000,1100000", "-e", "verl_compare_steps=1")
    assert proc.returncode == 2, proc.stdout
    assert "The comparison cannot start; no node was contacted and nothing was changed:" in proc.said
    assert "verl_compare_steps" in proc.said
    assert not contacted(proc)


def test_a_refused_setting_of_its_own_stops_a_comparison_of_one_mask_before_anything_is_written(tmp_path):
    """compare.yml -e verl_compare_dir=//etc listed the one mask as refused, then wrote its report and state into /etc
    (rc 0); verl_compare_steps=1e3 was taken as well. Here the folder is a link to /proc (nothing can be written there
    even if the refusal failed); the fixes passing: tests/unit/plugins/filter/test_compare_plan.py."""
    (tmp_path / "proc-link").symlink_to("/proc")
    proc = run(tmp_path, "-e", "masks=0000000", "-e", "verl_compare_dir=%s" % (tmp_path / "proc-link"), "-e", "verl_compare_steps=1e3")
    assert proc.returncode == 2, proc.stdout
    assert "The comparison cannot start; no node was contacted and nothing was changed:" in proc.said
    assert "is the root or a system folder" in proc.said and "verl_compare_steps='1e3' is not a whole number" in proc.said
    assert "to train" not in proc.said and not contacted(proc) and not (tmp_path / "out").exists()


def test_a_comparison_records_a_refused_deploy_and_resumes(tmp_path):
    # With one pipeline stage VPP is refused by the settings check (not run); 0000000 goes through deploy.yml, whose
    # pre-check refuses this machine (no npu-smi).
    args = ("-e", "masks=0000000,0000001", "-e", "verl_train_pp=1", "-e", "verl_train_tp=8")
    first = run(tmp_path, *args)
    assert first.returncode == 0, first.stdout[-6000:]
    out = tmp_path / "out"
    assert "0000001 (VPP): refused by the settings, not trained: " in first.said and "verl_train_pp" in first.said
    assert "0000000 (none): to train" in first.said
    report = json.loads((out / "compare.json").read_text())
    rows = {row["mask"]: row for row in report["rows"]}
    assert rows["0000001"]["status"] == "refused" and rows["0000000"]["status"] == "failed"
    assert rows["0000000"]["failure"]["phase"] == "deploy" and "npu-smi" in rows["0000000"]["failure"]["line"]
    assert report["winner"] is None and report["verdict"].startswith("no mask was measured")
    assert "failed in deploy" in (out / "compare.md").read_text() and "<svg" in (out / "compare.html").read_text()
    assert "PLAY RECAP" in (out / "deploy-m0000000.log").read_text()  # deploy.yml's own output is kept
    assert (tmp_path / "logs" / "compare" / "ckpts" / "m0000000").is_dir() and not (tmp_path / "ckpts").exists()
    assert str(out / "compare.html") in first.stdout.rsplit("TASK [", 1)[-1]  # the paths in the last lines
    assert list(json.loads((out / "state.json").read_text())["results"]) == ["0000000"]
    stamp = (out / "deploy-m0000000.log").stat().st_mtime

    again = run(tmp_path, *args)
    assert again.returncode == 0, again.stdout[-6000:]
    assert ("0000000 (none): failed in the earlier run (in deploy): not trained again; -e verl_compare_retry_failed=true "
            "trains the failed masks again and keeps those measured") in again.said
    assert "Nothing was trained: every mask was measured (or failed) already, or refused." in again.said
    assert (out / "deploy-m0000000.log").stat().st_mtime == stamp

    # The fix the plan gives: the failed mask is deployed again (and fails again here, in the deploy), and its new record
    # replaces the old one whole (here an earlier timeout with metrics of its own). An interrupted run had stopped the
    # user's training of TP 4 x PP 2 (its launch record kept in the state): it is started again with that layout, never
    # with this run's -e verl_train_tp=8 -e verl_train_pp=1 (issue 56); refused here, the last message says so first.
    state = json.loads((out / "state.json").read_text())
    state["results"]["0000000"].update(failure={"phase": "timeout (after step 2)", "line": "", "oom": False}, metrics={"stale": {}})
    ran = {"train_tp": 4, "train_pp": 2, "gen_tp": 4, "nnodes": 1, "mask": "1100000", "resume_mode": "auto", "ckpts_dir": str(tmp_path / "ckpts")}
    state.update(user_training="running", user_read={"launch": {"settings": ran}, "first_step": "1 1", "last_step": "9 3"})
    (out / "state.json").write_text(json.dumps(state))
    retried = run(tmp_path, *args, "-e", "verl_compare_retry_failed=true")
    assert retried.returncode != 0, retried.stdout[-6000:]
    given = json.loads((out / "deploy-user.json").read_text())
    assert given == {"verl_train_tp": 4, "verl_train_pp": 2, "verl_gen_tp": 4, "verl_feature_mask": "1100000", "verl_resume_mode": "auto",
                     "verl_ckpts_dir": str(tmp_path / "ckpts"), "verl_confirm": True, "verl_restart": True}, given
    last = retried.said.rsplit("msg: ", 1)[-1].lstrip("'\"")
    assert last.startswith("The training that ran before the comparison was NOT started again: the deploy that starts it failed: "), last
    assert "npu-smi" in last and "Start it: in %s, once that is fixed: " % REPO in last and "no mask was measured" in last, last
    assert "-e verl_train_tp=8 -e verl_compare_retry_failed=true -e @%s/deploy-user.json %s/playbooks/deploy.yml" % (out, REPO) in last, last
    assert ("0000000 (none): failed in the earlier run (in timeout (after step 2)): trained again (verl_compare_retry_failed=true)"
            in retried.said)
    assert "1 mask(s) to train" in retried.said
    assert (out / "deploy-m0000000.log").stat().st_mtime > stamp
    results = json.loads((out / "state.json").read_text())["results"]
    assert list(results) == ["0000000"] and results["0000000"]["failure"]["phase"] == "deploy", results
    assert "stale" not in results["0000000"]["metrics"], results


def test_the_checkpoint_folder_is_read_on_every_node_before_the_folders_are_made(tmp_path):
    """compare.yml's play 2 on two nodes (both this machine: one storage, so no refusal; the refusal itself and its fix
    are table-tested in tests/unit/plugins/module_utils/test_ckpts_storage.py): each node's read of
    <verl_log_dir>/compare/ckpts goes through the rule, then each mask's folder is made."""
    logs = tmp_path / "logs"
    hosts = tmp_path / "hosts.yml"
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    hosts.write_text(yaml.safe_dump({"all": {"vars": {"verl_log_dir": str(logs)}, "children": {
        "ray_head": {"hosts": {"node1": local}}, "ray_workers": {"hosts": {"node2": local}}}}}))
    play = tmp_path / "storage.yml"
    play.write_text(yaml.safe_dump([
        {"hosts": "localhost", "gather_facts": False, "tasks": [{"ansible.builtin.set_fact": {
            "_compare_plan": {"node_dir": str(logs / "compare"), "to_run": ["0000000", "1100000"]}}}]},
        {"hosts": "ray_head:ray_workers", "gather_facts": False, "any_errors_fatal": True, "tasks": [
            {"ansible.builtin.include_role": {"name": "verl.deploy.compare", "tasks_from": "storage"}}]}]))
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
    proc = subprocess.run([ANSIBLE_PLAYBOOK, str(play), "-i", str(hosts)], cwd=REPO, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert "Read the comparison's checkpoint folder on this node" in proc.stdout
    assert "skipping: [node1]" in proc.stdout.split("Stop if the comparison's checkpoint folder is not one storage")[1].split("TASK [")[0]
    assert (logs / "compare" / "ckpts" / "m1100000").is_dir()


def test_a_smoke_launch_whose_save_run_is_refused_names_the_phase_and_fails(tmp_path):
    """smoke.yml through the same steps: a bad mask is refused before any node; then, with a good one, its save run's
    deploy is refused by deploy.yml's pre-check (no npu-smi here), so nothing is proven, the resume run is not tried, the
    verdict says so, and the run fails; nothing is written to verl_ckpts_dir. (Its passing run, with real trainings, is
    the simulated cluster's: one_node's test_7_smoke.py.)"""
    bad = run(tmp_path, "-e", "mask=11x0000", playbook="smoke.yml")  # refused in the mask's own words, before any node
    assert bad.returncode == 2 and not contacted(bad) and not (tmp_path / "out").exists(), bad.stdout[-6000:]
    assert "The smoke launch cannot start; no node was contacted and nothing was changed:" in bad.said
    assert "mask='11x0000' has characters other than 0 and 1. Fix: give seven characters" in bad.said and "masks=" not in bad.said
    proc = run(tmp_path, "-e", "mask=1100000", playbook="smoke.yml")  # the fix: past the plan, to the save run's deploy
    assert proc.returncode == 2, proc.stdout[-6000:]
    assert "Smoke launch of mask 1100000 (RmvPad+DynBSZ) on 1 node(s): one step saved into" in proc.said
    assert "Smoke launch of mask 1100000 FAILED in deploy (the save run):" in proc.said and "npu-smi" in proc.said
    assert "Proven before it: nothing." in proc.said and "(smoke launch, resume run)" not in proc.said
    verdict = json.loads((tmp_path / "out" / "smoke" / "smoke.json").read_text())
    assert (verdict["ok"], verdict["proved"], verdict["failed"]["phase"], list(verdict["runs"])) == (False, [], "deploy", ["save"])
    assert "PLAY RECAP" in (tmp_path / "out" / "smoke" / "deploy-smoke-save.log").read_text()
    assert (tmp_path / "logs" / "smoke" / "ckpts" / "m1100000").is_dir() and not (tmp_path / "ckpts").exists()


def test_the_rescue_of_a_run_tells_ansibles_timeout_from_another_failure(tmp_path):
    """mask.yml's and smoke_run.yml's rescue (roles/compare) read Ansible's own failed result: a task past its timeout keyword (as the
    deploy past verl_compare_timeout) and a step that fails otherwise, each in its words (the unit table test has the rest)."""
    play = tmp_path / "rescue.yml"
    steps = {"timeout": {"ansible.builtin.command": "sleep 10", "timeout": 3}, "other": {"ansible.builtin.fail": {"msg": "boom"}}}
    play.write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "tasks": [
        {"name": "Run %s" % name, "block": [dict(step, name="Step %s" % name)], "rescue": [{"ansible.builtin.debug": {
            "msg": "SAID {{ ansible_failed_result | verl.deploy.compare('rescued', ansible_failed_task.name | default(''), 60) }}"}}]}
        for name, step in steps.items()]}]))
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
    argv = [ANSIBLE_PLAYBOOK, str(play), "-i", "localhost,", "-c", "local", "-e", "ansible_python_interpreter=" + sys.executable]
    proc = subprocess.run(argv, cwd=REPO, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120, check=False)
    said = [line.split("SAID ", 1)[1].rstrip("'\"") for line in proc.stdout.splitlines() if "SAID " in line]
    assert proc.returncode == 0 and len(said) == 2, proc.stdout[-4000:]
    assert said[0].startswith("the deploy did not end within verl_compare_timeout=60 s. Fix: raise"), said
    assert said[1] == "Step other failed: boom", said
    assert "DEPRECATION" not in proc.stdout + proc.stderr  # timedout.frame (deprecated) is not read
