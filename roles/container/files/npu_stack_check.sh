# shellcheck shell=bash
# Run by the container stage inside the training container (docker exec):
#   VERL_CANN_PROGRAM="$(cat cann_env.sh)" [VERL_LOOK_DIR=DIR VERL_LOOK_PROGRAM="$(cat look.sh)"] \
#       bash -c "$(cat npu_stack_check.sh)" npu-stack-check NPUS_PER_NODE [CANN set_env.sh ...]
# First npu-smi must answer and python3 exist (the driver and the devices reach the container); then it
# sources CANN's environment as start_verl.sh does (VERL_CANN_PROGRAM, the training role's cann_env.sh) and asks
# the training's python3 to load torch_npu and count the NPUs, with the ASCEND_RT_VISIBLE_DEVICES that start_verl.sh exports
# (the caller sets it in the environment): the runtime's first device call refuses a list that does not fit
# the container's devices (EE1001), here as it would under Ray. Exit codes: 6 npu-smi info fails, 7 no
# python3, 3 no CANN environment, 4 torch_npu does not load, 5 fewer NPUs than the node trains on, 8 the
# container's NPU devices are not this deploy's, or the runtime refuses ASCEND_RT_VISIBLE_DEVICES (each code's fix:
# PROBE_FIXES in plugins/module_utils/_versions.py, which the image_stack filter reads). Then it reports
# the image's stack in one stack= line (see the Python below), which the deploy judges; the line after it says what was
# found. On the head, a prompts= line follows (the count of the prompts longer than max_prompt_length, at the end).
set -o pipefail
want="$1"
shift
# With VERL_CHECK_RECORD (a file in verl_workdir), the container stage gives this check's own call on stdin (its arguments and
# environment, JSON) and it is kept there first: the next deploy's pre-check runs the same call in its one read of the node
# (verl.deploy.node_facts, with VERL_CHECK_NO_NPU_OP), and the container stage of that deploy needs no call of its own when
# nothing differs (container_check in plugins/module_utils/_run_time.py).
if [ -n "${VERL_CHECK_RECORD:-}" ]; then
    mkdir -p "$(dirname "${VERL_CHECK_RECORD}")" && cat >"${VERL_CHECK_RECORD}.new" && mv -f "${VERL_CHECK_RECORD}.new" "${VERL_CHECK_RECORD}"
fi
# With VERL_LOOK_DIR (verl_workdir) and VERL_LOOK_PROGRAM (the launch-scripts stage's look.sh), first one answer line
# look=MODE SHA256 NAME,... for the launch files there (*.sh, *.env, launch.json and the NPU sampler's two files at its top; empty when there are none), so
# that the launch-scripts stage needs no call of its own to compare them; and raylet=running|none, whether Ray's raylet
# runs here, so that the Ray stage leaves a worker the head lists alive without a call of its own.
if [ -n "${VERL_LOOK_DIR:-}" ] && [ -n "${VERL_LOOK_PROGRAM:-}" ]; then
    # shellcheck disable=SC2035  # plain names: the look prints them as install.yml names the files
    echo "look=$(cd "${VERL_LOOK_DIR}" 2>/dev/null && sh -c "${VERL_LOOK_PROGRAM}" look . *.sh *.env launch.json _npu_smi.py npu_sampler.py | paste -sd, -)"
    if pgrep -x raylet >/dev/null 2>&1; then echo "raylet=running"; else echo "raylet=none"; fi
fi
if ! smi="$(npu-smi info 2>&1)"; then
    echo "npu-smi info failed in the container: $(printf '%s' "${smi}" | tail -n 4 | tr -s ' \n' ' ')"
    exit 6
fi
# With VERL_CONTAINER_NPUS (the /dev/davinciN numbers this deploy gives the container), the container must have
# exactly those: an existing container is reused as it was created, and with other devices the runtime's logical
# ids (ASCEND_RT_VISIBLE_DEVICES) would name other NPUs than verl_npu_devices.
if [ -n "${VERL_CONTAINER_NPUS:-}" ]; then
    have="$(find /dev -maxdepth 1 -name 'davinci[0-9]*' -printf '%f\n' 2>/dev/null | sed 's/^davinci//' | sort -n | paste -sd, -)"
    if [ "${have}" != "${VERL_CONTAINER_NPUS}" ]; then
        echo "the container has the NPU devices ${have:-none} (/dev/davinciN), but this deploy gives it ${VERL_CONTAINER_NPUS}"
        exit 8
    fi
