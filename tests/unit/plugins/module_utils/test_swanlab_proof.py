# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The SwanLab stage's proof that the server accepts a run: which host makes it, what it asks, and the verdict on the
SDK's own words (swanlab 0.10.3 as it answered the stand-in server; older SDKs as users reported them)."""
from __future__ import annotations

import json

import pytest

from ansible_collections.verl.deploy.plugins.filter.swanlab_proof import FilterModule as VerdictFilter
from ansible_collections.verl.deploy.plugins.filter.swanlab_proof_request import FilterModule as RequestFilter
from ansible_collections.verl.deploy.plugins.module_utils import _swanlab_proof as sp
from ansible_collections.verl.deploy.plugins.module_utils._control_step import read_answer

HOST = "http://10.0.0.5:8000"
SWANLAB = {"host": HOST, "mode": "cloud", "workspace": "TrainingMaster", "log_dir": "/mnt/swanlog",
           "api_key_file": "/root/.swanlab/verl_deploy_api_key", "needs_key": True}
LAUNCH = {"swanlab_enabled": True, "swanlab": SWANLAB, "is_head": True, "project_name": "verl_dapo_qwen3_8b",
          "container_name": "verl"}

# swanlab 0.10.3's words, as it answered tests/sim/stand_in_swanlab_server.py (tests/sim/test_swanlab_stand_in.py):
# its ApiError wrapped by swanlab.init.
FORBIDDEN = ("RuntimeError: Failed to start run: API Request Failed: [Forbidden] no permission to create a project in "
             "workspace TrainingMaster | Trace ID: sim-post | POST http://10.0.0.5:8000/api/projects/TrainingMaster")
OLD_SERVER = ("RuntimeError: Failed to start run: API Request Failed: [404] Not Found | Trace ID: sim-post | POST "
              "http://10.0.0.5:8000/api/project/TrainingMaster/verl_dapo_qwen3_8b/experiment")
NOT_FINISHED = ("Failed to report run finish: request:651 -> send:132 -> ApiError: API Request Failed: [Forbidden] nope | "
                "Trace ID: sim-put | PUT http://10.0.0.5:8000/api/project/TrainingMaster/p/runs/x3dgnlft/state")


def launch(**changes):
    swanlab = dict(SWANLAB, **changes.pop("swanlab", {}))
    return dict(LAUNCH, swanlab=swanlab, **changes)


def document(**answer):
    """swanlab_check_run.py's stdout: one document whose proof is JSON text (the SDK's own words went to stderr)."""
    return json.dumps({"said": [], "answer": {"proof": json.dumps(answer, sort_keys=True), "changed": "false"}}) + "\n"


def output(**answer):
    """The proof's answer as verl.deploy.node_step returns it read from that document."""
    return read_answer(document(**answer))["answer"]


@pytest.mark.parametrize("changes, says", [
    ({}, ""),
    ({"is_head": False}, "once, from the Ray head"),
    ({"swanlab": {"mode": "offline", "needs_key": False}}, "mode offline needs no server"),
    ({"swanlab": {"mode": "local", "needs_key": False}}, "mode local needs no server"),
    ({"swanlab": {"mode": "disabled", "needs_key": False}}, "mode disabled needs no server"),
    ({"swanlab_enabled": False}, "SwanLab is off"),
])
def test_only_the_head_proves_a_run_and_only_in_a_login_mode(changes, says):
    reason = sp.skip_reason(launch(**changes))
    assert (says in reason) if says else reason == ""
    asked = sp.request(launch(**changes), key_changed=True)
    assert (asked == "") == bool(says)


def test_the_request_is_the_trainings_run_without_the_key():
    asked = json.loads(RequestFilter().filters()["swanlab_proof_request"](LAUNCH, False))
    assert asked == {"host": HOST, "workspace": "TrainingMaster", "project": "verl_dapo_qwen3_8b", "mode": "cloud",
                     "experiment": "verl-deploy-check", "description": sp.DESCRIPTION,
                     "record": "/root/.swanlab/verl_deploy_run_check.json", "force": False}
    assert json.loads(sp.request(LAUNCH, key_changed=True))["force"] is True


@pytest.mark.parametrize("text, expected", [
    (document(result="accepted", sdk="0.10.3", url="u"), {"result": "accepted", "sdk": "0.10.3", "url": "u"}),
    # An error's text stays in its value: a line break, U+2028 or a record separator forges no other answer.
    (document(result="refused", error="x\nproof={\"result\": \"accepted\"}\u2028\x1eproof=accepted"),
     {"result": "refused", "error": "x\nproof={\"result\": \"accepted\"}\u2028\x1eproof=accepted"}),
    # Anything but the one document is no answer: an older script's proof= line, two documents, text.
    ('proof={"result": "accepted"}\n', None), (document(result="accepted") + document(result="skipped"), None),
    ("swanlab: something\n", None), ("", None), (None, None),
    (document(result="maybe"), None), (json.dumps({"said": [], "answer": {"proof": "{not json"}}), None),
])
def test_the_answer_is_the_documents_proof(text, expected):
    """As the role reads it: node_step reads the one document, the verdict its proof."""
    assert sp.proof_of(read_answer(text)["answer"]) == expected


