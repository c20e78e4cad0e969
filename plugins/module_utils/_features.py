# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Private to the verl.deploy collection: may change without notice.
#
# THE feature table. The seven bits of the feature mask, what each one sets in run_training.sh,
# and the rules between them are defined here and nowhere else: the feature_mask and
# launch_config modules, the run_training.sh template, the docs and the tests all read it.
from __future__ import annotations

import re

MASK_LENGTH = 7
MASK_PATTERN = re.compile(r"[01]{%d}" % MASK_LENGTH)

SWITCH = "switch"  # bits 0-2: shell variables set to True/False, always present in the command
LINES = "lines"  # bits 3-6: override lines present only when on (bit 3 also has an "off" line)

_ACTOR = "actor_rollout_ref.actor."
_MEGATRON_OVERRIDE = "+actor_rollout_ref.actor.megatron.override_transformer_config."


class MaskError(ValueError):
    """A feature mask that is not seven characters of 0 and 1."""


def _feature(bit, key, name, short, kind, summary, variables=None, on_lines=(), off_lines=()):
    return {
        "bit": bit,
        "key": key,
        "name": name,
        "short": short,
        "kind": kind,
        "summary": summary,
        # switch features: shell variable -> the Hydra keys it feeds (True/False)
        "variables": variables or {},
        # line features: the override lines when on / when off
        "on_lines": list(on_lines),
        "off_lines": list(off_lines),
    }


FEATURES = (
    _feature(
        0, "remove_padding", "Remove Padding", "RmvPad", SWITCH,
        "Packs sequences without padding tokens, so no compute is spent on padding.",
        # verl 0.7.0's Megatron actor and reference model pack by their own engine key: the legacy
        # Megatron worker (the default, trainer.use_legacy_worker_impl=auto) picks the packed "thd" format
        # from self.config.megatron.use_remove_padding (verl/workers/actor/megatron_actor.py:658), and
        # that key defaults to True (verl/trainer/config/engine/megatron.yaml:84; the ref's follows the
        # actor's, verl/trainer/config/ref/megatron_ref.yaml:20). model.use_remove_padding is what the new
        # engine workers copy into that key (verl/workers/engine_workers.py:71), so it is set too.
        variables={"USE_REMOVE_PADDING": [
            _ACTOR + "megatron.use_remove_padding",
            "actor_rollout_ref.ref.megatron.use_remove_padding",
            "actor_rollout_ref.model.use_remove_padding",
        ]},
    ),
    _feature(
        1, "dynamic_bsz", "Dynamic Batch Size", "DynBSZ", SWITCH,
        "Splits batches by token count instead of a fixed number of sequences.",
        variables={"USE_DYNAMIC_BSZ": [
            _ACTOR + "use_dynamic_bsz",
            "actor_rollout_ref.ref.log_prob_use_dynamic_bsz",
            "actor_rollout_ref.rollout.log_prob_use_dynamic_bsz",
        ]},
    ),
    _feature(
        2, "offload", "Offload", "Offload", SWITCH,
        "Moves parameters, gradients and optimizer state to host memory between uses.",
        variables={
            "PARAM_OFFLOAD": [_ACTOR + "megatron.param_offload", "actor_rollout_ref.ref.megatron.param_offload"],
            "OPTIMIZER_OFFLOAD": [_ACTOR + "megatron.optimizer_offload"],
            "GRAD_OFFLOAD": [_ACTOR + "megatron.grad_offload"],
        },
    ),
    _feature(
        3, "prefix_cache", "Prefix Cache", "PfxCache", LINES,
        "Reuses the KV cache of shared prompt prefixes during rollout.",
        on_lines=["actor_rollout_ref.rollout.enable_prefix_caching=True"],
        # verl 0.7.0 turns prefix caching on by default: "off" must be said explicitly.
        off_lines=["actor_rollout_ref.rollout.enable_prefix_caching=False"],
    ),
    _feature(
        4, "recompute", "Recompute", "Recompute", LINES,
        "Recomputes activations in the backward pass instead of keeping them (full, block, 8 layers).",
        on_lines=[
            _MEGATRON_OVERRIDE + "recompute_granularity=full",
            _MEGATRON_OVERRIDE + "recompute_method=block",
            _MEGATRON_OVERRIDE + "recompute_num_layers=8",
        ],
    ),
    _feature(
        5, "swap_optimizer", "Swap Optimizer", "SwapOpt", LINES,
        "Swaps optimizer state between device and host memory (MindSpeed).",
        on_lines=[_MEGATRON_OVERRIDE + "swap_optimizer=True"],
    ),
    _feature(
        6, "vpp", "VPP", "VPP", LINES,
        "Virtual pipeline parallelism: two model chunks per pipeline stage.",
        on_lines=[_ACTOR + "megatron.virtual_pipeline_model_parallel_size=2"],
    ),
)

