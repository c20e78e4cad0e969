"""Stand-in for torch_npu and the Ascend runtime (ACL) under it, in the simulated verl image
(tests/sim/simcluster.py installs it as the package torch_npu in /opt/verl-venv).

What the real stack does, and what this one copies of it (sources named per rule):
- Loading: the real torch_npu loads only with CANN's environment; without the toolkit's library
  folder on LD_LIBRARY_PATH (what ascend-toolkit/set_env.sh exports) `import torch_npu` fails as
  "libhccl.so: cannot open shared object file". Here the same.
- Devices: the runtime sees the /dev/davinciN the process can open (the container's --device list,
  all of the host's when privileged) and numbers them 0..N-1 in ascending N: these logical ids are
  what ASCEND_RT_VISIBLE_DEVICES, set_device() and device_count() speak (CANN environment variable
  reference, "ASCEND_RT_VISIBLE_DEVICES": "Device ID indicates the logical ID of the Ascend AI
  Processor"). Here /dev (SIM_DEV_DIR for tests) is listed the same way.
- ASCEND_RT_VISIBLE_DEVICES, when set: comma-separated logical ids; the runtime reads ids up to the
  first that is not a number, each must be in range and the list ascending ("only supports device
  IDs configured in ascending order"). A bad value fails the first device call (device_count,
  set_device) with torch_npu's RuntimeError around ACL's EE1001, in the words users report:
  "aclrtGetDeviceCount(&device_count), error code is 207004 ... EE1001 ... The argument is
  invalid.Reason: set ASCEND_RT_VISIBLE_DEVICES:4 error, input data rang[0-2)" and
  "... set ASCEND_RT_VISIBLE_DEVICES:0,2,4,6,1,3,5,7 error, it must be configured in ascending order".
- set_device(i): i must be a visible logical id, else "aclrtSetDevice ... error code is 107001"
  ("rtSetDevice:ErrCode=107001, desc=[device id error]", as MindIE and vLLM-Ascend users report).
  It opens the device and keeps it open for the process's life, as the runtime's context does; the
  host's npu-smi then lists the process on that chip with the memory it uses. A context alone uses
  141 MB here (capture 005's idle contexts); _sim_hold_memory(mb) stands for the weights, the
  optimizer and the KV cache a real worker allocates. The account is a small JSON file under
  /tmp/.sim-npu/<pid> that the simulated npu-smi on the host reads through /proc/<pid>/root.
- The first kernel (_sim_kernel, what tests/sim/stand_in_packages.py's torch calls for a tensor on the NPU):
  needs a set device (the runtime's context), and is where a driver that does not fit the image's CANN
  shows: `import torch_npu`, device_count() and set_device() all work, and the first aclnn operator fails
  (vllm-ascend#4859: "zero_:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:26 NPU function error: call
  aclnnInplaceZero failed, error code is 561103" / "ERR00100 PTA call acl api failed", fixed by a CANN
  that matches the driver). SIM_NPU_FIRST_OP_ERROR=<code> makes the simulated node such a node (the
  simulated driver is otherwise always the one its CANN wants): 561103 as above.
- The ATB op plugin (torch_npu/op_plugin/atb/_atb_ops.py, in stand_in_packages.SITE): its import loads
  torch_npu's lib/libop_plugin_atb.so, which links CANN's ATB library (libatb.so, from NNAL) found through
  LD_LIBRARY_PATH as nnal/atb/set_env.sh exports it; see that module for how it fails.
"""
from __future__ import annotations

import json
import os
import re

__version__ = "2.7.1+verl-sim"

_TOOLKIT = os.environ.get("ASCEND_TOOLKIT_HOME", "")
if not _TOOLKIT or os.path.join(_TOOLKIT, "lib64") not in os.environ.get("LD_LIBRARY_PATH", "").split(":"):
    raise ImportError("libhccl.so: cannot open shared object file: No such file or directory "
                      "(verl-sim: CANN's set_env.sh was not sourced)")

CONTEXT_MB = 141
_ACCOUNT_DIR = "/tmp/.sim-npu"
_OPEN = {}      # physical device number -> file descriptor, kept for the process's life
_MEMORY = {}    # physical device number -> MB this process uses on it
_CURRENT = []   # the logical id set_device() chose
# The version of CANN's ATB library (NNAL) this torch_npu was built against: its op plugin links that ABI.
ATB_BUILT_FOR = "8.3.RC1"


