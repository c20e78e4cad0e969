# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The feature table and mask decoding."""
from __future__ import annotations

import pytest

from ansible_collections.verl.deploy.plugins.module_utils._features import (
    FEATURES,
    LINES,
    SWITCH,
    MaskError,
    decode_mask,
    feature_overrides,
    validate_mask,
)


def test_table_has_seven_bits_in_the_original_order():
    assert [f["bit"] for f in FEATURES] == list(range(7))
    assert [f["short"] for f in FEATURES] == ["RmvPad", "DynBSZ", "Offload", "PfxCache", "Recompute", "SwapOpt", "VPP"]
    assert [f["kind"] for f in FEATURES] == [SWITCH] * 3 + [LINES] * 4


@pytest.mark.parametrize("mask", ["", "0", "012", "000000", "11111111", "abcdefg", "000 000", "0000000\n", "１０１０１０１", None, True, 101])
def test_bad_masks_are_rejected_naming_the_variable_and_the_fix(mask):
    with pytest.raises(MaskError) as info:
        validate_mask(mask, "mask")
    message = str(info.value)
    assert message.startswith("mask=")
    assert "Fix:" in message and "0000000" in message


def test_a_number_mask_is_explained():
    with pytest.raises(MaskError, match="read as a number"):
        validate_mask(10000)


def test_all_off_says_prefix_caching_off_explicitly():
    decoded = decode_mask("0000000")
    assert not any(decoded["enabled"].values())
    assert decoded["lines"] == ["actor_rollout_ref.rollout.enable_prefix_caching=False"]
    assert set(decoded["switches"].values()) == {"False"}
    assert decoded["warnings"] == []


def test_all_on_applies_the_exclusion():
    decoded = decode_mask("1111111")
    assert all(decoded["enabled"].values())
    assert decoded["switches"] == {
        "USE_REMOVE_PADDING": "True", "USE_DYNAMIC_BSZ": "True",
        "PARAM_OFFLOAD": "True", "OPTIMIZER_OFFLOAD": "False", "GRAD_OFFLOAD": "True",
    }
    assert len(decoded["warnings"]) == 1
    assert len(decoded["lines"]) == 1 + 3 + 1 + 1


@pytest.mark.parametrize("bit", range(7))
def test_each_bit_alone_turns_on_only_its_feature(bit):
    mask = "".join("1" if i == bit else "0" for i in range(7))
    decoded = decode_mask(mask)
    assert [f["enabled"] for f in decoded["features"]] == [i == bit for i in range(7)]


def test_feature_overrides_substitute_the_switches():
    overrides = feature_overrides(decode_mask("0010010"))
    assert "actor_rollout_ref.actor.megatron.optimizer_offload=False" in overrides
    assert "actor_rollout_ref.actor.megatron.param_offload=True" in overrides
    assert "actor_rollout_ref.ref.megatron.param_offload=True" in overrides
    assert "+actor_rollout_ref.actor.megatron.override_transformer_config.swap_optimizer=True" in overrides
