#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
module: feature_mask
short_description: Decode the 7-bit verl acceleration feature mask
version_added: 0.1.0
description:
  - Validates a feature mask (seven characters, each V(0) or V(1), leftmost = bit 0) and tells which features it turns on,
    the effective offload flags, and the Hydra override lines it adds to C(run_training.sh).
  - "Bits, left to right: 0 Remove Padding, 1 Dynamic Batch Size, 2 Offload, 3 Prefix Cache, 4 Recompute, 5 Swap Optimizer, 6 VPP."
  - Swap Optimizer (bit 5) and the optimizer part of Offload (bit 2) exclude each other. With both on, optimizer offload is
    forced to V(False), parameter and gradient offload stay on, and a warning says so.
  - verl 0.7.0 enables prefix caching by default, so with bit 3 off the overrides say
    C(actor_rollout_ref.rollout.enable_prefix_caching=False) explicitly.
  - The feature table lives in the collection's C(module_utils/_features.py); the templates and docs read the same table.
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  mask:
    description:
      - The mask, for example V(1010000). Give it as a string; a number (a YAML value whose leading zeros were lost) is rejected.
    type: raw
    required: true
extends_documentation_fragment:
  - verl.deploy.attributes.read_only
seealso:
  - module: verl.deploy.launch_config
notes:
  - Runs anywhere; it neither reads nor changes the host.
"""

EXAMPLES = r"""
- name: Decode the mask given as -e mask=...
  verl.deploy.feature_mask:
    mask: "{{ mask | default('0000000') }}"
  register: features

- name: Show which features are on
  ansible.builtin.debug:
    msg: "{{ features.features | selectattr('enabled') | map(attribute='name') | list }}"
"""

RETURN = r"""
mask:
  description: The validated mask.
  returned: success
  type: str
  sample: "1010010"
features:
  description: One entry per bit, in bit order.
  returned: success
  type: list
  elements: dict
  contains:
    bit:
      description: The bit position, 0 = leftmost character.
      type: int
      sample: 0
    key:
      description: Short identifier of the feature.
      type: str
      sample: remove_padding
    name:
      description: Name of the feature.
      type: str
      sample: Remove Padding
    short:
      description: Abbreviation used by the original design.
      type: str
      sample: RmvPad
    kind:
      description: V(switch) (a True/False variable that is always in the command) or V(lines) (override lines added when on).
      type: str
      sample: switch
    enabled:
      description: Whether the mask turns the feature on.
      type: bool
      sample: true
enabled:
  description: Feature key to on/off.
  returned: success
  type: dict
  sample: {"remove_padding": true, "dynamic_bsz": false, "offload": true, "prefix_cache": false,
           "recompute": false, "swap_optimizer": true, "vpp": false}
offload:
  description: The effective Megatron offload flags after the swap-optimizer exclusion.
  returned: success
  type: dict
  contains:
    param:
      description: C(actor.megatron.param_offload) and C(ref.megatron.param_offload).
      type: bool
    optimizer:
      description: C(actor.megatron.optimizer_offload).
      type: bool
    grad:
      description: C(actor.megatron.grad_offload).
      type: bool
  sample: {"param": true, "optimizer": false, "grad": true}
switches:
  description: The shell variables of bits 0-2 in C(run_training.sh) with their values.
  returned: success
  type: dict
  sample: {"USE_REMOVE_PADDING": "True", "USE_DYNAMIC_BSZ": "False", "PARAM_OFFLOAD": "True", "OPTIMIZER_OFFLOAD": "False", "GRAD_OFFLOAD": "True"}
overrides:
  description: Every Hydra override the mask decides, in the order C(run_training.sh) passes them.
  returned: success
  type: list
  elements: str
  sample:
    - actor_rollout_ref.actor.megatron.use_remove_padding=True
    - actor_rollout_ref.ref.megatron.use_remove_padding=True
    - actor_rollout_ref.model.use_remove_padding=True
    - actor_rollout_ref.rollout.enable_prefix_caching=False
    - +actor_rollout_ref.actor.megatron.override_transformer_config.swap_optimizer=True
mask_warnings:
  description: Warnings about the mask (also shown as Ansible warnings).
  returned: success
  type: list
  elements: str
  sample: ["Swap Optimizer (bit 5) and Offload (bit 2) both move optimizer state to host memory and exclude each other: ..."]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.verl.deploy.plugins.module_utils._features import MaskError, decode_mask, feature_overrides


def main():
    module = AnsibleModule(argument_spec={"mask": {"type": "raw", "required": True}}, supports_check_mode=True)
    try:
        decoded = decode_mask(module.params["mask"], "mask")
    except MaskError as exc:
        module.fail_json(msg=str(exc))
    for warning in decoded["warnings"]:
        module.warn(warning)
    switches = decoded["switches"]
    module.exit_json(
        changed=False,
        mask=decoded["mask"],
        features=decoded["features"],
        enabled=decoded["enabled"],
        offload={
            "param": switches["PARAM_OFFLOAD"] == "True",
            "optimizer": switches["OPTIMIZER_OFFLOAD"] == "True",
            "grad": switches["GRAD_OFFLOAD"] == "True",
        },
        switches=switches,
        overrides=feature_overrides(decoded),
        mask_warnings=decoded["warnings"],
    )


if __name__ == "__main__":
    main()
