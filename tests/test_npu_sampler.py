"""The NPU sampler (roles/training/files/npu_sampler.py) as it is installed: beside the collection's npu-smi parser and
verl_control.env, run against a stand-in `npu-smi` on PATH printing real captures, and a stand-in /proc (a raylet, the
training's processes). Its TensorBoard file is read back here by the TFRecord framing and the Event proto's field numbers
(tensorboard/compat/proto/event.proto, summary.proto) with a CRC-32C of the test's own."""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from ansible_collections.verl.deploy.plugins.module_utils._npu_smi import parse_info
from helpers import tfevents

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures" / "npu-smi"
SAMPLER = REPO / "roles" / "training" / "files" / "npu_sampler.py"
PARSER = REPO / "plugins" / "module_utils" / "_npu_smi.py"
A2_BUSY = "007_info_910B3_8cards_v24.1.rc2_procs_emptyname_mixed.txt"
A2_IDLE = "001_info_910ProB-as-910B_8cards_v24.1.0_noproc.txt"
A3_BUSY = "005_info_A3_Ascend910_16chips_v25.2.0_busy_procs_emptyname.txt"
ERROR = "019_error_dcmi_module_initialize_failed_-8005_container.txt"


def installed(folder):
    """The sampler as install.yml puts it in verl_workdir, imported from there."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(SAMPLER, folder / "npu_sampler.py")
    shutil.copy(PARSER, folder / "_npu_smi.py")
    spec = importlib.util.spec_from_file_location("npu_sampler_%d" % id(folder), folder / "npu_sampler.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(name="sampler")
def _sampler(tmp_path):
    return installed(tmp_path / "workdir")


def capture(name):
    return (FIXTURES / name).read_text()


# --- Reading TensorBoard's file back

def read_events(path):
    """[(wall_time, step, {tag: value})] of an event file, every record's CRCs checked; the first must be the version."""
    events = []
    for body in tfevents.records(path.read_bytes()):
        event = tfevents.fields(body)
        wall = struct.unpack("<d", event[1][0])[0]
        if 3 in event:
            assert not events and event[3] == [b"brain.Event:2"]
            events.append((wall, None, {}))
            continue
        events.append((wall, event[2][0], tfevents.scalars(event[5][0])))
    return events


def test_the_reference_crc_is_crc32c():
    assert tfevents.crc32c(b"123456789") == 0xE3069283  # the check value of CRC-32C (Castagnoli)


def test_crc32c_is_the_reference(sampler):
    for data in (b"", b"123456789", bytes(range(256)) * 3):
        assert sampler.crc32c(data) == tfevents.crc32c(data) and sampler.masked_crc(data) == tfevents.masked(data)


# --- What a sample holds

def test_a_sample_of_an_a2_node_has_every_npu(sampler):
    line = sampler.record("node1", 1700000000.7, 30, parse_info(capture(A2_BUSY)))
    assert line["time"] == 1700000000 and line["node"] == "node1" and line["every"] == 30 and line["processes"] == 6
    assert [entry["id"] for entry in line["npus"]] == [str(n) for n in range(8)]
    assert line["npus"][0] == {"id": "0", "hbm_used_mb": 56363, "hbm_total_mb": 65536, "aicore_pct": 0, "temp_c": 43,
                               "health": "OK", "power_w": 100.2}
    # One line of a 16-chip node stays far under what status reads of a line (8,000 bytes).
    big = sampler.record("node-with-a-long-name", 1700000000, 30, parse_info(capture(A3_BUSY)))
    assert len(json.dumps(big, sort_keys=True)) < 3000


def test_an_a3_card_gives_one_entry_per_chip_and_its_power_once(sampler):
    entries = sampler.chip_entries(parse_info(capture(A3_BUSY)))
    assert [entry["id"] for entry in entries[:4]] == ["0-0", "0-1", "1-0", "1-1"]
    assert entries[0]["power_w"] == 211.3 and "power_w" not in entries[1]
    assert entries[1]["hbm_used_mb"] == 61625 and entries[1]["temp_c"] == 43 and entries[8]["aicore_pct"] == 8


