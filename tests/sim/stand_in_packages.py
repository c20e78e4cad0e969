"""Stand-ins for the Python packages of verl's Ascend image (tests/sim/simcluster.py installs them in the
simulated verl image's /opt/verl-venv; tests/test_npu_stack_check.py uses them in a folder of its own).

What the real image has (verl v0.7.0's docker/ascend/Dockerfile.ascend_8.3.rc1_a2 and _a3): torch and torch_npu
2.7.1 (tests/sim/stand_in_torch_npu.py), vLLM v0.11.0 installed from source with VLLM_TARGET_DEVICE=empty,
vllm-ascend v0.11.0rc1, MindSpeed at f2b0977e with Megatron-LM core_v0.12.1 on PYTHONPATH, mbridge, transformers,
and verl itself as a checkout in /verl (its version in verl/version/version: "0.7.0.dev" at the v0.7.0 tag).
What each stand-in copies of the real package, for the deploy's image check:
- its version where the real one has it (__version__, or the file verl reads);
- the imports between them that fail in real images: vllm_ascend imports vllm (a missing vLLM fails it with
  ModuleNotFoundError); mindspeed.megatron_adaptor imports megatron.core and, in its patch_features(), a
  transformer_engine that is installed -- the CUDA-only package then fails its import the way users report
  (ms-swift#6968: "transformer_engine/common/__init__.py ... _load_cudnn ... CalledProcessError");
- mbridge 0.15.1's registry of model types (MBRIDGE: every model module imported with the package, AutoBridge's
  list_supported_models), and the mbridge builds users report failing with the image's Megatron core (MBRIDGE_QWEN3_5,
  MBRIDGE_QWEN3_VL_CORE_0_13) with the Megatron core modules they import from;
- vLLM's ModelRegistry.get_supported_archs() with the architectures vLLM v0.11.0 registers for the model families
  this collection is tested with (Qwen2/Qwen2.5, Qwen3, Qwen3-MoE, Llama), so an unknown one is refused as vLLM does.
- torch 2.7.1's few tensor calls the image check makes (zeros on the NPU, add_, sum, item), each operator run through
  torch_npu's kernel path as the real NPU backend dispatches them to aclnn operators (stand_in_torch_npu._sim_kernel);
- torch_npu's ATB op plugin (torch_npu/op_plugin/atb/_atb_ops.py), which loads CANN's ATB library as the real one.
transformers is the real package in the simulated image (tests/sim/simcluster.py's lock: the container stage's prompt count
tokenizes with it); TRANSFORMERS_STAND_IN stands in for it only where the real one is not installed (the image check's
tests on this machine's Python, which import it for its version).
TRANSFORMER_ENGINE is not installed: a test that needs "a CUDA package installed by mistake" writes it into
site-packages (it is in the image at /opt/sim/stand-ins/transformer_engine/).
"""
from __future__ import annotations

VERL_VERSION = "0.7.0.dev"

