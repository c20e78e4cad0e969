# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The training's Python on the NPU stack, run by npu_stack_check.sh (python3 -c "$VERL_STACK_PROGRAM" NPUS_PER_NODE) once
CANN's environment is sourced. torch_npu loads (else exit 4); the runtime's first device call accepts the
ASCEND_RT_VISIBLE_DEVICES start_verl.sh exports (else 8: EE1001, here as it would under Ray) and sees NPUS_PER_NODE NPUs
(else 5). Then the image's stack as the training will import it (python3 -m from verl_workdir): each module of
VERL_PROBE_MODULES with its version or its error, the CUDA-only packages of VERL_PROBE_FORBIDDEN installed, the entry
point's file, whether the image's vLLM knows the model's architecture, CANN's ATB library loaded as vLLM-Ascend loads it,
and one operation on the first NPU. Its answer, {"said": [what was found], "answer": {"stack": JSON}}, goes to file
descriptor 3 (the check's emit joins it to its document).
"""
import importlib
import importlib.metadata
import importlib.util
import json
import os
import re
import sys

ANSWER = os.fdopen(3, "w")


def answer(said, code, **found):
    ANSWER.write(json.dumps({"said": [said], "answer": found}))
    ANSWER.close()
    sys.exit(code)


try:
    import torch_npu
except Exception as exc:  # an ImportError, or the OSError of a library that does not load
    answer("python3 cannot load the NPU stack: `import torch_npu` failed: %s: %s" % (type(exc).__name__, str(exc)[:300]), 4)
version = getattr(torch_npu, "__version__", "?")
visible = os.environ.get("ASCEND_RT_VISIBLE_DEVICES", "(not set)")
try:
    count = torch_npu.npu.device_count()
except Exception as exc:  # the runtime's EE1001 for a device list it does not accept
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    reason = next((line for line in lines if "EE1001" in line or "Reason" in line), lines[-1] if lines else type(exc).__name__)
    answer("torch_npu %s refuses ASCEND_RT_VISIBLE_DEVICES=%s (what start_verl.sh exports) at its first device call: %s"
           % (version, visible, reason[:300]), 8)
if count < int(sys.argv[1]):
    answer("torch_npu %s sees %d NPU(s) with ASCEND_RT_VISIBLE_DEVICES=%s, fewer than the %s this node trains on"
           % (version, count, visible, sys.argv[1]), 5)


def _version(name, module):
    found = getattr(module, "__version__", None)
    top = name.split(".")[0]
    for dist in (top, top.replace("_", "-"), "megatron-core" if top == "megatron" else ""):
        if found or not dist:
            break
        try:
            found = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            pass
    if not found and top != name:
        found = getattr(sys.modules.get(top), "__version__", None)
    return str(found) if found else None


def _first_line(exc):
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return "%s: %s" % (type(exc).__name__, lines[0][:300] if lines else "")


workdir = os.environ.get("VERL_LOOK_DIR") or os.getcwd()
sys.path.insert(0, workdir)
stack = {"modules": {}, "forbidden": {}, "workdir": workdir, "entry_file": None, "model": None}
for name in os.environ.get("VERL_PROBE_MODULES", "").split():
    try:
        stack["modules"][name] = {"version": _version(name, importlib.import_module(name))}
    except BaseException as exc:  # ImportError, an undefined symbol (OSError), a package that exits on import
        stack["modules"][name] = {"error": _first_line(exc)}
for name in os.environ.get("VERL_PROBE_FORBIDDEN", "").split():
    try:
        present = importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        present = False
    if present:
        try:
            stack["forbidden"][name] = importlib.metadata.version(name.replace("_", "-"))
        except importlib.metadata.PackageNotFoundError:
            stack["forbidden"][name] = None
# The files that tell verl's releases apart (VERL_PROBE_MARKERS: {name: [path below verl's package, pattern or ""]}, the
# release table's MARKER_PROBES): True/False, None when verl did not import or a file to search is missing.
verl_dir = os.path.dirname(getattr(sys.modules.get("verl"), "__file__", None) or "") if "verl" in sys.modules else ""
stack["markers"] = {}
for name, (path, pattern) in sorted(json.loads(os.environ.get("VERL_PROBE_MARKERS") or "{}").items()):
    target = os.path.join(verl_dir, path)
    if not verl_dir:
        stack["markers"][name] = None
    elif not pattern:
        stack["markers"][name] = os.path.isfile(target)
    else:
        try:
            with open(target, errors="replace") as handle:
                stack["markers"][name] = re.search(pattern, handle.read(), re.MULTILINE) is not None
        except OSError:
            stack["markers"][name] = None
entry = os.environ.get("VERL_ENTRY_FILE")
if entry:
    stack["entry_file"] = os.path.isfile(os.path.join(workdir, entry))
model_config = os.path.join(os.environ.get("VERL_MODEL_PATH") or "/nonexistent", "config.json")
if os.path.isfile(model_config) and "error" not in stack["modules"].get("vllm", {"error": "not probed"}):
    try:
        with open(model_config) as handle:
            architecture = (json.load(handle).get("architectures") or [""])[0]
        from vllm import ModelRegistry
        stack["model"] = {"architecture": architecture, "supported": architecture in ModelRegistry.get_supported_archs()}
    except Exception as exc:  # an unreadable config.json, a registry that does not answer
        stack["model"] = {"error": _first_line(exc)}
# CANN's ATB library, as vLLM-Ascend loads it when it starts: torch_npu's ATB op plugin links NNAL's libatb.so (found
# through LD_LIBRARY_PATH, which nnal/atb/set_env.sh sets); an NNAL of another CANN release fails here with an undefined
# symbol although `import torch_npu` worked.
stack["atb"] = {"home": os.environ.get("ATB_HOME_PATH")}
try:
    plugin = importlib.import_module("torch_npu.op_plugin.atb._atb_ops")
    if hasattr(plugin, "_register_atb_extensions"):  # later torch_npu releases load it on first use
        plugin._register_atb_extensions()  # pylint: disable=protected-access
except BaseException as exc:  # the OSError of dlopen
    stack["atb"]["error"] = _first_line(exc)


def _holders(folder):
    """pids of this container's other processes that hold one of its NPUs open (the deploy's own training)."""
    found = set()
    for pid in (name for name in os.listdir("/proc") if name.isdigit() and int(name) != os.getpid()):
        try:
            targets = [os.readlink("/proc/%s/fd/%s" % (pid, fd)) for fd in os.listdir("/proc/%s/fd" % pid)]
        except OSError:  # ended meanwhile, or not ours to read
            continue
        if any(os.path.dirname(target) == folder and re.fullmatch(r"davinci\d+", os.path.basename(target)) for target in targets):
            found.add(int(pid))
    return sorted(found)


# One set_device and one small operation on the first NPU of this deploy (logical id 0 under ASCEND_RT_VISIBLE_DEVICES):
# a driver that does not fit the image's CANN lets everything above pass and fails only at the first operator. Not while
# the deploy's own training runs on these NPUs (it proves the stack, and must not be disturbed). SIM_DEV_DIR: where the
# simulated runtime's device files are (tests); /dev on a node. Nor in the pre-check's run (VERL_CHECK_NO_NPU_OP): it changes
# nothing before the confirmation.
stack["first_op"] = {"device": 0}
held = _holders(os.environ.get("SIM_DEV_DIR", "/dev"))
if held:
    stack["first_op"].update(held=held, skipped="pid(s) %s of this container hold its NPUs" % ", ".join(map(str, held)))
elif os.environ.get("VERL_CHECK_NO_NPU_OP"):
    stack["first_op"]["skipped"] = "the pre-check runs no NPU operation"
else:
    try:
        import torch

        torch_npu.npu.set_device(0)
        value = torch.zeros(4, device="npu:0").add_(1).sum().item()
        if value != 4:
            raise ArithmeticError("zeros(4) + 1 summed to %r on the NPU, not 4" % (value,))
        stack["first_op"]["ok"] = True
    except BaseException as exc:  # torch_npu's RuntimeError around the failed ACL call
        stack["first_op"]["error"] = _first_line(exc)
answer("torch_npu %s loads and sees %d NPU(s) with ASCEND_RT_VISIBLE_DEVICES=%s" % (version, count, visible), 0,
       stack=json.dumps(stack, sort_keys=True))