@pytest.mark.parametrize("entry, expected", [
    ({"id": "3", "hbm_used_mb": 2048, "hbm_total_mb": 65536, "aicore_pct": 37, "temp_c": 45, "health": "OK", "power_w": 95.5},
     {"hbm_used_gb": 2.0, "aicore_pct": 37.0, "temp_c": 45.0, "power_w": 95.5, "health_ok": 1.0}),
    ({"id": "1-1", "hbm_used_mb": 512, "aicore_pct": 0, "health": "Alarm"}, {"hbm_used_gb": 0.5, "aicore_pct": 0.0, "health_ok": 0.0}),
    ({"id": "4"}, {}),
])
def test_the_scalars_of_a_chip(sampler, entry, expected):
    assert sampler.scalars("node2", entry) == {"npu/node2/%s/%s" % (entry["id"], name): value for name, value in expected.items()}


def test_the_samples_file_is_cut_past_its_bound_and_one_old_file_kept(sampler, tmp_path):
    path = str(tmp_path / "samples.jsonl")
    for index in range(10):
        sampler.append_line(path, "%03d %s\n" % (index, "x" * 95), max_bytes=350)
    kept = Path(path).read_text().splitlines() + Path(path + ".1").read_text().splitlines()
    assert len(Path(path).read_text()) <= 350 and len(Path(path + ".1").read_text()) <= 350
    assert sorted(line[:3] for line in kept) == ["006", "007", "008", "009"]


@pytest.mark.parametrize("text, values", [
    ("# verl_control.env\nHOST=node1\nLOG_DIR='/var/log/verl runs'\nNPU_SAMPLE_SECONDS=30\nNPU_SMI=''\n",
     {"HOST": "node1", "LOG_DIR": "/var/log/verl runs", "NPU_SAMPLE_SECONDS": "30", "NPU_SMI": ""}),
    ("NPU_SAMPLE_SECONDS='unbalanced\nbroken-line\n", {}),
])
def test_its_values_are_verl_control_env(sampler, tmp_path, text, values):
    (tmp_path / "v.env").write_text(text)
    assert sampler.read_values(str(tmp_path / "v.env")) == values
    assert sampler.seconds_of(values) == (30 if values else 0)


# --- The sampler's loop, against a stand-in npu-smi and /proc

def fake_proc(root, raylet=True, holder=False):
    """A /proc of a container: a raylet (comm), and a process holding /dev/davinci3."""
    proc = root / "proc"
    (proc / "1").mkdir(parents=True)
    (proc / "1" / "comm").write_text("bash\n")
    if raylet:
        (proc / "40").mkdir()
        (proc / "40" / "comm").write_text("raylet\n")
    if holder:
        (proc / "77" / "fd").mkdir(parents=True)
        (proc / "77" / "comm").write_text("ray::Worker\n")
        os.symlink("/dev/davinci3", proc / "77" / "fd" / "9")
    return str(proc)


def workdir_with(tmp_path, seconds=1, tensorboard=True, fixture=A2_BUSY):
    workdir = tmp_path / "workdir"
    module = installed(workdir)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "npu-smi").write_text("#!/bin/sh\necho \"$*\" >> %s/calls\ncat %s/capture\n[ ! -f %s/fails ]\n" % (
        tmp_path, tmp_path, tmp_path))
    (bin_dir / "npu-smi").chmod(0o755)
    shutil.copy(FIXTURES / fixture, tmp_path / "capture")
    values = {"HOST": "node1", "ROLE": "worker", "LOG_DIR": str(tmp_path / "logs"), "NPU_SAMPLE_SECONDS": seconds,
              "NPU_SMI": str(bin_dir / "npu-smi"), "TENSORBOARD_DIR": str(tmp_path / "tb" / "proj" / "exp") if tensorboard else ""}
    (workdir / "verl_control.env").write_text("".join("%s='%s'\n" % item for item in values.items()))
    return module, workdir


