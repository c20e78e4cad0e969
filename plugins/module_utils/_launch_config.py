# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Private to the verl.deploy collection: may change without notice.
#
# Turns the user's verl_* settings (raw: strings from AWX surveys and `-e k=v`, numbers from YAML)
# into the launch configuration the templates render, or into a list of errors that each name the
# variable, the value (shortened) and the fix. Everything about a setting comes from the settings
# table: the verl role's meta/argument_specs.yml (type, default, choices) and meta/setting_rules.yml
# (the rule and the bounds). The launch configuration holds every setting under its name without
# `verl_` (or the table's `output` name), plus what is computed from several of them.
from __future__ import annotations

import difflib
import os
import re

from ansible_collections.verl.deploy.plugins.module_utils import _environment as environment
from ansible_collections.verl.deploy.plugins.module_utils import _hydra_overrides as hydra_overrides
from ansible_collections.verl.deploy.plugins.module_utils import _inputs as inputs
from ansible_collections.verl.deploy.plugins.module_utils import _secrets as secrets
from ansible_collections.verl.deploy.plugins.module_utils import _trackers as trackers_table
from ansible_collections.verl.deploy.plugins.module_utils import _algorithms as algorithms
from ansible_collections.verl.deploy.plugins.module_utils import _versions as versions
from ansible_collections.verl.deploy.plugins.module_utils._chips import FAMILIES, chip_refused, choose_image, logical_ids
from ansible_collections.verl.deploy.plugins.module_utils._config_checks import HCCL_BUFFSIZE_DEFAULT_MB, check_parallelism, hccl_buffsize_need
from ansible_collections.verl.deploy.plugins.module_utils._features import MaskError, decode_mask
from ansible_collections.verl.deploy.plugins.module_utils._training_state import FAIL_ON

# An http(s) URL of printable ASCII, without quotes, `$`, backquotes or backslashes.
SWANLAB_HOST = re.compile(r"https?://[A-Za-z0-9.:@%_~!&()*+,;=\[\]-]+(/[A-Za-z0-9./:@%_~!&()*+,;=?#\[\]-]*)?")
NEEDS_LOGIN = ("cloud", "online")
# A variable whose name looks like the key's is refused (its value never shown): a mistyped key
# would otherwise be ignored and printed wherever variables are.
SECRET_LOOKALIKE = re.compile(r"verl_.*(api|key|token|secret|passw|cred).*", re.IGNORECASE)
PATH_EXAMPLES = {
    "verl_model_path": "/mnt/public/Qwen3-8B",
    "verl_train_file": "/mnt/project/data/dapo-math-17k.parquet",
    "verl_test_file": "/mnt/project/data/aime-2024.parquet",
    "verl_ckpts_dir": "/mnt/project/ckpts/qwen3-8b-dapo",
    "verl_resume_from_path": "/mnt/project/ckpts/qwen3-8b-dapo/global_step_40",
}
# verl takes the step to resume at from the folder's name (int(path.split("global_step_")[-1]) in
# RayPPOTrainer._load_checkpoint, verl/trainer/ppo/ray_trainer.py), so nothing may follow the number.
CHECKPOINT_FOLDER = re.compile(r"global_step_[0-9]+")
# Which list of the pre-check's findings to show when a required path is missing.
CANDIDATES = {"verl_model_path": "models", "verl_train_file": "datasets", "verl_test_file": "datasets"}
# Variables start_verl.sh and run_training.sh set themselves: verl_extra_env may not replace them
# (tests/test_hostile_inputs.py checks the list against the templates).
SCRIPT_VARIABLES = (
    "ROLE", "ASCEND_RT_VISIBLE_DEVICES", "NPU_PER_NODE", "NNODES", "MASTER_ADDR", "MASTER_IP", "RAY_PORT", "DASHBOARD_PORT",
    "CURRENT_IP", "SOCKET_IFNAME", "RAY_WAIT_TIMEOUT", "RAY_JOIN_RETRIES", "RAY_JOIN_DELAY", "RAY_JOIN_TIMEOUT", "RAY_START_ARGS", "RAY_ADDRESS",
    "HCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "TP_SOCKET_IFNAME", "SWANLAB_MODE", "SWANLAB_WORKSPACE", "SWANLAB_LOG_DIR",
    "SWANLAB_HOST", "SWANLAB_API_HOST", "SWANLAB_WEB_HOST", "SWANLAB_API_KEY", "SWANLAB_API_KEY_FILE", "PROJECT_NAME",
    "EXPERIMENT_NAME", "MODEL_PATH", "TRAIN_FILE", "TEST_FILE", "CKPTS_DIR", "LOG_DIR", "LOG_FILE", "LOG_PREFIX", "WORKDIR", "LOGGER", "TENSORBOARD_DIR",
    "RESUME_FROM_PATH", "TRACKER_KEYS_DIR",
    "PATH", "HOME", "SECONDS", "RANDOM", "LINENO", "UID", "EUID", "CANN_SCRIPTS", "CANN_PRESET",
)
# The Ascend driver pieces a training container reads from the host (read-only).
DRIVER_MOUNTS = ("/usr/local/Ascend/driver", "/usr/local/dcmi", "/etc/ascend_install.info")
PARALLELISM_INPUTS = {
    "train_tp": "verl_train_tp", "train_pp": "verl_train_pp", "gen_tp": "verl_gen_tp",
    "train_batch_size": "verl_train_batch_size", "ppo_mini_batch_size": "verl_ppo_mini_batch_size",
    "n_resp_per_prompt": "verl_n_resp_per_prompt", "ppo_micro_batch_size_per_gpu": "verl_ppo_micro_batch_size_per_gpu",
    "ref_log_prob_micro_batch_size_per_gpu": "verl_ref_log_prob_micro_batch_size_per_gpu",
    "rollout_log_prob_micro_batch_size_per_gpu": "verl_rollout_log_prob_micro_batch_size_per_gpu",
    "max_prompt_length": "verl_max_prompt_length", "max_response_length": "verl_max_response_length",
    "overlong_buffer_len": "verl_overlong_buffer_len", "algorithm": "verl_algorithm",
}
# The model's numbers the shape rules read, from its config.json as the pre-check read it (_model.py): no settings
# repeat them, so they cannot disagree with the model.
MODEL_INPUTS = ("num_layers", "num_attention_heads", "num_kv_heads", "max_position_embeddings", "vocab_size", "num_experts",
                "hidden_size", "experts_per_token")
# The settings that repeated them (up to 0.x): named when an inventory still gives one.
READ_FROM_THE_MODEL = ("verl_model_num_layers", "verl_model_num_attention_heads", "verl_model_num_kv_heads")


# The training the scripts start and the playbooks look for, per verl_algorithm and verl profile: verl's entry
# point (python3 -m, run from verl_workdir), its file in the checkout and its Hydra config (relative to the module's
# own folder, as @hydra.main reads --config-path), from the algorithm and release tables
# (plugins/module_utils/_algorithms.py, _versions.py); the prefix of its log's name. In the validated configuration
# (its `training` part), not as role variables that an inventory or -e could replace.
# A training log is <verl_log_dir>/verl_<model>_<experiment>_<date>.log (log_name_prefix: the model folder's name);
# the readers (verl_control.sh's newest log, logs.yml's bundle, the where-to-look lines) take every log of this form,
# `LOG_PREFIX*.log`, whatever the model, so a training started before the model changed is still found.
LOG_PREFIX = "verl_"
# The trackers (verl's trainer.logger): every one verl takes (_trackers.py).
LOGGERS = trackers_table.LOGGERS


