#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) verl-deploy maintainers

from __future__ import annotations

DOCUMENTATION = r"""
---
module: node_facts
short_description: Read in one call everything the verl deploy checks on an Ascend host
version_added: 0.2.0
description:
  - One round trip per host for the deploy's pre-check. Reads, and returns, at once
  - the NPUs (C(npu-smi info), as M(verl.deploy.npu_info)); the processes that hold C(/dev/davinci*) open;
  - the Docker engine, its containers (with the devices of the running ones) and images, over the engine's socket;
  - the paths the settings point at, and (when asked) model and dataset candidates under search folders;
  - the model folder O(model_path) where it exists (C(config.json), the weights' index against the shard files and their
    headers but never the weights, the tokenizer files);
  - the network (interfaces, IPv4 addresses, the main routing table, the default route, the route to the Ray head);
  - the size of C(/dev/shm), the host's memory, the TCP ports that are listening and who holds them.
  - A part that cannot be read (no npu-smi, no Docker engine) does not fail the module; its part of the
    result says why (RV(npu.failed) and RV(npu.msg), RV(docker.can_talk_to_docker) and RV(docker.msg)).
  - This module never changes anything on the target.
options:
  npu_smi_path:
    description:
      - Path of the C(npu-smi) executable; when not set it is searched as M(verl.deploy.npu_info) does.
    type: path
  npu_board:
    description:
      - Also read C(npu-smi info -t board -i <id>) for each NPU (RV(npu.boards)).
    type: bool
    default: false
  docker:
    description:
      - Read the Docker engine (containers, images).
    type: bool
    default: true
  docker_host:
    description:
      - The engine's socket, C(unix://PATH) or C(tcp://HOST:PORT) (without TLS).
      - When not set, E(DOCKER_HOST) of the target, else C(unix:///var/run/docker.sock). The Docker CLI that runs in a
        container (O(training), O(container_check)) is given the same engine.
    type: str
  docker_timeout:
    description:
      - Seconds each request to the engine, and the read of O(training) in its container, may take.
    type: int
    default: 30
  paths:
    description:
      - Paths whose state to return in RV(paths) (existence, folder or file).
    type: list
    elements: str
    default: []
  head_address:
    description:
      - The Ray head's address, when known before the settings are checked (an IPv4 address or a host name,
        resolved on the target); its route is read with C(ip -4 route get) into RV(network.head_route).
      - Leave empty when the address is only known later; the routing table in RV(network.routes) lets the
        controller compute the route then (the P(verl.deploy.route_to#filter) filter).
    type: str
    default: ''
  model_path:
    description:
      - The model folder (C(verl_model_path), the same path on the host and in the container) to read into RV(model);
        empty for none.
    type: str
    default: ''
  model_search_paths:
    description:
      - Folders searched (4 levels deep) for model folders named C(Qwen*); empty for no search.
    type: list
    elements: path
    default: []
  dataset_search_paths:
    description:
      - Folders searched (6 levels deep) for C(*.parquet) files; empty for no search.
    type: list
    elements: path
    default: []
  search_limit:
    description:
      - At most this many candidates of each search (the first ones in sorted order).
    type: int
    default: 20
  ckpts_dir:
    description:
      - The checkpoint folder (C(verl_ckpts_dir)) to read into RV(ckpts) - it, or the nearest folder of its path that exists,
        whether the deploy user may write there, free space, which storage it is and verl's checkpoints in it. Nothing is created.
    type: str
    default: ''
  resume_from:
    description:
      - The checkpoint verl would resume from, to read into RV(resume) - V(auto) for the C(global_step_<N>) folder that
        C(latest_checkpointed_iteration.txt) of O(ckpts_dir) names (C(verl_resume_mode=auto)), or that folder itself
        (C(verl_resume_from_path) with C(verl_resume_mode=resume_path)); empty reads nothing. Only its small layout files
        are read (C(actor/transformer_config.json), C(actor/huggingface/config.json), the listing and C(common.pt) of
        C(actor/dist_ckpt)).
    type: str
    default: ''
  state_dir:
    description:
      - The deploy's state folder on this host (C(<verl_log_dir>/.verl-deploy)), to read into RV(last_training) what it
        recorded about the last training, with what O(ckpts_dir) holds now; empty reads nothing.
    type: str
    default: ''
  training:
    description:
      - The training container of this host (C(container)) and its C(workdir), to read the training's state there as the
        control script answers it (C(verl_control.sh training-state), run with the Docker CLI's C(docker exec), bounded by
        O(docker_timeout)) when that container runs, into RV(training). The Ray head's deploy reads the training this way, in this one call.
      - Omitted, nothing is run.
    type: dict
    suboptions:
      container:
        description: The container's name.
        type: str
        required: true
      workdir:
        description: The folder in the container that holds C(verl_control.sh).
        type: str
        required: true
  container_check:
    description:
      - The container stage's check as the last deploy ran it in a container of this host, when that container runs and
        a process of it holds an NPU (the training), beside the other reads. The call it kept in O(container_check.workdir)
        (its arguments and environment, JSON) is run again without its operation on an NPU (with C(VERL_CHECK_NO_NPU_OP=1)),
        so it only reads. Its answer is RV(container_check); the container stage then needs no call of its own when it
        would run the same call and the training holds the NPUs.
      - Omitted, nothing is run.
    type: dict
    suboptions:
      container:
        description: The container's name.
        type: str
        required: true
      workdir:
        description: C(verl_workdir) in the container, where the check keeps its call.
        type: str
        required: true
  parquet_paths:
    description:
      - Parquet files whose schema and row count to read from their footer into RV(parquet) (the data sets, on the Ray head),
        and the values of C(data_source) and C(reward_model.ground_truth) in their first 256 rows.
    type: list
    elements: str
    default: []
  hccn:
    description:
      - The NPU devices (their C(/dev/davinciN) numbers, as C(verl_npu_devices) names them) whose own network to read with
        C(hccn_tool) (C(-i <device> -link -g), C(-net_health -g), C(-ip -g), C(-tls -g)), with the addresses of C(/etc/hccn.conf),
        into RV(hccn), where the host has it (on PATH or C(/usr/local/Ascend/driver/tools/hccn_tool)). Only those of them that
        npu-smi lists are asked; an NPU not given is never asked, so a call that hangs on an NPU the deploy does not use cannot
        refuse the node.
      - Each call is bounded by 30 seconds and asked once more when it does not answer; after a call that does not answer
        twice, the host's other calls are not made.
      - Empty, the default, reads none of it (the pre-check on a single-node run, where HCCL stays inside the node).
    type: list
    elements: int
    default: []
extends_documentation_fragment:
  - verl.deploy.attributes.read_only
notes:
  - The Docker engine is read with Python's standard library over its socket; no Docker SDK is needed on the target.
  - The holders of C(/dev/davinci*) are read from C(/proc/*/fd); without root only the deploy user's own processes are seen.
  - RV(ansible_facts) holds C(ansible_default_ipv4) and C(ansible_interfaces) in the shape M(ansible.builtin.setup) gives
    them, so that C(ansible_default_ipv4) and C(ansible_facts.interfaces) work without a separate fact gathering.
requirements:
  - C(ip) (iproute2) on the target for the network part.
author:
  - verl-deploy maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Read the host for the pre-check
  verl.deploy.node_facts:
    paths: [/mnt/public/Qwen3-8B, /mnt/data/train.parquet]
    head_address: 10.0.0.1
  register: facts

- name: Refuse a host whose NPUs are busy or whose Docker engine does not answer
  ansible.builtin.assert:
    that:
      - not facts.npu.failed
      - facts.npu.busy_npu_ids | length == 0
      - facts.docker.can_talk_to_docker

- name: The route to an address known only later, from the routing table read above
  ansible.builtin.debug:
    msg: "{{ facts.network | verl.deploy.route_to('10.0.0.1') }}"
"""

