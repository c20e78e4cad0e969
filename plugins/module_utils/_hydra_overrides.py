# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Private to the verl.deploy collection: may change without notice.
#
# verl_extra_overrides read by meaning, not by text: each line is parsed with hydra-core's own override
# parser (the parser verl's trainer runs on its command line, hydra-core 1.3), and the parsed key and value
# are judged. Refused: a line Hydra cannot parse; a sweep (it would ask for several trainings); a key in
# Hydra's own settings (hydra.*, hydra/...), and one naming Hydra in other letters (HYDRA.run.dir: Hydra compares
# keys as written, so it is an unknown key of verl's config); `_target_`, `_args_`, `_partial_`, `_recursive_`, `_convert_`
# anywhere in the key, the package or the value, nested dicts and lists included (hydra.utils.instantiate
# calls the Python callable `_target_` names when verl builds a config); an interpolation or resolver
# `${...}` anywhere in the value (`${oc.env:SWANLAB_API_KEY}` composes to the key); a key that a checked
# setting sets (the extra overrides come after the settings' own and would replace them unchecked).
from __future__ import annotations

import re

from ansible_collections.verl.deploy.plugins.module_utils import _inputs as inputs
from ansible_collections.verl.deploy.plugins.module_utils._features import FEATURES

# The shape a line must have before it is parsed: one word of a key, `=`, a value on one line.
SHAPE = re.compile(r"(\+\+|\+|~)?[A-Za-z_][A-Za-z0-9_.@/-]*(=.*)?")
# hydra.utils.instantiate's own keys: the callable it calls and how it calls it.
INSTANTIATE_KEYS = ("_target_", "_args_", "_partial_", "_recursive_", "_convert_")
REQUIREMENT = "hydra-core==1.3.2"

# The Hydra keys run_training.sh sets from a checked setting (tests/test_hostile_inputs.py checks this table
# against the template): an extra override of one of them, or of a folder above one, is refused, naming
# the setting to use instead.
SETTING_KEYS = {
    "data.train_files": "verl_train_file",
    "data.val_files": "verl_test_file",
    "data.max_prompt_length": "verl_max_prompt_length",
    "data.max_response_length": "verl_max_response_length",
    "data.train_batch_size": "verl_train_batch_size",
    "actor_rollout_ref.rollout.n": "verl_n_resp_per_prompt",
    "actor_rollout_ref.model.path": "verl_model_path",
    "actor_rollout_ref.actor.optim.lr": "verl_lr",
    "actor_rollout_ref.actor.optim.lr_warmup_steps": "verl_lr_warmup_steps",
    "actor_rollout_ref.actor.ppo_mini_batch_size": "verl_ppo_mini_batch_size",
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu": "verl_ppo_micro_batch_size_per_gpu",
    "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu": "verl_ref_log_prob_micro_batch_size_per_gpu",
    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu": "verl_rollout_log_prob_micro_batch_size_per_gpu",
    "actor_rollout_ref.actor.megatron.tensor_model_parallel_size": "verl_train_tp",
    "actor_rollout_ref.actor.megatron.pipeline_model_parallel_size": "verl_train_pp",
    "actor_rollout_ref.ref.megatron.tensor_model_parallel_size": "verl_train_tp",
    "actor_rollout_ref.ref.megatron.pipeline_model_parallel_size": "verl_train_pp",
    "actor_rollout_ref.rollout.tensor_model_parallel_size": "verl_gen_tp",
    "actor_rollout_ref.rollout.gpu_memory_utilization": "verl_gpu_memory_utilization",
    "actor_rollout_ref.rollout.max_num_batched_tokens": "verl_max_prompt_length",
    "reward_model.reward_kwargs.overlong_buffer_cfg.len": "verl_overlong_buffer_len",
    "reward_model.overlong_buffer.len": "verl_overlong_buffer_len",
    "reward_model.reward_kwargs.max_resp_len": "verl_max_response_length",
    "trainer.logger": "verl_loggers",
    "ray_kwargs.ray_init.runtime_env.env_vars.TENSORBOARD_DIR": "verl_tensorboard_dir",
    "trainer.project_name": "verl_project_name",
    "trainer.experiment_name": "verl_experiment_name",
    "trainer.n_gpus_per_node": "verl_npu_devices",
    "trainer.nnodes": "verl_npu_devices",
    "trainer.test_freq": "verl_test_freq",
    "trainer.save_freq": "verl_save_freq",
    "trainer.total_epochs": "verl_total_epochs",
    "trainer.total_training_steps": "verl_train_steps",
    "trainer.default_local_dir": "verl_ckpts_dir",
    "trainer.resume_mode": "verl_resume_mode",
    "trainer.resume_from_path": "verl_resume_from_path",
}


def value_of(lines, key):
    """The text the last verl_extra_overrides line that sets key gives it (`key=`, `+key=`, `++key=`: Hydra keeps the
    last), or None. The one reader of an extra override's value: the checks that must see what verl will see use it."""
    value = None
    for line in lines or ():
        name, sep, text = str(line).lstrip("+").partition("=")
        if sep and name.strip() == key:
            value = text.strip()
    return value


def whole_value_of(lines, key, default=None):
    """value_of as a whole number, else default (no line, or one whose value is not a whole number: an interpolation,
    which the settings check refuses anyway)."""
    text = value_of(lines, key)
    return int(text) if text is not None and text.isdigit() else default


