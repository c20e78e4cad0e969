# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The training's Python on the NPU stack, run by npu_stack_check.sh (python3 -c "$VERL_STACK_PROGRAM" NPUS_PER_NODE) once
CANN's environment is sourced. torch_npu loads (else exit 4); the runtime's first device call accepts the
ASCEND_RT_VISIBLE_DEVICES start_verl.sh exports (else 8: EE1001, here as it would under Ray) and sees NPUS_PER_NODE NPUs
(else 5). Then the image's stack as the training will import it (python3 -m from verl_workdir): each module of
VERL_PROBE_MODULES with its version or its error, the CUDA-only packages of VERL_PROBE_FORBIDDEN installed, the entry
point's file, whether the image's vLLM knows the model's architecture (after its plugins) and runs a quantized checkpoint's
method on the NPU, the model's own path (its config read by
transformers, the weight bridge verl will import: VERL_PROBE_ENGINE), this Ray's and Python's versions, CANN's ATB library,
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


def _vllm_plugins():
    """vLLM's general plugins loaded as each vLLM process loads them (vllm-ascend's register_model adds the models it implements
    for Ascend to the registry); their error, or None. A plugin can only add architectures, so an error here refuses nothing."""
    try:
        from vllm.plugins import load_general_plugins

        load_general_plugins()
    except Exception as exc:  # an older vLLM without it, or a plugin that fails: the registry is read as it is
        return _first_line(exc)
    return None


def _quantization(method):
    """A quantized checkpoint's method (config.json's quantization_config.quant_method, named as vLLM's ModelConfig names
    it) as vLLM checks it when the rollout starts: a method vLLM or the platform knows, and the platform (vllm-ascend's
    NPUPlatform, through vLLM's platform plugins) runs. {'method', 'ok'} or {'method', 'error'}; {'method', 'unread'} when this
    vLLM has not the API (nothing refused)."""
    try:
        from vllm.model_executor.layers.quantization import QUANTIZATION_METHODS
        from vllm.platforms import current_platform
    except ImportError as exc:
        return {"method": method, "unread": _first_line(exc)}
    known = list(QUANTIZATION_METHODS) + list(getattr(current_platform, "supported_quantization", None) or [])
    try:
        if method not in known:  # vLLM's ModelConfig._verify_quantization words
            raise ValueError("Unknown quantization method: %s. Must be one of %s." % (method, known))
        current_platform.verify_quantization(method)
    except ValueError as exc:
        return {"method": method, "error": _first_line(exc), "device": getattr(current_platform, "device_name", None)}
    return {"method": method, "ok": True, "device": getattr(current_platform, "device_name", None)}


model_config = os.path.join(os.environ.get("VERL_MODEL_PATH") or "/nonexistent", "config.json")
if os.path.isfile(model_config) and "error" not in stack["modules"].get("vllm", {"error": "not probed"}):
    try:
        with open(model_config) as handle:
            config = json.load(handle)
        architecture = (config.get("architectures") or [""])[0]
        plugins_error = _vllm_plugins()
        from vllm import ModelRegistry
        stack["model"] = {"architecture": architecture, "supported": architecture in ModelRegistry.get_supported_archs(),
                          "plugins_error": plugins_error}
        quant = (config.get("quantization_config") or {}).get("quant_method") if isinstance(config.get("quantization_config"), dict) else None
        if quant:
            stack["model"]["quantization"] = _quantization(str(quant).lower().replace("compressed_tensors", "compressed-tensors"))
    except Exception as exc:  # an unreadable config.json, a registry that does not answer
        stack["model"] = {"error": _first_line(exc)}


def _registering_module(package, model_type):
    """The module of an mbridge-like package whose @register_model names model_type (None when none does)."""
    root = os.path.dirname(package.__file__)
    said = re.compile(r"register_model\([^)]*[\"']%s[\"']" % re.escape(model_type))
    for folder, _dirs, files in sorted(os.walk(os.path.join(root, "models"))):
        for path in (os.path.join(folder, name) for name in sorted(files) if name.endswith(".py")):
            with open(path, errors="replace") as handle:
                if said.search(handle.read()):
                    parts = os.path.relpath(path[:-3], os.path.dirname(root)).split(os.sep)
                    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
    return None


