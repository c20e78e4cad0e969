# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""Drive verl.deploy.node_status's main(): status.yml's one call per node, against a `docker` stand-in that answers
`container inspect` as the engine does, the control script's status step with a recorded answer, and the failure scan's
reader run with this Python on a folder tree laid out as a training container's (tests/unit/plugins/modules/
test_failure_scan.py's), and npu-smi from a real capture. Every call the stand-in gets is logged: one inspect, one status
step, one reader at most, npu-smi once."""
from __future__ import annotations

import json
import shlex
import sys

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.verl.deploy.plugins.modules import node_status

from .test_failure_scan import NPU_OOM, fake_npu_smi, tree

INFO = "007_info_910B3_8cards_v24.1.rc2_procs_emptyname_mixed.txt"


def answer(**facts):
    return json.dumps({"said": [], "answer": {key: str(value) for key, value in facts.items()}})


HEAD = answer(role="head", raylet="running", current_ip="10.0.0.1", master_ip="10.0.0.1", npus=8, listed="10.0.0.1=8,10.0.0.2=8",
              address_problem="", workdir="/verl", verl="0.8.0", state="crashed", pid="", exit_code="1", started_at=1700000000,
              now=1700000100)
WORKER = answer(role="worker", raylet="running", current_ip="10.0.0.2", master_ip="10.0.0.1", npus=8, address_problem="",
                workdir="/verl", verl="0.8.0", listed="LISTED")


def fake_docker(tmp_path, state, status_answer):
    """`docker` as the engine answers it for the container `verl` in `state` (running, exited, or absent)."""
    inspect = json.dumps([{"Id": "c0ffee", "State": {"Running": state == "running", "Status": state, "ExitCode": 137}}])
    script = tmp_path / "docker"
    script.write_text(
        '#!/bin/bash\necho "$*" >>%(log)s\n'
        'if [ "$1 $2" = "container inspect" ]; then\n'
        '  [ %(state)s != absent ] || { echo "Error: No such container: $3" >&2; exit 1; }\n'
        '  echo %(inspect)s; exit 0\nfi\n'
        'if [ "$1 $2 $3 $4" = "exec verl bash /verl/verl_control.sh" ]; then\n'
        '  [ "$5" = status ] || exit 2\n  printf "%%s\\n" %(answer)s | sed "s/LISTED/$6/"; exit 0\nfi\n'
        '[ "$1 $2 $3" = "exec -i verl" ] || exit 3\nshift 3; HOME=%(home)s exec %(python)s "${@:2}"\n'
        % {"log": shlex.quote(str(tmp_path / "calls.log")), "state": state, "inspect": shlex.quote(inspect),
           "answer": shlex.quote(status_answer), "home": shlex.quote(str(tmp_path / "root")), "python": shlex.quote(sys.executable)})
    script.chmod(0o755)
    return tmp_path


def run(capsys, monkeypatch, folder, **args):
    monkeypatch.setenv("PATH", "%s:/usr/bin:/bin" % folder)
    with patch_module_args(dict({"container": "verl", "workdir": "/verl", "npu_smi_path": fake_npu_smi(folder, INFO)}, **args)):
        with pytest.raises(SystemExit):
            node_status.main()
    result = json.loads(capsys.readouterr().out)
    return result, (folder / "calls.log").read_text().splitlines() if (folder / "calls.log").exists() else []


def test_the_head_of_a_crashed_training_is_read_with_its_error_lines_in_one_call(tmp_path, capsys, monkeypatch):
    ray = tree(tmp_path)
    result, calls = run(capsys, monkeypatch, fake_docker(tmp_path, "running", HEAD), ray_temp_dir=str(ray), sent_at=1.0)
    assert result["container"] == {"exists": True, "running": True, "id": "c0ffee", "line": "running"}
    assert result["status"]["training"]["state"] == "crashed" and result["status"]["facts"]["in_ray"] == "yes"
    assert result["npu"]["failed"] is False and result["npu"]["npu_ids"]
    lines = [line for item in result["failure_scan"]["files"] for _index, line in item["lines"]]
    assert NPU_OOM in lines and result["clock_offset"] > 1000
    assert [call.split(" ")[:3] for call in calls] == [["container", "inspect", "verl"], ["exec", "verl", "bash"],
                                                       ["exec", "-i", "verl"]]
    # the head lists Ray's members itself: its status step is given no list
    assert calls[1].endswith("verl_control.sh status  20")


def test_a_worker_is_given_the_heads_members_and_reads_no_error_lines_unless_asked(tmp_path, capsys, monkeypatch):
    folder = fake_docker(tmp_path, "running", WORKER)
    result, calls = run(capsys, monkeypatch, folder, members=["10.0.0.1=8", "10.0.0.2=8"])
    assert result["status"]["facts"]["in_ray"] == "yes" and result["failure_scan"] is None and result["clock_offset"] is None
    assert len(calls) == 2 and calls[1].endswith("status 10.0.0.1=8,10.0.0.2=8 20")
    (tmp_path / "calls.log").unlink()
    result, calls = run(capsys, monkeypatch, folder, members=["10.0.0.1=8"], scan_since=0, ray_temp_dir=str(tree(tmp_path)))
    assert result["status"]["facts"]["in_ray"] == "no" and len(calls) == 3
    assert any(NPU_OOM in line for item in result["failure_scan"]["files"] for _index, line in item["lines"])


@pytest.mark.parametrize("state, line", [("absent", "absent"), ("exited", "exited (exit code 137)")])
def test_a_container_that_does_not_run_is_named_and_the_npus_still_read(tmp_path, capsys, monkeypatch, state, line):
    result, calls = run(capsys, monkeypatch, fake_docker(tmp_path, state, HEAD))
    assert result["container"]["line"] == line and result["container"]["running"] is False
    assert result["status"] == {"skipped": True} and result["failure_scan"] is None
    assert result["npu"]["failed"] is False and calls == ["container inspect verl"]


def test_a_worker_without_the_heads_list_is_in_ray_unknown_not_out(tmp_path, capsys, monkeypatch):
    """The head did not answer, or its control script is another release's (no list): the worker's in_ray is unknown."""
    result, calls = run(capsys, monkeypatch, fake_docker(tmp_path, "running", WORKER))
    assert result["status"]["facts"]["in_ray"] == "unknown" and result["failure_scan"] is None
    assert calls[1].endswith("status  20")