# {path below site-packages: source}
SITE = {
    "vllm/__init__.py": '''"""Stand-in for vLLM v0.11.0 (tests/sim/stand_in_packages.py)."""
__version__ = "0.11.0"


class _ModelRegistry:
    # The architectures vLLM v0.11.0's model registry maps for the families the tests use.
    _ARCHS = ("LlamaForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM", "Qwen3MoeForCausalLM")

    def get_supported_archs(self):
        return list(self._ARCHS)


ModelRegistry = _ModelRegistry()
''',
    # vLLM's general plugins: the entry points of group vllm.general_plugins (vllm-ascend's `ascend_enhanced_model =
    # vllm_ascend:register_model`), called in every vLLM process; the stand-ins have no distribution metadata, so it calls it.
    "vllm/plugins/__init__.py": '''def load_general_plugins():
    import importlib.util

    if importlib.util.find_spec("vllm_ascend") is not None:
        import vllm_ascend

        vllm_ascend.register_model()
''',
    # vLLM's platforms (vllm/platforms/interface.py Platform.verify_quantization, v0.11.0) and the current platform the
    # platform plugins choose: vllm-ascend's NPUPlatform where it is installed.
    "vllm/platforms/__init__.py": '''class Platform:
    device_name = "cpu"
    supported_quantization = []

    def verify_quantization(self, quant):
        if self.supported_quantization and quant not in self.supported_quantization:
            raise ValueError(f"{quant} quantization is currently not supported in {self.device_name}.")


def __getattr__(name):
    if name != "current_platform":
        raise AttributeError(name)
    import importlib.util

    if importlib.util.find_spec("vllm_ascend") is not None:
        from vllm_ascend.platform import NPUPlatform

        return NPUPlatform()
    return Platform()
''',
    # vLLM v0.11.0's quantization methods (vllm/model_executor/layers/quantization/__init__.py QUANTIZATION_METHODS).
    "vllm/model_executor/__init__.py": "",
    "vllm/model_executor/layers/__init__.py": "",
    "vllm/model_executor/layers/quantization/__init__.py": '''QUANTIZATION_METHODS = [
    "awq", "deepspeedfp", "tpu_int8", "fp8", "ptpc_fp8", "fbgemm_fp8", "fp_quant", "modelopt", "modelopt_fp4", "bitblas", "gguf",
    "gptq_marlin_24", "gptq_marlin", "gptq_bitblas", "awq_marlin", "gptq", "compressed-tensors", "bitsandbytes", "hqq",
    "experts_int8", "ipex", "quark", "moe_wna16", "torchao", "auto-round", "rtn", "inc", "mxfp4", "petit_nvfp4",
]
''',
    # vllm-ascend v0.11.0rc1's platform (vllm_ascend/platform.py): the NPU runs its own `ascend` method (msModelSlim).
    "vllm_ascend/platform.py": '''from vllm.platforms import Platform


class NPUPlatform(Platform):
    device_name = "npu"
    supported_quantization = ["ascend"]
''',
    "vllm_ascend/__init__.py": '''"""Stand-in for vllm-ascend v0.11.0rc1 (tests/sim/stand_in_packages.py): the platform plugin needs vLLM."""
import vllm  # noqa: F401  (ModuleNotFoundError without it, as the real plugin)

__version__ = "0.11.0rc1"
# The architectures vllm-ascend registers with vLLM's ModelRegistry that vLLM itself maps for the tests' families: none new.
_REGISTERED = ()


def register_model():
    for architecture in _REGISTERED:
        vllm.ModelRegistry._ARCHS += (architecture,)  # pylint: disable=protected-access
''',
    "megatron/__init__.py": "",
    "megatron/core/__init__.py": '''"""Stand-in for Megatron-LM core_v0.12.1 (tests/sim/stand_in_packages.py)."""
__version__ = "0.12.1"
''',
    # The modules mbridge's model modules import from (their names as core_v0.12.1 has them).
    "megatron/core/utils.py": '''"""Stand-in for megatron/core/utils.py of core_v0.12.1: not get_tensor_model_parallel_group_if_none (core 0.13)."""
''',
    "megatron/core/models/__init__.py": "",
    "megatron/core/models/gpt/__init__.py": "",
    "mindspeed/__init__.py": '''"""Stand-in for MindSpeed f2b0977e (tests/sim/stand_in_packages.py)."""
''',
    "mindspeed/megatron_adaptor.py": '''"""Stand-in for mindspeed.megatron_adaptor: patches Megatron, and imports transformer_engine when installed."""
import importlib
import importlib.util

import megatron.core  # noqa: F401


def patch_features():
    if importlib.util.find_spec("transformer_engine") is not None:
        importlib.import_module("transformer_engine")


patch_features()
''',
    "torch/__init__.py": '''"""Stand-in for torch 2.7.1 (tests/sim/stand_in_packages.py): the tensor calls of the deploy's image check.
A tensor on an NPU runs each operator through torch_npu (the real backend dispatches it to an aclnn operator):
zeros() is empty + zero_ (aclnnInplaceZero), add_ of a number aclnnInplaceAdds, sum aclnnReduceSum."""
__version__ = "2.7.1"


class Tensor:
    def __init__(self, values, device):
        self._values = list(values)
        self.device = str(device)

    def _run(self, op, aclnn):
        if self.device.startswith("npu"):
            import torch_npu  # noqa: F401  pylint: disable=import-outside-toplevel

            torch_npu.npu._sim_kernel(op, aclnn)  # pylint: disable=protected-access

    def add_(self, other):
        self._run("add_", "aclnnInplaceAdds")
        self._values = [value + other for value in self._values]
        return self

    def sum(self):
        self._run("sum", "aclnnReduceSum")
        return Tensor([sum(self._values)], self.device)

    def item(self):
        return self._values[0]


def zeros(size, device="cpu"):
    tensor = Tensor([0.0] * int(size), device)
    tensor._run("zero_", "aclnnInplaceZero")  # pylint: disable=protected-access
    return tensor
''',
    "torch_npu/op_plugin/__init__.py": "",
    "torch_npu/op_plugin/atb/__init__.py": "",
    "torch_npu/op_plugin/atb/_atb_ops.py": '''"""Stand-in for torch_npu 2.7.1's op_plugin/atb/_atb_ops.py (tests/sim/stand_in_packages.py).

At import the real module loads torch_npu's lib/libop_plugin_atb.so (torch.ops.load_library), which links CANN's ATB
library, libatb.so of NNAL, found through LD_LIBRARY_PATH as nnal/atb/set_env.sh exports it. How that fails, copied here:
- without NNAL's environment: "libatb.so: cannot open shared object file: No such file or directory" (vllm-ascend#152);
- with an NNAL of another release than torch_npu was built against, `import torch_npu` works but this load fails with
  an undefined symbol of NNAL's libtbe_adapter.so (Ascend/pytorch#99: "OSError: /usr/local/Ascend/nnal/atb/latest/atb/
  cxx_abi_1/lib/libtbe_adapter.so: undefined symbol: _ZN3Mki2DlC1ERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEEb").
The ATB library's stand-in is a text file libatb.so whose version= line is its release."""
import os

import torch_npu


def _load():
    for folder in os.environ.get("LD_LIBRARY_PATH", "").split(":"):
        path = os.path.join(folder, "libatb.so")
        if folder and os.path.isfile(path):
            break
    else:
        raise OSError("libatb.so: cannot open shared object file: No such file or directory")
    with open(path) as handle:
        version = dict(line.strip().split("=", 1) for line in handle if "=" in line).get("version", "")
    if version != torch_npu.ATB_BUILT_FOR:
        raise OSError("%s: undefined symbol: _ZN3Mki2DlC1ERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEEb"
                      % os.path.join(os.path.dirname(path), "libtbe_adapter.so"))
    return path


ATB_LIBRARY = _load()
''',
}
# mbridge 0.15.1 (ISEEKYAN/mbridge, tag v0.15.1), laid out as the real package: importing it imports every model module,
# whose @register_model(model_type) fills the registry AutoBridge.from_config(hf_config) looks the model's type up in
# (verl's vanilla_mbridge path, verl/models/mcore/mbridge.py). The LLM types of its registry; its VLM modules are left out.
MBRIDGE = {
    "mbridge/__init__.py": '''"""Stand-in for mbridge 0.15.1 (tests/sim/stand_in_packages.py)."""
__version__ = "0.15.1"

# Import models module to ensure registration decorators are executed (as the real one)
from . import models  # noqa: E402,F401
from .core.auto_bridge import AutoBridge  # noqa: E402,F401
''',
    "mbridge/core/__init__.py": "from .auto_bridge import AutoBridge  # noqa: F401\nfrom .bridge import register_model  # noqa: F401\n",
    "mbridge/core/bridge.py": '''_MODEL_REGISTRY = {}


def register_model(model_types):
    if isinstance(model_types, str):
        model_types = [model_types]

    def decorator(cls):
        for model_type in model_types:
            _MODEL_REGISTRY[model_type] = cls
        return cls

    return decorator
''',
    "mbridge/core/auto_bridge.py": '''from .bridge import _MODEL_REGISTRY


class AutoBridge:
    @classmethod
    def from_config(cls, hf_config, **kwargs):
        model_type = hf_config.model_type
        if model_type in _MODEL_REGISTRY:
            return _MODEL_REGISTRY[model_type](hf_config, **kwargs)
        raise ValueError(f"Unregistered model type: {model_type}, now only support {_MODEL_REGISTRY.keys()}")

    @classmethod
    def list_supported_models(cls):
        return list(_MODEL_REGISTRY.keys())
''',
    "mbridge/models/__init__.py": "".join("from .%s import Bridge as _%s  # noqa: F401\n" % (name, name) for name in (
        "deepseek_v3", "glm4moe", "llama", "mixtral", "qwen2", "qwen2moe", "qwen3", "qwen3moe")),
}
MBRIDGE.update({"mbridge/models/%s.py" % name: "from ..core import register_model\n\n\n@register_model(%r)\nclass Bridge:\n"
                "    def __init__(self, hf_config, **kwargs):\n        self.hf_config = hf_config\n" % model_type
                for name, model_type in (("deepseek_v3", "deepseek_v3"), ("glm4moe", "glm4_moe"), ("llama", "llama"),
                                         ("mixtral", "mixtral"), ("qwen2", "qwen2"),
                                         ("qwen2moe", "qwen2_moe"), ("qwen3", "qwen3"), ("qwen3moe", "qwen3_moe"))})