RETURN = r"""
npu:
  description:
    - The result of M(verl.deploy.npu_info) (npus, npu_ids, busy_npu_ids, processes, healthy, chip_count,
      npu_smi_version, npu_smi_path), plus C(failed).
  returned: always
  type: dict
  sample: {failed: false, npu_ids: [0, 1], busy_npu_ids: [], healthy: true, npu_smi_path: /usr/local/sbin/npu-smi}
  contains:
    failed:
      description: V(true) when npu-smi is missing or failed (then C(msg) says why and C(dcmi_code) holds a dcmi error code).
      returned: always
      type: bool
    msg:
      description: Why npu-smi could not be read.
      returned: when RV(npu.failed)
      type: str
    processes:
      description:
        - npu-smi's process rows, each with what this host shows of its pid (npu-smi prints host pids, also of processes in
          containers) - C(seen) (the pid exists here), C(comm) (its name in C(/proc)) and C(container_id) (the innermost
          container id of its cgroup, V(null) for a process of the host itself).
      returned: when not RV(npu.failed)
      type: list
      elements: dict
    boards:
      description: Parsed C(npu-smi info -t board -i <id>) per NPU, as M(verl.deploy.npu_info) returns them.
      returned: with O(npu_board=true)
      type: list
      elements: dict
hccn:
  description:
    - With devices in O(hccn), the C(hccn_tool) used (C(path), empty when the host has none) and per NPU device of O(hccn) that
      npu-smi lists (its C(/dev/davinciN) number; no other NPU) C(link) (C(UP), C(DOWN)), C(health) (C(Success), or the
      failure hccn_tool names), C(address) and C(netmask) (C(-ip -g)) and C(tls) (V(enabled), V(disabled)); V(null) values when
      it printed no answer (C(error) says why, for the link and the health). C(not_asked) is V(true) for the NPUs after one
      whose call did not answer twice (they are not asked).
    - C(conf) is C(/etc/hccn.conf)'s C(address_N) per device number, V(null) when the host has no such file or O(hccn) is empty.
  returned: always
  type: dict
  sample: {path: /usr/local/Ascend/driver/tools/hccn_tool, conf: {'0': 29.1.112.213},
           devices: {'0': {link: UP, health: Success, address: 29.1.112.213, netmask: 255.255.0.0, tls: disabled}}}
device_holders:
  description: Processes that hold C(/dev/davinciN) open, with the Docker container id from their cgroup (V(null) outside containers).
  returned: always
  type: list
  elements: dict
  sample: [{device: /dev/davinci0, pid: 4242, name: python3, container_id: null}]
docker:
  description: The Docker engine, its containers and images.
  returned: always
  type: dict
  sample: {can_talk_to_docker: true, server_version: 20.10.24, containers: [], images: []}
  contains:
    can_talk_to_docker:
      description: Whether the engine answered.
      returned: always
      type: bool
    msg:
      description: Why the engine could not be read.
      returned: when not RV(docker.can_talk_to_docker)
      type: str
    server_version:
      description: The engine's version.
      returned: when RV(docker.can_talk_to_docker)
      type: str
    containers:
      description:
        - All containers, with the keys of M(community.docker.docker_host_info) (C(Id), C(Names), C(Image), C(Status),
          C(State)) plus C(Labels) and, for the running ones, C(HostConfig.Devices) and C(HostConfig.Privileged).
      returned: always
      type: list
      elements: dict
    root_dir:
      description: The engine's data root (C(docker info -f '{{.DockerRootDir}}')), where a pulled image's layers go.
      returned: when RV(docker.can_talk_to_docker)
      type: str
    root_free_bytes:
      description: The free space under RV(docker.root_dir) on this host; V(null) when the engine is not on this host (C(tcp://)).
      returned: when RV(docker.can_talk_to_docker)
      type: int
    root_size_bytes:
      description: The size of the file system under RV(docker.root_dir) (Ray counts a disk over 95 % full as full); V(null) as for RV(docker.root_free_bytes).
      returned: when RV(docker.can_talk_to_docker)
      type: int
    images:
      description: The images (C(Id), C(RepoTags), C(RepoDigests), C(Size)).
      returned: always
      type: list
      elements: dict
paths:
  description:
    - Per path given in O(paths), C(exists), C(isdir), C(isreg) (a symbolic link counts as what it points to), C(kind)
      (V(directory), V(file), V(socket), V(other) or V(missing)) and C(real), the path with links and C(..) resolved on
      this host (of a path not made yet, its existing part resolved).
  returned: always
  type: dict
  sample: {/mnt/public/Qwen3-8B: {exists: true, isdir: true, isreg: false, kind: directory, real: /mnt/public/Qwen3-8B}}
model:
  description:
    - The model folder O(model_path) as read on this host (plugins/module_utils/_model.py), V({}) when O(model_path) is empty.
    - C(facts) (V(null) when C(config.json) cannot be used) holds C(architecture), C(num_layers), C(num_attention_heads),
      C(num_kv_heads), C(vocab_size), C(max_position_embeddings), C(tie_word_embeddings), C(hidden_size), C(intermediate_size),
      C(head_dim), C(torch_dtype) and the experts (C(num_experts), 0 for a dense model, C(experts_per_token),
      C(moe_intermediate_size), C(shared_intermediate_size), C(moe_layers)); C(summary) one line of them.
    - C(parameters) is the model's one parameter count, for the memory, checkpoint space and parallelism rules. It is the
      elements of every tensor the weight files' safetensors headers declare, else (a header missing, or packed integer
      weights) config.json's shape; C(parameters_from) says which (C(weights), C(config.json)); C(active_parameters) are
      those a token passes (for MoE, the routed experts it is sent to) and C(expert_parameters) the routed experts' share
      (what expert parallelism splits).
    - C(problems) names what is unusable or missing (C(config.json), shards the index names, truncated shards, the tokenizer),
      each with the path and the fix; C(shards), C(missing) and C(truncated) list the weight files.
    - C(identity) is what the pre-check compares with the head's copy (C(config_sha256), C(config) the parsed C(config.json),
      C(shard_sizes) the size of every C(*.safetensors) file that can be read).
  returned: always
  type: dict
  sample: {path: /mnt/public/Qwen3-8B, summary: 'Qwen3ForCausalLM, 36 layers, 32/8 heads, 40960 positions', problems: []}
found:
  description: C(models) and C(datasets) found under O(model_search_paths) and O(dataset_search_paths), sorted.
  returned: always
  type: dict
  sample: {models: [/mnt/public/Qwen3-8B], datasets: []}
network:
  description: The host's network as the deploy needs it.
  returned: always
  type: dict
  contains:
    interfaces:
      description: The names of the network interfaces.
      returned: always
      type: list
      elements: str
    addresses:
      description: Per interface, its IPv4 addresses (C(address), C(prefixlen)).
      returned: always
      type: dict
    routes:
      description: The main IPv4 routing table (C(dest), C(via), C(dev), C(src), C(metric), C(type)).
      returned: always
      type: list
      elements: dict
    default_ipv4:
      description: The default route's C(address), C(interface) and C(gateway), as M(ansible.builtin.setup) names them.
      returned: always
      type: dict
    head_route:
      description:
        - The route to O(head_address) as C(ip -4 route get) gives it (C(target), C(address), C(ok), C(dev), C(src), C(via));
          C(ok) is V(null) when O(head_address) was empty.
      returned: always
      type: dict
    msg:
      description: Why C(ip) could not be run.
      returned: when C(ip) is missing
      type: str
ckpts:
  description:
    - O(ckpts_dir) as read (C(read), C(exists), C(existing) the nearest existing folder and C(missing) the part below it,
      C(writable), C(readonly), C(free_bytes), C(size_bytes), C(storage) the mount and inode that tell one shared storage
      from separate disks, C(tracker) the text of C(latest_checkpointed_iteration.txt), C(steps) the C(global_step_<N>)
      folders, C(step_files) the files of a complete save present in the folders the rules read). The model's size is
      the C(model) read's C(parameters).
  returned: always
  type: dict
  sample: {path: /mnt/project/ckpts, read: true, exists: true, writable: true, free_bytes: 1099511627776, steps: [2, 4]}
resume:
  description:
    - O(resume_from) as read - C(folder), C(step), C(read) (whether the folder exists), C(layout) (the parallel sizes its
      C(transformer_config.json) records, or none), C(model) (its saved Hugging Face config's facts, or none), C(ranks)
      (how many ranks wrote its distributed checkpoint) and C(sharding) (the distributed optimizer's sharding type, empty
      when it was saved without one, none when unknown).
  returned: always
  type: dict
  sample: {folder: /mnt/project/ckpts/global_step_4, step: 4, read: true, layout: {tensor_model_parallel_size: 2}, ranks: 16}
last_training:
  description:
    - What the state folder O(state_dir) recorded about the last training - C(last_step) (C(TIME N)), C(ckpts_seen), C(ckpts_fs)
      (the device its checkpoint folder was on), C(launch) (the launch record it started from, one JSON line) - and what
      O(ckpts_dir) holds now - C(exists) (V(yes) or V(no)), C(fs_now), C(checkpoints) (how many C(global_step_<N>) folders),
      C(mountpoint) (V(yes) or V(no)). Empty when O(state_dir) is.
  returned: always
  type: dict
  sample: {last_step: 1700000000 716, ckpts_fs: '64', exists: 'yes', fs_now: '64', checkpoints: 3, mountpoint: 'no'}
training:
  description:
    - O(training)'s read, as P(verl.deploy.node_step#module) returns it for its V(training-state) step - C(state), C(pid),
      C(exit_code), C(last_step), C(log), C(launch), ...; its state is V(unknown) when the container does not run or the
      script answered nothing. Empty without O(training).
  returned: always
  type: dict
  sample: {state: running, pid: '4242', started_at: '1796480000', exit_code: '', launch: null}
container_check:
  description:
    - O(container_check)'s answer - C(container), C(record) (the digest of the call it ran, as the container stage computes
      it; empty when there was none), C(rc) (V(null) when it was not run, with C(msg) saying why), C(stdout), C(stderr).
      Empty without O(container_check).
  returned: always
  type: dict
  sample: {container: verl, record: 9f86d081884c7d65..., rc: 0, stderr: '',
           stdout: '{"answer": {"look": "...", "raylet": "running", "stack": "{...}"}, "said": [...]}'}
parquet:
  description:
    - Per file of O(parquet_paths), C(num_rows), C(columns) (each column's type, as V(list<struct<role, content>>) - written
      with each field's type) and C(fields) (the fields of struct columns), or C(error) (why it is not a parquet file this reads).
    - C(sample) is what the reward reads of the first rows - C(rows) read, C(data_sources) (each value with its first row) and
      C(empty_ground_truth) (the rows whose C(reward_model.ground_truth) is empty or null); a key is missing when its column
      could not be read (not a string, another compression than SNAPPY, GZIP or none).
  returned: always
  type: dict
  sample: {/mnt/data/train.parquet: {num_rows: 7473, columns: {data_source: string}, fields: {}}}
shm:
  description: C(/dev/shm) as C(exists), C(size_kb), C(free_kb).
  returned: always
  type: dict
  sample: {exists: true, size_kb: 65536, free_kb: 65000}
ascend:
  description:
    - The host's Ascend HDK versions from C(/usr/local/Ascend/driver/version.info) and C(/usr/local/Ascend/firmware/version.info)
      - C(driver) (its C(Version)), C(firmware) (the firmware's own C(Version)) and C(firmware_hdk) (the firmware's
      C(package_version), its HDK release); V(null) where a file or line is missing.
  returned: always
  type: dict
  sample: {driver: 24.1.rc3, firmware: 7.5.0.1.129, firmware_hdk: 24.1.rc3}
memory:
  description: C(/proc/meminfo)'s C(MemTotal) and C(MemAvailable) as C(total_kb) and C(available_kb) (V(null) where missing).
  returned: always
  type: dict
  sample: {total_kb: 1584000000, available_kb: 1500000000}
listening_ports:
  description: TCP ports in LISTEN state on the target (IPv4 and IPv6), sorted.
  returned: always
  type: list
  elements: int
  sample: [22, 6379]
port_holders:
  description:
    - Per listening port (as a string) the processes holding its socket, C(pid (comm)); a port whose holder this user cannot
      see (another user's process, without root) is left out.
  returned: always
  type: dict
  sample: {'60005': ['4242 (python3)']}
python:
  description:
    - The Python that runs the modules on this node (C(executable), C(version)) and C(missing), the packages the later
      modules need that it cannot import (community.docker's API modules need C(requests)).
  returned: always
  type: dict
  sample: {executable: /usr/bin/python3, version: 3.11.2, missing: []}
ansible_facts:
  description: C(ansible_default_ipv4) and C(ansible_interfaces), as M(ansible.builtin.setup) names them.
  returned: always
  type: dict
"""

