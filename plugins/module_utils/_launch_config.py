# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Private to the verl.deploy collection: may change without notice.
#
# Turns the user's verl_* settings (raw: strings from AWX surveys and `-e k=v`, numbers from YAML)
# into the normalised launch configuration the templates render, or into a list of errors that
# each name the variable, the value and the fix. Types come from the verl role's argument
# specs; the rules that argument specs cannot express live here.
from __future__ import annotations

import difflib
import ipaddress
import math
import re

from ansible_collections.verl.deploy.plugins.module_utils._config_checks import check_parallelism
from ansible_collections.verl.deploy.plugins.module_utils._features import MaskError, decode_mask

# Characters a path may hold: Hydra reads override values unquoted, and `$`, quotes, spaces,
# commas or brackets would change their meaning there (and in the shell).
SAFE_PATH = re.compile(r"^/[A-Za-z0-9._/@%+:~-]*$")
SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
IFNAME = re.compile(r"^[A-Za-z0-9_.:@-]{1,15}$")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
HYDRA_OVERRIDE = re.compile(r"^(\+\+|\+|~)?[A-Za-z_][A-Za-z0-9_.@/-]*(=.*)?$")
HOSTNAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$")
SWANLAB_HOST = re.compile(r"^https?://[^\s/'\"$`]+(/[^\s'\"$`]*)?$")
NEEDS_LOGIN = ("cloud", "online")
SECRET_NAMES = ("verl_swanlab_api_key",)

# Minimums for whole-number settings (default 1).
MINIMUM = {
    "verl_lr_warmup_steps": 0,
    "verl_test_freq": -1,
    "verl_save_freq": -1,
    "verl_ray_port": 1,
}
MAXIMUM = {"verl_ray_port": 65535, "verl_ray_dashboard_port": 65535}
REQUIRED_PATHS = ("verl_model_path", "verl_train_file", "verl_test_file", "verl_ckpts_dir")
PATH_EXAMPLES = {
    "verl_model_path": "/mnt/public/Qwen3-8B",
    "verl_train_file": "/mnt/project/data/dapo-math-17k.parquet",
    "verl_test_file": "/mnt/project/data/aime-2024.parquet",
    "verl_ckpts_dir": "/mnt/project/ckpts/qwen3-8b-dapo",
}
# Which list of the pre-check's findings to show when a required path is missing.
CANDIDATES = {"verl_model_path": "models", "verl_train_file": "datasets", "verl_test_file": "datasets"}
OPTIONAL_PATHS = ("verl_log_dir", "verl_workdir", "verl_output_dir", "verl_host_stage_dir", "verl_swanlab_log_dir", "verl_swanlab_api_key_file")

_TRUE = ("true", "yes", "on", "1", "y", "t")
_FALSE = ("false", "no", "off", "0", "n", "f", "")


class _Errors(list):
    def add(self, variable, value, msg):
        self.append({"variable": variable, "value": value, "msg": msg})


def _show(value):
    return repr(value) if isinstance(value, str) else str(value)


def to_int(name, value, errors):
    minimum, maximum = MINIMUM.get(name, 1), MAXIMUM.get(name)
    number = None
    if isinstance(value, bool):
        number = None
    elif isinstance(value, int):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    elif isinstance(value, str) and re.match(r"^\s*-?\d+\s*$", value):
        number = int(value)
    bound = "at least %d" % minimum + (" and at most %d" % maximum if maximum else "")
    if number is None:
        errors.add(name, value, "%s=%s is not a whole number. Fix: give a whole number %s, e.g. %s=%s." % (
            name, _show(value), bound, name, max(minimum, 4)))
    elif number < minimum or (maximum and number > maximum):
        errors.add(name, value, "%s=%d is out of range. Fix: give a whole number %s." % (name, number, bound))
        number = None
    return number