def training_entry(algorithm, profile=versions.DEFAULT_PROFILE, modules=None, model_path="", hccl=None):
    """{module, config_name, file, log_prefix, log_name, pattern, label, summary, overrides, npu_lines, profile} of the training
    (log_prefix: what every training log's name starts with, whatever the model; log_name: what this one's starts with):
    pattern is verl_control.sh's pgrep -f pattern, which finds a training of any algorithm and profile (after
    verl_algorithm or verl_version changed, the one that still runs is found; `modules` replaces the list in tests);
    label, summary and overrides are the algorithm table's (run_training.sh's lines for it, those the profile renders),
    npu_lines the release table's Ascend lines for the profile, env what start_verl.sh exports for the release (and
    HCCL_BUFFSIZE where the rollout's expert parallelism needs more than CANN's default: hccl, hccl_buffsize_need's;
    verl_extra_env's own value is exported after it and wins, checked by C26)."""
    module, config_name = versions.entry_of(algorithm, profile)
    modules = modules or versions.all_entry_modules()
    entry = algorithms.algorithm(algorithm)
    return {"module": module, "config_name": config_name, "file": module.replace(".", "/") + ".py", "log_prefix": LOG_PREFIX,
            "log_name": log_name_prefix(model_path),
            "pattern": "-m (%s)( |$)" % "|".join(re.escape(m) for m in modules),
            "label": entry["label"], "summary": entry["summary"], "profile": profile,
            "overrides": versions.lines_for(entry["overrides"], profile),
            "npu_lines": versions.lines_for(versions.NPU_LINES, profile),
            "env": dict(versions.release(profile)["env"], **({"HCCL_BUFFSIZE": str(hccl["mb"])}
                                                             if hccl and hccl["mb"] > HCCL_BUFFSIZE_DEFAULT_MB else {}))}


def model_label(model_path, separator="-"):
    """The model folder's name, lower-case, each run of other characters than a-z, 0-9 and `.` one `separator`
    (/mnt/public/Qwen3-8B: qwen3-8b), at most 48 characters; `model` when nothing is left."""
    name = (model_path or "").rstrip("/").rsplit("/", 1)[-1].lower()
    label = re.sub(r"[^a-z0-9.]+", separator, name).strip(separator + ".")[:48].strip(separator + ".")
    return label or "model"


def log_name_prefix(model_path):
    """What run_training.sh's log name starts with: verl_<model>_ (Qwen3-8B: verl_qwen3_8b_); LOG_PREFIX matches it."""
    return "%s%s_" % (LOG_PREFIX, model_label(model_path, "_"))


def experiment_name(model_path, algorithm, mask, nnodes, npu_per_node):
    """The default experiment name (trainer.experiment_name): the model, the algorithm, the feature mask and nodes x
    NPUs per node, e.g. qwen3-8b-dapo-m0000000-3x8, so that a tracker groups the runs of one setup. No date: a training
    started again (a crash, a restart, a resume) logs under the same name, and TensorBoard's folder is the same one."""
    return "%s-%s-m%s-%dx%d" % (model_label(model_path), algorithm, mask, nnodes, npu_per_node)


def trackers(loggers, swanlab_enabled):
    """trainer.logger: console, then the verl_loggers given (each once, in LOGGERS' order), with swanlab when
    verl_swanlab_enabled is true (its shorthand)."""
    wanted = set(loggers or ()) | {"console"} | ({"swanlab"} if swanlab_enabled else set())
    return [name for name in LOGGERS if name in wanted]


def tensorboard(root, log_dir, project, experiment):
    """{root, dir}: dir is TENSORBOARD_DIR, where verl's TensorBoard logger writes (verl/utils/tracking.py _TensorboardAdapter;
    its own default is tensorboard_log/<project>/<experiment> below the working directory, inside the container): the
    same layout below root, verl_tensorboard_dir, else <verl_log_dir>/tensorboard (mounted at the same path on every node)."""
    root = (root or log_dir.rstrip("/") + "/tensorboard").rstrip("/")
    return {"root": root, "dir": "%s/%s/%s" % (root, project, experiment)}


def table(spec, rules):
    """One entry per setting: its argument spec merged with its rule and the bounds of its type."""
    types = (rules or {}).get("types") or {}
    entries = (rules or {}).get("settings") or {}
    merged = {}
    for name, option in spec.items():
        kind = option.get("type", "str")
        entry = dict(types.get(kind) or {})
        entry.update(option)
        entry.update(entries.get(name) or {})
        entry.setdefault("type", kind)
        merged[name] = entry
    return merged


def raw_value(name, merged, settings, context):
    """What the user gave, else the default (or what the default follows: another setting, or `mask`)."""
    if name in settings:
        return settings[name]
    follows = merged[name].get("default_from")
    if follows in merged:
        return raw_value(follows, merged, settings, context)
    if follows:
        return context.get("mask") if context.get("mask") is not None else "0000000"
    return merged[name].get("default")


# --- The check of each rule: (name, entry, value, errors, context) -> normalised value or None.

def _rule_path(name, entry, value, errors, context):
    return inputs.to_path(name, value, errors, required=entry.get("required", False), use=entry.get("use"),
                          empty=entry.get("empty", False), example=PATH_EXAMPLES.get(name, entry.get("default") or "/mnt/project/verl"))


def _rule_npu_smi(name, entry, value, errors, context):
    """npu-smi on the host, bind-mounted read-only at the same path: a file named npu-smi (never a folder, a
    program of the system such as python3, or a socket of /run), outside the kernel's and init's trees."""
    path = inputs.to_path(name, value, errors, empty=True, example="/usr/local/sbin/npu-smi")
    if not path:
        return path
    if path.rsplit("/", 1)[-1] != "npu-smi" or any(path == t or path.startswith(t + "/") for t in inputs.SPECIAL_TREES):
        errors.add(name, value, "%s=%s is not the npu-smi program: it is bind-mounted into the container, so it must be a file "
                   "named npu-smi outside /dev, /proc, /run, /sys and /var/run (not a folder, a socket or another program). Fix: "
                   "give the path `command -v npu-smi` prints on the host, e.g. %s=/usr/local/sbin/npu-smi, or leave it empty to "
                   "detect it." % (name, inputs.show(path), name))
        return None
    return path


def _rule_paths(name, entry, value, errors, context):
    checked = [inputs.to_path(name, item, errors, what="%s item" % name) for item in value]
    return None if None in checked else checked


def _rule_name(name, entry, value, errors, context):
    return inputs.to_name(name, value, errors, entry.get("max_length", 128), empty=entry.get("empty", False))


def _optional(valid, problem):
    """A rule for an optional one-word value: empty, or `valid(text)`; else the error says `problem` (with its fix)."""
    def rule(name, entry, value, errors, context):
        text = value.strip()
        if text and not valid(text):
            errors.add(name, text, "%s=%s %s." % (name, inputs.show(text), problem))
            return None
        return text
    return rule


_rule_url = _optional(SWANLAB_HOST.fullmatch, "is not an http(s) URL. Fix: give it with its scheme, e.g. http://192.168.1.100:8000 "
                      "(without a scheme SwanLab assumes https)")


def _is_address(text):
    """An IPv4 address or a DNS name other than localhost (the head must be reachable from every node)."""
    return inputs.is_ipv4(text) or bool(inputs.DNS_NAME.fullmatch(text) and text != "localhost")


def _written_as_address(rule):
    """`rule`, preceded by the check that a value written like an IPv4 address is one in dotted decimal (a legacy
    inet_aton form such as 010.0.0.5 or 167772165 connects elsewhere than it reads, or nowhere)."""
    def checked(name, entry, value, errors, context):
        legacy = inputs.legacy_address(value.strip())
        if legacy:
            errors.add(name, value, "%s=%s %s. Fix: write the address in dotted decimal%s." % (
                name, inputs.show(value.strip()), legacy[0], ", e.g. %s=%s" % (name, legacy[1]) if legacy[1] else
                " (four numbers from 0 to 255 without leading zeros)"))
            return None
        return rule(name, entry, value, errors, context)
    return checked


