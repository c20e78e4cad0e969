"""verl_extra_env names by allow-list (plugins/module_utils/_environment.py)."""
from __future__ import annotations

import pytest

from ansible_collections.verl.deploy.plugins.module_utils import _environment as environment


@pytest.mark.parametrize("name", ["HCCL_BUFFSIZE", "HCCL_CONNECT_TIMEOUT", "ASCEND_GLOBAL_LOG_LEVEL", "ASCEND_PROCESS_LOG_PATH",
                                  "ACL_OP_COMPILER_CACHE_MODE", "TASK_QUEUE_ENABLE", "PYTORCH_NPU_ALLOC_CONF", "VLLM_ASCEND_ENABLE_NZ",
                                  "OMP_NUM_THREADS", "RAY_DEDUP_LOGS", "CPU_AFFINITY_CONF"])
def test_what_the_npu_stack_reads_is_allowed(name):
    assert environment.env_name_problem(name) is None


@pytest.mark.parametrize(("name", "says"), [
    ("PYTHONPATH", "not a variable the NPU training stack reads"), ("PYTHONUSERBASE", "not a variable"), ("PYTHONHOME", "not a variable"),
    ("PYTHONWARNINGS", "not a variable"), ("BROWSER", "not a variable"), ("GCONV_PATH", "not a variable"),
    ("LD_PRELOAD", "not a variable"), ("LD_LIBRARY_PATH", "not a variable"), ("BASH_ENV", "not a variable"), ("PS4", "not a variable"),
    ("BASH_FUNC_x%%", "not an environment variable name"), ("A\n", "not an environment variable name"), ("1A", "not an environment"),
    ("HCCL_", "not a variable"), ("ASCEND_OPP_PATH", "loads code"), ("ASCEND_CUSTOM_OPP_PATH", "loads code"),
    ("ASCEND_HOME_PATH", "loads code"), ("ATB_HOME_PATH", "loads code"), ("VLLM_PLUGINS", "loads code"), ("ASCEND_CACHE_PATH", "loads code"),
    ("RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES", "device binding"), ("ASCEND_RT_VISIBLE_DEVICES", "device binding"),
    ("ASCEND_VISIBLE_DEVICES", "device binding"), ("CUDA_VISIBLE_DEVICES", "device binding"), ("ASCEND_DEVICE_ID", "device binding"),
    ("RAY_EXPERIMENTAL_NOSET_CUDA_VISIBLE_DEVICES", "device binding"), ("RAY_ADDRESS", "not a variable"),
    ("SWANLAB_API_KEY", "SwanLab key"), ("SWANLAB_APIKEY", "SwanLab key"), ("swanlab_key", "SwanLab key"), ("SWANLAB_KEY_FILE", "SwanLab key"),
    ("HCCL_SOCKET_IFNAME", "start_verl.sh"),
])
def test_everything_else_is_refused_with_the_reason(name, says):
    problem = environment.env_name_problem(name, reserved=("HCCL_SOCKET_IFNAME",))
    assert problem and says in problem and "Fix:" in problem, problem


def test_the_device_binding_refusal_says_why_in_verl():
    problem = environment.env_name_problem("RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES")
    assert "every worker sees every NPU" in problem and "verl_npu_devices" in problem


def test_every_entry_of_the_table_names_what_reads_it():
    for pattern, kind, reader, examples in environment.ALLOWED:
        assert kind in ("prefix", "exact") and reader and examples
        assert environment.env_name_problem(pattern + ("X" if kind == "prefix" else "")) is None, pattern
