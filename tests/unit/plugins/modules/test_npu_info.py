# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""Drive verl.deploy.npu_info's main() against a fake `npu-smi` shell script that prints a fixture."""
from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.verl.deploy.plugins.module_utils._npu_smi import parse_board, parse_info
from ansible_collections.verl.deploy.plugins.modules import npu_info

FIXTURES = Path(__file__).resolve().parents[3] / 'fixtures' / 'npu-smi'
INFO_008 = FIXTURES / '008_info_910B3_2of8cards_v25.5.1_proc_VLLMEngineCore_trimmed.txt'
BOARD_025 = FIXTURES / '025_board_t-board_i0_IT21HMDC_Bin5_v25.5.1_indented.txt'
ERROR_8005 = FIXTURES / '019_error_dcmi_module_initialize_failed_-8005_container.txt'


def fake_npu_smi(tmp_path, info_body, boards_body='echo "board query not supported" >&2; exit 2'):
    """Write an executable npu-smi stand-in; it logs its argv (one run per line) to calls.log."""
    script = tmp_path / 'npu-smi'
    script.write_text(
        '#!/bin/sh\n'
        'echo "$*" >> %s\n'
        'if [ "$2" = "-t" ]; then\n%s\nfi\n'
        '%s\n' % (shlex.quote(str(tmp_path / 'calls.log')), boards_body, info_body)
    )
    script.chmod(0o755)
    return script


def cat(path, rc=0, to_stderr=False):
    return 'cat %s%s\nexit %d' % (shlex.quote(str(path)), ' >&2' if to_stderr else '', rc)


def calls(tmp_path):
    return (tmp_path / 'calls.log').read_text().splitlines()


def run_module(capsys, args):
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            npu_info.main()
    return json.loads(capsys.readouterr().out)


def test_success_returns_the_table_at_top_level_and_as_facts(tmp_path, capsys):
    script = fake_npu_smi(tmp_path, cat(INFO_008))
    result = run_module(capsys, {'npu_smi_path': str(script)})
    expected = parse_info(INFO_008.read_text())
    # Each process as this host shows its pid (the capture's pid runs on no machine here).
    expected['processes'] = [dict(process, seen=False, comm='', container_id=None) for process in expected['processes']]
    assert result['changed'] is False
    assert 'failed' not in result
    assert result['ansible_facts']['verl_npu'] == expected
    assert {key: result[key] for key in expected} == expected
    assert result['npu_ids'] == [0, 5] and result['busy_npu_ids'] == [5]
    assert 'boards' not in result
    # argv, no shell, no board queries; asked twice: the capture's pids run on no machine here, and a pid /proc does not
    # show may be a worker that just ended (asked again, it is kept only while npu-smi still lists it)
    assert calls(tmp_path) == ['info', 'info']


def test_check_mode_still_reads(tmp_path, capsys):
    script = fake_npu_smi(tmp_path, cat(INFO_008))
    result = run_module(capsys, {'npu_smi_path': str(script), '_ansible_check_mode': True})
    assert result['changed'] is False
    assert result['npu_ids'] == [0, 5]


def test_explicit_path_that_does_not_exist(tmp_path, capsys):
    missing = tmp_path / 'no' / 'npu-smi'
    result = run_module(capsys, {'npu_smi_path': str(missing)})
    assert result['failed'] is True
    assert str(missing) in result['msg'] and 'npu_smi_path' in result['msg']


def test_not_found_on_path_names_the_places_searched(tmp_path, capsys, monkeypatch):
    if any(os.path.exists(os.path.join(d, 'npu-smi')) for d in ('/sbin', '/usr/sbin', '/usr/local/sbin', '/usr/local/bin')):
        pytest.skip('this machine has a real npu-smi')
    empty_dir = tmp_path / 'bin'
    empty_dir.mkdir()
    monkeypatch.setenv('PATH', str(empty_dir))
    result = run_module(capsys, {})
    assert result['failed'] is True
    for needle in ('npu-smi not found', str(empty_dir), '/usr/local/sbin/npu-smi', '/usr/local/bin/npu-smi', 'npu_smi_path'):
        assert needle in result['msg']


def test_non_zero_exit_quotes_rc_and_stderr(tmp_path, capsys):
    script = fake_npu_smi(tmp_path, 'echo "Error: driver not loaded" >&2\necho "second line" >&2\nexit 3')
    result = run_module(capsys, {'npu_smi_path': str(script)})
    assert result['failed'] is True
    assert result['rc'] == 3
    assert 'rc=3' in result['msg'] and 'Error: driver not loaded' in result['msg'] and 'second line' in result['msg']


@pytest.mark.parametrize('rc, to_stderr', [(0, False), (1, False), (255, True)])
def test_dcmi_8005_error_quotes_code_and_hint(tmp_path, capsys, rc, to_stderr):
    script = fake_npu_smi(tmp_path, cat(ERROR_8005, rc=rc, to_stderr=to_stderr))
    result = run_module(capsys, {'npu_smi_path': str(script)})
    assert result['failed'] is True
    assert result['dcmi_code'] == -8005
    for needle in ('-8005', 'dcmi module initialize failed', 'held by another container', '/dev/davinci*', '/dev/hisi_hdc'):
        assert needle in result['msg']


def test_unparseable_output(tmp_path, capsys):
    script = fake_npu_smi(tmp_path, cat(FIXTURES / '023_hccn_tool_ip_g_card3.txt'))
    result = run_module(capsys, {'npu_smi_path': str(script)})
    assert result['failed'] is True
    assert 'no `npu-smi info` table' in result['msg'] and 'hccn_tool' in result['msg']


def test_board_option_reads_each_npu_and_warns_on_failures(tmp_path, capsys):
    # NPU 0 answers with a real board output; NPU 5 fails, which must only warn.
    boards_body = 'if [ "$5" = "0" ]; then %s; fi\necho "board query failed" >&2; exit 2' % cat(BOARD_025).replace('\n', '; ')
    script = fake_npu_smi(tmp_path, cat(INFO_008), boards_body)
    result = run_module(capsys, {'npu_smi_path': str(script), 'board': True})
    assert 'failed' not in result
    assert result['boards'] == [parse_board(BOARD_025.read_text())]
    assert result['boards'][0]['product_name'] == 'IT21HMDC_Bin5'
    assert calls(tmp_path) == ['info', 'info', 'info -t board -i 0', 'info -t board -i 5']
    warnings = ' '.join(str(warning) for warning in result.get('warnings', []))
    assert 'NPU 5' in warnings and 'rc=2' in warnings and 'board query failed' in warnings
    assert 'boards' not in result['ansible_facts']['verl_npu']