def _acl_error(call, code, reason):
    """torch_npu's RuntimeError around a failed ACL call, with the runtime's EE1001 reason."""
    pid = os.getpid()
    where = "init" if call.startswith("aclrtGetDeviceCount") else "set_device"
    return RuntimeError(
        "%s:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:292 NPU function error: %s, error code is %d\n"
        "[ERROR] (PID:%d, Device:-1, RankID:-1) ERR00100 PTA call acl api failed\n"
        "EE1001: [PID: %d] The argument is invalid.Reason: %s" % (where, call, code, pid, pid, reason))


def _physical():
    """The /dev/davinciN numbers this process can open, ascending: the logical ids' order."""
    folder = os.environ.get("SIM_DEV_DIR", "/dev")
    return sorted(int(match.group(1)) for match in (re.fullmatch(r"davinci(\d+)", name) for name in os.listdir(folder)) if match)


def _visible():
    """The physical devices the process may use, in logical order; raises the runtime's EE1001 for a bad
    ASCEND_RT_VISIBLE_DEVICES."""
    devices = _physical()
    value = os.environ.get("ASCEND_RT_VISIBLE_DEVICES")
    if value is None:
        return devices
    ids = []
    for token in value.split(","):
        if not token.isdigit():
            break  # "only the device IDs before the other characters are read"
        ids.append(int(token))
    for logical in ids:
        if logical >= len(devices):
            raise _acl_error("aclrtGetDeviceCount(&device_count)", 207004,
                             "set ASCEND_RT_VISIBLE_DEVICES:%s error, input data rang[0-%d)" % (value, len(devices)))
    if any(later <= earlier for earlier, later in zip(ids, ids[1:])):
        raise _acl_error("aclrtGetDeviceCount(&device_count)", 207004,
                         "set ASCEND_RT_VISIBLE_DEVICES:%s error, it must be configured in ascending order" % value)
    return [devices[logical] for logical in ids]


def _write_account():
    os.makedirs(_ACCOUNT_DIR, exist_ok=True)
    path = os.path.join(_ACCOUNT_DIR, str(os.getpid()))
    with open(path + ".tmp", "w") as handle:
        json.dump({str(device): mb for device, mb in _MEMORY.items()}, handle)
    os.replace(path + ".tmp", path)


class _Npu:
    """The part of torch_npu.npu the deploy and the stand-in trainer call."""

    @staticmethod
    def device_count():
        return len(_visible())

    @classmethod
    def is_available(cls):
        return cls.device_count() > 0

    @staticmethod
    def set_device(device):
        visible = _visible()
        logical = int(str(device).rsplit(":", 1)[-1])
        if not 0 <= logical < len(visible):
            raise _acl_error("aclrtSetDevice(device_id)", 107001,
                             "Set visible device failed, invalid device=%d, input visible devices:%s; "
                             "rtSetDevice:ErrCode=107001, desc=[device id error]"
                             % (logical, os.environ.get("ASCEND_RT_VISIBLE_DEVICES", ",".join(map(str, range(len(visible)))))))
        physical = visible[logical]
        if physical not in _OPEN:
            _OPEN[physical] = os.open(os.path.join(os.environ.get("SIM_DEV_DIR", "/dev"), "davinci%d" % physical), os.O_RDWR)
            _MEMORY[physical] = CONTEXT_MB
            _write_account()
        _CURRENT[:] = [logical]

    @staticmethod
    def current_device():
        return _CURRENT[0] if _CURRENT else 0

    @staticmethod
    def _sim_kernel(op, aclnn):
        """verl-sim only: run one aclnn operator on the current device (what torch's NPU tensors call)."""
        if not _CURRENT:
            raise RuntimeError("%s:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:26 NPU function error: call %s failed: "
                               "no device set" % (op, aclnn))
        code = os.environ.get("SIM_NPU_FIRST_OP_ERROR", "")
        if code:
            raise RuntimeError("%s:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:26 NPU function error: call %s failed, "
                               "error code is %s\n[ERROR] (PID:%d, Device:%d, RankID:-1) ERR00100 PTA call acl api failed."
                               % (op, aclnn, code, os.getpid(), _CURRENT[0]))

    @staticmethod
    def _sim_hold_memory(mb):
        """verl-sim only: the current device's memory use grows by mb (what a worker's tensors would take)."""
        if not _CURRENT:
            raise RuntimeError("no device set: call torch_npu.npu.set_device() first")
        physical = _visible()[_CURRENT[0]]
        _MEMORY[physical] = _MEMORY.get(physical, CONTEXT_MB) + int(mb)
        _write_account()

    @staticmethod
    def _sim_physical_device():
        """verl-sim only: the /dev/davinciN number behind the current device (for the trainer's report)."""
        return _visible()[_CURRENT[0]] if _CURRENT else None


npu = _Npu()
