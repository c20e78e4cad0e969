#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) verl-deploy maintainers

from __future__ import annotations

DOCUMENTATION = r"""
---
module: log_bundle
short_description: Pack a node's logs, each file cut to its last bytes, into one tar.gz on the node
version_added: 0.1.0
description:
  - Collects files from the host (folders or files, filtered by name patterns) and from a Docker container (with C(docker cp),
    which also works when the container is stopped), and the output of commands run on the host, into one gzip-compressed tar
    archive on the host.
  - Every file is bounded by O(max_mb) - only its last O(max_mb) MB are kept, under a first line saying how much was left out.
  - What is absent (a folder that does not exist, a container that is absent, a command not installed) is recorded in the
    bundle's C(MANIFEST.json) and in RV(missing), never a failure. The module fails only when the archive cannot be written.
  - Secrets are never packed - files whose names match O(exclude) are left out, and every occurrence of a value in O(secrets),
    or of the content of a file in O(container_secret_files), is replaced by C(<redacted>) in every packed file.
options:
  archive:
    description: Path of the archive written on the host (its folder must exist).
    type: path
    required: true
  max_mb:
    description: At most this many MB (the end) of each file are kept.
    type: int
    default: 20
  sources:
    description: What to collect. Each entry is packed under its O(sources[].name) folder in the archive.
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: Folder in the archive.
        type: str
        required: true
      path:
        description: A folder (its files, recursively) or a file.
        type: str
        required: true
      patterns:
        description: Shell patterns of the base names to keep; all files when empty.
        type: list
        elements: str
        default: []
      in_container:
        description: The path is inside O(container) (read with C(docker cp)), not on the host.
        type: bool
        default: false
  commands:
    description: Commands run on the host (an argument list, no shell); their output and exit code are packed as O(commands[].name).
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: File name in the archive.
        type: str
        required: true
      argv:
        description: The command.
        type: list
        elements: str
        required: true
  container:
    description: The container O(sources) with O(sources[].in_container) are read from.
    type: str
  docker:
    description: The docker client; searched on E(PATH) when not given.
    type: path
  exclude:
    description: Shell patterns of base names never packed (checked before anything is read).
    type: list
    elements: str
    default: ['*api_key*', '.netrc', '*.pem', '*.key']
  secrets:
    description: Values replaced by C(<redacted>) wherever they occur in a packed file.
    type: list
    elements: str
    default: []
  container_secret_files:
    description:
      - Files inside O(container) whose content is a secret (e.g. the SwanLab key file) - they are never packed, and their
        content is replaced by C(<redacted>) wherever it occurs in a packed file. Absent files are ignored.
    type: list
    elements: str
    default: []
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: none
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
notes:
  - Nothing is changed on the host or in the container except the archive written; the container is never started or stopped.
author:
  - verl-deploy maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Pack the training logs and Ray's session logs of this node, 20 MB per file at most
  verl.deploy.log_bundle:
    archive: /tmp/verl-logs.tar.gz
    max_mb: 20
    container: verl
    sources:
      - {name: training, path: /mnt/project/verl/logs, patterns: ['verl_qwen3_8b_*.log', start_verl.out]}
      - {name: ray, path: /tmp/ray/session_latest/logs, in_container: true}
    commands:
      - {name: npu-smi-info.txt, argv: [npu-smi, info]}
    container_secret_files: [/root/.swanlab/verl_deploy_api_key]
"""

RETURN = r"""
archive:
  description: The archive written.
  returned: success
  type: str
  sample: /tmp/verl-logs.tar.gz
container_state:
  description: C(docker inspect)'s state of O(container) (V(running), V(exited), ...), V(absent), or V(unknown) with the reason.
  returned: success
  type: str
  sample: exited
files:
  description: The packed files.
  returned: success
  type: list
  elements: dict
  contains:
    name:
      description: Path in the archive.
      returned: success
      type: str
      sample: training/verl_qwen3_8b_dapo_20261201.log
    size:
      description: Bytes of the file as collected (its original size, or the kept end plus its first line).
      returned: success
      type: int
      sample: 20971620
    original_size:
      description: Bytes of the file on the host or in the container.
      returned: success
      type: int
      sample: 73400320
    truncated:
      description: Whether only the end was kept.
      returned: success
      type: bool
      sample: true
missing:
  description: What was not collected and why (absent folder, absent container, command not found, ...).
  returned: success
  type: list
  elements: dict
  sample: [{name: cann-plog, source: /root/ascend/log, reason: container verl is absent}]
"""
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.verl.deploy.plugins.module_utils._log_bundle import (
    MIN_SECRET, Bundle, collect_container, collect_host, container_secrets)