_rule_address = _written_as_address(_optional(
    _is_address, "is not an IPv4 address or host name. Fix: give the head's IPv4 address, or leave it empty to use the head's "
    "inventory address"))
_rule_ipv4 = _written_as_address(_optional(
    inputs.is_ipv4, "is not an IPv4 address. Fix: give this host's IPv4 address on the network that reaches the head, or leave "
    "it empty to detect it"))
_rule_ifname = _optional(inputs.IFNAME.fullmatch, "is not a network interface name. Fix: give the interface that reaches the head "
                         "(see `ip -br addr`), or leave it empty to detect it")


def _rule_image(name, entry, value, errors, context):
    text = value.strip()
    if not text and entry.get("empty"):
        return text
    problem = inputs.image_problem(text) if text else "is empty"
    if problem:
        errors.add(name, value, "%s=%s %s. Fix: give an image reference, e.g. %s=%s." % (
            name, inputs.show(value), problem, name, entry.get("default") or "quay.io/ascend/verl:tag"))
        return None
    return text


def _rule_images(name, entry, value, errors, context):
    """{chip family: image reference}, each family one that the chip detection knows."""
    checked = {}
    for family, image in value.items():
        text = image.strip() if isinstance(image, str) else ""
        problem = None if family in FAMILIES else "is not a chip family this collection detects (%s)" % ", ".join(FAMILIES)
        problem = problem or (inputs.image_problem(text) if text else "is empty" if isinstance(image, str) else "is not a string")
        if problem:
            errors.add(name, {family: image}, "%s has %s: %s, which %s. Fix: map %s to image references, e.g. %s: %s." % (
                name, inputs.show(family), inputs.show(image), problem, " and ".join(FAMILIES), "a3",
                "quay.io/ascend/verl:verl-8.3.rc1-a3-ubuntu22.04-py3.11-v0.7.0"))
            return None
        checked[family] = text
    return checked


def _rule_requirement(name, entry, value, errors, context):
    text = value.strip()
    if not text or text.startswith("-"):
        errors.add(name, value, "%s=%s is not a pip requirement. Fix: give a package, e.g. %s=swanlab==0.10.3 (pip options go "
                   "into verl_swanlab_pip_args)." % (name, inputs.show(value), name))
        return None
    return text


def _each_item(valid, problem):
    """A rule for a list: every item `valid(item)`; else the error names the first bad item and says `problem`."""
    def rule(name, entry, value, errors, context):
        for item in value:
            if not valid(item):
                errors.add(name, item, "%s holds %s, which %s." % (name, inputs.show(item), problem))
                return None
        return value
    return rule


def _rule_ray_args(name, entry, value, errors, context):
    """Each item a `ray start` option; `--temp-dir=DIR` absolute, as Ray requires ("temp_dir must be absolute path or
    None.", ray #36431: before it a relative one hung the start until its time-out, ray #30650)."""
    for item in value:
        if not item.startswith("--"):
            errors.add(name, item, "%s holds %s, which is not a ray start option. Fix: give options such as --num-cpus=16, one "
                       "per list item." % (name, inputs.show(item)))
            return None
        option, _sign, given = item.partition("=")
        if option == "--temp-dir" and not given.startswith("/"):
            errors.add(name, item, "%s holds %s: Ray's temporary folder must be an absolute path of the training container "
                       "(`ray start` refuses it: \"temp_dir must be absolute path or None.\"). Fix: write it as --temp-dir=/data/ray, "
                       "one list item." % (name, inputs.show(item)))
            return None
    return value


def _rule_loggers(name, entry, value, errors, context):
    """Trackers of LOGGERS only, each once: a list, or one string of names separated by commas or spaces (-e
    verl_loggers=console,tensorboard; an AWX multiple-choice answer; a list written out, ["console", "tensorboard"])."""
    if isinstance(value, str):
        text = inputs.to_text(name, value, errors, entry.get("max_length", 1024))
        if text is None:
            return None
        value = [part for part in re.split(r"[\s,]+", text.strip().strip("[]")) if part.strip("\"'")]
        value = [part.strip("\"'") for part in value]
    value = _coerce_list(name, entry, value, errors)
    if value is None:
        return None
    for item in value:
        if item not in LOGGERS:
            errors.add(name, item, "%s holds %s, which is not a tracker verl takes. Fix: give a list of %s, e.g. -e "
                       "%s=console,tensorboard (in YAML a list)." % (name, inputs.show(item), ", ".join(LOGGERS), name))
            return None
    return [item for index, item in enumerate(value) if item not in value[:index]]


def _rule_fail_on(name, entry, value, errors, context):
    """What status.yml fails on: alarms of FAIL_ON (status_report's), each once, as a list or a string of names separated
    by commas or spaces (-e verl_status_fail_on=crashed,stalled); [] or an empty string for none."""
    if isinstance(value, str):
        text = inputs.to_text(name, value, errors, entry.get("max_length", 1024))
        if text is None:
            return None
        value = [part.strip("\"'") for part in re.split(r"[\s,]+", text.strip().strip("[]")) if part.strip("\"'")]
    value = _coerce_list(name, entry, value, errors)
    for item in value or ():
        if item not in FAIL_ON:
            errors.add(name, item, "%s holds %s, which is not an alarm of status.yml (%s). Fix: give a list of them, e.g. -e "
                       "%s=crashed,stalled (in YAML a list), or [] to fail on none." % (name, inputs.show(item), ", ".join(FAIL_ON), name))
            return None
    return None if value is None else [item for index, item in enumerate(value) if item not in value[:index]]


def _rule_overrides(name, entry, value, errors, context):
    """Each line parsed with Hydra's own parser and judged by its key and value (_hydra_overrides.py)."""
    for item in value:
        problem = hydra_overrides.override_problem(item)
        if problem:
            errors.add(name, item, "%s holds %s, which %s." % (name, inputs.show(item), problem))
            return None
    return value


def _rule_volumes(name, entry, value, errors, context):
    for volume in value:
        parts = volume.split(":")
        shape = len(parts) in (2, 3) and (len(parts) == 2 or parts[2] in ("ro", "rw"))
        problem = None if shape else "is not host_path:container_path[:ro]"
        for part, use in zip(parts[:2], ("mount", "mount")):
            problem = problem or inputs.path_problem(part, use)
        if problem:
            errors.add(name, volume, "%s holds %s, which %s. Fix: write host_path:container_path or host_path:container_path:ro, "
                       "both absolute, normalised and not a system folder." % (name, inputs.show(volume), problem.split(". Fix")[0]))
            return None
    return value


def _rule_env(name, entry, value, errors, context):
    for env_name, env_value in value.items():
        problem = environment.env_name_problem(env_name, SCRIPT_VARIABLES)
        if not problem and (isinstance(env_value, (dict, list, bool)) or env_value is None):
            problem = "must be a string or a number. Fix: give a plain value"
        problem = problem or environment.env_value_problem(env_value)
        if problem:
            errors.add(name, env_name, "%s has %s, which %s." % (name, inputs.show(env_name), problem))
            return None
    return {str(k): str(v) for k, v in sorted(value.items())}