import concurrent.futures
import http.client
import json
import os
import socket
import subprocess
import sys
from urllib.parse import quote, urlparse

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.verl.deploy.plugins.module_utils import _model
from ansible_collections.verl.deploy.plugins.module_utils import _node_facts as nf
from ansible_collections.verl.deploy.plugins.module_utils._ckpts import read_ckpts_dir, read_last_training
from ansible_collections.verl.deploy.plugins.module_utils._control_step import control_argv, parse_training_state, run_command
from ansible_collections.verl.deploy.plugins.module_utils._parquet import read_schema, sample
from ansible_collections.verl.deploy.plugins.module_utils._resume import read_resume
from ansible_collections.verl.deploy.plugins.module_utils._chips import device_view
from ansible_collections.verl.deploy.plugins.module_utils._npu_smi import (
    executable, read_npu)

MODEL_PATTERNS = ['Qwen*']
DATASET_PATTERNS = ['*.parquet']
NOT_READ = {'can_talk_to_docker': False, 'msg': 'not read (docker=false)', 'containers': [], 'images': []}


def _read(path):
    try:
        with open(path, encoding='utf-8', errors='replace') as handle:
            return handle.read()
    except OSError:
        return ''


HCCN_TOOL_FALLBACKS = ('/usr/local/Ascend/driver/tools/hccn_tool', '/usr/local/bin/hccn_tool')
HCCN_CONF = '/etc/hccn.conf'