def to_float(name, value, errors, low=0.0, high=None):
    number = None
    if not isinstance(value, bool):
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = None
    rng = "greater than %g" % low + (" and at most %g" % high if high is not None else "")
    if number is None or math.isnan(number):
        errors.add(name, value, "%s=%s is not a number. Fix: give a number %s, e.g. %s=1e-6." % (name, _show(value), rng, name))
        return None
    if number <= low or (high is not None and number > high):
        errors.add(name, value, "%s=%s is out of range. Fix: give a number %s." % (name, _show(value), rng))
        return None
    return number


def format_float(number):
    """1e-06 -> 1e-6, 0.8 -> 0.8: the short form a person would write."""
    text = "%.12g" % number
    return re.sub(r"e([+-])0*(\d)", lambda m: "e" + ("-" if m.group(1) == "-" else "") + m.group(2), text)


def to_bool(name, value, errors):
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
        return value.strip().lower() in _TRUE
    errors.add(name, value, "%s=%s is not a boolean. Fix: give true or false." % (name, _show(value)))
    return None


def to_path(name, value, errors, required):
    text = "" if value is None else str(value).strip()
    example = PATH_EXAMPLES.get(name, "/mnt/project/verl")
    if not text:
        if required:
            errors.add(name, value, "%s is empty. Fix: give the absolute path on the hosts, e.g. -e %s=%s." % (name, name, example))
        else:
            errors.add(name, value, "%s is empty. Fix: give an absolute path or leave it at its default." % name)
        return None
    if not text.startswith("/"):
        errors.add(name, value, "%s=%r is a relative path; the scripts run inside the container from verl_workdir, so it would be "
                   "read from the wrong place. Fix: give the absolute path, e.g. %s=%s." % (name, text, name, example))
        return None
    if not SAFE_PATH.match(text):
        bad = sorted(set(ch for ch in text if not re.match(r"[A-Za-z0-9._/@%+:~-]", ch)))
        errors.add(name, value, "%s=%r contains %s, which the Hydra command line cannot take unquoted. Fix: use a path made of "
                   "letters, digits and . _ - / @ %% + : ~ (rename it or link it, e.g. ln -s)." % (name, text, " ".join(repr(c) for c in bad)))
        return None
    return text.rstrip("/") if len(text) > 1 else text


def to_devices(name, value, errors):
    items = value
    if isinstance(value, (int,)) and not isinstance(value, bool):
        items = [value]
    elif isinstance(value, str):
        items = [part.strip() for part in value.replace(" ", ",").split(",") if part.strip()]
    if not isinstance(items, (list, tuple)) or not items:
        errors.add(name, value, "%s=%s lists no NPU. Fix: give the NPU ids to train on, e.g. %s=0,1,2,3,4,5,6,7." % (name, _show(value), name))
        return None
    devices = []
    for item in items:
        if isinstance(item, bool) or not re.match(r"^\d+$", str(item).strip()):
            errors.add(name, value, "%s=%s holds %r, which is not an NPU id. Fix: give whole numbers separated by commas, e.g. %s=0,1,2,3."
                       % (name, _show(value), item, name))
            return None
        devices.append(int(str(item).strip()))
    duplicates = sorted(set(d for d in devices if devices.count(d) > 1))
    if duplicates:
        errors.add(name, value, "%s=%s names NPU %s more than once. Fix: list each NPU id once." % (
            name, _show(value), ", ".join(str(d) for d in duplicates)))
        return None
    return devices


def to_name(name, value, errors, allow_empty=False):
    text = "" if value is None else str(value).strip()
    if not text and allow_empty:
        return ""
    if not SAFE_NAME.match(text):
        errors.add(name, value, "%s=%s is not a usable name. Fix: use letters, digits, '.', '_' and '-', starting with a letter or digit."
                   % (name, _show(value)))
        return None
    return text


def _type_of(spec, name):
    return (spec.get(name) or {}).get("type", "str")


