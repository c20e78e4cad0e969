"""The AWX job, end to end, without AWX: ansible-runner runs the playbooks of a fresh clone against this
scenario's node exactly as an AWX job does (tests/helpers/awx_job.py): the survey's answers as AWX sends them
(strings included), the SwanLab key as the credential injects it, AWX's awx_job_id.

Runs after the first three (pytest takes the files in name order) and reuses the scenario's cluster: a job without the
confirmation stops at once; one at a terminal nobody answers stops after verl_confirm_timeout; then
stop.yml and deploy.yml as jobs, and the training runs again."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import yaml

from sim_scenario import INVENTORY, REPO, SCENARIO, hosts, training_pids

sys.path.insert(0, str(REPO / "tests"))
from helpers.awx_job import awx_variables, run_job, survey_answers  # noqa: E402  pylint: disable=wrong-import-position

SETTINGS = yaml.safe_load((SCENARIO / "settings.yml").read_text())
CLUSTER = yaml.safe_load((REPO / "inventories/sim/group_vars/ray_cluster.yml").read_text())
KEY = SETTINGS["verl_swanlab_api_key"]


def answers(template, **more):
    """The survey filled in for this cluster (its paths, batch, NPUs, TP, image, algorithm, mask, trackers, SwanLab offline), as AWX sends it,
    plus, for deploy and render, the key the SwanLab credential injects."""
    filled = {}
    if template in ("deploy", "render"):
        filled = {name: str(CLUSTER[name]) for name in ("verl_model_path", "verl_train_file", "verl_test_file", "verl_ckpts_dir",
                                                        "verl_log_dir")}
        filled.update(mask=SETTINGS["mask"], verl_algorithm=SETTINGS["verl_algorithm"],
                      verl_image=os.environ["VERL_SIM_VERL_LOCAL_IMAGE"], verl_swanlab_enabled="true",
                      verl_swanlab_mode=SETTINGS["verl_swanlab_mode"], verl_train_batch_size=CLUSTER["verl_train_batch_size"],
                      # The scenario's node is an Atlas A3: its 16 chips, and a TP that fits them.
                      verl_npu_devices=SETTINGS["verl_npu_devices"], verl_train_tp=str(SETTINGS["verl_train_tp"]),
                      # As long as the scenario's other deploys: the training (like verl) ends after its last step.
                      verl_train_steps=SETTINGS["verl_train_steps"], verl_loggers=SETTINGS["verl_loggers"])
    values = survey_answers(template, **filled)
    if template in ("deploy", "render"):
        # The SwanLab credential (attached to these templates) and the job template's own extra vars.
        # The old log-prob pass's micro batch is the cluster's (no survey asks it): the running training was started with it.
        values.update(verl_swanlab_api_key=KEY, verl_swanlab_log_dir=SETTINGS["verl_swanlab_log_dir"],
                      verl_rollout_log_prob_micro_batch_size_per_gpu=SETTINGS["verl_rollout_log_prob_micro_batch_size_per_gpu"])
    values.update(more)
    return values


@pytest.fixture()
def inventory():
    """The scenario's inventory folder (its hosts and the simulated cluster's group_vars): the job's inventory/."""
    return Path(INVENTORY).parent


def assert_key_in_no_artifact(job):
    leaks = [str(path) for path in (job.data_dir / "artifacts").rglob("*") if path.is_file() and KEY in path.read_text(errors="replace")]
    assert not leaks, "the SwanLab key is in %s" % leaks


def test_a_job_without_confirmation_stops_at_once_and_changes_nothing(tmp_path, inventory):
    head = hosts("ray_head")[0]
    before = training_pids(head)
    job = run_job(tmp_path, "playbooks/deploy.yml", inventory, answers("deploy", **awx_variables()), timeout=600)
    assert job.status == "failed" and job.seconds < 30, job.describe()
    assert "verl_confirm is not true and this is an AWX job" in " ".join(job.stdout.split()), job.describe()
    assert set(job.stats["processed"]) == {"localhost"}, "no node may be contacted: %s" % job.stats
    assert training_pids(head) == before and len(before) == 1
    assert_key_in_no_artifact(job)


def test_a_question_nobody_answers_stops_after_its_bound(tmp_path, inventory):
    """Without awx_job_id, ansible-runner's pseudo-terminal looks like a person: the question is asked, and
    given up after verl_confirm_timeout seconds; the pre-check before it is read-only."""
    head = hosts("ray_head")[0]
    before = training_pids(head)
    job = run_job(tmp_path, "playbooks/deploy.yml", inventory, answers("deploy", verl_confirm_timeout=3), timeout=600)
    assert job.status == "failed", job.describe()
    flat = " ".join(job.stdout.split())
    assert "(3 s)" in flat and "Not confirmed (no answer within 3 s): nothing was changed" in flat, job.describe()
    # Only the controller may have changed (the first job of a fresh clone links it in as the collection).
    assert not {node: count for node, count in job.stats.get("changed", {}).items() if node != "localhost"}, job.stats
    assert training_pids(head) == before


def test_stop_then_deploy_as_awx_jobs(tmp_path, inventory):
    head = hosts("ray_head")[0]
    before = training_pids(head)
    stop = run_job(tmp_path, "playbooks/stop.yml", inventory, answers("stop", **awx_variables()), ident="stop", timeout=900)
    assert stop.status == "successful", stop.describe()
    assert training_pids(head) == []

    deploy = run_job(tmp_path, "playbooks/deploy.yml", inventory, answers("deploy", verl_confirm="true", **awx_variables()),
                     ident="deploy", timeout=1800)
    assert deploy.status == "successful", deploy.describe()
    after = training_pids(head)
    assert len(after) == 1 and after != before, "the job must start a new training"

    # The job's events end with where to look, and the same summary is the job's artifacts.
    where = [event for event in deploy.events if event.get("event_data", {}).get("task") == "Where to look"
             and event["event"] == "runner_on_ok"]
    assert where, deploy.describe()
    lines = where[-1]["event_data"]["res"]["msg"]
    assert any(line.startswith("Training log: /sim/logs/verl_qwen3_8b_") for line in lines), lines
    assert any(line.startswith("Ray dashboard: http://") for line in lines), lines
    assert any(line.startswith("SwanLab: offline") for line in lines), lines
    assert any(line.startswith("TensorBoard: ") for line in lines), lines
    assert "Image's verl: 0.9.1" in lines, lines
    # The head's count of the prompts (container stage), with the simulated image's real tokenizer.
    assert any(line.startswith("Prompts: /sim/data/train.parquet: 256 prompts, the longest ") for line in lines), lines
    summary = deploy.artifact_data["verl_deploy_summary"]
    assert summary["head"] == head and summary["ray_dashboard"].startswith("http://") and summary["swanlab"].startswith("offline")
    assert summary["image_verl"] == "0.9.1", summary
    assert (deploy.artifacts / "fact_cache").is_dir() or (stop.artifacts / "fact_cache").is_dir()
    for job in (stop, deploy):
        assert_key_in_no_artifact(job)
