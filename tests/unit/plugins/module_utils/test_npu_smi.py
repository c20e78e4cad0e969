# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests of the npu-smi parsers against every pasted output in tests/fixtures/npu-smi.

Expected values are the facts listed in tests/fixtures/npu-smi/INDEX.md (plus the values visible in each file).
Every fixture file must have an entry in EXPECTED, so a new fixture cannot be silently left untested.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.verl.deploy.plugins.module_utils._npu_smi import (
    NpuSmiError,
    parse_board,
    parse_info,
    parse_map,
    raise_for_dcmi_error,
)

FIXTURES = Path(__file__).resolve().parents[3] / 'fixtures' / 'npu-smi'
FIXTURE_NAMES = sorted(path.name for path in FIXTURES.glob('*.txt'))

TOP_KEYS = {'npu_smi_version', 'npus', 'processes', 'npu_ids', 'chip_count', 'healthy', 'busy_npu_ids'}
NPU_KEYS = {'npu_id', 'name', 'health', 'power_w', 'temp_c', 'chips'}
CHIP_KEYS = {'chip_id', 'phy_id', 'device_id', 'bus_id', 'aicore_pct', 'memory_used_mb', 'memory_total_mb',
             'hbm_used_mb', 'hbm_total_mb'}
PROCESS_KEYS = {'npu_id', 'chip_id', 'pid', 'name', 'memory_mb'}
NOT_INFO = 'no `npu-smi info` table'


def read(name):
    return (FIXTURES / name).read_text(encoding='utf-8')


def bus(hex_id):
    return '0000:%s:00.0' % hex_id


# Expected shapes (tuples keep the tables short and make a mismatch easy to read):
#   npus:      (npu_id, name, health, power_w, temp_c)
#   chips:     (npu_id, chip_id, phy_id, device_id, bus_id, aicore_pct, memory_used, memory_total, hbm_used, hbm_total)
#   processes: (npu_id, chip_id, pid, name, memory_mb)
def info(version, npus, chips, processes=(), healthy=True):
    return {
        'kind': 'info', 'version': version, 'npus': list(npus), 'chips': list(chips), 'processes': list(processes),
        'healthy': healthy,
    }


def b_chip(npu_id, bus_hex, hbm_used, aicore=0, hbm_total=65536):
    """910B-family chip row: one chip per card, Memory-Usage 0 / 0."""
    return (npu_id, 0, None, None, bus(bus_hex), aicore, 0, 0, hbm_used, hbm_total)


def a3_chip(npu_id, chip_id, phy_id, bus_hex, hbm_used, aicore=7):
    return (npu_id, chip_id, phy_id, None, bus(bus_hex), aicore, 0, 0, hbm_used, 65536)


def cards(name, powers, temps, ids=None):
    ids = range(len(powers)) if ids is None else ids
    return [(npu_id, name, 'OK', power, temp) for npu_id, power, temp in zip(ids, powers, temps)]


BUSES_C1_C2 = ('C1', 'C2', '81', '82', '01', '02', '41', '42')

_001_DDR_HBM = [((1197, 13553), 1365), ((2411, 15665), 4), ((2306, 15665), 4), ((2472, 15567), 3),
                ((2904, 13553), 3), ((1694, 15665), 5), ((1987, 15665), 5), ((1777, 15567), 4)]
_005_A3 = [('9D', 61609), ('9F', 61625), ('99', 61616), ('9B', 61619), ('95', 61633), ('97', 61623), ('91', 61625),
           ('93', 61628), ('8D', 61602), ('8F', 61618), ('89', 61578), ('8B', 61603), ('85', 61614), ('87', 61623),
           ('81', 61627), ('83', 61631)]