# Values the rules below depend on, derived from the table so they cannot drift from it.
RECOMPUTE_NUM_LAYERS = 8
VPP_SIZE = 2

SWAP_OPTIMIZER_WARNING = (
    "Swap Optimizer (bit 5) and Offload (bit 2) both move optimizer state to host memory and exclude each other: "
    "optimizer offload is forced to False; parameter and gradient offload stay on."
)


def mask_from_number(number):
    """The seven characters of 0 and 1 that YAML 1.1 reads as `number`, or None.

    ansible-core (2.19 to 2.21 at least) resolves a scalar tagged `!unsafe` as if it were plain, dropping its quotes
    (its YAML constructor repeats the implicit resolution), and AWX writes every survey answer so: the answer 0010000
    arrives as `!unsafe '0010000'` and is read as the octal int 4096; 1010000 as the int 1010000; an unquoted YAML
    value the same. The two readings cannot be confused (an octal one is at most 0o111111 = 37449, a decimal one at
    least 1000000), so the text typed is recovered exactly; any other number is None."""
    if isinstance(number, bool) or not isinstance(number, int) or number < 0:
        return None
    decimal, octal = str(number), format(number, "o")
    if len(decimal) == MASK_LENGTH and decimal[0] == "1" and set(decimal) <= {"0", "1"}:
        return decimal
    if len(octal) < MASK_LENGTH and set(octal) <= {"0", "1"}:
        return octal.zfill(MASK_LENGTH)
    return None


def validate_mask(mask, variable="verl_feature_mask"):
    """Return the mask as a string, or raise MaskError naming the variable, the value and the fix. A number that YAML
    1.1 read from a mask (mask_from_number: an AWX survey answer, an unquoted YAML value) is that mask."""
    fix = "Fix: give seven characters, each 0 or 1, leftmost = bit 0 (Remove Padding), e.g. %s=0000000." % variable
    if isinstance(mask, bool) or mask is None:
        raise MaskError("%s=%r is not a feature mask. %s" % (variable, mask, fix))
    if isinstance(mask, int):
        recovered = mask_from_number(mask)
        if recovered is None:
            raise MaskError(
                "%s=%r was read as a number that no mask of seven 0s and 1s reads as (YAML reads 0010000 unquoted, or as an AWX "
                "survey answer, as the octal 4096; 1010000 as 1010000). Give the mask as text (%s: '1010000' in YAML, "
                "-e %s=1010000). %s" % (variable, mask, variable, variable, fix))
        return recovered
    text = str(mask)
    if not MASK_PATTERN.fullmatch(text):
        if len(text) != MASK_LENGTH:
            problem = "has %d characters, not %d" % (len(text), MASK_LENGTH)
        else:
            problem = "has characters other than 0 and 1"
        raise MaskError("%s=%r %s. %s" % (variable, text, problem, fix))
    return text


def decode_mask(mask, variable="verl_feature_mask"):
    """Decode a validated mask into everything run_training.sh needs.

    Returns a dict with:
      mask: the mask string;
      features: one entry per bit (bit, key, name, short, kind, enabled);
      enabled: {feature key: bool};
      switches: {shell variable: "True"/"False"} for bits 0-2, after the exclusion rule;
      switch_overrides: [(hydra key, shell variable)] in table order;
      lines: the override lines of bits 3-6 for this mask, in table order;
      warnings: human-readable warnings (the swap-optimizer / optimizer-offload exclusion).
    """
    mask = validate_mask(mask, variable)
    enabled = {f["key"]: mask[f["bit"]] == "1" for f in FEATURES}
    switches = {}
    switch_overrides = []
    lines = []
    for feature in FEATURES:
        on = enabled[feature["key"]]
        for var, keys in feature["variables"].items():
            switches[var] = on
            switch_overrides.extend((key, var) for key in keys)
        lines.extend(feature["on_lines"] if on else feature["off_lines"])

    warnings = []
    if enabled["swap_optimizer"] and enabled["offload"]:
        switches["OPTIMIZER_OFFLOAD"] = False
        warnings.append(SWAP_OPTIMIZER_WARNING)

    return {
        "mask": mask,
        "features": [
            {
                "bit": f["bit"],
                "key": f["key"],
                "name": f["name"],
                "short": f["short"],
                "kind": f["kind"],
                "enabled": enabled[f["key"]],
            }
            for f in FEATURES
        ],
        "enabled": enabled,
        "switches": {var: "True" if on else "False" for var, on in switches.items()},
        "switch_overrides": [list(pair) for pair in switch_overrides],
        "lines": lines,
        "warnings": warnings,
    }


def feature_overrides(decoded):
    """The feature part of the Hydra command line, with the switch variables substituted."""
    switches = decoded["switches"]
    return ["%s=%s" % (key, switches[var]) for key, var in decoded["switch_overrides"]] + list(decoded["lines"])