HCCN_TOOL_SECONDS = 30


def _hccn_run(path, device, option, hung):
    """(stdout, error) of `hccn_tool -i <device> <option> -g`, bounded by 30 s and asked twice when the first call does not
    answer (a host under load can stall one call; a tool that hangs hangs twice); error is '' when it exited 0. After a
    call that hung (`hung` holds it), no other call is made: the read stays bounded by 60 s, not 32 times that."""
    argv = [path, '-i', str(device), option, '-g']
    if hung:
        return '', hung[0]
    for _attempt in range(2):
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=HCCN_TOOL_SECONDS, check=False)
        except subprocess.TimeoutExpired:
            continue
        except OSError as exc:
            return '', str(exc)
        error = '' if proc.returncode == 0 else '`%s` exited %d: %s' % (' '.join(argv), proc.returncode, (proc.stdout + proc.stderr).strip()[:200])
        return proc.stdout, error
    hung.append('`%s` did not answer within %d s, asked twice' % (' '.join(argv), HCCN_TOOL_SECONDS))
    return '', hung[0]


def read_hccn(module, npu, wanted):
    """hccn_tool's link, health, address and TLS switch of each NPU device in `wanted` that the npu-smi read lists, and
    /etc/hccn.conf's addresses (no device when the host has no hccn_tool). Only the deploy's NPUs are asked: a call that
    hangs on another NPU would otherwise leave the deploy's own unasked and refuse a node that trains fine."""
    path = module.get_bin_path('hccn_tool') or next((p for p in HCCN_TOOL_FALLBACKS if executable(p)), None)
    conf = nf.parse_hccn_conf(_read(HCCN_CONF)) if os.path.isfile(HCCN_CONF) else None
    if not path or npu.get('failed'):
        return {'path': path or '', 'devices': {}, 'conf': conf}
    devices, hung = {}, []
    # One npu-smi does not list is refused by the pre-check's device rule already; asking hccn_tool about it adds nothing.
    for device in sorted(set(wanted) & set(device_view(npu)['device_ids'])):
        if hung:  # a call of an NPU before this one hung: this NPU is not asked
            devices[str(device)] = {'link': None, 'health': None, 'not_asked': True}
            continue
        entry = {'link': None, 'health': None}
        for option, key, name in (('-link', 'link status', 'link'), ('-net_health', 'net health status', 'health')):
            out, error = _hccn_run(path, device, option, hung)
            entry[name] = nf.parse_hccn_value(out, key)
            if entry[name] is None:
                entry.setdefault('error', error or '`%s -i %d %s -g` printed no %s' % (path, device, option, key))
        # What the pre-check compares, never a refusal of its own when unread: the address HCCL uses, the TLS switch.
        out, _error = _hccn_run(path, device, '-ip', hung)
        entry.update(nf.parse_hccn_ip(out))
        out, _error = _hccn_run(path, device, '-tls', hung)
        entry['tls'] = nf.parse_hccn_tls(out)
        devices[str(device)] = entry
    return {'path': path, 'devices': devices, 'conf': conf}


