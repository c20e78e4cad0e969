# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Private to the verl.deploy collection: may change without notice.
#
# Which environment variables verl_extra_env may export (start_verl.sh exports them before Ray and the
# training start): an allow-list of the names the NPU training stack reads, each with the component that
# reads it. Everything else is refused with the reason: a deny-list cannot know every variable that makes
# a program load code (PYTHONPATH, PYTHONUSERBASE, GCONV_PATH ...). Standard library only: the settings
# table's generator (tools/settings_table.py) loads this file alone to write the table into docs/settings.md.
from __future__ import annotations

import re

# (name or prefix, "prefix" or "exact", the component that reads it, examples). The one table: the check
# below, docs/settings.md (generated) and the tests read it.
ALLOWED = (
    ("HCCL_", "prefix", "HCCL, CANN's collective communication library", "HCCL_BUFFSIZE, HCCL_CONNECT_TIMEOUT, HCCL_EXEC_TIMEOUT"),
    ("ASCEND_", "prefix", "the CANN runtime (logging, launch behaviour)", "ASCEND_GLOBAL_LOG_LEVEL, ASCEND_LAUNCH_BLOCKING"),
    ("ACL_", "prefix", "AscendCL, CANN's application interface", "ACL_OP_COMPILER_CACHE_MODE, ACL_DEVICE_SYNC_TIMEOUT"),
    ("ATB_", "prefix", "ATB, the Ascend Transformer Boost library", "ATB_WORKSPACE_MEM_ALLOC_GLOBAL"),
    ("PYTORCH_NPU_", "prefix", "torch_npu, PyTorch's Ascend backend", "PYTORCH_NPU_ALLOC_CONF"),
    ("TASK_QUEUE_ENABLE", "exact", "torch_npu (operator task queue)", "TASK_QUEUE_ENABLE=2"),
    ("CPU_AFFINITY_CONF", "exact", "torch_npu (CPU core binding)", "CPU_AFFINITY_CONF=1"),
    ("INF_NAN_MODE_ENABLE", "exact", "torch_npu and CANN (overflow mode)", "INF_NAN_MODE_ENABLE=1"),
    ("COMBINED_ENABLE", "exact", "torch_npu (combined non-contiguous copies)", "COMBINED_ENABLE=1"),
    ("MULTI_STREAM_MEMORY_REUSE", "exact", "torch_npu (memory reuse across streams)", "MULTI_STREAM_MEMORY_REUSE=1"),
    ("VLLM_", "prefix", "vLLM and vllm-ascend, the rollout engine", "VLLM_ASCEND_ENABLE_NZ, VLLM_USE_V1"),
    ("OMP_", "prefix", "OpenMP, the CPU threads of every library", "OMP_NUM_THREADS"),
    ("OPENBLAS_NUM_THREADS", "exact", "OpenBLAS (CPU threads)", "OPENBLAS_NUM_THREADS=1"),
    ("MKL_NUM_THREADS", "exact", "Intel MKL (CPU threads)", "MKL_NUM_THREADS=1"),
    ("TOKENIZERS_PARALLELISM", "exact", "Hugging Face tokenizers", "TOKENIZERS_PARALLELISM=false"),
    ("HF_HUB_OFFLINE", "exact", "Hugging Face Hub (no downloads)", "HF_HUB_OFFLINE=1"),
    ("HF_DATASETS_OFFLINE", "exact", "Hugging Face datasets (no downloads)", "HF_DATASETS_OFFLINE=1"),
    ("TRANSFORMERS_OFFLINE", "exact", "Hugging Face transformers (no downloads)", "TRANSFORMERS_OFFLINE=1"),
    ("TORCH_DISTRIBUTED_DEBUG", "exact", "torch.distributed (debug output)", "TORCH_DISTRIBUTED_DEBUG=DETAIL"),
    ("RAY_DEDUP_LOGS", "exact", "Ray (log de-duplication)", "RAY_DEDUP_LOGS=0"),
    ("RAY_BACKEND_LOG_LEVEL", "exact", "Ray (its own log level)", "RAY_BACKEND_LOG_LEVEL=warning"),
    ("RAY_memory_monitor_refresh_ms", "exact", "Ray (the memory monitor)", "RAY_memory_monitor_refresh_ms=0"),
    ("RAY_memory_usage_threshold", "exact", "Ray (the memory monitor)", "RAY_memory_usage_threshold=0.98"),
    # The trackers of verl_loggers (their keys, tokens and passwords are refused below: secret settings carry them).
    ("WANDB_", "prefix", "wandb (verl_loggers: wandb)", "WANDB_BASE_URL, WANDB_ENTITY, WANDB_MODE"),
    ("MLFLOW_", "prefix", "MLflow (verl_loggers: mlflow)", "MLFLOW_TRACKING_URI, MLFLOW_TRACKING_USERNAME"),
    ("CLEARML_", "prefix", "ClearML (verl_loggers: clearml)", "CLEARML_API_HOST, CLEARML_WEB_HOST, CLEARML_FILES_HOST"),
    ("MLP_TRACKING_REGION", "exact", "verl's vemlp_wandb tracker (verl_loggers: vemlp_wandb)", "MLP_TRACKING_REGION=cn-beijing"),
    ("VERL_FILE_LOGGER_", "prefix", "verl's file tracker (verl_loggers: file)", "VERL_FILE_LOGGER_PATH, VERL_FILE_LOGGER_ROOT"),
)
# Names under an allowed prefix that still say where a program loads code or data from (a library, an operator
# package, a plugin, a cache of compiled kernels): refused, whatever the prefix.
CODE_WORDS = re.compile(r"_(PATH|PATHS|HOME|ROOT|DIR|LIB|LIBS|LIBRARY|PLUGIN|PLUGINS|PRELOAD|MODULE|MODULES)$|(^|_)OPP(_|$)")
CODE_WORDS_ALLOWED = ("ASCEND_PROCESS_LOG_PATH", "VERL_FILE_LOGGER_PATH", "VERL_FILE_LOGGER_ROOT")  # where logs are written
# The device binding start_verl.sh sets up: ASCEND_RT_VISIBLE_DEVICES from verl_npu_devices, and Ray gives each of
# verl's workers its own NPU from it. These would replace or undo it.
DEVICE_BINDING = re.compile(r".*VISIBLE_DEVICES.*|RAY_EXPERIMENTAL_NOSET_.*|ASCEND_DEVICE_ID|NPU_DEVICE_ID", re.IGNORECASE)
DEVICE_BINDING_WHY = ("overrides the device binding start_verl.sh sets up (ASCEND_RT_VISIBLE_DEVICES from verl_npu_devices, "
                      "and Ray giving each of verl's workers its NPU): in verl, RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES "
                      "stops Ray from setting it per worker, so every worker sees every NPU and the ranks' binding breaks. Fix: "
                      "choose the NPUs with verl_npu_devices")