def test_two_samples_go_to_the_jsonl_and_tensorboard(tmp_path):
    sampler, workdir = workdir_with(tmp_path)
    proc = fake_proc(tmp_path)
    assert sampler.main(str(workdir), proc=proc, limit=2) == 0
    lines = [json.loads(line) for line in (tmp_path / "logs" / "npu_samples.node1.jsonl").read_text().splitlines()]
    assert len(lines) == 2 and lines[1]["time"] - lines[0]["time"] in (0, 1, 2) and lines[0]["npus"][4]["hbm_used_mb"] == 64748
    assert (tmp_path / "calls").read_text().splitlines() == ["info", "info"]  # one npu-smi call per sample
    [events] = list((tmp_path / "tb" / "proj" / "exp" / "npu" / "node1").glob("events.out.tfevents.*.npu"))
    read = read_events(events)
    assert len(read) == 3 and read[0][2] == {}
    wall, step, values = read[1]
    assert step == lines[0]["time"] and int(wall) == step
    assert len(values) == 8 * 5
    assert values["npu/node1/4/hbm_used_gb"] == pytest.approx(64748 / 1024.0)
    assert values["npu/node1/0/power_w"] == pytest.approx(100.2, abs=1e-4) and values["npu/node1/0/temp_c"] == 43.0
    assert values["npu/node1/2/aicore_pct"] == 0.0 and values["npu/node1/2/health_ok"] == 1.0
    assert (workdir / ".npu_sampler.pid").read_text().strip() == str(os.getpid())


def test_nothing_is_kept_while_no_process_holds_an_npu(tmp_path):
    sampler, workdir = workdir_with(tmp_path, fixture=A2_IDLE)
    assert sampler.main(str(workdir), proc=fake_proc(tmp_path), limit=1) == 0
    assert (tmp_path / "calls").read_text() == "info\n" and not (tmp_path / "logs").exists()
    # npu-smi lists no process, this container's /proc shows the training's worker on an NPU: kept.
    assert sampler.main(str(workdir), proc=fake_proc(tmp_path / "busy", holder=True), limit=1) == 0
    assert len((tmp_path / "logs" / "npu_samples.node1.jsonl").read_text().splitlines()) == 1


def test_without_tensorboard_no_event_file(tmp_path):
    sampler, workdir = workdir_with(tmp_path, tensorboard=False)
    sampler.main(str(workdir), proc=fake_proc(tmp_path), limit=1)
    assert (tmp_path / "logs" / "npu_samples.node1.jsonl").exists() and not (tmp_path / "tb").exists()


def test_a_failing_npu_smi_is_one_error_line_not_an_exit(tmp_path):
    sampler, workdir = workdir_with(tmp_path, fixture=ERROR)
    (tmp_path / "fails").write_text("")
    assert sampler.main(str(workdir), proc=fake_proc(tmp_path), limit=2) == 0
    [line] = [json.loads(text) for text in (tmp_path / "logs" / "npu_samples.node1.jsonl").read_text().splitlines()]
    assert "dcmi error -8005" in line["error"] and line["node"] == "node1" and "npus" not in line


@pytest.mark.parametrize("raylet, seconds", [(False, 1), (True, 0)])
def test_it_ends_without_a_raylet_or_when_turned_off(tmp_path, raylet, seconds):
    sampler, workdir = workdir_with(tmp_path, seconds=seconds)
    assert sampler.main(str(workdir), proc=fake_proc(tmp_path, raylet=raylet)) == 0
    assert not (tmp_path / "calls").exists()