def _engine_path(model_dir, asked):
    """The model's own path as verl imports it only when the actor starts (VERL_PROBE_ENGINE: engine_probe in
    plugins/module_utils/_versions.py): transformers' AutoConfig of the model folder, then the weight bridge of this verl
    and these settings, whether mbridge registers the model's type (and the error of its module that should) or Megatron-Bridge
    the model's architecture."""
    with open(os.path.join(model_dir, "config.json")) as handle:
        model_type = json.load(handle).get("model_type")
    found = {"asked": asked, "model_type": model_type, "config": {}, "bridge": {}}
    hf_config = None
    try:
        from transformers import AutoConfig

        hf_config = AutoConfig.from_pretrained(model_dir, trust_remote_code=bool(asked.get("trust_remote_code")))
        found["config"]["ok"] = True
    except BaseException as exc:  # transformers' ValueError around the KeyError of an unknown model_type, a remote-code refusal
        found["config"]["error"] = _first_line(exc)
        if exc.__context__ is not None:
            found["config"]["cause"] = _first_line(exc.__context__)
    package = asked.get("package")
    if not package:
        return found
    try:
        module = importlib.import_module(package)
        auto = module.AutoBridge  # verl's `from <package> import AutoBridge`
        # megatron.bridge's own version only (_version would fall back to megatron-core's)
        found["bridge"]["version"] = _version(package, module) if package == "mbridge" else getattr(module, "__version__", None)
        supported = auto.list_supported_models() if package == "mbridge" else None
    except BaseException as exc:  # the bridge missing, or one of its model modules that needs another Megatron core
        found["bridge"]["error"] = _first_line(exc)
        return found
    if supported is not None and model_type not in supported:
        found["bridge"].update(registered=False, supported=sorted(supported)[:40])
        name = _registering_module(module, model_type or "")
        if name:
            found["bridge"]["module"] = {"name": name}
            try:
                importlib.import_module(name)
            except BaseException as exc:
                found["bridge"]["module"]["error"] = _first_line(exc)
    elif supported is not None:
        found["bridge"]["registered"] = True
    if package == "megatron.bridge" and hf_config is not None:
        found["bridge"].update(_megatron_bridge_registers(auto, hf_config, model_dir))
    return found


def _megatron_bridge_registers(auto, hf_config, model_dir):
    """Whether Megatron-Bridge has a bridge for the model's architecture, by its own check (AutoBridge._validate_config, which
    verl's AutoBridge.from_hf_pretrained runs first: "Model architecture '...' is not yet supported"); keyed by the
    architecture, not the model type. {} when this Megatron-Bridge has no such check (nothing refused)."""
    check = getattr(auto, "_validate_config", None)
    if check is None:
        return {}
    try:
        check(hf_config, model_dir)
    except ValueError as exc:
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        try:
            supported = sorted(auto.list_supported_models())[:40]
        except Exception:  # a registry that does not list: the error says enough
            supported = []
        return {"registered": False, "said": (lines[0] if lines else type(exc).__name__)[:300], "supported": supported,
                "architecture": ((getattr(hf_config, "architectures", None) or [""])[0])}
    return {"registered": True}


engine = json.loads(os.environ.get("VERL_PROBE_ENGINE") or "null")
if engine is not None and os.path.isfile(model_config):
    try:
        stack["engine"] = _engine_path(os.path.dirname(model_config), engine)
    except Exception as exc:  # an unreadable config.json: the pre-check names it
        stack["engine"] = {"asked": engine, "unread": _first_line(exc)}


def _ray_identity():
    """Ray's version and this Python's (X.Y.Z): a worker joins the head's Ray only when both are the head's (Ray's
    check_version_info at `ray start --address`); compared across the nodes by the container stage (ray_skew)."""
    try:
        version = importlib.metadata.version("ray")
    except importlib.metadata.PackageNotFoundError:
        version = None
    return {"version": version, "python": ".".join(map(str, sys.version_info[:3]))}


stack["ray"] = _ray_identity()
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
