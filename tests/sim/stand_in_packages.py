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
- vLLM's ModelRegistry.get_supported_archs() with the architectures vLLM v0.11.0 registers for the model families
  this collection is tested with (Qwen2/Qwen2.5, Qwen3, Qwen3-MoE, Llama), so an unknown one is refused as vLLM does.
- torch 2.7.1's few tensor calls the image check makes (zeros on the NPU, add_, sum, item), each operator run through
  torch_npu's kernel path as the real NPU backend dispatches them to aclnn operators (stand_in_torch_npu._sim_kernel);
- torch_npu's ATB op plugin (torch_npu/op_plugin/atb/_atb_ops.py), which loads CANN's ATB library as the real one.
transformers is the real package in the simulated image (tests/sim/simcluster.py's lock: the container stage's prompt count
tokenizes with it); TRANSFORMERS_VERSION_ONLY stands in for it only where the real one is not installed (the image check's
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
    "vllm_ascend/__init__.py": '''"""Stand-in for vllm-ascend v0.11.0rc1 (tests/sim/stand_in_packages.py): the platform plugin needs vLLM."""
import vllm  # noqa: F401  (ModuleNotFoundError without it, as the real plugin)

__version__ = "0.11.0rc1"
''',
    "megatron/__init__.py": "",
    "megatron/core/__init__.py": '''"""Stand-in for Megatron-LM core_v0.12.1 (tests/sim/stand_in_packages.py)."""
__version__ = "0.12.1"
''',
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
    "mbridge/__init__.py": '''"""Stand-in for mbridge (tests/sim/stand_in_packages.py)."""
__version__ = "0.15.1"
''',
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

# Only for tests/test_npu_stack_check.py's image on a Python without transformers: what the image check reads of it.
TRANSFORMERS_VERSION_ONLY = '''"""Stand-in for transformers' version only (tests/sim/stand_in_packages.py): the simulated image has the real one."""
__version__ = "4.57.1"
'''