def test_a_second_sampler_beside_a_running_one_exits_at_once(tmp_path):
    sampler, workdir = workdir_with(tmp_path)
    held = sampler.hold(str(workdir / ".npu_sampler.pid"))
    assert held is not None
    try:
        # As start_verl.sh starts it: `python3 npu_sampler.py` in verl_workdir.
        proc = subprocess.run([sys.executable, "npu_sampler.py"], cwd=workdir, capture_output=True, text=True, timeout=30, check=False)
        assert proc.returncode == 0 and proc.stdout == proc.stderr == ""
        assert not (tmp_path / "calls").exists()
    finally:
        held.close()
    # The lock goes with its holder: the next one takes it (and, its interval 0, ends: a simulated cluster on this machine
    # runs raylets its /proc shows).
    values = workdir / "verl_control.env"
    values.write_text(values.read_text().replace("NPU_SAMPLE_SECONDS='1'", "NPU_SAMPLE_SECONDS='0'"))
    proc = subprocess.run([sys.executable, "npu_sampler.py"], cwd=workdir, capture_output=True, text=True, timeout=30, check=False)
    assert proc.returncode == 0 and proc.stderr == ""
    assert (workdir / ".npu_sampler.pid").read_text().strip() not in ("", str(os.getpid()))


def test_an_unwritable_log_folder_loses_the_samples_not_the_sampler(tmp_path):
    sampler, workdir = workdir_with(tmp_path, tensorboard=False)
    (tmp_path / "logs").write_text("a file where the log folder should be")
    assert sampler.main(str(workdir), proc=fake_proc(tmp_path), limit=2, sleep=lambda _seconds: None) == 0
    assert (tmp_path / "calls").read_text().splitlines() == ["info", "info"]


# --- SwanLab's charts (swanlab among the loggers): a stand-in of the SDK's calls, which verl's own tracking makes too

KEY = "sk-sampler-test-4b1d"


class FakeSwanLab:
    """What the sampler calls of the swanlab module: login(key), init(...) -> a run whose log(data, step) is kept, finish()."""

    def __init__(self, fail=None):
        self.calls, self.fail = [], fail

    def login(self, key):
        self.calls.append(("login", key))

    def init(self, **kwargs):
        self.calls.append(("init", kwargs))
        if self.fail:
            raise RuntimeError(self.fail)
        return self

    def log(self, data, step=None):
        self.calls.append(("log", data, step))

    def finish(self):
        self.calls.append(("finish",))


def with_swanlab(tmp_path, module, env, project="verl_hlm", experiment="qwen3-8b-dapo"):
    sampler, workdir = workdir_with(tmp_path, tensorboard=False)
    values = workdir / "verl_control.env"
    values.write_text(values.read_text().replace("HOST='node1'", "HOST='gpu-a.rack1'") +
                      "NPU_SWANLAB_PROJECT='%s'\nNPU_SWANLAB_EXPERIMENT='%s'\n" % (project, experiment))
    return sampler, workdir, sampler.Sampler(fake_proc(tmp_path), sampler.SwanLabCharts(lambda: module, env))


def samples_of(tmp_path, node="gpu-a.rack1"):
    return [json.loads(line) for line in (tmp_path / "logs" / ("npu_samples.%s.jsonl" % node)).read_text().splitlines()]