def read_fds():
    """[{'pid', 'fds': [link targets]}] of every process this user may read /proc/<pid>/fd of."""
    processes = []
    for pid in (p for p in os.listdir('/proc') if p.isdigit()):
        try:
            names = os.listdir('/proc/%s/fd' % pid)
        except OSError:
            continue
        fds = []
        for name in names:
            # An fd closed between the listing and its read (the listing's own, a process at work) is skipped, not the process.
            try:
                fds.append(os.readlink('/proc/%s/fd/%s' % (pid, name)))
            except OSError:
                pass
        processes.append({'pid': int(pid), 'fds': fds})
    return processes


def read_holders(processes):
    found = [dict(proc, name=_read('/proc/%s/comm' % proc['pid']).strip(), cgroup=_read('/proc/%s/cgroup' % proc['pid']))
             for proc in processes if any(fd.startswith('/dev/davinci') for fd in proc['fds'])]
    return nf.device_holders(found, _read('/proc/1/cgroup'))


def read_port_holders(processes, sockets):
    """{'<port>': ['pid (comm)']} of the listening ports whose socket a process shown here holds."""
    inodes = {'socket:[%s]' % inode for port_inodes in sockets.values() for inode in port_inodes}
    found = [dict(proc, name=_read('/proc/%s/comm' % proc['pid']).strip()) for proc in processes if inodes & set(proc['fds'])]
    return {str(port): pids for port, pids in nf.port_holders(sockets, found).items()}


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout):
        super().__init__('localhost', timeout=timeout)
        self._path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self._path)