def unknown_settings(settings, spec):
    """Warnings for verl_* variables that are not settings (typos such as verl_trian_tp)."""
    warnings = []
    for name in sorted(settings):
        if name not in spec:
            close = difflib.get_close_matches(name, list(spec), n=1)
            hint = " Did you mean %s?" % close[0] if close else ""
            warnings.append("%s is not a setting of verl.deploy and is ignored.%s" % (name, hint))
    return warnings


def _master_addr(settings, head, errors):
    """The Ray head's address: stated > the head's verl_node_ip > its ansible_host > its detected IPv4."""
    candidates = [
        ("verl_master_addr", settings.get("verl_master_addr")),
        ("verl_node_ip of %s" % head.get("name"), head.get("node_ip")),
        ("ansible_host of %s" % head.get("name"), head.get("ansible_host")),
        ("the default IPv4 of %s" % head.get("name"), head.get("default_ipv4")),
    ]
    for source, value in candidates:
        text = "" if value is None else str(value).strip()
        if not text:
            continue
        if _is_ipv4(text) or (HOSTNAME.match(text) and text != "localhost"):
            return text, source
        errors.add("verl_master_addr", text, "The Ray head's address from %s is %r, which is not an IPv4 address or host name. "
                   "Fix: set verl_master_addr to the head's IPv4 address." % (source, text))
        return None, source
    errors.add("verl_master_addr", "", "The Ray head's address is unknown: verl_master_addr is empty and host %s has no verl_node_ip or "
               "ansible_host. Fix: set verl_master_addr (or verl_node_ip on the head) to the head's IPv4 address." % head.get("name"))
    return None, None


def _is_ipv4(text):
    try:
        ipaddress.IPv4Address(text)
        return True
    except ValueError:
        return False