def _rule_devices(name, entry, value, errors, context):
    items = value
    if isinstance(value, int) and not isinstance(value, bool):
        items = [value]
    elif isinstance(value, str):
        text = inputs.to_text(name, value, errors, 512)
        if text is None:
            return None
        items = [part.strip() for part in text.replace(" ", ",").split(",") if part.strip()]
    if not isinstance(items, (list, tuple)) or not items:
        errors.add(name, value, "%s=%s lists no NPU. Fix: give the NPU ids to train on, e.g. %s=0,1,2,3,4,5,6,7." % (
            name, inputs.show(value), name))
        return None
    if len(items) > entry.get("max_items", 64):
        errors.add(name, value, "%s=%s lists more than %d NPUs. Fix: give this host's NPU ids." % (
            name, inputs.show(value), entry.get("max_items", 64)))
        return None
    devices = []
    for item in items:
        text = str(item).strip() if isinstance(item, (int, str)) and not isinstance(item, bool) else ""
        if not re.fullmatch(r"\d{1,4}", text) or int(text) > entry.get("max", 1023):
            errors.add(name, value, "%s=%s holds %s, which is not an NPU id. Fix: give whole numbers from 0 to %d separated by "
                       "commas, e.g. %s=0,1,2,3." % (name, inputs.show(value), inputs.show(item), entry.get("max", 1023), name))
            return None
        devices.append(int(text))
    # An NPU listed twice is a typo (0,0,1,2 for 0,1,2,3?): used once, the host would train on fewer NPUs than listed and a
    # later rule would refuse the layout without naming this setting.
    twice = sorted(set(d for d in devices if devices.count(d) > 1))
    if twice:
        errors.add(name, value, "%s=%s lists NPU %s more than once (%d ids, %d NPUs). Fix: list each NPU once, e.g. %s=%s." % (
            name, inputs.show(value), ", ".join(str(d) for d in twice), len(devices), len(set(devices)), name,
            ",".join(str(d) for d in sorted(set(devices)))))
        return None
    # The Ascend runtime takes only ascending device lists, each device once (CANN: ASCEND_RT_VISIBLE_DEVICES):
    # the NPUs are used in that order, and the summary says so when the order given was another.
    normalised = sorted(devices)
    if normalised != devices:
        context["npu_devices_note"] = (
            "verl_npu_devices=%s is used as %s: the Ascend runtime takes the NPUs in ascending order."
            % (inputs.show(",".join(str(d) for d in devices)), ",".join(str(d) for d in normalised)))
    return normalised


def _rule_mask(name, entry, value, errors, context):
    """Checked raw (a number that lost its zeros is caught); `mask` is the short name of verl_feature_mask."""
    mask, variable = context.get("mask"), "verl_feature_mask"
    if mask is not None:
        if inputs.oversized(mask) or str(mask)[:16] != str(value)[:16] or len(str(mask)) > 16:
            errors.add("mask", mask, "mask=%s and verl_feature_mask=%s disagree. Fix: give only one of them." % (
                inputs.show(mask), inputs.show(value)))
        variable = "mask"
    if isinstance(value, str) and inputs.to_text(variable, value, errors, 16) is None:
        return None
    try:
        return decode_mask(value, variable)
    except MaskError as exc:
        errors.add(variable, value, str(exc))
        return None


def _rule_version(name, entry, value, errors, context):
    """A profile of the release table (plugins/module_utils/_versions.py), or empty: the image's release."""
    text = value.strip()
    if not text or text in versions.PROFILES:
        return text
    near = versions.profile_of(text)
    errors.add(name, value, "%s=%s is not a verl release this collection renders for. Fix: give one of %s%s, or leave it empty "
               "to take the release of the image (docs/versions.md)." % (
                   name, inputs.show(value), ", ".join(versions.PROFILES),
                   " (verl %s is profile %s: %s=%s)" % (text, near, name, near) if near else ""))
    return None


RULES = {
    "version": _rule_version,
    "path": _rule_path, "npu_smi": _rule_npu_smi, "paths": _rule_paths, "name": _rule_name, "url": _rule_url, "image": _rule_image, "images": _rule_images,
    "address": _rule_address, "ipv4": _rule_ipv4, "ifname": _rule_ifname, "requirement": _rule_requirement,
    "ray_args": _rule_ray_args, "overrides": _rule_overrides, "volumes": _rule_volumes, "env": _rule_env,
}
# Rules that read the raw value, before the type's own conversion.
RAW_RULES = {"devices": _rule_devices, "mask": _rule_mask, "loggers": _rule_loggers, "fail_on": _rule_fail_on}


def coerce(name, entry, raw, errors):
    """The value converted to the setting's type and within the type's bounds, or None after an error."""
    kind = entry["type"]
    if kind == "int":
        return inputs.to_int(name, raw, errors, entry.get("min", 1), entry.get("max"))
    if kind == "float":
        return inputs.to_float(name, raw, errors, entry.get("above", 0.0), entry.get("max"))
    if kind == "bool":
        return inputs.to_bool(name, raw, errors)
    if kind == "list":
        return _coerce_list(name, entry, raw, errors)
    if kind == "dict":
        return _coerce_dict(name, entry, raw, errors)
    if isinstance(raw, (bool, int, float)):
        errors.add(name, raw, quoting_problem(name, raw))
        return None
    text = inputs.to_text(name, raw, errors, entry.get("max_length", 256))
    if text is not None and entry.get("choices") and text not in entry["choices"]:
        errors.add(name, raw, "%s=%s is not one of %s. Fix: pick one of them." % (name, inputs.show(raw), ", ".join(entry["choices"])))
        return None
    return text


def quoting_problem(name, raw):
    """The message for a text setting that YAML read as a boolean or a number (the scripts would get False, 1000.0 ...)."""
    if isinstance(raw, bool):
        what, how, example = "boolean", "no, off, false, yes, on and true unquoted are booleans", "no"
    else:
        what, how, example = "number", "unquoted digits are a number: 0123 is octal 83, 1e3 is 1000.0", raw
    return ("%s=%s is a YAML %s, not text (%s), so the scripts would get %s. Fix: quote the value in YAML, e.g. %s: \"%s\" "
            "(with -e %s=... on the command line it is always text)." % (name, inputs.show(raw), what, how, raw, name, example, name))


def _coerce_list(name, entry, raw, errors):
    raw = [] if raw is None else raw
    if not isinstance(raw, (list, tuple)) or not all(isinstance(x, str) for x in raw):
        errors.add(name, raw, "%s=%s is not a list of strings. Fix: give a YAML/JSON list, e.g. %s=[\"a\", \"b\"]." % (
            name, inputs.show(raw), name))
        return None
    if len(raw) > entry.get("max_items", 64):
        errors.add(name, raw, "%s has %d items, more than %d. Fix: give fewer." % (name, len(raw), entry.get("max_items", 64)))
        return None
    checked = [inputs.to_text(name, item, errors, entry.get("max_length", 1024), what="%s item" % name) for item in raw]
    return None if None in checked else checked


def _coerce_dict(name, entry, raw, errors):
    raw = {} if raw is None else raw
    if not isinstance(raw, dict):
        errors.add(name, raw, "%s=%s is not a mapping. Fix: give a YAML/JSON mapping, e.g. {NAME: value}." % (name, inputs.show(raw)))
        return None
    if len(raw) > entry.get("max_items", 64):
        errors.add(name, raw, "%s has %d entries, more than %d. Fix: give fewer." % (name, len(raw), entry.get("max_items", 64)))
        return None
    for key, item in raw.items():
        if inputs.to_text(name, key, errors, 128, what="%s key" % name) is None:
            return None
        if not isinstance(item, (dict, list)) and inputs.to_text(name, item, errors, entry.get("max_length", 4096),
                                                                 what="%s.%s" % (name, key)) is None:
            return None
    return raw


