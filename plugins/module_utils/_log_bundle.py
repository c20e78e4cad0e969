# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Private to the verl.deploy collection: may change without notice.
#
# What the module log_bundle packs and how: files read on the host or streamed out of a container with
# `docker cp CONTAINER:PATH -` (a tar stream; it also reads a stopped container), each cut to its last
# bytes in bounded memory, secrets redacted, written into one tar.gz. docker cp is read as a stream
# (subprocess.Popen), not through AnsibleModule.run_command, which would hold a whole Ray log folder in memory.
from __future__ import annotations

import fnmatch
import io
import json
import os
import subprocess
import tarfile
import time

REDACTED = b'<redacted>'
CHUNK = 1 << 20
MIN_SECRET = 8  # shorter values would redact ordinary text; keys are longer


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