def _docker_get(host, path, timeout):
    """One read of the engine's API (GET), its JSON answer."""
    url = urlparse(host)
    if url.scheme == 'unix':
        connection = _UnixConnection(url.path, timeout)
    elif url.scheme in ('tcp', 'http'):
        connection = http.client.HTTPConnection(url.hostname, url.port or 2375, timeout=timeout)
    else:
        raise ValueError('docker_host %s: only unix:// and tcp:// (without TLS) are read' % host)
    try:
        connection.request('GET', path)
        response = connection.getresponse()
        data = response.read()
    finally:
        connection.close()
    if response.status >= 400:
        raise ValueError('GET %s: HTTP %d %s' % (path, response.status, data[:200].decode('utf-8', 'replace')))
    return json.loads(data)


def _docker_host(module):
    """The engine this module talks to: docker_host, else DOCKER_HOST of the target, else the local unix socket."""
    return module.params['docker_host'] or os.environ.get('DOCKER_HOST') or 'unix:///var/run/docker.sock'


CHECK_SECONDS = 900


def run_recorded_check(module, docker, check, holders):
    """The container check as the record in the container keeps its call, run again without its NPU operation:
    {container, record (the call's digest, nf.call_digest), rc, stdout, stderr}; rc None, with msg, when it was not run
    (no container running, no process of it holding an NPU, no record, a record that is not a call). holders: the
    device holders of this host (nf.device_holders). Only while the container's own processes (the training) hold NPUs
    can the container stage use this run instead of its own, which then runs its NPU operation."""
    result = {'container': check['container'], 'record': '', 'rc': None, 'stdout': '', 'stderr': ''}
    ids = {item.get('Id') for item in docker.get('containers', []) if '/' + check['container'] in (item.get('Names') or [])}
    if not any(holder.get('container_id') in ids for holder in holders or ()):
        return dict(result, msg='not run: no process of the container %s holds an NPU' % check['container'])
    record = nf.check_record(check['workdir'])
    read = run_in_container(module, docker, {'container': check['container'], 'argv': ['cat', record]})
    if read['rc'] != 0:
        return dict(result, msg=read.get('msg') or 'not run: no record %s in the container' % record)
    try:
        call = json.loads(read['stdout'])
        argv, env = [str(arg) for arg in call['argv']], {str(key): str(value) for key, value in call['env'].items()}
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        return dict(result, msg='not run: the record %s is not a call (%s)' % (record, exc))
    # Bounded by the check itself (its Python at most 600 s, the count of the prompts its own deadline); the engine's
    # stream may be quiet that long.
    ran = run_in_container(module, docker, {'container': check['container'], 'argv': argv,
                                            'env': dict(env, VERL_CHECK_NO_NPU_OP='1'), 'timeout': CHECK_SECONDS})
    return dict(result, record=nf.call_digest(call), **{key: ran.get(key) for key in ('rc', 'stdout', 'stderr', 'msg') if key in ran})