def _feature_keys():
    """The keys the feature mask sets (bits 0-2 always, bits 3-6 when on or off)."""
    keys = {}
    for feature in FEATURES:
        for names in (feature.get("variables") or {}).values():
            keys.update((name, "verl_feature_mask") for name in names)
        for line in list(feature.get("on_lines") or ()) + list(feature.get("off_lines") or ()):
            keys[line.split("=", 1)[0].lstrip("+~")] = "verl_feature_mask"
    return keys


OWNED_KEYS = dict(_feature_keys(), **SETTING_KEYS)
_PARSER = []


def parser():
    """hydra-core's OverridesParser (created once), or None when hydra-core is not importable here."""
    if not _PARSER:
        try:
            from hydra.core.override_parser.overrides_parser import OverridesParser  # pylint: disable=import-outside-toplevel
        except ImportError:
            return None
        _PARSER.append(OverridesParser.create())
    return _PARSER[0]


def missing_parser_problem():
    return ("cannot be checked: hydra-core, whose override parser reads them as the trainer will, is not installed on the "
            "controller. Fix: install the controller's requirements (pip install -r requirements.txt, %s; in AWX the "
            "collection's execution environment has it), or leave verl_extra_overrides empty" % REQUIREMENT)


def _words(text):
    return [word for word in re.split(r"[./@]", text) if word]


def _instantiate_word(text):
    return next((word for word in INSTANTIATE_KEYS if word in text), None)


def _leaves(value, depth=0):
    """(kind, text) of every dict key ("key") and string ("text") in a parsed value, nested ones too."""
    if depth > 32:
        yield "text", "(nested too deep)"
        return
    text = getattr(value, "text", None)
    if isinstance(text, str):  # a QuotedString
        yield "text", text
    elif isinstance(value, str):
        yield "text", value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield "key", str(key)
            yield from _leaves(item, depth + 1)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _leaves(item, depth + 1)


def owner(key, owned=None):
    """The setting that sets Hydra key `key` (or a key below it), or None."""
    table = OWNED_KEYS if owned is None else owned
    if key in table:
        return key, table[key]
    below = sorted(k for k in table if k.startswith(key + "."))
    return (below[0], table[below[0]]) if below else (None, None)


def hydra_case_problem(override, variant):
    """Why a key that names Hydra in other letters (HYDRA.run.dir, +Hydra.x, ~HYDRA) is refused: Hydra compares keys
    as they are written (Override.is_hydra_override: key.startswith("hydra.") or "hydra/"), so it is not Hydra's own
    settings but a key of verl's config that does not exist; said as hydra-core 1.3.2 reacts at the trainer's start."""
    key = override.key_or_group
    if override.package is not None and variant not in _words(key):
        what = "puts a config group into the package %s, which does not exist" % override.package
    elif override.is_delete():
        what = "Hydra refuses it at the trainer's start (Could not delete from config. '%s' does not exist.)" % key
    elif override.is_add() or override.is_force_add():
        what = "it adds a key %s to verl's config that neither Hydra nor verl reads" % key
    else:
        what = "Hydra refuses it at the trainer's start (Could not override '%s'.)" % key
    return ("names '%s', which is not Hydra's own settings: Hydra compares keys as written and only 'hydra' (lower case) is "
            "its own; '%s' is a key of verl's config that does not exist, and %s. Fix: leave it out (Hydra's own settings, "
            "hydra.*, are not taken either)" % (variant, variant, what))


def override_problem(line, owned=None):
    """Why `line` may not be passed on as an extra Hydra override (with the fix), or None."""
    if not SHAPE.fullmatch(line):
        return ("is not one Hydra override (key=value, +key=value, ++key=value or ~key, the key starting with a letter or _). "
                "Fix: write one such override per list item")
    if "${" in line:
        return ("holds an interpolation or resolver (${...}), which Hydra resolves when it composes the config (${oc.env:...} "
                "reads the environment, the key included). Fix: give the literal value")
    hydra = parser()
    if hydra is None:
        return missing_parser_problem()
    try:
        override = hydra.parse_override(line)
    except Exception as exc:  # pylint: disable=broad-exception-caught  # Hydra raises HydraException and others
        why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return "cannot be parsed by Hydra (%s). Fix: write it as the trainer's command line takes it" % inputs.show(why, 80)
    key = override.key_or_group
    words = _words(key) + _words(override.package or "")
    if "hydra" in words:
        return "sets Hydra's own settings (hydra.*: callbacks, run folder, search path), which could run code. Fix: leave it out"
    variant = next((word for word in words if word.lower() == "hydra"), None)
    if variant:
        return hydra_case_problem(override, variant)
    for word in words:
        bad = _instantiate_word(word)
        if bad:
            return ("names %s in its key, which makes Hydra call a Python callable when verl builds the config. Fix: leave it "
                    "out" % bad)
    if override.is_sweep_override():
        return ("is a sweep (a,b or choice(), range(), interval(), glob()), which asks for several trainings. Fix: give one "
                "value")
    for kind, text in _leaves(override._value):  # pylint: disable=protected-access  # the parsed value, quotes kept apart
        bad = _instantiate_word(text)
        if bad:
            return ("holds %s in its value (%s), which makes Hydra call a Python callable when verl builds the config. Fix: "
                    "leave it out" % (bad, "as a key" if kind == "key" else "in a string"))
        if "${" in text:
            return "holds an interpolation or resolver (${...}) in its value. Fix: give the literal value"
    owned_key, setting = owner(key, owned)
    if setting:
        what = "sets %s" % key if owned_key == key else "replaces %s, which holds %s" % (key, owned_key)
        return ("%s, which the setting %s sets (checked; an extra override would replace it unchecked). Fix: set %s "
                "instead" % (what, setting, setting))
    return None
