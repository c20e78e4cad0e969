# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""Drive verl.deploy.log_bundle's main() on real files, with a `docker` stand-in whose container is a folder.

The stand-in answers the two calls the module makes as the Docker CLI does: `docker inspect -f
'{{.State.Status}}' NAME` and `docker cp NAME:PATH -` (a tar stream named after PATH's last element,
"No such container" / "Could not find the file" on stderr otherwise). The Molecule scenario three_nodes
runs the module against real containers.
"""
from __future__ import annotations

import json
import shlex
import tarfile

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.verl.deploy.plugins.modules import log_bundle

KEY = 'sk-THE-SWANLAB-KEY-0123456789abcdef'


def fake_docker(tmp_path, state='exited'):
    """A docker CLI whose container `verl` is the folder tmp_path/rootfs (state: its status, or absent)."""
    rootfs = tmp_path / 'rootfs'
    rootfs.mkdir()
    script = tmp_path / 'docker'
    script.write_text(
        '#!/bin/bash\n'
        'ROOT=%s STATE=%s\n'
        'if [ "$STATE" = absent ]; then echo "Error: No such container: ${@: -1}" >&2; exit 1; fi\n'
        'case "$1" in\n'
        'inspect) echo "$STATE" ;;\n'
        'cp) path="${2#*:}"; real="$ROOT$path"\n'
        '    [ -e "$real" ] || { echo "Error response from daemon: Could not find the file $path in container verl" >&2; exit 1; }\n'
        '    real="$(readlink -f "$real")"; tar -C "$(dirname "$real")" -cf - "$(basename "$real")" ;;\n'
        '*) exit 2 ;;\n'
        'esac\n' % (shlex.quote(str(rootfs)), state))
    script.chmod(0o755)
    return script, rootfs


def run_module(capsys, args):
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            log_bundle.main()
    return json.loads(capsys.readouterr().out)


def members(archive):
    with tarfile.open(archive) as tar:
        return {member.name: tar.extractfile(member).read() for member in tar if member.isfile()}


def test_host_and_container_files_are_packed_and_bounded_and_the_key_is_redacted(tmp_path, capsys):
    docker, rootfs = fake_docker(tmp_path)
    logs = tmp_path / 'logs'
    (logs / '.verl-deploy').mkdir(parents=True)
    big = b'x' * (3 * 1024 * 1024) + b'\nthe last line, with the key ' + KEY.encode() + b'\n'
    (logs / 'verl_qwen3_8b_run_20261201.log').write_bytes(big)
    (logs / 'start_verl.out').write_text('starting\n')
    (logs / 'unrelated.txt').write_text('not collected\n')
    (logs / '.verl-deploy' / 'exit_code').write_text('137\n')
    ray = rootfs / 'tmp' / 'ray' / 'session_2026' / 'logs'
    ray.mkdir(parents=True)
    (ray / 'raylet.out').write_text('raylet started; env SWANLAB_API_KEY=%s\n' % KEY)
    (rootfs / 'tmp' / 'ray' / 'session_latest').symlink_to(rootfs / 'tmp' / 'ray' / 'session_2026')
    (rootfs / 'root' / '.swanlab').mkdir(parents=True)
    (rootfs / 'root' / '.swanlab' / 'verl_deploy_api_key').write_text(KEY)
    archive = tmp_path / 'node.tar.gz'
    result = run_module(capsys, {
        'archive': str(archive), 'max_mb': 1, 'container': 'verl', 'docker': str(docker),
        'sources': [
            {'name': 'training', 'path': str(logs), 'patterns': ['verl_qwen3_8b_*.log', 'start_verl.out']},
            {'name': 'deploy-state', 'path': str(logs / '.verl-deploy')},
            {'name': 'ray', 'path': '/tmp/ray/session_latest/logs', 'in_container': True},
            {'name': 'swanlab', 'path': '/root/.swanlab', 'in_container': True},
            {'name': 'cann-plog', 'path': '/root/ascend/log', 'in_container': True},
            {'name': 'host-npu-log', 'path': str(tmp_path / 'var-log-npu')},
        ],
        'commands': [{'name': 'echo.txt', 'argv': ['echo', 'hello']},
                     {'name': 'npu-smi-info.txt', 'argv': ['no-such-npu-smi', 'info']}],
        'container_secret_files': ['/root/.swanlab/verl_deploy_api_key'],
    })
    assert result['changed'] is True and result['container_state'] == 'exited'
    packed = members(archive)
    assert set(packed) == {'training/verl_qwen3_8b_run_20261201.log', 'training/start_verl.out', 'deploy-state/exit_code',
                           'ray/raylet.out', 'echo.txt', 'MANIFEST.json'}
    log = packed['training/verl_qwen3_8b_run_20261201.log']
    assert len(log) < 1024 * 1024 + 300
    assert log.startswith(b'[verl.deploy log_bundle: the first ') and b'verl_logs_max_mb' in log.splitlines()[0]
    assert log.endswith(b'the last line, with the key <redacted>\n')
    assert packed['ray/raylet.out'] == b'raylet started; env SWANLAB_API_KEY=<redacted>\n'
    assert packed['echo.txt'].startswith(b'$ echo hello\nhello\n[exit code 0]')
    assert all(KEY.encode() not in data for data in packed.values())
    assert KEY not in json.dumps(result)
    manifest = json.loads(packed['MANIFEST.json'])
    assert manifest['files'] == result['files']
    assert {entry['name'] for entry in result['missing']} == {'swanlab', 'cann-plog', 'host-npu-log', 'npu-smi-info.txt'}
    reasons = {entry['name']: entry['reason'] for entry in result['missing']}
    assert reasons['host-npu-log'] == 'absent on the host'
    assert 'Could not find the file /root/ascend/log' in reasons['cann-plog']
    assert reasons['npu-smi-info.txt'] == 'command not found on the host'
    truncated = [entry for entry in result['files'] if entry['truncated']]
    assert [entry['name'] for entry in truncated] == ['training/verl_qwen3_8b_run_20261201.log']
    assert truncated[0]['original_size'] == len(big)


def test_an_absent_container_is_recorded_and_the_host_files_still_packed(tmp_path, capsys):
    docker, _rootfs = fake_docker(tmp_path, state='absent')
    (tmp_path / 'logs').mkdir()
    (tmp_path / 'logs' / 'start_verl.out').write_text('ray: started\n')
    archive = tmp_path / 'node.tar.gz'
    result = run_module(capsys, {
        'archive': str(archive), 'container': 'verl', 'docker': str(docker), 'secrets': [KEY],
        'sources': [{'name': 'training', 'path': str(tmp_path / 'logs')},
                    {'name': 'ray', 'path': '/tmp/ray/session_latest/logs', 'in_container': True}],
    })
    assert result['container_state'] == 'absent'
    assert result['missing'] == [{'name': 'ray', 'source': '/tmp/ray/session_latest/logs', 'reason': 'container verl is absent'}]
    assert members(archive)['training/start_verl.out'] == b'ray: started\n'


def test_a_secret_cut_in_half_by_the_bound_leaves_no_part_of_it(tmp_path, capsys):
    (tmp_path / 'logs').mkdir()
    limit = 1024 * 1024
    # The bound cuts the key after its first 6 characters: its other 28 open the kept end.
    (tmp_path / 'logs' / 'a.log').write_bytes(b'y' * 100 + KEY.encode() + b'z' * (limit - len(KEY) + 6))
    archive = tmp_path / 'node.tar.gz'
    run_module(capsys, {'archive': str(archive), 'max_mb': 1, 'secrets': [KEY],
                        'sources': [{'name': 'training', 'path': str(tmp_path / 'logs')}]})
    data = members(archive)['training/a.log']
    assert KEY[6:].encode() not in data and b'<redacted>zzz' in data


def test_names_like_a_key_file_are_never_read(tmp_path, capsys):
    (tmp_path / 'conf').mkdir()
    (tmp_path / 'conf' / 'verl_deploy_api_key').write_text(KEY)
    (tmp_path / 'conf' / '.netrc').write_text('machine x password %s\n' % KEY)
    (tmp_path / 'conf' / 'settings.json').write_text('{}\n')
    archive = tmp_path / 'node.tar.gz'
    result = run_module(capsys, {'archive': str(archive), 'sources': [{'name': 'conf', 'path': str(tmp_path / 'conf')}]})
    assert [entry['name'] for entry in result['files']] == ['conf/settings.json']


def test_an_archive_that_cannot_be_written_fails_naming_it(tmp_path, capsys):
    result = run_module(capsys, {'archive': str(tmp_path / 'no-such-folder' / 'node.tar.gz')})
    assert result['failed'] is True and 'cannot write the archive' in result['msg']