def build(settings, spec, api_key="", host="", is_head=True, nnodes=1, head=None, mask=None, detected=None):
    """Validate the settings of one host. Returns (config, errors, warnings).

    settings: {verl_name: raw value} (the API key excluded); spec: the argument spec options;
    api_key: the SwanLab key (only its presence is used); host: this inventory host;
    is_head: whether it is the Ray head; nnodes: nodes in the cluster; head: {name, node_ip,
    ansible_host, default_ipv4} of the head host; mask: the `mask` extra var, when given;
    detected: what the pre-check found on this host ({node_ip, socket_ifname, npu_smi_path}), used
    where the user stated nothing (precedence: stated > detected > default).
    """
    detected = detected or {}
    errors = _Errors()
    warnings = unknown_settings(settings, spec)
    head = head or {"name": host}
    value = {}
    for name, option in spec.items():
        if name in SECRET_NAMES:
            continue
        raw = settings.get(name, option.get("default"))
        kind = option.get("type", "str")
        if kind == "int":
            value[name] = to_int(name, raw, errors)
        elif kind == "float":
            value[name] = to_float(name, raw, errors, high=1.0 if name == "verl_gpu_memory_utilization" else None)
        elif kind == "bool":
            value[name] = to_bool(name, raw, errors)
        elif kind == "list":
            if raw is None:
                raw = []
            if not isinstance(raw, (list, tuple)) or not all(isinstance(x, str) for x in raw):
                errors.add(name, raw, "%s=%s is not a list of strings. Fix: give a YAML/JSON list, e.g. %s=[\"a\", \"b\"]." % (name, _show(raw), name))
                raw = None
            value[name] = list(raw) if raw is not None else None
        elif kind == "dict":
            if raw is None:
                raw = {}
            if not isinstance(raw, dict):
                errors.add(name, raw, "%s=%s is not a mapping. Fix: give a YAML/JSON mapping, e.g. {NAME: value}." % (name, _show(raw)))
                raw = None
            value[name] = raw
        else:
            value[name] = raw
            if kind == "str" and raw is not None and not isinstance(raw, str):
                value[name] = str(raw)
            choices = option.get("choices")
            if choices and value[name] not in choices:
                errors.add(name, raw, "%s=%s is not one of %s. Fix: pick one of them." % (name, _show(raw), ", ".join(choices)))

    # The mask: checked raw (not str()-ed above) so that a number that lost its zeros is caught.
    # `mask` is the short name of verl_feature_mask, which defaults to it.
    full_mask = settings.get("verl_feature_mask", "0000000")
    mask_variable = "verl_feature_mask"
    if mask is not None:
        if str(mask) != str(full_mask):
            errors.add("mask", mask, "mask=%s and verl_feature_mask=%s disagree. Fix: give only one of them." % (_show(mask), _show(full_mask)))
        mask_variable = "mask"
    features = None
    try:
        features = decode_mask(full_mask, mask_variable)
    except MaskError as exc:
        errors.add(mask_variable, full_mask, str(exc))

    paths = {}
    for name in REQUIRED_PATHS + OPTIONAL_PATHS:
        before = len(errors)
        paths[name] = to_path(name, settings.get(name, spec.get(name, {}).get("default")), errors, name in REQUIRED_PATHS)
        found = detected.get(CANDIDATES.get(name, "-")) or []
        if len(errors) > before and found and name in REQUIRED_PATHS:
            # Never guess: say what the pre-check found and let the user choose.
            errors[-1]["msg"] += " Found on %s: %s." % (host, ", ".join(found[:10]) + (" ..." if len(found) > 10 else ""))
    scripts = []
    for script in value.get("verl_ascend_env_scripts") or []:
        checked = to_path("verl_ascend_env_scripts", script, errors, False)
        if checked:
            scripts.append(checked)

    devices = to_devices("verl_npu_devices", settings.get("verl_npu_devices", spec["verl_npu_devices"].get("default")), errors)
    project = to_name("verl_project_name", value.get("verl_project_name"), errors)
    experiment = to_name("verl_experiment_name", value.get("verl_experiment_name"), errors, allow_empty=True)
    container = to_name("verl_container_name", value.get("verl_container_name"), errors)
    if not (value.get("verl_image") or "").strip():
        errors.add("verl_image", value.get("verl_image"), "verl_image is empty. Fix: give an image reference, e.g. verl_image=%s."
                   % spec["verl_image"].get("default"))

    ifname = (value.get("verl_socket_ifname") or "").strip() or (detected.get("socket_ifname") or "").strip()
    if ifname and not IFNAME.match(ifname):
        errors.add("verl_socket_ifname", ifname, "verl_socket_ifname=%r is not a network interface name. Fix: give the interface that "
                   "reaches the head (see `ip -br addr`), or leave it empty to detect it." % ifname)
    node_ip = (value.get("verl_node_ip") or "").strip() or (detected.get("node_ip") or "").strip()
    if node_ip and not _is_ipv4(node_ip):
        errors.add("verl_node_ip", node_ip, "verl_node_ip=%r is not an IPv4 address. Fix: give this host's IPv4 address on the network "
                   "that reaches the head, or leave it empty to detect it." % node_ip)
    master_addr, master_source = _master_addr(settings, head, errors)
    if value.get("verl_ray_port") and value.get("verl_ray_port") == value.get("verl_ray_dashboard_port"):
        errors.add("verl_ray_dashboard_port", value["verl_ray_dashboard_port"], "verl_ray_dashboard_port equals verl_ray_port (%d). "
                   "Fix: give them different ports (defaults 8260 and 9182)." % value["verl_ray_port"])

    extra_volumes = []
    for volume in value.get("verl_container_extra_volumes") or []:
        parts = volume.split(":")
        if len(parts) not in (2, 3) or not all(p.startswith("/") for p in parts[:2]) or (len(parts) == 3 and parts[2] not in ("ro", "rw")):
            errors.add("verl_container_extra_volumes", volume, "verl_container_extra_volumes holds %r, which is not a bind mount. Fix: "
                       "write host_path:container_path or host_path:container_path:ro, both absolute." % volume)
        else:
            extra_volumes.append(volume)

    for env_name, env_value in (value.get("verl_extra_env") or {}).items():
        if not ENV_NAME.match(str(env_name)):
            errors.add("verl_extra_env", env_name, "verl_extra_env has %r, which is not an environment variable name. Fix: use "
                       "letters, digits and _." % env_name)
        elif env_name.upper().startswith("SWANLAB_API_KEY"):
            errors.add("verl_extra_env", env_name, "verl_extra_env must not carry the SwanLab key: it would be written into "
                       "start_verl.sh. Fix: give it as verl_swanlab_api_key (a secret).")
        elif isinstance(env_value, (dict, list)) or env_value is None:
            errors.add("verl_extra_env", env_name, "verl_extra_env.%s must be a string or a number. Fix: give a plain value." % env_name)
    for argument in value.get("verl_ray_start_args") or []:
        if not argument.startswith("--"):
            errors.add("verl_ray_start_args", argument, "verl_ray_start_args holds %r, which is not a ray start option. Fix: give "
                       "options such as --num-cpus=16, one per list item." % argument)
    for override in value.get("verl_extra_overrides") or []:
        if not HYDRA_OVERRIDE.match(override):
            errors.add("verl_extra_overrides", override, "verl_extra_overrides holds %r, which is not a Hydra override. Fix: write "
                       "key=value, +key=value or ++key=value." % override)

    swanlab = None
    if value.get("verl_swanlab_enabled"):
        mode = value.get("verl_swanlab_mode")
        swan_host = (value.get("verl_swanlab_host") or "").strip()
        if mode in NEEDS_LOGIN:
            if not swan_host:
                errors.add("verl_swanlab_host", "", "SwanLab is on (verl_swanlab_enabled=true, mode %s) but verl_swanlab_host is empty. "
                           "Fix: give the SwanLab server, e.g. -e verl_swanlab_host=http://192.168.1.100:8000, or turn SwanLab off." % mode)
            if not (api_key or "").strip():
                errors.add("verl_swanlab_api_key", "(empty)", "SwanLab is on (verl_swanlab_enabled=true, mode %s) but verl_swanlab_api_key "
                           "is empty. Fix: give the key from a vault or an AWX credential (never on a shared command line), or "
                           "turn SwanLab off." % mode)
        if swan_host and not SWANLAB_HOST.match(swan_host):
            errors.add("verl_swanlab_host", swan_host, "verl_swanlab_host=%r is not an http(s) URL. Fix: give it with its scheme, e.g. "
                       "http://192.168.1.100:8000 (without a scheme SwanLab assumes https)." % swan_host)
        swanlab = {
            "host": swan_host.rstrip("/"),
            "mode": mode,
            "workspace": value.get("verl_swanlab_workspace") or "",
            "log_dir": paths.get("verl_swanlab_log_dir"),
            "api_key_file": paths.get("verl_swanlab_api_key_file"),
            # Only a login mode uses the key. verl logs in whenever SWANLAB_API_KEY is set, which in offline or
            # local mode would send the run to a server it cannot reach; so there the key is not passed on.
            "needs_key": mode in NEEDS_LOGIN,
        }
        if mode not in NEEDS_LOGIN and (api_key or "").strip():
            warnings.append("verl_swanlab_api_key is set but verl_swanlab_mode is %s, which needs no login: the key is not "
                            "written to any node and not passed to the training (verl would log in with it)." % mode)
        if not SAFE_NAME.match(swanlab["workspace"]):
            errors.add("verl_swanlab_workspace", swanlab["workspace"], "verl_swanlab_workspace=%r is not a usable name. Fix: use letters, "
                       "digits, '.', '_' and '-'." % swanlab["workspace"])

    # The parallelism rules need every number they read; they still run when only other
    # settings (a path, the mask) are wrong, so that one run reports everything.
    needed = ("verl_train_tp", "verl_train_pp", "verl_gen_tp", "verl_train_batch_size", "verl_ppo_mini_batch_size",
              "verl_n_resp_per_prompt", "verl_ppo_micro_batch_size_per_gpu", "verl_max_response_length",
              "verl_overlong_buffer_len", "verl_model_num_layers", "verl_model_num_attention_heads", "verl_model_num_kv_heads")
    if devices and all(value.get(name) is not None for name in needed):
        enabled = features["enabled"] if features else {}
        npu_per_node = len(devices)
        checks_input = {
            "train_tp": value["verl_train_tp"], "train_pp": value["verl_train_pp"], "gen_tp": value["verl_gen_tp"],
            "npu_per_node": npu_per_node, "nnodes": nnodes, "world_size": npu_per_node * nnodes,
            "train_batch_size": value["verl_train_batch_size"], "ppo_mini_batch_size": value["verl_ppo_mini_batch_size"],
            "n_resp_per_prompt": value["verl_n_resp_per_prompt"],
            "ppo_micro_batch_size_per_gpu": value["verl_ppo_micro_batch_size_per_gpu"],
            "max_response_length": value["verl_max_response_length"], "overlong_buffer_len": value["verl_overlong_buffer_len"],
            "num_layers": value["verl_model_num_layers"], "num_attention_heads": value["verl_model_num_attention_heads"],
            "num_kv_heads": value["verl_model_num_kv_heads"],
            "dynamic_bsz": enabled.get("dynamic_bsz", False), "recompute": enabled.get("recompute", False),
            "vpp": enabled.get("vpp", False),
        }
        for problem in check_parallelism(checks_input):
            errors.add(problem["variable"], problem["value"], problem["msg"])
    if errors:
        return None, list(errors), warnings
    npu_per_node = len(devices)
    warnings.extend(features["warnings"])

    config = {
        "host": host,
        "role": "head" if is_head else "worker",
        "is_head": bool(is_head),
        "nnodes": nnodes,
        "npu_devices": devices,
        "npu_devices_csv": ",".join(str(d) for d in devices),
        "npu_per_node": npu_per_node,
        "world_size": npu_per_node * nnodes,
        "data_parallel_size": npu_per_node * nnodes // (value["verl_train_tp"] * value["verl_train_pp"]),
        "master_addr": master_addr,
        "master_addr_source": master_source,
        "node_ip": node_ip,
        "socket_ifname": ifname,
        "ray_port": value["verl_ray_port"],
        "dashboard_port": value["verl_ray_dashboard_port"],
        "ray_wait_timeout": value["verl_ray_wait_timeout"],
        "ray_join_retries": value["verl_ray_join_retries"],
        "ray_join_delay": value["verl_ray_join_delay"],
        "ray_start_args": value["verl_ray_start_args"],
        "workdir": paths["verl_workdir"],
        "model_path": paths["verl_model_path"],
        "train_file": paths["verl_train_file"],
        "test_file": paths["verl_test_file"],
        "ckpts_dir": paths["verl_ckpts_dir"],
        "log_dir": paths["verl_log_dir"],
        "output_dir": paths["verl_output_dir"],
        "train_steps": value["verl_train_steps"],
        "train_batch_size": value["verl_train_batch_size"],
        "ppo_mini_batch_size": value["verl_ppo_mini_batch_size"],
        "ppo_micro_batch_size_per_gpu": value["verl_ppo_micro_batch_size_per_gpu"],
        "ref_log_prob_micro_batch_size_per_gpu": value["verl_ref_log_prob_micro_batch_size_per_gpu"],
        "rollout_log_prob_micro_batch_size_per_gpu": value["verl_rollout_log_prob_micro_batch_size_per_gpu"],
        "lr": format_float(value["verl_lr"]),
        "lr_warmup_steps": value["verl_lr_warmup_steps"],
        "train_tp": value["verl_train_tp"],
        "train_pp": value["verl_train_pp"],
        "gen_tp": value["verl_gen_tp"],
        "n_resp_per_prompt": value["verl_n_resp_per_prompt"],
        "max_prompt_length": value["verl_max_prompt_length"],
        "max_response_length": value["verl_max_response_length"],
        "overlong_buffer_len": value["verl_overlong_buffer_len"],
        "gpu_memory_utilization": format_float(value["verl_gpu_memory_utilization"]),
        "test_freq": value["verl_test_freq"],
        "save_freq": value["verl_save_freq"],
        "total_epochs": value["verl_total_epochs"],
        "project_name": project,
        "experiment_name": experiment,
        "extra_overrides": value["verl_extra_overrides"],
        "extra_env": {str(k): str(v) for k, v in sorted((value["verl_extra_env"] or {}).items())},
        "ascend_env_scripts": scripts,
        "image": value["verl_image"].strip(),
        "container_name": container,
        "container": {
            "privileged": bool(value["verl_container_privileged"]),
            "devices": ["/dev/davinci%d" % d for d in devices] + ["/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc"],
            "volumes": container_volumes(paths, (value.get("verl_npu_smi_path") or "").strip() or detected.get("npu_smi_path") or "") + extra_volumes,
        },
        "docker_timeout": value["verl_docker_timeout"],
        "npu_smi_path": (value.get("verl_npu_smi_path") or "").strip(),
        "restart": bool(value["verl_restart"]),
        "train_start_timeout": value["verl_train_start_timeout"],
        "host_stage_dir": paths["verl_host_stage_dir"],
        "stop_containers": bool(value["verl_stop_containers"]),
        "status_log_lines": value["verl_status_log_lines"],
        "swanlab_enabled": bool(value["verl_swanlab_enabled"]),
        "swanlab": swanlab,
        "features": features,
    }
    return config, [], warnings


