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

import fnmatch
import io
import json
import os
import subprocess
import tarfile
import time

from ansible.module_utils.basic import AnsibleModule

REDACTED = b'<redacted>'
CHUNK = 1 << 20
MIN_SECRET = 8  # shorter values would redact ordinary text; keys are longer
EXTRA_BIN_DIRS = ['/usr/local/sbin', '/usr/local/bin']


def cut_notice(left_out, max_mb):
    return ('[verl.deploy log_bundle: the first %d bytes of this file were left out; only its last %d MB are kept '
            '(verl_logs_max_mb)]\n' % (left_out, max_mb)).encode()


def tail_of_stream(stream, limit):
    """(the last `limit` bytes of a stream, its total size), in bounded memory."""
    kept = bytearray()
    total = 0
    while True:
        chunk = stream.read(CHUNK)
        if not chunk:
            break
        total += len(chunk)
        kept += chunk
        if len(kept) > 2 * limit:
            del kept[:len(kept) - limit]
    if len(kept) > limit:
        del kept[:len(kept) - limit]
    return bytes(kept), total


def tail_of_file(path, limit):
    with open(path, 'rb') as handle:
        total = os.fstat(handle.fileno()).st_size
        handle.seek(max(0, total - limit))
        data = handle.read(limit)
    return data, max(total, len(data))


def redact(data, secrets, truncated):
    """Every secret replaced; when the start was cut off, also a secret's tail left at the very start."""
    for secret in secrets:
        data = data.replace(secret, REDACTED)
        if truncated:
            for cut in range(len(secret) - 1, 3, -1):
                if data.startswith(secret[-cut:]):
                    data = REDACTED + data[cut:]
                    break
    return data


class Bundle:
    """The archive being written, and what went into it or could not."""

    def __init__(self, path, max_mb, secrets, exclude):
        self.max_mb = max_mb
        self.limit = max_mb * 1024 * 1024
        self.secrets = [secret for secret in secrets if len(secret) >= MIN_SECRET]
        self.exclude = exclude
        self.files = []
        self.missing = []
        self.names = set()
        self.never = set()  # container paths of secret files
        self.tar = tarfile.open(path, 'w:gz')  # pylint: disable=consider-using-with  # closed by close()

    def excluded(self, name):
        base = os.path.basename(name)
        return any(fnmatch.fnmatch(base, pattern) for pattern in self.exclude)

    def add(self, name, data, original_size, mtime=None):
        left_out = original_size - len(data)
        data = redact(data, self.secrets, left_out > 0)
        if left_out > 0:
            data = cut_notice(left_out, self.max_mb) + data
        while name in self.names:
            name += '_'
        self.names.add(name)
        info = tarfile.TarInfo(name)
        info.size = len(data)
        info.mtime = int(mtime if mtime is not None else time.time())
        info.mode = 0o644
        self.tar.addfile(info, io.BytesIO(data))
        self.files.append(dict(name=name, size=len(data), original_size=original_size, truncated=left_out > 0))

    def miss(self, name, source, reason):
        self.missing.append(dict(name=name, source=source, reason=reason))

    def close(self):
        manifest = dict(max_mb=self.max_mb, files=self.files, missing=self.missing)
        data = (json.dumps(manifest, indent=2, sort_keys=True) + '\n').encode()
        info = tarfile.TarInfo('MANIFEST.json')
        info.size = len(data)
        info.mtime = int(time.time())
        info.mode = 0o644
        self.tar.addfile(info, io.BytesIO(data))
        self.tar.close()


def wanted(relative, patterns):
    return not patterns or any(fnmatch.fnmatch(os.path.basename(relative), pattern) for pattern in patterns)


def collect_host(bundle, source):
    """A folder's matching files (recursively) or one file, read on the host."""
    name, path, patterns = source['name'], source['path'], source['patterns']
    if os.path.isfile(path):
        found = [(os.path.basename(path), path)]
    elif os.path.isdir(path):
        found = []
        for folder, _dirs, files in os.walk(path):
            for file_name in sorted(files):
                full = os.path.join(folder, file_name)
                relative = os.path.relpath(full, path)
                if wanted(relative, patterns) and os.path.isfile(full):
                    found.append((relative, full))
    else:
        bundle.miss(name, path, 'absent on the host')
        return
    if not found:
        bundle.miss(name, path, 'no file matching %s' % (', '.join(patterns) or '*'))
    for relative, full in found:
        if bundle.excluded(full):
            continue
        try:
            data, size = tail_of_file(full, bundle.limit)
        except OSError as exc:
            bundle.miss(name, full, 'cannot be read: %s' % exc)
            continue
        bundle.add('%s/%s' % (name, relative), data, size, os.path.getmtime(full))


def docker_cp(docker, container, path):
    """A running `docker cp CONTAINER:PATH -` (a tar stream); works on a stopped container too."""
    return subprocess.Popen([docker, 'cp', '%s:%s' % (container, path), '-'],  # pylint: disable=consider-using-with
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def read_container_tree(bundle, docker, container, source, sink, secret=False):
    """Calls sink(relative path, data, size, mtime) for each regular file under the container path (a
    secret file is read only to be redacted: the exclusions do not apply to it)."""
    proc = docker_cp(docker, container, source['path'])
    count = 0
    try:
        with tarfile.open(fileobj=proc.stdout, mode='r|') as stream:
            for member in stream:
                if not member.isfile():
                    continue
                # docker cp names members after the path's last element: drop it (a file is that element).
                if '/' in member.name:
                    relative = member.name.split('/', 1)[1]
                    full = os.path.normpath(os.path.join(source['path'], relative))
                else:
                    relative, full = member.name, os.path.normpath(source['path'])
                if not secret and (not wanted(relative, source['patterns']) or bundle.excluded(relative) or full in bundle.never):
                    continue
                handle = stream.extractfile(member)
                data, size = tail_of_stream(handle, bundle.limit)
                sink(relative, data, size, member.mtime)
                count += 1
    except tarfile.ReadError:
        pass  # no stream at all: docker cp said why on stderr
    err = proc.stderr.read().decode(errors='replace').strip()
    rc = proc.wait()
    return count, rc, err


def collect_container(bundle, docker, container, state, source):
    name, path = source['name'], source['path']
    if state in ('absent',) or state.startswith('unknown'):
        bundle.miss(name, path, 'container %s is %s' % (container, state))
        return

    def sink(relative, data, size, mtime):
        bundle.add('%s/%s' % (name, relative), data, size, mtime)

    count, rc, err = read_container_tree(bundle, docker, container, source, sink)
    if rc != 0:
        bundle.miss(name, path, 'absent in container %s (%s)' % (container, err.splitlines()[-1] if err else 'rc %d' % rc))
    elif not count:
        bundle.miss(name, path, 'no file in container %s' % container)


def container_secrets(bundle, docker, container, state, paths):
    """The contents of secret files in the container (never packed), to redact everywhere."""
    values = []
    if not paths or state == 'absent' or state.startswith('unknown'):
        return values
    def sink(_relative, data, _size, _mtime):
        values.extend(line.strip() for line in data.splitlines() if len(line.strip()) >= MIN_SECRET)

    for path in paths:
        read_container_tree(bundle, docker, container, dict(path=path, patterns=[]), sink, secret=True)
    return values


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
