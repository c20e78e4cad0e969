"""The simulated Ascend runtime (tests/sim/stand_in_torch_npu.py) without a cluster: logical device ids,
ASCEND_RT_VISIBLE_DEVICES with the runtime's EE1001 rules, set_device holding the device."""
from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


@pytest.fixture
def runtime(tmp_path, monkeypatch):
    """A fresh torch_npu stand-in over a /dev with the given davinci numbers: runtime(devices, visible=None)."""
    dev = tmp_path / "dev"
    dev.mkdir()
    monkeypatch.setenv("ASCEND_TOOLKIT_HOME", "/usr/local/Ascend/ascend-toolkit/latest")
    monkeypatch.setenv("LD_LIBRARY_PATH", "/usr/local/Ascend/ascend-toolkit/latest/lib64")
    monkeypatch.setenv("SIM_DEV_DIR", str(dev))
    loaded = []

    def make(devices, visible=None):
        for number in devices:
            (dev / ("davinci%d" % number)).write_text("")
        (dev / "davinci_manager").write_text("")
        if visible is None:
            monkeypatch.delenv("ASCEND_RT_VISIBLE_DEVICES", raising=False)
        else:
            monkeypatch.setenv("ASCEND_RT_VISIBLE_DEVICES", visible)
        spec = importlib.util.spec_from_file_location("torch_npu_stand_in_%d" % len(loaded), HERE / "stand_in_torch_npu.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module._ACCOUNT_DIR = str(tmp_path / "account")  # pylint: disable=protected-access
        loaded.append(module)
        return module

    yield make
    for module in loaded:
        for fd in module._OPEN.values():  # pylint: disable=protected-access
            os.close(fd)


def test_without_cann_the_import_fails(monkeypatch):
    monkeypatch.delenv("LD_LIBRARY_PATH", raising=False)
    spec = importlib.util.spec_from_file_location("torch_npu_no_cann", HERE / "stand_in_torch_npu.py")
    with pytest.raises(ImportError, match="libhccl.so"):
        spec.loader.exec_module(importlib.util.module_from_spec(spec))


def test_a_container_with_four_of_eight_npus_numbers_them_from_zero(runtime):
    torch_npu = runtime([4, 5, 6, 7], visible="0,1,2,3")
    assert torch_npu.npu.device_count() == 4
    torch_npu.npu.set_device(2)
    assert torch_npu.npu._sim_physical_device() == 6  # pylint: disable=protected-access


@pytest.mark.parametrize("visible, reason", [
    ("4,5,6,7", "set ASCEND_RT_VISIBLE_DEVICES:4,5,6,7 error, input data rang[0-4)"),  # host ids in a 4-NPU container
    ("4", "set ASCEND_RT_VISIBLE_DEVICES:4 error, input data rang[0-4)"),
    ("0,2,1,3", "set ASCEND_RT_VISIBLE_DEVICES:0,2,1,3 error, it must be configured in ascending order"),
    ("1,1", "it must be configured in ascending order"),
])
def test_a_bad_visible_list_fails_the_first_device_call_with_ee1001(runtime, visible, reason):
    torch_npu = runtime([4, 5, 6, 7], visible=visible)
    with pytest.raises(RuntimeError) as raised:
        torch_npu.npu.device_count()
    assert "EE1001" in str(raised.value) and reason in str(raised.value)
    assert "error code is 207004" in str(raised.value)


def test_ids_after_a_non_number_are_not_read(runtime):
    assert runtime(range(8), visible="1, 2,3").npu.device_count() == 1


def test_a_privileged_container_sees_every_npu_by_its_host_number(runtime):
    torch_npu = runtime(range(8), visible="4,5,6,7")
    assert torch_npu.npu.device_count() == 4
    torch_npu.npu.set_device(0)
    assert torch_npu.npu._sim_physical_device() == 4  # pylint: disable=protected-access


def test_set_device_out_of_range_fails_with_107001(runtime):
    torch_npu = runtime([0, 1], visible="1")
    with pytest.raises(RuntimeError, match=r"(?s)error code is 107001.*invalid device=1, input visible devices:1"):
        torch_npu.npu.set_device(1)


def test_set_device_holds_the_device_and_accounts_its_memory(runtime, tmp_path):
    torch_npu = runtime([4, 5, 6, 7], visible="3")
    torch_npu.npu.set_device("npu:0")
    torch_npu.npu._sim_hold_memory(20000)  # pylint: disable=protected-access
    assert os.readlink("/proc/self/fd/%d" % torch_npu._OPEN[7]) == str(tmp_path / "dev" / "davinci7")  # pylint: disable=protected-access
    account = json.loads((tmp_path / "account" / str(os.getpid())).read_text())
    assert account == {"7": torch_npu.CONTEXT_MB + 20000}