def check_settings(settings, merged, errors, context):
    """Every setting converted and checked by its rule: {name: value, or None when it has an error}."""
    values = {}
    for name, entry in merged.items():
        if entry.get("secret"):
            continue
        raw = raw_value(name, merged, settings, context)
        why = inputs.oversized(raw)
        if why:
            errors.add(name, raw, "%s is %s, too large to be a setting. Fix: give a plain value." % (name, why))
            values[name] = None
            continue
        rule = entry.get("rule")
        if rule in RAW_RULES:
            values[name] = RAW_RULES[rule](name, entry, raw, errors, context)
            continue
        value = coerce(name, entry, raw, errors)
        if value is not None and rule in RULES:
            value = RULES[rule](name, entry, value, errors, context)
        values[name] = value
    return values


def check_unknown(unknown, spec, errors):
    """Warnings for verl_* variables that are not settings (typos such as verl_trian_tp); a name that
    looks like the key's is an error, without its value (which never reaches this module)."""
    warnings = []
    for name in sorted(set(unknown or ()) - set(spec)):
        text = inputs.show(name) if not isinstance(name, str) or inputs.CONTROL.search(name) or len(name) > 60 else name
        if SECRET_LOOKALIKE.fullmatch(str(name)) or difflib.get_close_matches(str(name), ["verl_swanlab_api_key"], n=1, cutoff=0.75):
            errors.add(text, "(not shown)", "%s is not a setting of verl.deploy but looks like the SwanLab key's name, so its value is "
                       "not shown. Fix: give the key as verl_swanlab_api_key (from a vault or an AWX credential) and remove %s."
                       % (text, text))
            continue
        if name in READ_FROM_THE_MODEL:
            warnings.append("%s is no longer a setting and is ignored: the model's layers, attention heads and key/value heads are "
                            "read from verl_model_path's config.json. Fix: remove it from the inventory." % name)
            continue
        close = difflib.get_close_matches(str(name), list(spec), n=1)
        warnings.append("%s is not a setting of verl.deploy and is ignored.%s" % (text, " Did you mean %s?" % close[0] if close else ""))
    return warnings


def check_hosts(host, head, errors):
    """The inventory names that reach the scripts (comments, messages) and the output folder's path."""
    names = [("the host being checked", host)]
    if head.get("name") != host:
        names.append(("the Ray head", head.get("name")))
    for what, name in names:
        problem = inputs.host_name_problem("" if name is None else name)
        if problem:
            errors.add("inventory_hostname", name, "The inventory host name %s (%s) %s." % (inputs.show(name), what, problem))


def master_address(settings_value, head, errors, static=False):
    """The Ray head's address: stated > the head's verl_node_ip > its ansible_host > its detected IPv4
    (before the pre-check, `static`, that last one is not known yet: no address is not yet an error)."""
    candidates = [
        ("verl_master_addr", settings_value),
        ("verl_node_ip of %s" % head.get("name"), head.get("node_ip")),
        ("ansible_host of %s" % head.get("name"), head.get("ansible_host")),
        ("the default IPv4 of %s" % head.get("name"), head.get("default_ipv4")),
    ]
    for source, value in candidates:
        text = "" if value is None else str(value).strip()
        if not text:
            continue
        legacy = inputs.legacy_address(text)
        if legacy:
            errors.add("verl_master_addr", text, "The Ray head's address from %s is %s, which %s. Fix: write %s in dotted decimal%s." % (
                source, inputs.show(text), legacy[0], source, " (%s)" % legacy[1] if legacy[1] else ""))
            return None, source
        if _is_address(text):
            return text, source
        errors.add("verl_master_addr", text, "The Ray head's address from %s is %s, which is not an IPv4 address or host name. "
                   "Fix: set verl_master_addr to the head's IPv4 address." % (source, inputs.show(text)))
        return None, source
    if static:
        return None, None
    errors.add("verl_master_addr", "", "The Ray head's address is unknown: verl_master_addr is empty and host %s has no verl_node_ip or "
               "ansible_host. Fix: set verl_master_addr (or verl_node_ip on the head) to the head's IPv4 address." % head.get("name"))
    return None, None


def check_network(values, head, detected, errors, static=False):
    """Addresses and interface, stated or detected; the Ray ports."""
    network = {}
    for name, key, rule in (("verl_node_ip", "node_ip", _rule_ipv4), ("verl_socket_ifname", "socket_ifname", _rule_ifname)):
        stated = values.get(name) or ""
        network[key] = stated or (rule(name, {}, str(detected.get(key) or ""), errors, {}) or "")
    network["master_addr"], network["master_addr_source"] = master_address(values.get("verl_master_addr"), head, errors, static)
    port, dashboard = values.get("verl_ray_port"), values.get("verl_ray_dashboard_port")
    if port and port == dashboard:
        errors.add("verl_ray_dashboard_port", dashboard, "verl_ray_dashboard_port equals verl_ray_port (%d). Fix: give them "
                   "different ports (defaults 8260 and 9182)." % port)
    return network


def check_required_paths_found(values, errors, host, detected, first_error):
    """After a required path failed: say what the pre-check found there (never guess)."""
    for error in errors[first_error:]:
        found = detected.get(CANDIDATES.get(error["variable"], "-")) or []
        if found:
            error["msg"] += " Found on %s: %s." % (host, ", ".join(inputs.show(f) for f in found[:10]) + (" ..." if len(found) > 10 else ""))


def check_swanlab(values, api_key_set, errors, warnings):
    """SwanLab's settings when it is on: a server and the key for a login mode. Returns the swanlab part, or None."""
    if not values.get("verl_swanlab_enabled"):
        return None
    mode = values.get("verl_swanlab_mode")
    swan_host = (values.get("verl_swanlab_host") or "").rstrip("/")
    if mode in NEEDS_LOGIN:
        if not swan_host and values.get("verl_swanlab_host") is not None:
            errors.add("verl_swanlab_host", "", "SwanLab is on (verl_swanlab_enabled=true or swanlab in verl_loggers, mode %s) but "
                       "verl_swanlab_host is empty. Fix: give the SwanLab server, e.g. -e verl_swanlab_host=http://192.168.1.100:8000, "
                       "or turn SwanLab off." % mode)
        if not api_key_set:
            errors.add("verl_swanlab_api_key", "(empty)", "SwanLab is on (verl_swanlab_enabled=true or swanlab in verl_loggers, mode %s) "
                       "but verl_swanlab_api_key is empty. Fix: give the key from a vault or an AWX credential (never on a shared "
                       "command line), or turn SwanLab off." % mode)
    elif api_key_set:
        warnings.append("verl_swanlab_api_key is set but verl_swanlab_mode is %s, which needs no login: the key is not "
                        "written to any node and not passed to the training (verl would log in with it)." % mode)
    return {
        "host": swan_host,
        "mode": mode,
        "workspace": values.get("verl_swanlab_workspace") or "",
        "log_dir": values.get("verl_swanlab_log_dir"),
        "api_key_file": values.get("verl_swanlab_api_key_file"),
        # Only a login mode uses the key. verl logs in whenever SWANLAB_API_KEY is set, which in offline or
        # local mode would send the run to a server it cannot reach; so there the key is not passed on.
        "needs_key": mode in NEEDS_LOGIN,
    }


