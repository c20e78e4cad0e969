"""The simulated npu-smi (tests/sim/node/npu_smi.py) without a cluster: a real capture's layout, this
node's processes -- read back by the collection's own parser, as the pre-check reads a real node.

A fake /proc (pid folders with fd links, comm, NSpid and a root holding the stand-in torch_npu's
memory account) stands for a node whose containers hold NPUs.
"""
from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest

from ansible_collections.verl.deploy.plugins.module_utils._chips import device_view
from ansible_collections.verl.deploy.plugins.module_utils._npu_smi import parse_info

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "fixtures" / "npu-smi"
_SPEC = importlib.util.spec_from_file_location("sim_npu_smi", HERE / "node" / "npu_smi.py")
npu_smi = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(npu_smi)

A2 = "001_info_910ProB-as-910B_8cards_v24.1.0_noproc.txt"  # the layout (its chip is a first-generation 910)
A2_BUSY = "007_info_910B3_8cards_v24.1.rc2_procs_emptyname_mixed.txt"
A3 = "synthetic_info_A3_Ascend910_16chips_idle.txt"


def fake_proc(tmp_path, processes):
    """processes: {host pid: (comm, [device numbers], {device: MB} or None, pid in its namespace)}."""
    proc = tmp_path / "proc"
    for pid, (comm, devices, account, ns_pid) in processes.items():
        folder = proc / str(pid)
        (folder / "fd").mkdir(parents=True)
        for index, device in enumerate(devices):
            os.symlink("/dev/davinci%d" % device, folder / "fd" / str(index + 3))
        os.symlink("/dev/null", folder / "fd" / "0")
        (folder / "comm").write_text(comm + "\n")
        (folder / "status").write_text("Name:\t%s\nNSpid:\t%d\t%d\n" % (comm, pid, ns_pid))
        root = tmp_path / ("root-%d" % pid)
        (root / npu_smi.ACCOUNT_DIR).mkdir(parents=True)
        if account is not None:
            (root / npu_smi.ACCOUNT_DIR / str(ns_pid)).write_text(json.dumps({str(k): v for k, v in account.items()}))
        os.symlink(root, folder / "root")
    (proc / "self").mkdir(parents=True, exist_ok=True)
    return str(proc)


def shown(name, proc, health=None):
    data = npu_smi.strip_prompt((FIXTURES / name).read_bytes())
    return npu_smi.live(data, npu_smi.device_holders(proc), health or {})


def test_an_idle_node_shows_its_capture_and_no_process(tmp_path):
    out = shown(A2, fake_proc(tmp_path, {}))
    facts = parse_info(out.decode())
    assert facts["npu_ids"] == list(range(8)) and facts["processes"] == []
    assert out.decode().count("No running processes found in NPU") == 8
    # The chip part is the capture's, line for line.
    capture = (FIXTURES / A2).read_text().splitlines()
    assert out.decode().splitlines()[:len(capture)] == capture


def test_the_processes_that_hold_the_devices_are_listed_with_their_host_pid_name_and_memory(tmp_path):
    proc = fake_proc(tmp_path, {
        4101: ("ray::Worker", [4], {4: 20000}, 61),
        4102: ("ray::Worker", [5], {5: 20000}, 62),
        777: ("python3", [0], None, 777),
    })
    out = shown(A2, proc).decode()
    facts = parse_info(out)
    rows = sorted((p["npu_id"], p["pid"], p["name"], p["memory_mb"]) for p in facts["processes"])
    assert rows == [(0, 777, "python3", npu_smi.CONTEXT_MB), (4, 4101, "ray::Worker", 20000), (5, 4102, "ray::Worker", 20000)]
    assert device_view(facts)["busy"] == {0: [777], 4: [4101], 5: [4102]}
    # HBM used grows by what the holders use, on their chips only (from what the capture shows idle).
    hbm = {npu["npu_id"]: npu["chips"][0]["hbm_used_mb"] for npu in facts["npus"]}
    assert hbm[4] == 3 + 20000 and hbm[1] == 4 and hbm[0] == 1365 + npu_smi.CONTEXT_MB
    assert all(len(line) == 98 for line in out.splitlines() if line.startswith(("|", "+"))), out