_005_AICORE = {8: 8, 12: 6}  # phy id -> AICore where it is not 7 (npu4 chip0, npu6 chip0)
_005_PROCESSES = (
    [(0, 0, pid, '', 141) for pid in (935440, 936673, 930242, 934451, 931572, 941045, 942487, 929673)]
    + [(0, 1, 929405, '', 58780),
       (1, 0, 929673, '', 58540), (1, 1, 930242, '', 58780),
       (2, 0, 930907, '', 58560), (2, 1, 931572, '', 58779),
       (3, 0, 932555, '', 58558), (3, 1, 933405, '', 58782),
       (4, 0, 934451, '', 58520), (4, 1, 935440, '', 58780),
       (5, 0, 936673, '', 58500), (5, 1, 937869, '', 58764),
       (6, 0, 939246, '', 58540), (6, 1, 941045, '', 58782),
       (7, 0, 942487, '', 58560), (7, 1, 944268, '', 58782)]
)

EXPECTED = {
    '001_info_910ProB-as-910B_8cards_v24.1.0_noproc.txt': info(
        '24.1.0',
        cards('910B', (70.0, 66.9, 69.8, 67.2, 68.9, 66.3, 70.1, 65.6), (34, 34, 34, 33, 33, 34, 34, 33)),
        [(npu_id, 0, None, None, bus(hex_id), 0, ddr[0], ddr[1], hbm, 32768)
         for npu_id, (hex_id, (ddr, hbm)) in enumerate(zip(('C1', '81', '41', '01', 'C2', '82', '42', '02'), _001_DDR_HBM))],
    ),
    '002_info_310_1card_v23.0.0_noproc.txt': info(
        '23.0.0',
        [(0, '310', 'OK', 12.8, 61)],
        [(0, 0, None, 0, bus('01'), 0, 577, 7759, None, None)],
    ),
    '004_info_310P3_2cards_noheader_narrow.txt': info(
        None,
        [(0, '310P3', 'OK', 15.8, 42), (1, '310P3', 'OK', 15.4, 43)],
        [(0, 0, None, 0, bus('82'), 0, 1074, 21534, None, None),
         (1, 0, None, 1, bus('89'), 0, 1070, 21534, None, None)],
    ),
    '005_info_A3_Ascend910_16chips_v25.2.0_busy_procs_emptyname.txt': info(
        '25.2.0',
        cards('Ascend910', (211.3, 210.6, 205.7, 209.9, 219.9, 214.0, 201.9, 205.5), (43, 45, 44, 43, 43, 47, 43, 44)),
        [a3_chip(phy // 2, phy % 2, phy, hex_id, hbm, _005_AICORE.get(phy, 7)) for phy, (hex_id, hbm) in enumerate(_005_A3)],
        _005_PROCESSES,
    ),
    '007_info_910B3_8cards_v24.1.rc2_procs_emptyname_mixed.txt': info(
        '24.1.rc2',
        cards('910B3', (100.2, 96.7, 96.4, 97.0, 102.5, 101.2, 99.5, 94.5), (43, 40, 41, 42, 48, 45, 45, 44)),
        [b_chip(npu_id, hex_id, hbm) for npu_id, (hex_id, hbm) in enumerate(
            zip(('C1', 'C2', '81', '82', '01', '02', '41', '42'), (56363, 56362, 3377, 3377, 64748, 64751, 64749, 64749)))],
        [(0, 0, 1271095, '', 52899), (1, 0, 1271097, '', 52899), (4, 0, 1976542, '', 61430),
         (5, 0, 1976544, '', 61429), (6, 0, 1976548, '', 61430), (7, 0, 1976558, '', 61430)],
    ),
    '008_info_910B3_2of8cards_v25.5.1_proc_VLLMEngineCore_trimmed.txt': info(
        '25.5.1',
        cards('910B3', (102.8, 100.8), (45, 44), ids=(0, 5)),
        [b_chip(0, 'C1', 3445), b_chip(5, '02', 60156, aicore=12)],
        [(5, 0, 2290156, 'VLLMEngineCore', 56630)],
    ),
    '010_info_910B3_1card_npu4_v23.0.1_noproc.txt': info(
        '23.0.1',
        [(4, '910B3', 'OK', 93.6, 40)],
        [b_chip(4, '01', 3161)],
    ),
    '011_info_910B2_8cards_v24.1.0_procs_mindie.txt': info(
        '24.1.0',
        cards('910B2', (95.0, 88.4, 89.1, 87.8, 99.8, 90.6, 97.5, 92.8), (37, 36, 34, 36, 42, 40, 40, 40)),
        [b_chip(npu_id, hex_id, hbm) for npu_id, (hex_id, hbm) in enumerate(
            zip(BUSES_C1_C2, (62877, 62879, 62876, 62878, 62876, 62878, 62877, 62878)))],
        [(npu_id, 0, pid, 'mindie_llm_back', 59539)
         for npu_id, pid in enumerate((412122, 412124, 412126, 412128, 412140, 412147, 412154, 412161))],
    ),
    '013_info_910B2_3cards_v25.3.rc1.2_procs_VLLMWorker_TP_trimmed.txt': info(
        '25.3.rc1.2',
        cards('910B2', (90.1, 93.0, 89.0), (33, 33, 33)),
        [b_chip(0, 'C1', 61715), b_chip(1, 'C2', 61712), b_chip(2, '81', 61713)],
        [(0, 0, 2961213, 'VLLMWorker_TP', 58313), (2, 0, 2961215, 'VLLMWorker_TP', 58313)],
    ),
    '014_info_910B3_8cards_v26.1.0_widelayout_proc_container_col.txt': info(
        '26.1.0',
        cards('910B3', (100.0, 94.8, 90.0, 96.5, 96.5, 97.4, 97.8, 93.3), (50, 48, 49, 48, 52, 49, 49, 51)),
        [b_chip(npu_id, hex_id, hbm) for npu_id, (hex_id, hbm) in enumerate(
            zip(BUSES_C1_C2, (8676, 3403, 3403, 3407, 3403, 3402, 3402, 3403)))],
        [(0, 0, 485946, 'pytest', 5175)],
    ),
    # Doc example: version placeholder gives None, the 'xxx' name is kept raw; both chips show phy 0 / bus 9D.
    '015_info_A3_softpartition_doc_placeholders_quoted_oddspacing.txt': info(
        None,
        [(0, 'xxx', 'OK', 157.3, 32)],
        [(0, 0, 0, None, bus('9D'), 0, 0, 0, 3130, 65536), (0, 1, 0, None, bus('9D'), 0, 0, 0, 3130, 65536)],
    ),
    '016a_info_A3_v26.0.rc2_widelayout_HEAD_fragment.txt': info(
        '26.0.rc2',
        [(0, 'Ascend910', 'OK', 162.6, 34)],
        [a3_chip(0, 0, 0, '9D', 3419, aicore=0), a3_chip(0, 1, 1, '9F', 2874, aicore=0)],
    ),
    # Tail fragment: no header, so phy is inferred from the HBM pair; the only card row seen is chip 1's (Power '-').
    '016b_info_A3_v26.0.rc2_widelayout_TAIL_fragment_proc_container_col.txt': info(
        None,
        [(7, 'Ascend910', 'OK', None, 35)],
        [a3_chip(7, 1, 15, '83', 31877, aicore=0)],
        [(0, 0, 632268, 'python3.1', 197)],
    ),
    '017_info_910B4-1_2cards_v25.2.0_masked_busid_truncated.txt': info(
        '25.2.0',
        cards('910B4-1', (91.3, 88.1), (33, 32)),
        [(0, 0, None, None, '0000:xx:00.0', 0, 0, 0, 3197, 65536), (1, 0, None, None, '0000:xx:00.0', 0, 0, 0, 3197, 65536)],
    ),
    # 950: aicore_pct is 'NPU Util(%)', the only chip of a card is chip 0, Bus-Id is printed 'NA'.
    '018_info_Ascend950DT_8cards_A5_layout_noheader_fixture.txt': info(
        None,
        cards('Ascend950DT', (377.2, 380.6, 373.1, 395.1, 366.6, 370.7, 373.3, 372.8), (48, 50, 49, 48, 49, 49, 49, 49)),
        [(npu_id, 0, None, None, 'NA', 0, 0, 0, hbm, 98304)
         for npu_id, hbm in enumerate((4857, 4855, 4855, 4857, 4856, 4855, 4856, 4856))],
    ),
    # 005 with its processes gone and its HBM at what an idle chip holds (the simulated A3 node replays it).
    'synthetic_info_A3_Ascend910_16chips_idle.txt': info(
        '25.2.0',
        cards('Ascend910', (211.3, 210.6, 205.7, 209.9, 219.9, 214.0, 201.9, 205.5), (43, 45, 44, 43, 43, 47, 43, 44)),
        [a3_chip(phy // 2, phy % 2, phy, hex_id, 3412, 0) for phy, (hex_id, _hbm) in enumerate(_005_A3)],
    ),
    '019_error_dcmi_module_initialize_failed_-8005_container.txt': {'kind': 'error', 'code': -8005},
    'synthetic_error_dcmi_device_used_-8020.txt': {'kind': 'error', 'code': -8020},
    # Built from INDEX.md's description of the held-back 003: 310P3, single card with id 6, Power NA.
    'synthetic_info_310P3_1card_npu6_powerNA.txt': info(
        '24.1.rc3.7',
        [(6, '310P3', 'OK', None, 45)],
        [(6, 0, None, 0, bus('3B'), 0, 1382, 21527, None, None)],
    ),
    '009_map_info-m_910B3_2cards_tabs_mcu.txt': {'kind': 'map', 'rows': [
        {'npu_id': 0, 'chip_id': 0, 'chip_logic_id': 0, 'chip_name': 'Ascend 910B3'},
        {'npu_id': 1, 'chip_id': 0, 'chip_logic_id': 1, 'chip_name': 'Ascend 910B3'},
    ]},
    '029_map_info-m_310P3_npu4_mcu_doc.txt': {'kind': 'map', 'rows': [
        {'npu_id': 4, 'chip_id': 0, 'chip_logic_id': 0, 'chip_name': 'Ascend 310P3'},
    ]},
    '024_board_t-board_i2_910B2C_IT21HMDB02-B2_v25.2.0_truncated.txt': {'kind': 'board', 'board': {
        'npu_id': 2, 'product_name': 'IT21HMDB02-B2', 'model': 'NA', 'manufacturer': 'Huawei',
        'serial_number': '102376734799', 'software_version': '25.2.0', 'firmware_version': '7.7.0.6.236',
        'compatibility': 'OK', 'board_id': '0x65', 'pcb_id': 'A',
    }},
    '025_board_t-board_i0_IT21HMDC_Bin5_v25.5.1_indented.txt': {'kind': 'board', 'board': {
        'npu_id': 0, 'product_name': 'IT21HMDC_Bin5', 'model': 'NA', 'manufacturer': 'Huawei',
        'serial_number': '1025C9048791', 'software_version': '25.5.1', 'firmware_version': '7.8.0.6.201',
        'compatibility': 'OK', 'board_id': '0x60', 'pcb_id': 'A', 'bom_id': 1, 'pcie_bus_info': '0000:C1:00.0',
        'slot_id': 0, 'class_id': 'NA', 'pci_vendor_id': '0x19E5', 'pci_device_id': '0xD802',
        'subsystem_vendor_id': '0x19E5', 'subsystem_device_id': '0x3003', 'chip_count': 1,
    }},
    '027_board_t-board_doc_example_v23.0.5.txt': {'kind': 'board', 'board': {
        'npu_id': 0, 'software_version': '23.0.5', 'firmware_version': '7.1.0.7.220', 'compatibility': 'OK',
        'board_id': '0x02', 'pcb_id': 'A', 'bom_id': 1, 'pcie_bus_info': '0000:61:00.0', 'slot_id': 0, 'class_id': 'NA',
        'pci_vendor_id': '0x19e5', 'pci_device_id': '0xD801', 'subsystem_vendor_id': '0x0200',
        'subsystem_device_id': '0x0100', 'chip_count': 1,
    }},
    # Other sub-commands that the module does not read: parse_info must refuse them rather than invent NPUs.
    '023_hccn_tool_ip_g_card3.txt': {'kind': 'not_info'},
    '026_usages_t-usages_A3_2chips_chipid_trailing_trimmed.txt': {'kind': 'not_info'},
    '028_list_info-l_16npus_chipcount1_truncated.txt': {'kind': 'not_info'},
}


def npu_rows(result):
    return [(n['npu_id'], n['name'], n['health'], n['power_w'], n['temp_c']) for n in result['npus']]


def chip_rows(result):
    return [(n['npu_id'], c['chip_id'], c['phy_id'], c['device_id'], c['bus_id'], c['aicore_pct'], c['memory_used_mb'],
             c['memory_total_mb'], c['hbm_used_mb'], c['hbm_total_mb']) for n in result['npus'] for c in n['chips']]


def process_rows(result):
    return [(p['npu_id'], p['chip_id'], p['pid'], p['name'], p['memory_mb']) for p in result['processes']]


def check_contract(result):
    """Key sets and types of the parse_info result contract."""
    assert set(result) == TOP_KEYS
    assert result['npu_smi_version'] is None or isinstance(result['npu_smi_version'], str)
    for npu in result['npus']:
        assert set(npu) == NPU_KEYS
        assert isinstance(npu['npu_id'], int) and isinstance(npu['name'], str) and isinstance(npu['health'], str)
        assert npu['power_w'] is None or isinstance(npu['power_w'], float)
        assert npu['temp_c'] is None or isinstance(npu['temp_c'], int)
        assert [c['chip_id'] for c in npu['chips']] == sorted(c['chip_id'] for c in npu['chips'])
        for chip in npu['chips']:
            assert set(chip) == CHIP_KEYS
            assert isinstance(chip['chip_id'], int) and isinstance(chip['bus_id'], str)
            assert isinstance(chip['memory_used_mb'], int) and isinstance(chip['memory_total_mb'], int)
    for process in result['processes']:
        assert set(process) == PROCESS_KEYS
        assert isinstance(process['pid'], int) and isinstance(process['name'], str)
        assert isinstance(process['memory_mb'], int)
    assert result['npu_ids'] == sorted(n['npu_id'] for n in result['npus'])


def check_info(text, expected):
    result = parse_info(text)
    check_contract(result)
    assert result['npu_smi_version'] == expected['version']
    assert npu_rows(result) == expected['npus']
    assert chip_rows(result) == expected['chips']
    assert process_rows(result) == expected['processes']
    assert result['npu_ids'] == [row[0] for row in expected['npus']]
    assert result['chip_count'] == len(expected['chips'])
    assert result['healthy'] is expected['healthy']
    assert result['busy_npu_ids'] == sorted(set(row[0] for row in expected['processes']))


def check_error(text, expected):
    with pytest.raises(NpuSmiError) as caught:
        parse_info(text)
    code = expected['code']
    assert caught.value.code == code
    for needle in (str(code), 'held by another container', '/dev/davinci_manager', '/usr/local/Ascend/driver'):
        assert needle in caught.value.msg


def check_not_info(text, _expected):
    with pytest.raises(NpuSmiError, match=NOT_INFO) as caught:
        parse_info(text)
    assert caught.value.code is None


def check_map(text, expected):
    assert parse_map(text) == expected['rows']
    check_not_info(text, expected)


def check_board(text, expected):
    assert parse_board(text) == expected['board']
    check_not_info(text, expected)


CHECKS = {'info': check_info, 'error': check_error, 'not_info': check_not_info, 'map': check_map, 'board': check_board}


@pytest.mark.parametrize('name', FIXTURE_NAMES)
def test_fixture(name):
    if name not in EXPECTED:
        pytest.fail('fixture %s has no expectation in EXPECTED: add its facts (see INDEX.md)' % name)
    expected = EXPECTED[name]
    CHECKS[expected['kind']](read(name), expected)


def test_every_expectation_has_a_fixture():
    assert sorted(set(EXPECTED) - set(FIXTURE_NAMES)) == []


def test_fixture_index_is_not_a_fixture():
    assert 'INDEX.md' not in FIXTURE_NAMES and (FIXTURES / 'INDEX.md').is_file()


# --- paste damage and layouts described in INDEX.md but absent from the fixture folder -------------------------

def _damaged(text, prefix, line_end='\n'):
    return 'user@host:~$ npu-smi info' + line_end + line_end.join(prefix + line for line in text.splitlines()) + line_end


@pytest.mark.parametrize('prefix, line_end', [
    ('\t', '\n'),
    ('    ', '\r\n'),
    ('> ', '\n'),
    ('> > ', '\n'),
    ('  \t> ', '\n'),
])
def test_indentation_quotes_prompts_and_crlf_do_not_change_the_result(prefix, line_end):
    name = '007_info_910B3_8cards_v24.1.rc2_procs_emptyname_mixed.txt'
    assert parse_info(_damaged(read(name), prefix, line_end)) == parse_info(read(name))


def test_tabs_inside_cells_are_whitespace():
    text = read('008_info_910B3_2of8cards_v25.5.1_proc_VLLMEngineCore_trimmed.txt').replace('       ', '\t')
    result = parse_info(text)
    assert chip_rows(result) == EXPECTED['008_info_910B3_2of8cards_v25.5.1_proc_VLLMEngineCore_trimmed.txt']['chips']
    assert process_rows(result) == [(5, 0, 2290156, 'VLLMEngineCore', 56630)]


def test_empty_rows_between_cards_are_ignored():
    name = '005_info_A3_Ascend910_16chips_v25.2.0_busy_procs_emptyname.txt'
    # after every line: between a card row and its chip row too, where a blank row must not become a chip
    text = read(name).replace('\n', '\n|        |\n')
    assert parse_info(text) == parse_info(read(name))


def test_first_gen_910ProB_name():
    result = parse_info(read('001_info_910ProB-as-910B_8cards_v24.1.0_noproc.txt').replace('910B   ', '910ProB'))
    assert {npu['name'] for npu in result['npus']} == {'910ProB'}
    assert result['chip_count'] == 8


def test_pipe_top_border_and_no_header():
    # One ModelZoo copy of 004 uses '|' instead of '+' in the top border.
    text = read('004_info_310P3_2cards_noheader_narrow.txt').replace('+-------------------+-----', '|-------------------|-----', 1)
    assert parse_info(text) == parse_info(read('004_info_310P3_2cards_noheader_narrow.txt'))


A3_WARNING = """\
| npu-smi 25.2.0                   Version: 25.2.0                                               |
+---------------------------+---------------+----------------------------------------------------+
| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|
| Chip  Phy-ID              | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |
+===========================+===============+====================================================+
| 0     Ascend910           | OK            | 211.3       43                0    / 0             |
| 0     0                   | 0000:9D:00.0  | 7           0    / 0          61609/ 65536         |
+------------------------------------------------------------------------------------------------+
| 0     Ascend910           | Warning       | -           44                0    / 0             |
| 1     1                   | 0000:9F:00.0  | 7           0    / 0          61625/ 65536         |
+===========================+===============+====================================================+
| 1     Ascend910           | Alarm         | 210.6       45                0    / 0             |
| 0     2                   | 0000:99:00.0  | 7           0    / 0          61616/ 65536         |
+------------------------------------------------------------------------------------------------+
| 1     Ascend910           | Critical      | -           45                0    / 0             |
| 1     3                   | 0000:9B:00.0  | 7           0    / 0          61619/ 65536         |
+===========================+===============+====================================================+
"""


def test_a3_card_health_is_ok_only_when_every_chip_row_is_ok():
    result = parse_info(A3_WARNING)
    assert npu_rows(result) == [(0, 'Ascend910', 'Warning', 211.3, 43), (1, 'Ascend910', 'Alarm', 210.6, 45)]
    assert [c['phy_id'] for n in result['npus'] for c in n['chips']] == [0, 1, 2, 3]
    assert result['healthy'] is False


A5_WITH_PROCESSES = """\
+--------+------------------+---------------+----------------------------------------------------------------------+
| NPU ID | Name             | Health        | Power(W)              Temp(C)                  Hugepages-Usage(page) |
|        |                  | Bus-Id        | NPU Util(%)           Memory-Usage(MB)         HBM-Usage(MB)         |
+========+==================+===============+======================================================================+
| 3      | Ascend950DT      | OK            | 377.2                 48                       0     / 0             |
|        |                  | NA            | 41                    0     / 0                60857 / 98304         |
+===========================+===============+======================================================================+
+---------------------------+---------------+----------------------------------------------------------------------+
| NPU ID                    | Process id    | Process name       | Process memory(MB)    | Process id in container |
+===========================+===============+======================================================================+
| 3                         | 1234567       | python3            | 56000                 | 812                     |
+===========================+===============+======================================================================+
"""


def test_a5_process_rows_have_no_chip_id():
    result = parse_info(A5_WITH_PROCESSES)
    assert chip_rows(result) == [(3, 0, None, None, 'NA', 41, 0, 0, 60857, 98304)]
    assert process_rows(result) == [(3, None, 1234567, 'python3', 56000)]
    assert result['busy_npu_ids'] == [3]


def test_truncated_rows_give_what_is_there():
    text = read('016b_info_A3_v26.0.rc2_widelayout_TAIL_fragment_proc_container_col.txt')
    cut = text[:text.index('| 197')]  # process row ends after the name: no memory value
    assert process_rows(parse_info(cut)) == [(0, 0, 632268, 'python3.1', None)]
    head = read('017_info_910B4-1_2cards_v25.2.0_masked_busid_truncated.txt')
    card_only = head[:head.rindex('| 0                         | 0000:xx')]  # NPU 1 lost its chip row
    result = parse_info(card_only)
    assert [len(npu['chips']) for npu in result['npus']] == [1, 0]
    assert result['chip_count'] == 1


def test_unknown_dcmi_code_gets_a_generic_hint():
    with pytest.raises(NpuSmiError, match=r'-8001.*Hint: check that the Ascend driver') as caught:
        raise_for_dcmi_error('dcmi init failed. ret is -8001')
    assert caught.value.code == -8001


@pytest.mark.parametrize('text', ['', '\n\n', 'bash: npu-smi: command not found\n'])
def test_empty_or_foreign_output_is_rejected(text):
    with pytest.raises(NpuSmiError, match=NOT_INFO):
        parse_info(text)


def test_board_with_tab_indentation_and_prompt():
    text = read('025_board_t-board_i0_IT21HMDC_Bin5_v25.5.1_indented.txt').replace('        ', '\t')
    text = 'root@node1:~# npu-smi info -t board -i 0\n' + text
    assert parse_board(text) == EXPECTED['025_board_t-board_i0_IT21HMDC_Bin5_v25.5.1_indented.txt']['board']


@pytest.mark.parametrize('parser', [parse_board, parse_map])
def test_other_parsers_reject_errors_and_empty_output(parser):
    with pytest.raises(NpuSmiError) as caught:
        parser(read('019_error_dcmi_module_initialize_failed_-8005_container.txt'))
    assert caught.value.code == -8005
    with pytest.raises(NpuSmiError):
        parser('')


def test_every_npu_smi_call_is_bounded(tmp_path):
    """An npu-smi that never returns is stopped: the pre-check cannot hang on it."""
    import subprocess
    import time

    from ansible_collections.verl.deploy.plugins.module_utils._npu_smi import bounded

    hung = tmp_path / "npu-smi"
    hung.write_text("#!/bin/sh\nsleep 600\n")
    hung.chmod(0o755)

    class Module:
        @staticmethod
        def get_bin_path(name):
            return "/usr/bin/timeout" if name == "timeout" else None

        @staticmethod
        def run_command(argv, **_kwargs):
            proc = subprocess.run(argv, capture_output=True, text=True, check=False)
            return proc.returncode, proc.stdout, proc.stderr

    started = time.monotonic()
    rc, _out, err = bounded(Module, seconds=1)([str(hung), "info"])
    assert rc == 124 and "did not answer within 1 s" in err and time.monotonic() - started < 10
