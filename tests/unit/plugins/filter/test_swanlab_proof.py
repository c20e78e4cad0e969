# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The SwanLab proof's two filters as the role's tasks call them (Ansible's Templar): the request on the head only, and the
verdict's problems and change (the decisions themselves: tests/unit/plugins/module_utils/test_swanlab_proof.py)."""
from __future__ import annotations

import json

LAUNCH = {"swanlab_enabled": True, "is_head": True, "project_name": "p", "container_name": "verl",
          "swanlab": {"host": "http://10.0.0.5:8000", "mode": "cloud", "workspace": "w", "log_dir": "/l",
                      "api_key_file": "/root/.swanlab/verl_deploy_api_key", "needs_key": True}}


def output(**proof):
    return {"proof": json.dumps(proof)}


REFUSED = output(result="refused", sdk="0.10.3", error="RuntimeError: Failed to start run: API Request Failed: [Forbidden] x | "
                 "Trace ID: t | POST http://10.0.0.5:8000/api/projects/w")


def test_the_filters_as_the_role_calls_them(render):
    worker = dict(LAUNCH, is_head=False)
    asked, on_worker, refused, created = render([
        "launch | verl.deploy.swanlab_proof_request(true)",
        "worker | verl.deploy.swanlab_proof_request(false)",
        "out | verl.deploy.swanlab_proof(launch, 1, '')",
        "(accepted | verl.deploy.swanlab_proof(launch)).created",
    ], launch=LAUNCH, worker=worker, out=REFUSED, accepted=output(result="accepted", sdk="0.10.3"))
    assert json.loads(asked)["force"] is True and json.loads(asked)["record"] == "/root/.swanlab/verl_deploy_run_check.json"
    assert on_worker == ""
    assert len(refused["problems"]) == 1 and "[Forbidden] x" in refused["problems"][0] and refused["created"] is False
    assert created is True