fi
if ! command -v python3 >/dev/null 2>&1; then
    echo "the image has no python3"
    exit 7
fi
# CANN's environment as start_verl.sh sets it: the one sourcing (the training role's cann_env.sh, given as
# VERL_CANN_PROGRAM), quiet here, for the last line says what was found.
: "${VERL_CANN_PROGRAM:?the caller gives the sourcing of CANN, cann_env.sh of the training role, as VERL_CANN_PROGRAM}"
# shellcheck disable=SC2034  # read by VERL_CANN_PROGRAM
CANN_SCRIPTS=("$@")
eval "${VERL_CANN_PROGRAM}" >/dev/null 2>&1
if [ -z "${CANN_SOURCED[*]}${CANN_PRESET}" ]; then
    echo "no CANN environment: none of $* exists in the container and neither ASCEND_HOME_PATH nor ASCEND_TOOLKIT_HOME is set"
    exit 3
fi
# Bounded: a package whose import hangs (a lock on a shared file system) must not hold the deploy.
timeout -k 10 600 python3 - "${want}" <<'PYTHON' || exit
import sys

import os

try:
    import torch_npu
except Exception as exc:  # an ImportError, or the OSError of a library that does not load
    print("python3 cannot load the NPU stack: `import torch_npu` failed: %s: %s" % (type(exc).__name__, str(exc)[:300]))
    sys.exit(4)
version = getattr(torch_npu, "__version__", "?")
visible = os.environ.get("ASCEND_RT_VISIBLE_DEVICES", "(not set)")
try:
    count = torch_npu.npu.device_count()
except Exception as exc:  # the runtime's EE1001 for a device list it does not accept
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    reason = next((line for line in lines if "EE1001" in line or "Reason" in line), lines[-1] if lines else type(exc).__name__)
    print("torch_npu %s refuses ASCEND_RT_VISIBLE_DEVICES=%s (what start_verl.sh exports) at its first device call: %s"
          % (version, visible, reason[:300]))
    sys.exit(8)
if count < int(sys.argv[1]):
    print("torch_npu %s sees %d NPU(s) with ASCEND_RT_VISIBLE_DEVICES=%s, fewer than the %s this node trains on"
          % (version, count, visible, sys.argv[1]))
    sys.exit(5)

# The image's stack, as the training will import it (python3 -m from verl_workdir): each module of
# VERL_PROBE_MODULES imported in order with its version or its error, the CUDA-only packages of
# VERL_PROBE_FORBIDDEN that are installed, the entry point's file, whether the image's vLLM knows the
# model's architecture, CANN's ATB library loaded as vLLM-Ascend loads it, and one operation on the first NPU.
# One stack= line (JSON) for the deploy to judge (plugins/module_utils/_versions.py).
import importlib
import importlib.metadata
import importlib.util
import json
import re


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
print("stack=" + json.dumps(stack, sort_keys=True))
print("torch_npu %s loads and sees %d NPU(s) with ASCEND_RT_VISIBLE_DEVICES=%s" % (version, count, visible))
PYTHON
# On the head, with VERL_PROMPT_FILES and VERL_PROMPT_PROGRAM (prompt_lengths.py): the prompts longer than
# VERL_MAX_PROMPT_LENGTH, measured with the image's transformers and pyarrow as verl measures them, in one prompts= line.
# It never fails the check; bounded by VERL_PROMPT_SECONDS (its own deadline) and, should an import hang, by timeout.
if [ -n "${VERL_PROMPT_FILES:-}" ] && [ -n "${VERL_PROMPT_PROGRAM:-}" ]; then
    limit="$(( ${VERL_PROMPT_SECONDS:-120} + 60 ))"
    timeout -k 5 "${limit}" python3 -c "${VERL_PROMPT_PROGRAM}" 2>/dev/null
    status=$?
    if [ "${status}" -eq 124 ] || [ "${status}" -eq 137 ]; then
        echo 'prompts={"files": [], "error": "the count did not answer within '"${limit}"' s"}'
    elif [ "${status}" -ne 0 ]; then
        echo 'prompts={"files": [], "error": "the count stopped with exit code '"${status}"'"}'
    fi
fi