def test_atlas_a3_chips_are_keyed_by_phy_id(tmp_path):
    proc = fake_proc(tmp_path, {500 + device: ("ray::Worker", [device], {device: 1000}, 10 + device) for device in (2, 3, 15)})
    facts = parse_info(shown(A3, proc).decode())
    view = device_view(facts)
    assert view["family"] == "a3" and view["busy"] == {2: [502], 3: [503], 15: [515]}


def test_a_captured_process_table_is_replaced_by_the_nodes(tmp_path):
    facts = parse_info(shown(A2_BUSY, fake_proc(tmp_path, {})).decode())
    assert facts["processes"] == [] and len(facts["npus"]) == 8
    # The captured busy chips' HBM falls back to the capture's idle figure.
    assert {npu["chips"][0]["hbm_used_mb"] for npu in facts["npus"]} == {3377}


def test_a_test_sets_a_chips_health(tmp_path):
    facts = parse_info(shown(A2, fake_proc(tmp_path, {}), health={3: "Alarm"}).decode())
    assert {npu["npu_id"]: npu["health"] for npu in facts["npus"]}[3] == "Alarm"
    assert device_view(facts)["unhealthy"] == [3]


@pytest.mark.parametrize("name", ["014_info_910B3_8cards_v26.1.0_widelayout_proc_container_col.txt",
                                  "018_info_Ascend950DT_8cards_A5_layout_noheader_fixture.txt"])
def test_other_layouts_are_replayed_as_captured(tmp_path, name):
    assert shown(name, fake_proc(tmp_path, {})) is None


def test_aicore_follows_the_stand_in_trainers_workers(tmp_path):
    """A chip whose holder accounts the trainer's modelled memory is busy in proportion to it; contexts alone and free chips
    show 0 %, whatever the capture showed; the table keeps its width."""
    worker_mb = 24000  # the stand-in trainer's SIM_TRAINER_WORKER_HBM_MB default
    proc = fake_proc(tmp_path, {4101: ("ray::Worker", [4], {4: worker_mb}, 61), 777: ("python3", [0], None, 777)})
    out = shown(A2_BUSY, proc).decode()
    facts = parse_info(out)
    aicore = {npu["npu_id"]: npu["chips"][0]["aicore_pct"] for npu in facts["npus"]}
    assert aicore == {0: 0, 1: 0, 2: 0, 3: 0, 4: round(100.0 * worker_mb / 65536), 5: 0, 6: 0, 7: 0}
    assert all(len(line) == 98 for line in out.splitlines() if line.startswith(("|", "+"))), out
    # Each of an A3 card's chips on its own.
    proc = fake_proc(tmp_path / "a3", {600: ("ray::Worker", [3], {3: 65536}, 9)})
    chips = {(npu["npu_id"], chip["chip_id"]): chip["aicore_pct"] for npu in parse_info(shown(A3, proc).decode())["npus"]
             for chip in npu["chips"]}
    assert chips[(1, 1)] == 100 and sum(chips.values()) == 100


@pytest.mark.parametrize("holders, total, pct", [
    ([], 65536, 0),
    ([{"memory_mb": npu_smi.CONTEXT_MB}], 65536, 0),
    ([{"memory_mb": 100}, {"memory_mb": npu_smi.CONTEXT_MB}], 65536, 0),
    ([{"memory_mb": 300}], 65536, 1),
    ([{"memory_mb": 32768}], 65536, 50),
    ([{"memory_mb": 32768}, {"memory_mb": 40000}], 65536, 100),
    ([{"memory_mb": 20000}], 0, 0),
])
def test_the_aicore_model(holders, total, pct):
    assert npu_smi.aicore_pct(holders, total) == pct
