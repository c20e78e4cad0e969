#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
module: launch_config
short_description: Check the verl settings of one host and compute its launch configuration
version_added: 0.1.0
description:
  - Checks every C(verl_) setting of one inventory host before anything is changed or written, and returns the normalised
    configuration the C(start_verl.sh) and C(run_training.sh) templates render.
  - Checks types (whole numbers, numbers, booleans, lists), absolute and Hydra-safe paths, the NPU list, names, the Ray head's
    address, SwanLab settings, the feature mask, and the parallelism rules (generation TP equals training TP; TP x PP a multiple
    of the NPUs per node; verl's and Megatron's world-size, batch-size, layer, head, VPP and recompute constraints).
  - Every string is bounded in length and may hold no control character; every number is finite and within bounds; paths are
    normalised and never the root or a system folder where they are mounted or written; inventory host names, environment
    variable names (none that change how bash runs), Hydra overrides and the image reference (Docker's grammar) are checked.
  - Every problem is reported at once, each naming the variable, the value (cut to a readable length) and the fix.
  - Runs on the controller (C(delegate_to=localhost)); it reads nothing from the host.
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  scope:
    description:
      - V(launch) checks every setting and returns the launch configuration.
      - V(identity) checks only what names the deployment (C(verl_container_name), C(verl_workdir), C(verl_log_dir),
        C(verl_host_stage_dir)) and the day-2 settings (C(verl_status_log_lines), C(verl_status_stall_seconds),
        C(verl_stop_containers), C(verl_logs_dir), C(verl_logs_max_mb), C(verl_deploy_lock_timeout)), for C(status.yml), C(stop.yml) and C(logs.yml); the
        training's inputs (paths, key, hyper-parameters) are not needed to look at, stop or collect the logs of a deployment.
    type: str
    choices: [launch, identity]
    default: launch
  settings:
    description:
      - The C(verl_) variables of the host, by name, as they are (strings from surveys and C(-e) are converted here).
      - Must not hold a secret (C(verl_swanlab_api_key), a tracker's key); only whether each is set comes here, as
        O(swanlab_api_key_set) and O(secrets_set).
    type: dict
    required: true
  spec:
    description:
      - The argument spec options of the settings (the C(verl.deploy.verl) role's C(meta/argument_specs.yml), entry point C(main)).
      - Gives each setting's type, default and choices; variables not in it are reported as likely typos.
    type: dict
    required: true
  rules:
    description:
      - The rules and bounds of the settings (the C(verl.deploy.verl) role's C(meta/setting_rules.yml)), read together with O(spec).
    type: dict
    required: true
  swanlab_api_key_set:
    description:
      - Whether a SwanLab API key was given. The key itself never comes to this module; only a login mode passes it on,
        to the modules that log in.
    type: bool
    default: false
  secrets_set:
    description:
      - The names of the trackers' secret settings that were given (such as C(verl_wandb_api_key)); their values never come
        to this module, only to their files in the container.
    type: list
    elements: str
    default: []
  unknown:
    description:
      - The names of the other C(verl_) variables in scope, which are not settings (their values are never passed).
      - Each is warned about as a likely typo; a name that looks like the key's (such as C(verl_swanlab_apikey)) is refused.
    type: list
    elements: str
    default: []
  mask:
    description:
      - The value of the C(mask) extra var, when one was given (the short name of C(verl_feature_mask)).
    type: raw
  host:
    description:
      - The inventory host being checked.
    type: str
    required: true
  is_head:
    description:
      - Whether the host is the Ray head (the single host of the C(ray_head) group).
    type: bool
    required: true
  nnodes:
    description:
      - Number of nodes in the cluster (C(ray_head) plus C(ray_workers)).
    type: int
    required: true
  detected:
    description:
      - What the pre-check found on this host, used where O(settings) states nothing (stated > detected > default).
    type: dict
    default: {}
    suboptions:
      node_ip:
        description: The IPv4 address this host uses to reach the head.
        type: str
      socket_ifname:
        description: The interface holding that address.
        type: str
      npu_smi_path:
        description: The npu-smi executable found on the host, mounted read-only into a new container.
        type: str
      models:
        description: Model folders found on the host, listed (never chosen) when O(settings) has no C(verl_model_path).
        type: list
        elements: str
      datasets:
        description: Parquet files found on the host, listed when O(settings) has no C(verl_train_file) or C(verl_test_file).
        type: list
        elements: str
      chip:
        description:
          - The host's Ascend chip as the M(verl.deploy.npu_info) result shows it (the C(verl.deploy.npu_devices) filter).
          - When O(settings) has an empty C(verl_image), the image of C(verl_image_by_chip) for this family is chosen.
        type: dict
        suboptions:
          family:
            description: V(910b), V(a3), or empty when the chip is of neither family.
            type: str
          name:
            description: The chip name(s) npu-smi printed.
            type: str
      model:
        description:
          - The model's numbers as C(config.json) on this host gives them (C(model.facts) of what M(verl.deploy.node_facts)
            returns), for the shape rules (heads, KV heads and vocabulary against TP, layers against PP and VPP, the prompt
            and response budget against C(max_position_embeddings)); V(null) when not read, then those rules wait.
        type: dict
      device_ids:
        description:
          - The host's NPU device numbers (C(/dev/davinciN)) as npu-smi lists them; with C(verl_container_privileged=true) the
            container has all of them, and C(ASCEND_RT_VISIBLE_DEVICES) numbers O(settings) C(verl_npu_devices) among them.
        type: list
        elements: int
  head:
    description:
      - Addresses known for the head host, used when O(settings) has no C(verl_master_addr).
    type: dict
    required: true
    suboptions:
      name:
        description: Inventory name of the head.
        type: str
        required: true
      node_ip:
        description: The head's C(verl_node_ip).
        type: str
      ansible_host:
        description: The head's C(ansible_host).
        type: str
      default_ipv4:
        description: The head's detected default IPv4 address.
        type: str
extends_documentation_fragment:
  - verl.deploy.attributes.read_only
seealso:
  - module: verl.deploy.feature_mask
notes:
  - The C(verl.deploy.verl) role calls this module for every host; see its C(tasks/validate.yml).
"""

EXAMPLES = r"""
- name: Check the settings of this host
  verl.deploy.launch_config:
    settings:
      verl_feature_mask: "1010000"
      verl_model_path: /mnt/public/Qwen3-8B
      verl_train_file: /data/train.parquet
      verl_test_file: /data/test.parquet
      verl_ckpts_dir: /ckpt
    spec: "{{ (lookup('ansible.builtin.file', 'roles/verl/meta/argument_specs.yml') | from_yaml).argument_specs.main.options }}"
    rules: "{{ lookup('ansible.builtin.file', 'roles/verl/meta/setting_rules.yml') | from_yaml }}"
    host: "{{ inventory_hostname }}"
    is_head: true
    nnodes: 1
    head:
      name: "{{ inventory_hostname }}"
      ansible_host: 10.0.0.1
  delegate_to: localhost
  register: launch
"""

RETURN = r"""
config:
  description:
    - With O(scope=identity), only C(container_name), C(workdir), C(log_dir), C(host_stage_dir), C(status_log_lines),
      C(status_stall_seconds), C(stop_containers), C(logs_dir), C(logs_max_mb) and C(deploy_lock_timeout).
    - The normalised launch configuration of the host (paths, NPU list, Ray addresses and ports, hyper-parameters, decoded
      features, SwanLab settings without the key). Empty strings for O(settings) C(verl_node_ip) and C(verl_socket_ifname) mean
      "detect when the script runs".
    - C(image) is the image of the host's container (C(verl_image), or chosen for its chip), C(image_source) says which, and
      C(chip) is the detected chip family and name.
  returned: success
  type: dict
  sample:
    host: node1
    role: head
    nnodes: 2
    npu_devices: [0, 1, 2, 3, 4, 5, 6, 7]
    npu_per_node: 8
    master_addr: 10.0.0.1
    train_tp: 4
    train_pp: 2
    features: {mask: "0000000"}
errors:
  description: The problems found, each with the variable, its value and a message that includes the fix.
  returned: failure
  type: list
  elements: dict
  sample: [{"variable": "verl_train_tp", "value": 3, "msg": "verl_train_tp=3 does not divide ... Fix: use one of 1, 2, 4, 8."}]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.verl.deploy.plugins.module_utils._launch_config import ARGUMENT_SPEC, evaluate


def main():
    # The deploy runs this through its action plugin (plugins/action/launch_config.py: the same evaluate(), on
    # the controller, without a module process); the module runs where the action plugin is not used.
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    result, warnings, mask_values = evaluate(module.params)
    module.no_log_values.update(mask_values)
    for warning in warnings:
        module.warn(warning)
    if result.pop("failed", False):
        module.fail_json(**result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
