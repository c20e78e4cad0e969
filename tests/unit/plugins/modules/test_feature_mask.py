# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""verl.deploy.feature_mask, driven through main() as Ansible would."""
from __future__ import annotations

import json

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.verl.deploy.plugins.modules import feature_mask


def run(capsys, args):
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            feature_mask.main()
    return json.loads(capsys.readouterr().out)


def test_decodes_a_mask(capsys):
    result = run(capsys, {"mask": "1010010"})
    assert result["changed"] is False
    assert result["mask"] == "1010010"
    assert [f["name"] for f in result["features"] if f["enabled"]] == ["Remove Padding", "Offload", "Swap Optimizer"]
    assert result["offload"] == {"param": True, "optimizer": False, "grad": True}
    assert "actor_rollout_ref.actor.megatron.optimizer_offload=False" in result["overrides"]
    assert "actor_rollout_ref.rollout.enable_prefix_caching=False" in result["overrides"]
    assert len(result["mask_warnings"]) == 1
    assert "optimizer offload is forced to False" in json.dumps(result["warnings"])


@pytest.mark.parametrize("mask", ["012", "11111111", "abcdefg", "", 10000])
def test_rejects_bad_masks(capsys, mask):
    result = run(capsys, {"mask": mask})
    assert result["failed"] is True
    assert result["msg"].startswith("mask=") and "Fix:" in result["msg"]


def test_check_mode_gives_the_same_answer(capsys):
    result = run(capsys, {"mask": "0000000", "_ansible_check_mode": True})
    assert result["changed"] is False and result["mask"] == "0000000"