EXTRA_BIN_DIRS = ['/usr/local/sbin', '/usr/local/bin']


def container_state(module, docker, container):
    if not container:
        return 'absent'
    if not docker:
        return 'unknown: no docker client on the host'
    rc, out, err = module.run_command([docker, 'inspect', '-f', '{{.State.Status}}', container])
    if rc == 0:
        return out.strip()
    if 'no such' in err.lower():
        return 'absent'
    return 'unknown: docker inspect failed: %s' % (err.strip().splitlines() or ['rc %d' % rc])[-1]


def run_commands(module, bundle, commands):
    for command in commands:
        argv = command['argv']
        # As npu_info looks for npu-smi: PATH, the sbin folders, then /usr/local/sbin and /usr/local/bin.
        found = argv and (argv[0] if os.path.isabs(argv[0]) else module.get_bin_path(argv[0], opt_dirs=EXTRA_BIN_DIRS))
        if not found or not os.access(found, os.X_OK):
            bundle.miss(command['name'], ' '.join(argv), 'command not found on the host')
            continue
        rc, out, err = module.run_command([found] + argv[1:])
        data = ('$ %s\n%s%s[exit code %d]\n' % (' '.join(argv), out, err, rc)).encode()
        bundle.add(command['name'], data[-bundle.limit:], len(data))


def main():
    source_spec = dict(name=dict(type='str', required=True), path=dict(type='str', required=True),
                       patterns=dict(type='list', elements='str', default=[]),
                       in_container=dict(type='bool', default=False))
    command_spec = dict(name=dict(type='str', required=True), argv=dict(type='list', elements='str', required=True))
    module = AnsibleModule(
        argument_spec=dict(
            archive=dict(type='path', required=True),
            max_mb=dict(type='int', default=20),
            sources=dict(type='list', elements='dict', options=source_spec, default=[]),
            commands=dict(type='list', elements='dict', options=command_spec, default=[]),
            container=dict(type='str'),
            docker=dict(type='path'),
            exclude=dict(type='list', elements='str', default=['*api_key*', '.netrc', '*.pem', '*.key']),
            secrets=dict(type='list', elements='str', default=[], no_log=True),
            container_secret_files=dict(type='list', elements='str', default=[], no_log=False),  # paths, not secrets
        ),
        supports_check_mode=False,
    )
    params = module.params
    if params['max_mb'] < 1:
        module.fail_json(msg='max_mb=%d: give at least 1 (MB kept of each file).' % params['max_mb'])
    docker = params['docker'] or module.get_bin_path('docker')
    try:
        bundle = Bundle(params['archive'], params['max_mb'], [], params['exclude'])
    except OSError as exc:
        module.fail_json(msg='cannot write the archive %s: %s' % (params['archive'], exc))
    state = container_state(module, docker, params['container'])
    bundle.never = {os.path.normpath(path) for path in params['container_secret_files']}
    secrets = list(params['secrets']) + container_secrets(bundle, docker, params['container'], state,
                                                          params['container_secret_files'])
    bundle.secrets = sorted({secret.encode() if isinstance(secret, str) else secret for secret in secrets
                             if len(secret) >= MIN_SECRET}, key=len, reverse=True)
    for source in params['sources']:
        if source['in_container']:
            collect_container(bundle, docker, params['container'], state, source)
        else:
            collect_host(bundle, source)
    run_commands(module, bundle, params['commands'])
    try:
        bundle.close()
    except OSError as exc:
        module.fail_json(msg='cannot write the archive %s: %s' % (params['archive'], exc))
    module.exit_json(changed=True, archive=params['archive'], container_state=state, files=bundle.files,
                     missing=bundle.missing)


if __name__ == '__main__':
    main()