def test_with_swanlab_the_samples_are_charts_of_a_run_of_the_nodes_own(tmp_path):
    """One run per node in the training's project, opened as verl opens its (login with the key from start_verl.sh's
    environment, then init), every sample's scalars logged at its Unix time, the run finished when the sampler ends."""
    module = FakeSwanLab()
    env = {"SWANLAB_MODE": "cloud", "SWANLAB_LOG_DIR": "/data/swanlog", "SWANLAB_API_KEY": KEY}
    sampler, workdir, looped = with_swanlab(tmp_path, module, env)
    values = sampler.read_values(str(workdir / "verl_control.env"))
    assert looped.sample(values, 1800000000.5) == looped.sample(values, 1800000030.2) == "kept"
    looped.swanlab.close()
    (login, init, first, second, finish) = module.calls
    assert login == ("login", KEY) and finish == ("finish",)
    assert init[1] == {"project": "verl_hlm", "experiment_name": "qwen3-8b-dapo-npu-gpu-a.rack1", "mode": "cloud",
                       "logdir": "/data/swanlog/npu", "config": {"node": "gpu-a.rack1", "training": "qwen3-8b-dapo"},
                       "description": "NPU samples of gpu-a.rack1 (verl.deploy's npu_sampler.py) for the training qwen3-8b-dapo"}
    assert KEY not in json.dumps(init[1])
    # SwanLab's keys: letters, digits, " _-/" (a node's "." becomes "_"); the TensorBoard scalars, under the same names.
    assert first[2] == 1800000000 and second[2] == 1800000030 and len(first[1]) == 8 * 5
    assert first[1]["npu/gpu-a_rack1/4/hbm_used_gb"] == pytest.approx(64748 / 1024.0)
    assert first[1]["npu/gpu-a_rack1/0/power_w"] == pytest.approx(100.2)
    assert all("error" not in line and "swanlab" not in line for line in samples_of(tmp_path))


@pytest.mark.parametrize("env, project", [
    ({}, "verl_hlm"),  # started outside start_verl.sh: no SwanLab environment
    ({"SWANLAB_MODE": "cloud"}, ""),  # swanlab is not one of the run's loggers (verl_control.env's values empty)
])
def test_without_swanlab_the_sdk_is_never_loaded(tmp_path, env, project):
    def load():
        raise AssertionError("swanlab imported")
    sampler, workdir, looped = with_swanlab(tmp_path, None, env, project=project)
    looped.swanlab.load = load
    assert looped.sample(sampler.read_values(str(workdir / "verl_control.env")), 1800000000) == "kept"


def test_a_failing_sdk_turns_the_charts_off_once_with_its_words_and_never_the_key(tmp_path, monkeypatch):
    """The SDK's error (a refused login or run, a missing package) in one line of the samples file, the key masked if the
    SDK quoted it; the samples go on, and the SDK is not called again."""
    module = FakeSwanLab(fail="API Request Failed: [401] invalid key %s | POST /api/login/api_key" % KEY)
    sampler, workdir, looped = with_swanlab(tmp_path, module, {"SWANLAB_MODE": "cloud", "SWANLAB_API_KEY": KEY})
    values = sampler.read_values(str(workdir / "verl_control.env"))
    for now in (1800000000, 1800000030, 1800000060):
        assert looped.sample(values, now) == "kept"
    assert [call[0] for call in module.calls] == ["login", "init"]
    lines = samples_of(tmp_path)
    assert [("swanlab" in line, "npus" in line) for line in lines] == [(False, True), (True, False), (False, True), (False, True)]
    assert lines[1]["swanlab"] == "RuntimeError: API Request Failed: [401] invalid key *** | POST /api/login/api_key"
    assert KEY not in (tmp_path / "logs" / "npu_samples.gpu-a.rack1.jsonl").read_text()
    # A missing package is the same: its ImportError, once.
    shutil.rmtree(tmp_path / "logs")
    looped = sampler.Sampler(fake_proc(tmp_path / "other"), sampler.SwanLabCharts(env={"SWANLAB_MODE": "local"}))
    monkeypatch.setitem(sys.modules, "swanlab", None)  # import swanlab fails, whatever this machine has
    for name in ("SWANLAB_PROBE_MONITOR", "SWANLAB_PROBE_REQUIREMENTS"):
        monkeypatch.setenv(name, "false")  # what the sampler sets before the import (this test's process keeps its own)
    assert looped.sample(values, 1800000000) == "kept"
    assert samples_of(tmp_path)[1]["swanlab"].startswith("ModuleNotFoundError: import of swanlab halted")