# The SwanLab key under any spelling (SWANLAB_API_KEY, SWANLAB_APIKEY, swanlab_key ...), and any other key, token or
# password (WANDB_API_KEY, MLFLOW_TRACKING_PASSWORD, MLFLOW_TRACKING_TOKEN, CLEARML_API_SECRET_KEY, VOLC_ACCESS_KEY_ID ...).
KEY_NAME = re.compile(r".*SWANLAB.*KEY.*|(.*_)?(API_?KEY|ACCESS_KEY|SECRET|TOKEN|PASSWORD|PASSWD)(_.*)?", re.IGNORECASE)
# The trackers' secret settings (the table is _secrets.SECRETS; a test keeps this list equal to it).
TRACKER_KEY_SETTINGS = ("verl_wandb_api_key", "verl_mlflow_tracking_password", "verl_mlflow_tracking_token",
                        "verl_clearml_api_access_key", "verl_clearml_api_secret_key", "verl_volc_access_key_id",
                        "verl_volc_secret_access_key")
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# A URL with a password in its userinfo (http://user:password@mlflow:5000).
USERINFO = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/@\s]*:[^/@\s]*@")


def env_value_problem(value):
    """Why `value` may not be written into start_verl.sh, or None."""
    if USERINFO.search(str(value)):
        return ("holds a password in a URL (user:password@host), which would be written into start_verl.sh and shown. Fix: "
                "give the URL without it and the password as its secret setting (MLflow: MLFLOW_TRACKING_USERNAME in "
                "verl_extra_env, the password as verl_mlflow_tracking_password)")
    return None


def allowed_entry(name):
    """The table entry that allows `name`, or None."""
    for pattern, kind, reader, _examples in ALLOWED:
        if (kind == "exact" and name == pattern) or (kind == "prefix" and name.startswith(pattern) and len(name) > len(pattern)):
            return pattern, reader
    return None


def summary():
    """The allowed names and prefixes in a few words, for a message."""
    return ", ".join(pattern + ("*" if kind == "prefix" else "") for pattern, kind, _reader, _examples in ALLOWED)


def env_name_problem(name, reserved=()):
    """Why `name` may not be exported by start_verl.sh (`reserved`: the scripts' own variables), or None."""
    text = name if isinstance(name, str) else str(name)
    if not NAME.fullmatch(text) or len(text) > 128:
        return "is not an environment variable name. Fix: use letters, digits and _, not starting with a digit"
    if KEY_NAME.fullmatch(text) and "SWANLAB" in text.upper():
        return ("must not carry the SwanLab key: it would be written into start_verl.sh. Fix: give it as verl_swanlab_api_key "
                "(a secret)")
    if KEY_NAME.fullmatch(text):
        return ("must not carry a key, a token or a password: it would be written into start_verl.sh and shown. Fix: give a "
                "tracker's key as its secret setting (%s), from a vault or an AWX credential" % ", ".join(TRACKER_KEY_SETTINGS))
    if DEVICE_BINDING.fullmatch(text):
        return DEVICE_BINDING_WHY
    if text.upper() in reserved:
        return "is set by start_verl.sh or run_training.sh themselves. Fix: leave it out (the setting that sets it is in docs/settings.md)"
    entry = allowed_entry(text)
    if entry is None:
        return ("is not a variable the NPU training stack reads (allowed: %s); any other may change how a program starts or "
                "what code it loads. Fix: leave it out, or set it in the image" % summary())
    if CODE_WORDS.search(text.upper()) and text not in CODE_WORDS_ALLOWED:
        return ("names where %s loads code or data from (a library, an operator package, a plugin, a cache), which is the "
                "image's to set. Fix: leave it out, or set it in the image" % entry[1])
    return None
