# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""Drive verl.deploy.failure_scan's main() and its reader script on a folder tree laid out as a training container's.

The `docker` stand-in runs `docker exec -i NAME python3 - ARGS` as the container would: the reader script from stdin,
here with this Python and HOME in the tree (no Docker). The lines are real ones (see test_failures.py for their
reports); the diagnosis over the answer is the one status makes.
"""
from __future__ import annotations

import json
import os
import shlex
import sys

from pathlib import Path

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.verl.deploy.plugins.module_utils import _failures as fl
from ansible_collections.verl.deploy.plugins.module_utils import _failure_scan as failure_scan_utils
from ansible_collections.verl.deploy.plugins.modules import failure_scan

NPU_OOM = ("RuntimeError: NPU out of memory. Tried to allocate 22.00 MiB (NPU 0; 60.97 GiB total capacity; 10.24 GiB "
           "already allocated; 10.24 GiB current active; 19.52 MiB free; 10.65 GiB reserved in total by PyTorch)")
HCCL_PLOG = ("[ERROR] HCCL(2717288,python3):2025-07-23-03:49:57.177.194 [hccl_socket_manager.cc:778] [2734049][Wait]"
             "[LinkEstablish]wait socket establish timeout, role[1] rank[12] timeout[120]")
RAYLET_OOM = ("[2025-04-02 15:02:00,117 E 135782 135782] (raylet) node_manager.cc:3069: 1 Workers (tasks / actors) killed "
              "due to memory pressure (OOM), 0 Workers crashed due to other reasons at node (ID: "
              "351e406b196f66bb45eaad02a3b8b4725babfa8cc12949432f7ad7d8, IP: 10.95.143.76) over the last time period.")


def fake_docker(tmp_path, python):
    script = tmp_path / "docker"
    script.write_text('#!/bin/bash\n[ "$1 $2 $3" = "exec -i verl" ] || { echo "Error: No such container: $3" >&2; exit 1; }\n'
                      'shift 3; HOME=%s exec %s "${@:2}"\n' % (shlex.quote(str(tmp_path / "root")), shlex.quote(python)))
    script.chmod(0o755)
    return script


def tree(tmp_path):
    logs = tmp_path / "ray" / "session_2025" / "logs"
    logs.mkdir(parents=True)
    (tmp_path / "ray" / "session_latest").symlink_to(tmp_path / "ray" / "session_2025")
    (logs / "worker-aa-01000000-4100.err").write_text(
        "x" * 5000 + "\n:actor_name:WorkerDict\nTraceback (most recent call last):\n"
        '  File "/verl/verl/workers/megatron_workers.py", line 612, in update_actor\n' + NPU_OOM + "\n")
    (logs / "raylet.out").write_text("[2025-04-02 15:01:59,000 I 135782 135782] (raylet) main.cc:1: started\n"
                                     + RAYLET_OOM + "\n")
    (logs / "worker-bb-01000000-4101.out").write_text(":actor_name:WorkerDict\nstep:1 - actor/pg_loss:0.001\n")
    plog = tmp_path / "root" / "ascend" / "log" / "debug" / "plog"
    plog.mkdir(parents=True)
    (plog / "plog-2717288_20250723034757.log").write_text("[INFO] HCCL(2717288,python3):2025-07-23-03:47:57.070.400 "
                                                          "[init] ok\n" + HCCL_PLOG + "\n")
    return tmp_path / "ray"


FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "npu-smi"


def fake_npu_smi(tmp_path, fixture):
    script = tmp_path / "npu-smi"
    script.write_text('#!/bin/bash\n[ "$1" = info ] && exec cat %s\n' % shlex.quote(str(FIXTURES / fixture)))
    script.chmod(0o755)
    return str(script)


def run_module(capsys, args):
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            failure_scan.main()
    return json.loads(capsys.readouterr().out)


def test_the_reader_returns_the_matching_lines_of_ray_and_plog_bounded(tmp_path, capsys):
    ray = tree(tmp_path)
    result = run_module(capsys, {"container": "verl", "docker": str(fake_docker(tmp_path, sys.executable)),
                                 "ray_temp_dir": str(ray), "kernel": False, "max_kb": 1,
                                 "npu_smi_path": fake_npu_smi(tmp_path, "007_info_910B3_8cards_v24.1.rc2_procs_emptyname_mixed.txt")})
    by_name = {item["path"].rsplit("/", 1)[-1]: item for item in result["files"]}
    # npu-smi says OK on every chip: no line of its own
    assert sorted(by_name) == ["plog-2717288_20250723034757.log", "raylet.out", "worker-aa-01000000-4100.err"]
    assert by_name["worker-aa-01000000-4100.err"]["lines"][-1][1] == NPU_OOM
    assert by_name["worker-aa-01000000-4100.err"]["size"] > 1024  # read from its last KB only
    assert [line for _index, line in by_name["raylet.out"]["lines"]] == [RAYLET_OOM]
    assert [line for _index, line in by_name["plog-2717288_20250723034757.log"]["lines"]] == [HCCL_PLOG]
    assert result["clock"]["now"] > 0 and "utc_offset" in result["clock"] and result["missing"] == []
    lines, stats = fl.diagnose([], {"w1": result})
    assert stats["node"] == "w1" and stats["signature"] == "host_oom_ray" and len(lines) == 3


def test_an_absent_container_is_missing_not_a_failure(tmp_path, capsys):
    result = run_module(capsys, {"container": "gone", "docker": str(fake_docker(tmp_path, sys.executable)),
                                 "kernel": False, "npu_smi_path": ""})
    assert result["files"] == [] and result["missing"] == [{"path": "gone", "reason": "gone: Error: No such container: gone"}], result


def test_a_container_that_answers_before_it_reads_its_stdin_is_an_answer(tmp_path, capsys):
    # docker exec of a missing container exits before the reader reaches its stdin: a closed pipe, not a module failure.
    docker = tmp_path / "docker"
    docker.write_text('#!/bin/bash\nexec 0<&-\necho "Error: No such container: $3" >&2\nexit 1\n')
    docker.chmod(0o755)
    result = run_module(capsys, {"container": "gone", "docker": str(docker), "kernel": False, "npu_smi_path": "", "timeout": 5})
    assert result["missing"] == [{"path": "gone", "reason": "gone: Error: No such container: gone"}], result


def test_a_reader_that_does_not_answer_in_time_is_missing(tmp_path, capsys):
    docker = tmp_path / "docker"
    docker.write_text("#!/bin/bash\nexec sleep 30\n")
    docker.chmod(0o755)
    result = run_module(capsys, {"container": "slow", "docker": str(docker), "kernel": False, "npu_smi_path": "", "timeout": 1})
    assert result["missing"] == [{"path": "slow", "reason": "slow: no answer within 1 s"}], result


def test_the_kernels_oom_kill_is_kept_and_a_refused_dmesg_says_why():
    out = ("[ 7248.743169] oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom\n"
           "[ 7248.743279] Out of memory: Killed process 16832 (ray::_shuffle_m) total-vm:33905928kB, anon-rss:6481792kB\n")
    found, miss = failure_scan_utils.kernel_lines(0, out, "", 200)
    assert miss is None and [index for index, _line in found["lines"]] == [1]
    found, miss = failure_scan_utils.kernel_lines(1, "", "dmesg: read kernel buffer failed: Operation not permitted\n", 200)
    assert found is None and miss["reason"].startswith("dmesg: read kernel buffer failed: Operation not permitted")


def test_files_of_an_earlier_run_are_left_out(tmp_path, capsys):
    ray = tree(tmp_path)
    old = ray / "session_latest" / "logs" / "raylet.out"
    os.utime(old, (1_000_000_000, 1_000_000_000))
    result = run_module(capsys, {"container": "verl", "docker": str(fake_docker(tmp_path, sys.executable)),
                                 "ray_temp_dir": str(ray), "kernel": False, "npu_smi_path": "", "since": 1_500_000_000})
    assert "raylet.out" not in {item["path"].rsplit("/", 1)[-1] for item in result["files"]}
    assert fl.diagnose([], {"w1": result})[1]["signature"] == "hccl_socket_timeout"  # the plog of 2025, before the .err


def test_a_container_named_like_a_docker_option_is_refused_before_anything_runs(tmp_path, capsys):
    result = run_module(capsys, {"container": "--privileged", "docker": str(tmp_path / "no-docker-is-run"), "kernel": False, "npu_smi_path": ""})
    assert result["failed"] and result["msg"].startswith("container='--privileged' is not a container's name"), result


# npu-smi's Health column: real tables (tests/fixtures/npu-smi/INDEX.md) read healthy; a chip whose health is one of the
# values npu-smi documents besides OK (Warning, Alarm, Critical: the health vllm-ascend#11171 shows of a card that lost its
# heartbeat) is the npu_health row's line, and so is vllm-ascend#2698's dcmi error.
HEALTHY_TABLES = ["001_info_910ProB-as-910B_8cards_v24.1.0_noproc.txt", "005_info_A3_Ascend910_16chips_v25.2.0_busy_procs_emptyname.txt",
                  "007_info_910B3_8cards_v24.1.rc2_procs_emptyname_mixed.txt", "018_info_Ascend950DT_8cards_A5_layout_noheader_fixture.txt"]
TABLE_007 = "007_info_910B3_8cards_v24.1.rc2_procs_emptyname_mixed.txt"


def _health(fixture, rc=0, replace=None):
    text = (FIXTURES / fixture).read_text()
    if replace:
        text = replace(text)
    return failure_scan_utils.npu_health_lines(rc, text, "", 1_700_000_000.0)


def _alarm_on_npu(npu, value):
    """007's table with NPU `npu`'s Health cell set to `value` (the cell keeps its width)."""
    def edit(text):
        lines = text.splitlines()
        row = next(index for index, line in enumerate(lines) if line.startswith("| %d     910B3" % npu))
        lines[row] = lines[row].replace("| OK            |", "| %-13s |" % value)
        return "\n".join(lines) + "\n"
    return edit


@pytest.mark.parametrize("fixture", HEALTHY_TABLES)
def test_a_healthy_nodes_npu_smi_adds_no_line(fixture):
    assert _health(fixture) == (None, None)


@pytest.mark.parametrize("value", ["Warning", "Alarm", "Critical"])
def test_a_chip_whose_health_is_not_ok_is_the_npu_health_row(value):
    found, miss = _health(TABLE_007, replace=_alarm_on_npu(3, value))
    assert miss is None and [line for _index, line in found["lines"]] == ["NPU 3 (910B3) Health: %s" % value]
    lines, stats = fl.diagnose([], {"w1": {"clock": {}, "files": [found]}})
    assert stats["signature"] == "npu_health" and stats["node"] == "w1" and "NPU 3 (910B3) Health: %s" % value in lines[0]


def test_a_dcmi_error_is_the_npu_health_row_and_no_npu_smi_is_missing():
    found, miss = _health("019_error_dcmi_module_initialize_failed_-8005_container.txt", rc=255)
    assert miss is None and found["lines"] == [[0, "dcmi module initialize failed. ret is -8005"]]
    assert fl.classify(found["lines"][0][1])["key"] == "npu_health"
    found, miss = failure_scan_utils.npu_health_lines(127, "", "npu-smi: command not found", 0.0)
    assert found is None and "rc=127" in miss["reason"]


def test_a_log_error_comes_before_the_health_read_after_it(tmp_path, capsys):
    """The health is read now, after the failure: the worker's own error stays the first failure."""
    ray = tree(tmp_path)
    smi = tmp_path / "npu-smi-alarm"
    smi.write_text(_alarm_on_npu(5, "Alarm")((FIXTURES / TABLE_007).read_text()))
    script = tmp_path / "npu-smi"
    script.write_text("#!/bin/bash\nexec cat %s\n" % shlex.quote(str(smi)))
    script.chmod(0o755)
    result = run_module(capsys, {"container": "verl", "docker": str(fake_docker(tmp_path, sys.executable)),
                                 "ray_temp_dir": str(ray), "kernel": False, "npu_smi_path": str(script)})
    assert [item["lines"] for item in result["files"] if item["path"] == "npu-smi info"] == [[[5, "NPU 5 (910B3) Health: Alarm"]]]
    evidence = fl.diagnose([], {"w1": result})[1]
    assert evidence["signature"] == "host_oom_ray" and any("Health: Alarm" in line for line in evidence["evidence"])