def read_training(module, docker, where):
    """The training's state in its container (training-state), read as node_step reads it (_control_step.parse_training_state):
    state unknown when the container does not run or the script answered nothing."""
    ran = run_in_container(module, docker, {'container': where['container'], 'argv': control_argv(where['workdir'], 'training-state')})
    return parse_training_state(ran['stdout'])


def run_in_container(module, docker, step):
    """A step of the training container, when it runs, as the collection runs every one (_control_step.run_command: the
    Docker CLI's `docker exec`, bounded): {container, argv, rc, stdout, stderr}; rc None, with msg, when it was not run.
    step's env: its environment there."""
    name = step['container']
    result = {'container': name, 'argv': step['argv'], 'rc': None, 'stdout': '', 'stderr': ''}
    found = [item for item in docker.get('containers', []) if '/' + name in (item.get('Names') or [])]
    if not docker.get('can_talk_to_docker') or not found or found[0].get('State') != 'running':
        return dict(result, msg='not run: the container %s does not run here' % name)
    client = module.get_bin_path('docker')
    if not client:
        return dict(result, msg='not run: no docker client on the host')
    ran = run_command(step['argv'], found[0]['Id'], client, step.get('env'),
                      timeout=step.get('timeout') or module.params['docker_timeout'])
    if ran.get('failed'):
        return dict(result, msg='not run: %s' % ran['msg'])
    return dict(result, rc=ran['rc'], stdout=ran['stdout'], stderr=ran['stderr'])


def read_docker(module):
    host = _docker_host(module)
    timeout = module.params['docker_timeout']
    try:
        version = _docker_get(host, '/version', timeout)
        listed = _docker_get(host, '/containers/json?all=1', timeout)
        inspected = {item['Id']: _docker_get(host, '/containers/%s/json' % quote(item['Id']), timeout)
                     for item in listed if item.get('State') == 'running'}
        images = _docker_get(host, '/images/json', timeout)
    except (OSError, ValueError, http.client.HTTPException) as exc:
        return {'can_talk_to_docker': False, 'msg': 'cannot read the Docker engine at %s: %s' % (host, exc), 'containers': [], 'images': []}
    try:
        root = _docker_get(host, '/info', timeout).get('DockerRootDir') or ''
    except (OSError, ValueError, AttributeError, http.client.HTTPException):
        root = ''  # no room judged: the engine answered everything else
    # The engine's data root is a path of this host only when the engine runs here (its unix socket).
    free, size = disk_space(root) if root and urlparse(host).scheme == 'unix' else (None, None)
    return {
        'can_talk_to_docker': True, 'server_version': version.get('Version'), 'root_dir': root,
        'root_free_bytes': free, 'root_size_bytes': size,
        'containers': nf.summarize_containers(listed, inspected),
        'images': [{key: image.get(key) for key in ('Id', 'RepoTags', 'RepoDigests', 'Size')} for image in images],
    }


def disk_space(path):
    """The file system under path: the bytes an unprivileged writer may still use (statvfs f_bavail) and its size
    (f_blocks); (None, None) when it cannot be read."""
    try:
        stat = os.statvfs(path)
    except OSError:
        return None, None
    return stat.f_bavail * stat.f_frsize, stat.f_blocks * stat.f_frsize


def read_network(module):
    ip = module.get_bin_path('ip')
    interfaces = sorted(os.listdir('/sys/class/net')) if os.path.isdir('/sys/class/net') else []
    network = {'interfaces': interfaces, 'addresses': {}, 'routes': [], 'default_ipv4': {},
               'head_route': {'target': module.params['head_address'], 'ok': None, 'how': 'ip route get'}}
    if not ip:
        network['msg'] = 'ip (iproute2) not found on the target'
        return network
    _rc, out, _err = module.run_command([ip, '-4', '-o', 'addr', 'show'])
    network['addresses'] = nf.parse_ip_addr(out)
    rc, out, err = module.run_command([ip, '-4', '-o', 'route', 'show'])
    network['routes'] = nf.parse_ip_routes(out) if rc == 0 else []
    network['default_ipv4'] = nf.default_ipv4(network['routes'], network['addresses'])
    target = module.params['head_address'].strip()
    if target:
        try:
            address = socket.gethostbyname(target)
        except OSError as exc:
            network['head_route'].update(ok=False, msg='cannot resolve %s here: %s' % (target, exc))
            return network
        rc, out, err = module.run_command([ip, '-4', '-o', 'route', 'get', address])
        network['head_route'].update(nf.parse_route_get(out) if rc == 0 else {'msg': err.strip()}, ok=rc == 0, address=address)
    return network