@pytest.mark.parametrize("error, kind", [
    (FORBIDDEN, "forbidden"),
    (OLD_SERVER, "protocol"),
    (NOT_FINISHED, "forbidden"),
    # swanlab 0.10.3's own words for a backend without the run's createdAt (core_python/api/experiment.py).
    ("RuntimeError: Failed to start run: Backend did not return createdAt for experiment abc; please upgrade swanlab-server",
     "protocol"),
    # SDK 0.5.6 against a self-hosted v1.1 server (SwanHubX/self-hosted#13): fixed with the SDK the server supports.
    ("swanlab api error, status code: 404, reason: Not Found", "protocol"),
    # SDK 0.7.4 against a self-hosted v2.5.0 server (SwanHubX/self-hosted#85).
    ("swanlab api error ('Trace id: mj6i94411qfkqnzu', 'POST http://xxx/api/resources/presigned/put', '404 Not Found')",
     "protocol"),
    # A second swanlab.init after finish, the session gone (SwanHubX/SwanLab#1715); the server's 401 body.
    ("[HTTP] POST https://api.swanlab.cn/api/project/u/p/experiment -> 401 (3ms) trace:x | [ERR] code=Unauthorized "
     "message=未经授权", "unauthorized"),
    ("swanlab api error ('Trace id: mh0g73vh1nlvdo4r', 'POST https://api.swanlab.cn/api/house/metrics', "
     "'401 Authorization Required')", "unauthorized"),
    # SwanHubX/SwanLab#1123: the server failing on a project request.
    ("requests.exceptions.RetryError: HTTPSConnectionPool(host='api.swanlab.cn', port=443): Max retries exceeded with url: "
     "/api/project/*/* (Caused by ResponseError('too many 500 error responses'))", "server_error"),
    ("requests.exceptions.ConnectionError: HTTPConnectionPool(host='10.0.0.5', port=8000): Max retries exceeded with url: "
     "/api/projects/x (Caused by NewConnectionError('Failed to establish a new connection: [Errno 111] Connection refused'))",
     "unreachable"),
    ("ImportError: No module named 'swanlab'", "no_sdk"),
    # A local file the SDK cannot write is not the server's refusal.
    ("PermissionError: [Errno 13] Permission denied: '/root/.swanlab/x'", "other"),
    ("ValueError: something else", "other"),
])
def test_the_kind_of_a_refusal_is_read_from_the_sdks_words(error, kind):
    assert sp.kind_of(error) == kind


def test_a_refused_run_is_a_problem_with_the_sdks_error_and_the_fix():
    result = VerdictFilter().filters()["swanlab_proof"](output(result="refused", sdk="0.10.3", error=FORBIDDEN), LAUNCH, 1)
    assert result["warnings"] == [] and result["notes"] == [] and result["created"] is False
    [problem] = result["problems"]
    assert problem.startswith("The SwanLab server accepted the login but refused a run (workspace TrainingMaster, project "
                              "verl_dapo_qwen3_8b on http://10.0.0.5:8000, swanlab 0.10.3)")
    assert FORBIDDEN in problem
    assert "Fix: give verl_swanlab_workspace a workspace the key's user may create projects and runs in" in problem


def test_a_server_that_does_not_speak_the_sdks_protocol_is_told_to_pin_the_sdk():
    [problem] = sp.verdict(output(result="refused", sdk="0.10.3", error=OLD_SERVER), LAUNCH, 1)["problems"]
    assert OLD_SERVER in problem
    assert "Pin verl_swanlab_package to the SDK your server's release supports" in problem
    assert "docker exec verl python3 -m pip install 'swanlab==<version>'" in problem and "or upgrade the server" in problem


def test_no_answer_is_a_problem_that_quotes_what_the_proof_said():
    result = sp.verdict({}, LAUNCH, 1, "ModuleNotFoundError: No module named 'swanlab'", ["Traceback (most recent call last):"])
    [problem] = result["problems"]
    assert "gave no answer (rc 1): ModuleNotFoundError: No module named 'swanlab'" in problem
    assert "install swanlab in the container" in problem


def test_an_accepted_run_is_a_note_naming_the_run_to_delete():
    result = sp.verdict(output(result="accepted", sdk="0.10.3", url="http://10.0.0.5:8000/@u/p/runs/r1",
                               proven_at="2026-12-03T10:00:00Z"), LAUNCH)
    assert result["problems"] == [] and result["warnings"] == [] and result["created"] is True
    assert result["notes"] == ["The SwanLab server accepted a run as the training will start it (workspace TrainingMaster, project "
                               "verl_dapo_qwen3_8b on http://10.0.0.5:8000, swanlab 0.10.3): the run 'verl-deploy-check' "
                               "(http://10.0.0.5:8000/@u/p/runs/r1) was created and finished to prove it; you may delete it."]
    assert result["summary"] == ("a run proven at 2026-12-03T10:00:00Z: 'verl-deploy-check' (http://10.0.0.5:8000/@u/p/runs/r1), "
                                 "created and finished by the deploy")


def test_an_unchanged_rerun_creates_no_run_and_says_when_it_was_proven():
    result = sp.verdict(output(result="skipped", sdk="0.10.3", proven_at="2026-12-03T10:00:00Z", url=""), LAUNCH)
    assert result["problems"] == [] and result["created"] is False
    assert "accepted a run at 2026-12-03T10:00:00Z" in result["notes"][0] and "no new run this time" in result["notes"][0]


def test_a_run_whose_end_the_server_did_not_take_is_a_warning():
    result = sp.verdict(output(result="unfinished", sdk="0.10.3", error=NOT_FINISHED, url="u"), LAUNCH)
    assert result["problems"] == [] and result["created"] is True
    [warning] = result["warnings"]
    assert NOT_FINISHED in warning and "stays 'running' there" in warning


@pytest.mark.parametrize("changes", [{"is_head": False}, {"swanlab": {"mode": "offline", "needs_key": False}}])
def test_a_host_without_a_proof_says_why_and_has_no_problem(changes):
    result = sp.verdict({}, launch(**changes))
    assert result["problems"] == result["warnings"] == result["notes"] == [] and result["summary"]