SITE.update(MBRIDGE)
# mbridge's main after 2026-02-24 (ISEEKYAN/mbridge#83) adds Qwen3.5, imported under suppress(ImportError): its module needs
# Megatron core 0.16's experimental attention specs, so on core 0.12.1 `import mbridge` works and the type is not registered.
MBRIDGE_QWEN3_5 = {
    "mbridge/models/__init__.py": MBRIDGE["mbridge/models/__init__.py"] + (
        "from contextlib import suppress\nwith suppress(ImportError):\n    from .qwen3_5 import Qwen3_5VlBridge  # noqa: F401\n"),
    "mbridge/models/qwen3_5/__init__.py": "from mbridge.models.qwen3_5.qwen3_5_vl_bridge import Qwen3_5VlBridge  # noqa: F401\n",
    "mbridge/models/qwen3_5/qwen3_5_vl_bridge.py": (
        "from megatron.core.models.gpt.experimental_attention_variant_module_specs import (  # noqa: F401\n"
        "    get_transformer_block_with_experimental_attention_variant_spec,\n)\n\nfrom mbridge.core import register_model\n\n\n"
        "@register_model(\"qwen3_5\")\nclass Qwen3_5VlBridge:\n    pass\n"),
}
# What core 0.16 adds that it needs (the fix: an image whose Megatron core is the one this mbridge is made for).
MEGATRON_CORE_0_16_SPECS = {"megatron/core/models/gpt/experimental_attention_variant_module_specs.py":
                            "def get_transformer_block_with_experimental_attention_variant_spec(*args, **kwargs):\n    return None\n"}