def check_resume(values, errors):
    """verl_resume_from_path is given exactly when verl_resume_mode is resume_path, and names a checkpoint folder."""
    mode, path = values.get("verl_resume_mode"), values.get("verl_resume_from_path")
    if mode is None or path is None:
        return
    example = PATH_EXAMPLES["verl_resume_from_path"]
    if mode == "resume_path" and not path:
        errors.add("verl_resume_from_path", "", "verl_resume_mode=resume_path needs verl_resume_from_path, which is empty. Fix: give the "
                   "checkpoint folder to resume from, e.g. -e verl_resume_from_path=%s, or use verl_resume_mode=auto." % example)
    elif mode != "resume_path" and path:
        errors.add("verl_resume_from_path", path, "verl_resume_from_path=%s is given, but verl_resume_mode=%s does not read it. Fix: set "
                   "verl_resume_mode=resume_path to resume from it, or leave verl_resume_from_path empty." % (inputs.show(path), mode))
    elif path and not CHECKPOINT_FOLDER.fullmatch(path.rsplit("/", 1)[-1]):
        errors.add("verl_resume_from_path", path, "verl_resume_from_path=%s is not a checkpoint folder: verl resumes only from a folder "
                   "named global_step_<N> (it reads the step from the name). Fix: give one of the global_step_* folders in the "
                   "checkpoint directory, e.g. %s." % (inputs.show(path), example))
    else:
        return
    values["verl_resume_from_path"] = None


def check_parallelism_of(values, features, nnodes, errors, model=None, profile=versions.DEFAULT_PROFILE):
    """The parallelism rules; they need every number they read, and still run when only other
    settings (a path, the mask) are wrong, so that one run reports everything. model: config.json's facts
    (detected.model); without them (before the pre-check read the model) the rules on the model's shape wait.
    Returns the numbers the rules read (None when one is missing)."""
    devices = values.get("verl_npu_devices")
    numbers = {key: values.get(name) for key, name in PARALLELISM_INPUTS.items()}
    if not devices or any(number is None for number in numbers.values()):
        return None
    enabled = features["enabled"] if features else {}
    numbers.update({key: (model or {}).get(key) for key in MODEL_INPUTS})
    numbers.update({
        "npu_per_node": len(devices), "nnodes": nnodes, "world_size": len(devices) * nnodes,
        "dynamic_bsz": enabled.get("dynamic_bsz", False), "recompute": enabled.get("recompute", False), "vpp": enabled.get("vpp", False),
        "extra_overrides": values.get("verl_extra_overrides") or [],
        "verl_defaults": versions.defaults(profile), "extra_env": values.get("verl_extra_env") or {},
    })
    for problem in check_parallelism(numbers):
        errors.add(problem["variable"], problem["value"], problem["msg"])
    return numbers


def container_volumes(values, npu_smi_path):
    """Bind mounts of a new container: the driver (read-only) and, at the same paths as on the host,
    the model, the datasets' folders, checkpoints and logs (an entry inside another is left out),
    then verl_container_extra_volumes."""
    data = [values["verl_model_path"], _parent(values["verl_train_file"]), _parent(values["verl_test_file"]),
            values["verl_ckpts_dir"], values["verl_log_dir"]]
    for name in ("verl_swanlab_log_dir", "verl_tensorboard_dir"):
        if values.get(name):
            data.append(values[name])
    if values.get("verl_resume_from_path"):
        data.append(values["verl_resume_from_path"])
    kept = []
    for path in sorted(set(p for p in data if p)):
        if not any(path == k or path.startswith(k.rstrip("/") + "/") for k in kept):
            kept.append(path)
    driver = list(DRIVER_MOUNTS) + ([npu_smi_path] if npu_smi_path else [])
    return ["%s:%s:ro" % (p, p) for p in driver] + ["%s:%s:rw" % (p, p) for p in kept] + list(values.get("verl_container_extra_volumes") or [])


def _parent(path):
    return path.rsplit("/", 1)[0] or "/"


def check_mount_parents(values, errors):
    """A dataset's folder is mounted: it must not be / or a system folder either."""
    for name in ("verl_train_file", "verl_test_file"):
        path = values.get(name)
        if path and inputs.path_problem(_parent(path), "mount"):
            errors.add(name, path, "%s=%s lies directly in %s, which would be mounted into the container whole. Fix: keep the "
                       "dataset in a folder of its own, e.g. %s=%s." % (name, inputs.show(path), _parent(path), name, PATH_EXAMPLES[name]))
            values[name] = None


def check_stage_folder(values, errors):
    """The deploy writes and chmods <verl_host_stage_dir>/<verl_container_name> on every host: the joined folder,
    not only its parent, must be a folder of its own (/usr/local with bin would be /usr/bin)."""
    stage_dir, container = values.get("verl_host_stage_dir"), values.get("verl_container_name")
    if not stage_dir or not container:
        return
    problem = inputs.path_problem(stage_dir + "/" + container, "output")
    if problem:
        errors.add("verl_host_stage_dir", stage_dir, "verl_host_stage_dir=%s with verl_container_name=%s makes the stage folder "
                   "%s, which %s, e.g. verl_host_stage_dir=/var/lib/verl-deploy." % (
                       inputs.show(stage_dir), inputs.show(container), inputs.show(stage_dir + "/" + container), problem))
        values["verl_host_stage_dir"] = None


def check_output_folder(values, host, errors, merged):
    """The folders written on the controller (where this runs; the table's `use: controller`): render.yml's
    <verl_output_dir>/<host>/{start_verl.sh,run_training.sh}, logs.yml's verl_logs_dir, compare.yml's verl_compare_dir.
    Each, resolved through symbolic links on the controller, must not be a system folder, and nothing on the way
    down to the scripts may be a link that leads out of the output folder."""
    for name in [name for name, entry in merged.items() if entry.get("use") == "controller"]:
        folder = values.get(name)
        if not folder:
            continue
        real = os.path.realpath(folder)
        problem = inputs.system_problem(inputs.canonical_path(real), "output") if real != folder else None
        if name == "verl_output_dir" and not problem and not inputs.host_name_problem(host or ""):
            targets = [os.path.join(folder, host)] + [os.path.join(folder, host, script) for script in ("start_verl.sh", "run_training.sh")]
            for target in targets:
                if os.path.islink(target):
                    problem = "holds %s, a symbolic link (to %s): the scripts would be written where it leads" % (
                        inputs.show(target), inputs.show(os.path.realpath(target)))
                    break
        if problem:
            errors.add(name, folder, "%s=%s (%s on the controller) %s. Fix: give a folder of its own, e.g. %s=%s." % (
                name, inputs.show(folder), inputs.show(real), problem.split(". Fix")[0], name,
                merged[name].get("default")))


def _container_devices(privileged, devices, detected):
    """The host's NPU device numbers a new container gets: those of verl_npu_devices, or with
    verl_container_privileged every one npu-smi listed (unknown before the pre-check: 0 to the highest given)."""
    if not privileged:
        return None
    listed = detected.get("device_ids")
    return list(listed) if listed else list(range(max(devices) + 1))