# The Ascend driver pieces a training container reads from the host (read-only).
DRIVER_MOUNTS = ("/usr/local/Ascend/driver", "/usr/local/dcmi", "/etc/ascend_install.info")


def container_volumes(paths, npu_smi_path):
    """Bind mounts of a new container: the driver (read-only) and, at the same paths as on the host,
    the model, the datasets' folders, checkpoints and logs (an entry inside another is left out)."""
    data = [paths["verl_model_path"], _parent(paths["verl_train_file"]), _parent(paths["verl_test_file"]),
            paths["verl_ckpts_dir"], paths["verl_log_dir"]]
    if paths.get("verl_swanlab_log_dir"):
        data.append(paths["verl_swanlab_log_dir"])
    kept = []
    for path in sorted(set(p for p in data if p)):
        if not any(path == k or path.startswith(k.rstrip("/") + "/") for k in kept):
            kept.append(path)
    driver = list(DRIVER_MOUNTS) + ([npu_smi_path] if npu_smi_path else [])
    return ["%s:%s:ro" % (p, p) for p in driver] + ["%s:%s:rw" % (p, p) for p in kept]


def _parent(path):
    return path.rsplit("/", 1)[0] or "/"


# What status.yml and stop.yml need: which container, and where in it the control script is.
IDENTITY = ("verl_container_name", "verl_workdir", "verl_status_log_lines", "verl_status_stall_seconds", "verl_stop_containers")


def identity(settings, spec):
    """The deployment's identity, checked alone: (identity, errors, warnings).

    Day-2 playbooks act on a deployment, not on a training's inputs: a dataset that has gone or a key
    not given again must not stop them. Only these settings are read; the others are not checked.
    """
    errors = _Errors()
    warnings = unknown_settings(settings, spec)

    def raw(name):
        return settings.get(name, spec.get(name, {}).get("default"))

    result = {
        "container_name": to_name("verl_container_name", raw("verl_container_name"), errors),
        "workdir": to_path("verl_workdir", raw("verl_workdir"), errors, False),
        "status_log_lines": to_int("verl_status_log_lines", raw("verl_status_log_lines"), errors),
        "status_stall_seconds": to_int("verl_status_stall_seconds", raw("verl_status_stall_seconds"), errors),
        "stop_containers": to_bool("verl_stop_containers", raw("verl_stop_containers"), errors),
    }
    return result, errors, warnings
