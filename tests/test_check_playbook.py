"""playbooks/check.yml without a cluster: every node judged, read-only, no confirmation, a report and a verdict.

The nodes here: this machine over a local connection (it answers, and has no npu-smi: not ready, as a node without
the Ascend driver is) and 127.0.0.1 on a closed port (it does not answer). A ready verdict needs NPUs: the Molecule
scenarios are where check.yml meets the simulated cluster."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from helpers.awx_job import awx_variables, run_job, survey_answers

REPO = Path(__file__).resolve().parents[1]
ANSIBLE_PLAYBOOK = str(Path(sys.executable).with_name("ansible-playbook"))
PATHS = {"verl_model_path": "/models/Qwen3-8B", "verl_train_file": "/data/train.parquet",
         "verl_test_file": "/data/test.parquet", "verl_ckpts_dir": "/ckpt"}


def inventory(out):
    return {"all": {"vars": dict(PATHS, verl_output_dir=str(out)), "children": {
        "ray_head": {"hosts": {"node1": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}}},
        "ray_workers": {"hosts": {"node2": {"ansible_host": "127.0.0.1", "ansible_port": 9}}}}}}


def run(tmp_path, *args, env=None):
    hosts = tmp_path / "hosts.yml"
    hosts.write_text(yaml.safe_dump(inventory(tmp_path / "out")))
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0", **(env or {}))
    return subprocess.run([ANSIBLE_PLAYBOOK, "playbooks/check.yml", "-i", str(hosts), *args], cwd=REPO, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300, check=False)


def test_every_node_is_judged_without_confirmation_and_the_verdict_is_kept(tmp_path):
    proc = run(tmp_path, "-e", "mask=0000000")
    said = " ".join(proc.stdout.split())
    # A node that did not answer is not ready, as one that answered and is refused: rc 2 (Ansible's own would be 4).
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "verl_confirm is not true" not in said, "the check needs no confirmation"
    verdict = json.loads((tmp_path / "out" / "check.json").read_text())
    assert verdict["ready"] is False and list(verdict["nodes"]) == ["node1", "node2"]
    assert verdict["nodes"]["node1"]["state"] == "not ready" and "npu-smi" in verdict["nodes"]["node1"]["problem"]
    assert verdict["nodes"]["node2"]["state"] == "did not answer"
    assert verdict["lines"][0] == ("NOT READY: 0 of 2 node(s) ready to deploy to (1 not ready, 1 did not answer); "
                                   "nothing was changed on any node.")
    assert "node1 (head): NOT READY: npu-smi failed" in said and "node2: DID NOT ANSWER" in said
    # Each problem once, whole in check.json; npu-smi's with one fix; a data set that is not there is one problem (issue 60).
    problems = verdict["nodes"]["node1"]["problems"]
    assert [problem.count("Fix:") for problem in problems if problem.startswith("npu-smi failed")] == [1], problems
    assert not [problem for problem in problems if "cannot be read as parquet" in problem], problems
    recap = proc.stdout.rsplit("PLAY RECAP", 1)[-1]
    assert all(" changed=0 " in line for line in recap.splitlines() if line.startswith(("node1", "node2", "localhost"))), recap


def test_a_settings_mistake_is_refused_before_any_node(tmp_path):
    proc = run(tmp_path, "-e", "mask=10100x0")
    assert proc.returncode == 2 and "mask" in proc.stdout, proc.stdout
    assert "node1" not in proc.stdout.rsplit("PLAY RECAP", 1)[-1] and not (tmp_path / "out" / "check.json").exists()


def test_an_awx_check_job_needs_no_confirmation_and_returns_the_verdict(tmp_path):
    """The "verl check" template's job (ansible-runner, AWX's extra vars, no verl_confirm): it runs on every node
    and its artifacts hold the verdict, where a deploy job would stop at once (nobody can confirm)."""
    answers = survey_answers("check", **awx_variables())
    assert "verl_confirm" not in answers
    job = run_job(tmp_path, "playbooks/check.yml", inventory(tmp_path / "out"), answers, timeout=300)
    assert job.status == "failed", job.describe()
    assert "verl_confirm is not true" not in job.stdout
    verdict = job.artifact_data["verl_check"]
    assert verdict["ready"] is False and verdict["nodes"]["node2"]["state"] == "did not answer", verdict
    assert verdict == json.loads((tmp_path / "out" / "check.json").read_text())
    # AWX's own callback (ansible-runner's awx_display over the default one), not ansible.cfg's verl.deploy.report: the
    # whole stream, and the report is the job's last output before the recap.
    assert "the full log is" not in job.stdout
    tail = job.stdout.rsplit("TASK [Report]", 1)[-1].split("PLAY RECAP")[0]
    assert "verdict: " in tail and "TASK [" in tail and "Stop unless every node is ready" in tail, tail


def test_at_the_terminal_the_check_is_a_short_report_and_the_log_holds_the_rest(tmp_path):
    """ansible.cfg's console report (verl.deploy.report): a line per stage, the verdict once, the log file named."""
    proc = run(tmp_path, "-e", "mask=0000000", env={"ANSIBLE_STDOUT_CALLBACK": "verl.deploy.report",
                                                    "VERL_DEPLOY_LOG_DIR": str(tmp_path / "logs")})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert [line.split(":")[0] for line in lines if line.startswith("[")] == [
        "[0/3] Find the collection, check the inventory and the settings",
        "[1-2/3] Every node read, its settings checked with what it showed ...", "[3/3] The verdict"], lines
    assert sum("node2: DID NOT ANSWER" in line for line in lines) == 1, lines
    # Each problem once (the pre-check does not list what the verdict names), in at most two lines of 120 characters.
    assert sum("npu-smi failed" in line for line in lines) == 1, lines
    verdict = json.loads((tmp_path / "out" / "check.json").read_text())
    assert all(len(line) <= 120 for line in verdict["lines"]) and set(verdict["lines"]) <= set(lines), (verdict["lines"], lines)
    assert len(lines) <= 25, proc.stdout
    log = Path(lines[-1].split(" Full log: ")[-1])
    assert "PLAY RECAP" in log.read_text() and "fatal: [node2]: UNREACHABLE!" in log.read_text()