def assemble(merged, values, context, network, swanlab, features):
    """The launch configuration: every setting under its output name, then what is computed."""
    config = {}
    for name, entry in merged.items():
        if entry.get("secret"):
            continue
        value = values[name]
        config[entry.get("output") or name[len("verl_"):]] = inputs.format_float(value) if entry["type"] == "float" else value
    devices, nnodes = values["verl_npu_devices"], context["nnodes"]
    in_container = _container_devices(values["verl_container_privileged"], devices, context["detected"]) or devices
    npu_smi_path = values["verl_npu_smi_path"] or (context["detected"].get("npu_smi_path") or "")
    config.update(network)
    config.update({
        "host": context["host"],
        "role": "head" if context["is_head"] else "worker",
        "is_head": bool(context["is_head"]),
        "nnodes": nnodes,
        "npu_devices_csv": ",".join(str(d) for d in devices),
        # The NPU devices a new container gets, and what ASCEND_RT_VISIBLE_DEVICES says inside it: the runtime's
        # logical ids of these NPUs among them.
        "container_npus_csv": ",".join(str(d) for d in in_container),
        "visible_devices_csv": ",".join(str(i) for i in logical_ids(devices, in_container)),
        "npu_devices_note": context.get("npu_devices_note") or "",
        "npu_per_node": len(devices),
        "world_size": len(devices) * nnodes,
        "data_parallel_size": len(devices) * nnodes // (values["verl_train_tp"] * values["verl_train_pp"]),
        # How long one node's Ray start or join may take: its retries, each a `ray start` bounded by verl_ray_join_timeout, 10 s
        # of slack and a pause, and the checks (roles/ray: the head's step, a worker's background join and its collection).
        "ray_join_bound": values["verl_ray_join_retries"] * (values["verl_ray_join_delay"] + values["verl_ray_join_timeout"] + 10) + 240,
        # Ray's temporary folder in the container, as the identity has it (the deploy's verify reads its logs there on a failure).
        "ray_temp_dir": inputs.ray_temp_dir(values["verl_ray_start_args"]),
        "container": {
            "privileged": values["verl_container_privileged"],
            "devices": ["/dev/davinci%d" % d for d in devices] + ["/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc"],
            "volumes": container_volumes(values, npu_smi_path),
        },
        # The npu-smi the container has, mounted at the host's path (the NPU sampler's; empty: it searches).
        "npu_smi": npu_smi_path,
        # What the container stage's image check imports and looks for (plugins/module_utils/_versions.py).
        "image_probe": {"modules": list(versions.MODULES), "forbidden": list(versions.FORBIDDEN),
                        "markers": {name: list(probe) for name, probe in versions.MARKER_PROBES.items()}},
        "feature_mask": features["mask"],
        "swanlab": swanlab,
        "features": features,
    })
    return config


def build(settings, spec, rules=None, api_key_set=False, host="", is_head=True, nnodes=1, head=None, mask=None, detected=None,
          unknown=(), static=False, secrets_set=()):
    """Validate the settings of one host. Returns (config, errors, warnings).

    settings: {verl_name: raw value} of the settings in spec (never the API key); spec: the argument spec
    options; rules: the setting_rules table; api_key_set: whether a SwanLab key was given (the key itself
    never comes here); host: this inventory host; is_head: whether it is the Ray head; nnodes: nodes in
    the cluster; head: {name, node_ip, ansible_host, default_ipv4} of the head host; mask: the `mask`
    extra var, when given; detected: what the pre-check found on this host ({node_ip, socket_ifname,
    npu_smi_path, models, datasets, chip: {family, name}, model: config.json's facts}), used where the user stated nothing (stated > detected > default);
    unknown: names of other verl_* variables (their values are never passed); static: before any host
    was contacted (check_inventory), so what only a host's facts can give is not required yet; secrets_set: the names of
    the trackers' secret settings that were given (_secrets.SECRETS; never their values).
    """
    detected = detected or {}
    head = head or {"name": host}
    errors = inputs.Errors()
    merged = table(spec, rules)
    context = {"mask": mask, "host": host, "is_head": is_head, "nnodes": nnodes, "detected": detected}
    warnings = check_unknown(list(unknown or ()) + [n for n in settings if n not in spec], spec, errors)
    check_hosts(host, head, errors)
    first = len(errors)
    values = check_settings(settings, merged, errors, context)
    check_required_paths_found(values, errors, host, detected, first)
    check_mount_parents(values, errors)
    check_stage_folder(values, errors)
    check_output_folder(values, host, errors, merged)
    check_resume(values, errors)
    network = check_network(values, head, detected, errors, static)
    if values.get("verl_loggers") is not None and values.get("verl_swanlab_enabled") is not None:
        values["verl_loggers"] = trackers(values["verl_loggers"], values["verl_swanlab_enabled"])
        values["verl_swanlab_enabled"] = "swanlab" in values["verl_loggers"]
    swanlab = check_swanlab(values, api_key_set, errors, warnings)
    features = values.get("verl_feature_mask")
    # A chip verl has no image for is the one cause on this host: the layout rules on its NPUs would only add noise.
    refused_chip = len(errors)
    image = check_image(values, detected, errors)
    profile, why = versions.choose_profile(values.get("verl_version"), image.get("image"))
    tracker_keys = trackers_table.check(values.get("verl_loggers"), values.get("verl_extra_env"), secrets_set, profile, errors,
                                        warnings) if values.get("verl_loggers") is not None else []
    numbers = None
    if not (len(errors) > refused_chip and chip_refused((detected.get("chip") or {}))):
        numbers = check_parallelism_of(values, features, nnodes, errors, detected.get("model"), profile)
    if features:
        for problem in versions.known_broken(features, profile, (detected.get("model") or {}).get("architecture"),
                                             values.get("verl_extra_overrides")):
            errors.add("verl_feature_mask", features["mask"], problem)
    if errors:
        return None, list(errors), warnings
    warnings.extend(features["warnings"])
    source = "given" if values["verl_experiment_name"] else "default"
    values["verl_experiment_name"] = values["verl_experiment_name"] or experiment_name(
        values["verl_model_path"], values["verl_algorithm"], features["mask"], nnodes, len(values["verl_npu_devices"]))
    config = assemble(merged, values, context, network, swanlab, versions.features_for(features, profile, values.get("verl_extra_overrides")))
    config.update(image)
    # The model's own path the image check imports before Ray: its weight bridge for this release and these lines.
    config["image_probe"]["engine"] = versions.engine_probe(profile, config["features"]["lines"], values.get("verl_extra_overrides"))
    config.update({"training": training_entry(values["verl_algorithm"], profile, model_path=values["verl_model_path"],
                                              hccl=hccl_buffsize_need(numbers) if numbers else None),
                   "verl_profile": {"profile": profile, "why": why}, "experiment_name_source": source, "tracker_keys": tracker_keys,
                   "tensorboard": tensorboard(values["verl_tensorboard_dir"], values["verl_log_dir"], values["verl_project_name"],
                                              values["verl_experiment_name"])
                   if "tensorboard" in values["verl_loggers"] else None})
    return config, [], warnings


def check_image(values, detected, errors):
    """The image of this host: verl_image, else the one of verl_image_by_chip for the detected chip
    (stated > detected > default). Returns {image, image_source, chip}."""
    if values.get("verl_image") is None or values.get("verl_image_by_chip") is None:
        return {}
    chip = detected.get("chip") or {}
    image, why, problem = choose_image(values["verl_image"], values["verl_image_by_chip"], chip)
    if problem:
        errors.add("verl_image", values["verl_image"], problem)
        return {}
    return {"image": image, "image_source": why, "chip": {"family": chip.get("family") or "", "name": chip.get("name") or ""}}


