# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The feature table and mask decoding."""
from __future__ import annotations

import pytest
import yaml

from helpers.launch_helpers import all_masks

from ansible_collections.verl.deploy.plugins.module_utils._features import (
    FEATURES,
    LINES,
    SWITCH,
    MaskError,
    decode_mask,
    feature_overrides,
    mask_from_number,
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


def test_a_number_no_mask_reads_as_is_explained():
    with pytest.raises(MaskError, match="read as a number that no mask of seven 0s and 1s reads as"):
        validate_mask(10000)


@pytest.mark.parametrize("typed", all_masks())
def test_every_mask_read_as_a_number_by_yaml_is_the_mask_typed(typed):
    """What ansible-core makes of an AWX survey answer (`!unsafe '<mask>'`) or an unquoted YAML value, for each of the
    128 masks: the mask typed comes back, never another one."""
    from ansible.parsing.yaml.loader import AnsibleLoader  # pylint: disable=import-outside-toplevel

    for text in ("mask: !unsafe '%s'\n" % typed, "mask: %s\n" % typed):
        loaded = yaml.load(text, Loader=AnsibleLoader)["mask"]  # noqa: S506
        assert validate_mask(loaded) == typed, (text, loaded)


@pytest.mark.parametrize("number", [10000, 2, 3, 1000002, 1111112, 37450, -1, 0o1000000])
def test_numbers_that_are_no_mask_stay_refused(number):
    assert mask_from_number(number) is None


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