# An mbridge whose every-model import needs a name core 0.12.1 lacks (mbridge#50: mbridge 0.15.1's qwen3_vl on core 0.12.1):
# `import mbridge` itself fails.
MBRIDGE_QWEN3_VL_CORE_0_13 = {
    "mbridge/models/__init__.py": MBRIDGE["mbridge/models/__init__.py"] + "from .qwen3_vl import utils as _qwen3_vl  # noqa: F401\n",
    "mbridge/models/qwen3_vl/__init__.py": "",
    "mbridge/models/qwen3_vl/utils.py": "from megatron.core.utils import get_tensor_model_parallel_group_if_none  # noqa: F401\n",
}

TRANSFORMER_ENGINE = '''"""Stand-in for NVIDIA's transformer_engine, installed by mistake in an NPU image (tests/sim/stand_in_packages.py):
its import looks for cuDNN and fails, as users report it on Ascend (ms-swift#6968)."""
import subprocess

__version__ = "2.8.0"


def _load_cudnn():
    raise subprocess.CalledProcessError(1, ["sh", "-c", "ldconfig -p | grep 'libcudnn'"])


_CUDNN_LIB_CTYPES = _load_cudnn()
'''

# The checkout's verl package as verl/__init__.py has it: the version read from verl/version/version.
VERL_INIT = '''"""Stand-in for verl's package (tests/sim/stand_in_packages.py): the version as verl/__init__.py reads it."""
import os

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "version/version")) as _f:
    __version__ = _f.read().strip()
'''