def check_inventory(hosts, spec, rules, head):
    """Every host's settings, checked on the controller before any host is contacted (the settings need
    no host: they come from the inventory and the extra vars). The same checks as build(), without what
    only the hosts can tell (their detected address), plus the one rule across hosts: the same number of
    NPUs on every node.

    hosts: {name: {"settings", "unknown", "api_key_set", "mask", "deferred"}} of every node, the head among
    them (a host whose settings cannot be known yet, `deferred`, is left to the check after the pre-check);
    head: {name, node_ip, ansible_host} of the head. Returns the problems, one per distinct message,
    each {"variable", "value", "msg", "hosts": [the hosts it was found on, in order], "text": one line for a
    message, "- <the hosts in words>: <msg>"}.
    """
    problems = {}
    npus = {}
    devices = {"verl_npu_devices": table(spec, rules)["verl_npu_devices"]}
    for host, given in hosts.items():
        for error in given.get("problems") or ():  # found before (the key by value: _secrets.py)
            problems.setdefault(error["msg"], dict(error, hosts=[]))["hosts"].append(host)
        if given.get("deferred"):
            continue
        listed = check_settings(given.get("settings") or {}, devices, inputs.Errors(), {})["verl_npu_devices"]
        if listed:
            npus[host] = len(listed)
        _config, errors, _warnings = build(
            settings=given.get("settings") or {}, spec=spec, rules=rules, api_key_set=bool(given.get("api_key_set")), host=host,
            is_head=host == head.get("name"), nnodes=len(hosts), head=head, mask=given.get("mask"),
            unknown=given.get("unknown") or (), static=True, secrets_set=given.get("secrets_set") or ())
        for error in errors:
            problems.setdefault(error["msg"], dict(error, hosts=[]))["hosts"].append(host)
    if len(set(npus.values())) > 1:
        by_count = {}
        for host, count in npus.items():
            by_count.setdefault(count, []).append(host)
        problems["npus"] = {"variable": "verl_npu_devices", "value": inputs.short(sorted(by_count)), "hosts": list(npus), "msg": (
            "Every node must train on the same number of NPUs (trainer.n_gpus_per_node is one number), but verl_npu_devices gives "
            "%s. Fix: give each host a verl_npu_devices list of the same length." % "; ".join(
                "%d NPUs on %s" % (count, _some(names)) for count, names in by_count.items()))}
    for problem in problems.values():
        problem["text"] = "- %s: %s" % ("every node" if len(problem["hosts"]) == len(hosts) > 1 else _some(problem["hosts"]),
                                        problem["msg"])
    return list(problems.values())


def _some(names, limit=8):
    """Host names for a message: the first few, then how many more."""
    return ", ".join(inputs.plain_or_shown(n) for n in names[:limit]) + (" and %d more" % (len(names) - limit) if len(names) > limit else "")


# What status.yml, stop.yml and logs.yml need: which container, where in it the control script is, where
# the logs and the rendered scripts are on the host, where Ray keeps its logs in the container, and the day-2 settings.
IDENTITY = ("verl_container_name", "verl_workdir", "verl_log_dir", "verl_host_stage_dir", "verl_status_log_lines",
            "verl_status_stall_seconds", "verl_status_fail_on", "verl_stop_containers", "verl_logs_dir", "verl_logs_max_mb", "verl_deploy_lock_timeout",
            "verl_ray_start_args")


def identity(settings, spec, rules=None, unknown=(), host=None):
    """The deployment's identity, checked alone with the same table: (identity, errors, warnings).

    Day-2 playbooks act on a deployment, not on a training's inputs: a dataset that has gone or a key
    not given again must not stop them. Only these settings are read; the others are not checked.
    """
    errors = inputs.Errors()
    merged = table(spec, rules)
    warnings = check_unknown(list(unknown or ()) + [n for n in settings if n not in spec], spec, errors)
    if host is not None:
        check_hosts(host, {"name": host}, errors)
    values = check_settings(settings, {name: merged[name] for name in IDENTITY}, errors, {"mask": None})
    check_output_folder(values, host, errors, {name: merged[name] for name in IDENTITY})
    found = {merged[name].get("output") or name[len("verl_"):]: values[name] for name in IDENTITY}
    found["log_prefix"] = LOG_PREFIX
    found["ray_temp_dir"] = inputs.ray_temp_dir(found["ray_start_args"])
    return found, list(errors), warnings


# The arguments of verl.deploy.launch_config, for the module (plugins/modules/launch_config.py, which documents them)
# and for its action plugin (plugins/action/launch_config.py, which runs the same checks on the controller without
# starting a module process): one definition.
ARGUMENT_SPEC = {
    "scope": {"type": "str", "default": "launch", "choices": ["launch", "identity"]},
    "settings": {"type": "dict", "required": True},
    "spec": {"type": "dict", "required": True},
    "rules": {"type": "dict", "required": True},
    "swanlab_api_key_set": {"type": "bool", "default": False},
    "secrets_set": {"type": "list", "elements": "str", "default": [], "no_log": False},
    "unknown": {"type": "list", "elements": "str", "default": []},
    "mask": {"type": "raw"},
    "host": {"type": "str", "required": True},
    "is_head": {"type": "bool", "required": True},
    "nnodes": {"type": "int", "required": True},
    "detected": {
        "type": "dict",
        "default": {},
        "options": {
            "node_ip": {"type": "str"},
            "socket_ifname": {"type": "str"},
            "npu_smi_path": {"type": "str"},
            "models": {"type": "list", "elements": "str"},
            "datasets": {"type": "list", "elements": "str"},
            "chip": {"type": "dict", "options": {"family": {"type": "str"}, "name": {"type": "str"}}},
            "device_ids": {"type": "list", "elements": "int"},
            "model": {"type": "dict"},
        },
    },
    "head": {
        "type": "dict",
        "required": True,
        "options": {
            "name": {"type": "str", "required": True},
            "node_ip": {"type": "str"},
            "ansible_host": {"type": "str"},
            "default_ipv4": {"type": "str"},
        },
    },
}


def _about(errors):
    """The refusals without their text (msg holds it once)."""
    return [{key: value for key, value in error.items() if key != "msg"} for error in errors]


def evaluate(params, key_forms=()):
    """What verl.deploy.launch_config returns for validated arguments: (result, warnings, values to mask).

    key_forms: the secrets' spellings, {secret setting: _secrets.key_forms of its value} (or the SwanLab key's alone),
    when the caller holds them on the controller (the action plugin): a setting that holds one is refused without its
    value, and every form is masked.
    result is {"failed": True, "msg": ..., ["errors": ...]} or {"changed": False, "config": ...}. Each refusal's text is in msg
    once: errors holds what each is about (rule, variable, value) without its text again, which Ansible would print twice."""
    by_secret = key_forms if isinstance(key_forms, dict) else ({secrets.KEY: tuple(key_forms)} if key_forms else {})
    mask_values = set(secrets.all_forms(by_secret))
    settings = params["settings"]
    holding = secrets.problems_of(dict(settings, mask=params.get("mask")), by_secret)
    if holding:
        lines = ["%s: %d setting(s) need fixing before anything is changed:" % (params["host"], len(holding))]
        lines.extend("- " + error["msg"] for error in holding)
        return {"failed": True, "msg": "\n".join(lines), "errors": _about(holding)}, [], mask_values
    passed = sorted(name for name in settings if name in secrets.SECRETS)
    if passed:
        mask_values.update(str(settings[name]) for name in passed if settings[name])
        return ({"failed": True, "msg": "settings must not hold %s: a secret never comes to this module (give swanlab_api_key_set "
                 "or secrets_set)." % ", ".join(passed)}, [], mask_values)
    env = settings.get("verl_extra_env")
    for name, value in (env.items() if isinstance(env, dict) else ()):
        if environment.KEY_NAME.fullmatch(str(name)) and value:
            mask_values.add(str(value))
    if params["scope"] == "identity":
        config, errors, warnings = identity(settings, params["spec"], params["rules"], unknown=params["unknown"], host=params["host"])
    else:
        config, errors, warnings = build(settings=settings, spec=params["spec"], rules=params["rules"],
                                         api_key_set=params["swanlab_api_key_set"], host=params["host"], is_head=params["is_head"],
                                         nnodes=params["nnodes"], head=params["head"], mask=params["mask"], detected=params["detected"],
                                         unknown=params["unknown"], secrets_set=params.get("secrets_set") or ())
    if errors:
        lines = ["%s: %d setting(s) need fixing before anything is changed:" % (inputs.plain_or_shown(params["host"]), len(errors))]
        lines.extend("- " + error["msg"] for error in errors)
        return {"failed": True, "msg": "\n".join(lines), "errors": _about(errors)}, warnings, mask_values
    return {"changed": False, "config": config}, warnings, mask_values