def read_shm():
    try:
        stat = os.statvfs('/dev/shm')
    except OSError:
        return {'exists': False, 'size_kb': 0, 'free_kb': 0}
    return {'exists': True, 'size_kb': stat.f_blocks * stat.f_frsize // 1024, 'free_kb': stat.f_bavail * stat.f_frsize // 1024}


# What the modules run later on this node import: community.docker's API modules (docker_container, _exec, _info...)
# need requests (their requirements; without it they fail with "Failed to import the required Python library (requests)").
NODE_PACKAGES = ('requests',)


def read_python():
    missing = []
    for name in NODE_PACKAGES:
        try:
            __import__(name)
        except Exception:  # pylint: disable=broad-except  # an install that fails to import is missing too
            missing.append(name)
    return {'executable': sys.executable, 'version': '%d.%d.%d' % sys.version_info[:3], 'missing': missing}


def read_host(module, params, processes, holders, docker):
    """Everything node_facts returns but the container check."""
    network = read_network(module)
    npu = read_npu(module, module.params['npu_smi_path'], 'verl_npu_smi_path', module.params['npu_board'])
    sockets = nf.listening_sockets(_read('/proc/net/tcp'), _read('/proc/net/tcp6'))
    return dict(
        changed=False,
        npu=npu,
        hccn=read_hccn(module, npu, params['hccn']) if params['hccn'] else {'path': '', 'devices': {}, 'conf': None},
        device_holders=holders,
        docker=docker,
        training=read_training(module, docker, params['training']) if params['training'] else {},
        paths={path: nf.path_state(path) for path in params['paths'] if path},
        # Read here, judged here: only the facts and the problems travel back, never the shards' bytes.
        model=_model.judge(_model.read_folder(params['model_path'])) if params['model_path'] else {},
        found={
            'models': nf.find_paths(params['model_search_paths'], MODEL_PATTERNS, 'directory', 4, params['search_limit']),
            'datasets': nf.find_paths(params['dataset_search_paths'], DATASET_PATTERNS, 'file', 6, params['search_limit']),
        },
        network=network,
        ckpts=read_ckpts_dir(params['ckpts_dir']),
        resume=read_resume(params['ckpts_dir'], params['resume_from']),
        last_training=read_last_training(params['state_dir'], params['ckpts_dir']) if params['state_dir'] else {},
        parquet={path: dict(read_schema(path), sample=sample(path)) for path in params['parquet_paths'] if path},
        shm=read_shm(),
        ascend=nf.ascend_versions(_read(nf.DRIVER_VERSION_INFO), _read(nf.FIRMWARE_VERSION_INFO)),
        memory=nf.meminfo(_read('/proc/meminfo')),
        python=read_python(),
        listening_ports=sorted(sockets),
        port_holders=read_port_holders(processes, sockets),
        # Named as setup names them: ansible_default_ipv4 (also ansible_facts.default_ipv4) and ansible_interfaces.
        ansible_facts=dict(ansible_default_ipv4=network['default_ipv4'], ansible_interfaces=network['interfaces']),
    )


def main():
    module = AnsibleModule(
        argument_spec=dict(
            npu_smi_path=dict(type='path'),
            npu_board=dict(type='bool', default=False),
            docker=dict(type='bool', default=True),
            docker_host=dict(type='str'),
            docker_timeout=dict(type='int', default=30),
            paths=dict(type='list', elements='str', default=[]),
            head_address=dict(type='str', default=''),
            model_path=dict(type='str', default=''),
            model_search_paths=dict(type='list', elements='path', default=[]),
            dataset_search_paths=dict(type='list', elements='path', default=[]),
            search_limit=dict(type='int', default=20),
            hccn=dict(type='list', elements='int', default=[]),
            ckpts_dir=dict(type='str', default=''),
            parquet_paths=dict(type='list', elements='str', default=[]),
            resume_from=dict(type='str', default=''),
            state_dir=dict(type='str', default=''),
            training=dict(type='dict', options=dict(container=dict(type='str', required=True),
                                                    workdir=dict(type='str', required=True))),
            container_check=dict(type='dict', options=dict(container=dict(type='str', required=True),
                                                           workdir=dict(type='str', required=True))),
        ),
        supports_check_mode=True,
    )
    # Everything below only reads, so check mode reads too.
    params = module.params
    if params['docker_host']:
        os.environ['DOCKER_HOST'] = params['docker_host']  # the Docker CLI's exec asks the engine read here
    processes = read_fds()
    holders = read_holders(processes)
    docker = read_docker(module) if params['docker'] else NOT_READ
    # The container check waits on the container (its imports, on the head its count of the prompts): it runs beside the
    # reads of this host below, so the read takes about as long as the longer of the two.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as beside:
        checked = beside.submit(run_recorded_check, module, docker, params['container_check'], holders) if params['container_check'] else None
        result = read_host(module, params, processes, holders, docker)
        result['container_check'] = checked.result() if checked else {}
    module.exit_json(**result)


if __name__ == '__main__':
    main()