# The ATB library of NNAL (its stand-in: a text file at ${ATB_HOME_PATH}/lib/libatb.so), of the release
# torch_npu's op plugin was built against (see torch_npu/op_plugin/atb/_atb_ops.py above).
ATB_LIBRARY = "# verl-sim stand-in for CANN NNAL's libatb.so\nversion=8.3.RC1\n"

# Only for tests/test_npu_stack_check.py's image on a Python without transformers: what the image check reads of it, its
# version and AutoConfig.from_pretrained as transformers 4.57.1 has it (models/auto/configuration_auto.py): config.json's
# model_type looked up in CONFIG_MAPPING, whose KeyError becomes the ValueError users report (vllm#36217 for `qwen3_5`).
TRANSFORMERS_STAND_IN = '''"""Stand-in for transformers 4.57.1's version and AutoConfig (tests/sim/stand_in_packages.py): the simulated image has the
real one."""
import json
import os

__version__ = "4.57.1"


class _LazyConfigMapping(dict):
    def __getitem__(self, key):
        if key not in self:
            raise KeyError(key)
        return dict.__getitem__(self, key)


CONFIG_MAPPING = _LazyConfigMapping((name, type(name.title().replace("_", "") + "Config", (object,), {"model_type": name}))
                                    for name in ("deepseek_v3", "glm4_moe", "llama", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe"))


class AutoConfig:
    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, trust_remote_code=False, **kwargs):
        with open(os.path.join(pretrained_model_name_or_path, "config.json")) as handle:
            config_dict = json.load(handle)
        if "model_type" not in config_dict:
            raise ValueError(f"Unrecognized model in {pretrained_model_name_or_path}. Should have a `model_type` key in its "
                             "config.json, or contain one of the following strings in its name: " + ", ".join(CONFIG_MAPPING))
        try:
            config_class = CONFIG_MAPPING[config_dict["model_type"]]
        except KeyError:
            raise ValueError(
                f"The checkpoint you are trying to load has model type `{config_dict['model_type']}` "
                "but Transformers does not recognize this architecture. This could be because of an "
                "issue with the checkpoint, or because your version of Transformers is out of date.\\n\\n"
                "You can update Transformers with the command `pip install --upgrade transformers`."
            )
        config = config_class()
        config.__dict__.update(config_dict)
        return config
'''

# Only for tests/test_npu_stack_check.py (verl's 0.7.0 image has no Megatron-Bridge, verl#6083): Megatron-Bridge's AutoBridge as
# verl's Megatron worker meets it with vanilla_mbridge=False (src/megatron/bridge/models/conversion/auto_bridge.py): a
# registry of architectures (the test's own few) and its own check, _validate_config, with the lines it raises.
MEGATRON_BRIDGE = {
    "megatron/bridge/__init__.py": '''"""Stand-in for Megatron-Bridge's AutoBridge (tests/sim/stand_in_packages.py)."""
_REGISTRY = ("LlamaForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM", "Qwen3MoeForCausalLM", "DeepseekV3ForCausalLM")


class AutoBridge:
    @classmethod
    def list_supported_models(cls):
        return sorted(_REGISTRY)

    @classmethod
    def supports(cls, config):
        architectures = getattr(config, "architectures", [])
        return bool(architectures) and any(arch.endswith(("ForCausalLM", "ForConditionalGeneration")) for arch in architectures)

    @classmethod
    def _validate_config(cls, config, path=None):
        if not cls.supports(config):
            raise ValueError(f"\\n✗ Model architecture not supported by AutoBridge\\n\\nModel: {path}\\n")
        architecture = config.architectures[0]
        if architecture not in _REGISTRY:
            raise ValueError(f"\\n✗ Model architecture '{architecture}' is not yet supported\\n\\nModel: {path}\\n"
                             f"Architecture: {architecture}\\n\\nCurrently supported architectures:\\n"
                             + "\\n".join(f"  • {model}" for model in cls.list_supported_models()))
''',
}
