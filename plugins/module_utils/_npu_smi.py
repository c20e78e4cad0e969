# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) verl-deploy maintainers

# This module_utils is PRIVATE and should only be used by this collection. Breaking changes can occur any time.
# (As in community.docker: the leading underscore marks it as internal; the functions may change without notice.)

"""Parsers for the text output of Huawei Ascend ``npu-smi``.

Pure functions over strings, no Ansible imports, so they can be unit-tested against pasted outputs.

``npu-smi info`` prints a box-drawn table whose column widths change between versions and products, and
real pastes are often damaged (prompt lines, indentation, ``> `` quotes, truncation). The parser therefore
never relies on fixed columns: rows are split on ``|`` into cells, values inside a cell on whitespace, and
``used / total`` pairs are found with a regex that allows any spacing around ``/``.
"""

from __future__ import annotations

import os
import re

__all__ = ('NpuSmiError', 'parse_info', 'parse_board', 'parse_map', 'raise_for_dcmi_error', 'checked_output', 'read_boards')

# "dcmi module initialize failed. ret is -8005", "dcmi model initialized failed, because the device is used. ret is -8020"
_DCMI_ERROR = re.compile(r'^.*\bdcmi\b.*?\bret\s+is\s+(-?\d+).*$', re.IGNORECASE | re.MULTILINE)
_HELD_OR_NOT_MOUNTED = (
    'the NPU is held by another container or process, or this container lacks the Ascend devices/driver mounts '
    '(/dev/davinci*, /dev/davinci_manager, /dev/devmm_svm, /dev/hisi_hdc, /usr/local/Ascend/driver); '
    'check `npu-smi info` on the host and other containers mapping /dev/davinci*'
)
_DCMI_HINTS = {-8005: _HELD_OR_NOT_MOUNTED, -8020: _HELD_OR_NOT_MOUNTED}
_DCMI_DEFAULT_HINT = 'check that the Ascend driver is installed and loaded and that /dev/davinci* are visible here'

_BLOCKQUOTE_AND_INDENT = re.compile(r'^\s*(?:>\s*)*')
_SEPARATOR_CHARS = frozenset('+-=| ')
_USED_TOTAL = re.compile(r'(\S+?)\s*/\s*(\S+)')
# A PCI address (possibly masked by the user as 0000:xx:00.0) only ever appears in the Bus-Id cell.
_PCI_ADDRESS = re.compile(r'^[0-9A-Fa-fx]{4,8}:[0-9A-Fa-fx]{2}:')
_NO_PROCESSES = re.compile(r'No running processes found in NPU\s*(\d+)', re.IGNORECASE)
_SMI_VERSION = re.compile(r'npu-smi\s+(\S+)', re.IGNORECASE)
_DECIMAL = re.compile(r'^-?\d+(?:\.\d+)?$')
# "Key<spaces>: value"; the key must start with a letter and cannot hold '@', which skips shell prompts.
_KEY_VALUE = re.compile(r'^([A-Za-z][\w ()%./-]*?)\s*:\s*(.*)$')
_PLAIN_INT = re.compile(r'^(?:0|[1-9]\d*)$')
# Identifiers that look numeric but are not quantities.
_TEXT_KEYS = frozenset(('serial_number',))


class NpuSmiError(Exception):
    """npu-smi printed an error, or text that is not the expected output.

    ``code`` is the dcmi return code (e.g. -8005) when npu-smi reported one, else None.
    """

    def __init__(self, msg, code=None):
        super().__init__(msg)
        self.msg = msg
        self.code = code


def raise_for_dcmi_error(text):
    """Raise NpuSmiError when ``text`` holds a ``dcmi ... ret is -NNNN`` line."""
    match = _DCMI_ERROR.search(text or '')
    if match is None:
        return
    code = int(match.group(1))
    hint = _DCMI_HINTS.get(code, _DCMI_DEFAULT_HINT)
    raise NpuSmiError('npu-smi failed with dcmi error %d (%r). Hint: %s.' % (code, match.group(0).strip(), hint), code)


def _clean_lines(text):
    """Yield lines without indentation, markdown '> ' quoting or trailing whitespace; blank lines dropped."""
    for raw in (text or '').splitlines():
        line = _BLOCKQUOTE_AND_INDENT.sub('', raw).rstrip()
        if line:
            yield line


def _is_separator(line):
    return set(line) <= _SEPARATOR_CHARS and ('-' in line or '=' in line)


def _cells(line):
    """Split a '|' row into stripped cells; a row cut off mid-line simply has fewer/shorter cells."""
    body = line[1:] if line.startswith('|') else line
    if body.endswith('|'):
        body = body[:-1]
    return [cell.strip() for cell in body.split('|')]


def _to_int(value):
    return int(value) if value is not None and re.match(r'^-?\d+$', value) else None


def _to_float(value):
    return float(value) if value is not None and _DECIMAL.match(value) else None


def _split_values(cell):
    """Return (leading scalar tokens, [(used, total), ...]) of a right-hand value cell."""
    pairs = list(_USED_TOTAL.finditer(cell))
    head = cell[:pairs[0].start()] if pairs else cell
    return head.split(), [(_to_int(m.group(1)), _to_int(m.group(2))) for m in pairs]


def _is_int_token(token):
    return re.match(r'^\d+$', token) is not None


def _is_process_row(cells):
    # "<npu> [<chip>] | <pid> | <name> | <memory> [| <pid in container>]": no device row has an integer 2nd cell
    # (that cell is Health, Bus-Id or the 950 Name).
    ids = cells[0].split()
    return len(cells) >= 2 and bool(ids) and all(_is_int_token(t) for t in ids) and _is_int_token(cells[1])


class _InfoParser:
    """One pass over the cleaned lines of ``npu-smi info``; state needed to pair card rows with chip rows."""

    def __init__(self):
        self.version = None
        self.cards = {}
        self.processes = []
        self.recognised = False
        # 'phy' (A3), 'device' (310/310P) or None: what the 2nd id of a chip row is, from the 'Chip ...' header.
        self.second_id = None
        # Ascend 950 prints 'NPU ID | Name | Health' as separate cells.
        self.separate_name_cell = False
        self.current_card = None
        self.expect_card_row = True

    def feed(self, line):
        if _is_separator(line):
            self.expect_card_row = True
            return
        if not line.startswith('|'):
            return  # shell prompt or prose around the paste
        cells = _cells(line)
        if not any(cells):
            return  # an empty '|   |' row carries nothing
        joined = ' '.join(cells)
        if _NO_PROCESSES.search(joined):
            self.recognised = True
        elif 'Version' in joined and _SMI_VERSION.search(joined):
            self._version(joined)
        elif re.search(r'Health|Bus-Id|Process id', joined, re.IGNORECASE):
            self._header(cells, joined)
        elif _is_process_row(cells):
            self._process(cells)
        else:
            self._device_row(cells)

    def _version(self, joined):
        self.recognised = True
        version = _SMI_VERSION.search(joined).group(1)
        # Docs print placeholders such as 'xxx.xxx.xxx': report no version rather than a fake one.
        self.version = version if re.search(r'\d', version) else None

    def _header(self, cells, joined):
        self.recognised = True
        if 'Bus-Id' in joined:
            first = cells[0].lower()
            if 'phy' in first:
                self.second_id = 'phy'
            elif 'device' in first:
                self.second_id = 'device'
        if len(cells) > 1 and cells[0].upper().startswith('NPU') and cells[1].startswith('Name'):
            self.separate_name_cell = True

    def _process(self, cells):
        self.recognised = True
        ids = [int(token) for token in cells[0].split()]
        self.processes.append({
            'npu_id': ids[0],
            # The 950 process table is keyed by NPU ID only.
            'chip_id': ids[1] if len(ids) > 1 else None,
            'pid': int(cells[1]),
            'name': cells[2] if len(cells) > 2 else '',
            'memory_mb': _to_int(cells[3]) if len(cells) > 3 else None,
        })

    def _device_row(self, cells):
        if len(cells) >= 4:
            self.separate_name_cell = True
        padded = cells + [''] * 4
        if self.separate_name_cell:
            id_tokens, name, mid, right = padded[0].split(), padded[1], padded[2], padded[3]
            is_chip_row = not id_tokens and not name
        else:
            id_tokens, mid, right = padded[0].split(), padded[1], padded[2]
            name = ' '.join(id_tokens[1:])
            is_chip_row = self._looks_like_chip_row(id_tokens, mid)
        if is_chip_row:
            self._chip_row(id_tokens, mid, right)
        else:
            self._card_row(id_tokens, name, mid, right)

    def _looks_like_chip_row(self, id_tokens, mid):
        if _PCI_ADDRESS.match(mid):
            return True
        if len(id_tokens) == 1:
            return True  # '<chip>' alone (910 / 910B); a card row always carries a name
        if len(id_tokens) >= 2 and not _is_int_token(id_tokens[1]):
            return False  # '<npu> <name>'
        # '0 310' (card) vs '0 0' (chip + device/phy) with a Bus-Id of 'NA': rows come in card/chip pairs.
        return not self.expect_card_row

    def _card_row(self, id_tokens, name, health, right):
        npu_id = _to_int(id_tokens[0]) if id_tokens else None
        if npu_id is None:
            return  # not a data row we understand
        self.recognised = True
        self.expect_card_row = False
        scalars, _hugepages = _split_values(right)
        card = self.cards.get(npu_id)
        if card is None:
            # A3 prints one card row per chip: name, power and temperature come from the first one.
            card = self.cards[npu_id] = {
                'npu_id': npu_id,
                'name': name,
                'health': health,
                'power_w': _to_float(scalars[0]) if scalars else None,
                'temp_c': _to_int(scalars[1]) if len(scalars) > 1 else None,
                'chips': [],
            }
        elif card['health'] == 'OK' and health != 'OK':
            card['health'] = health  # the first value that is not OK wins
        self.current_card = card

    def _chip_row(self, id_tokens, bus_id, right):
        self.expect_card_row = True
        if self.current_card is None:
            return  # a fragment that starts mid-card: the chip cannot be attributed to an NPU
        self.recognised = True
        ids = [_to_int(token) for token in id_tokens]
        scalars, pairs = _split_values(right)
        # Training cards: 'AICore  DDRused / DDRtotal  HBMused / HBMtotal'; 310/310P: 'AICore  used / total'.
        memory = pairs[-2] if len(pairs) >= 2 else (pairs[0] if pairs else (None, None))
        hbm = pairs[-1] if len(pairs) >= 2 else (None, None)
        second = ids[1] if len(ids) > 1 else None
        second_kind = self.second_id
        if second_kind is None and second is not None:
            second_kind = 'phy' if hbm[1] is not None else 'device'  # no header in the paste: HBM means A3
        self.current_card['chips'].append({
            # The 950 layout has no chip column: its single chip row is chip 0.
            'chip_id': ids[0] if ids and ids[0] is not None else 0,
            'phy_id': second if second_kind == 'phy' else None,
            'device_id': second if second_kind == 'device' else None,
            'bus_id': bus_id,
            'aicore_pct': _to_int(scalars[0]) if scalars else None,
            'memory_used_mb': memory[0],
            'memory_total_mb': memory[1],
            'hbm_used_mb': hbm[0],
            'hbm_total_mb': hbm[1],
        })

    def result(self):
        npus = [self.cards[npu_id] for npu_id in sorted(self.cards)]
        for npu in npus:
            npu['chips'].sort(key=lambda chip: chip['chip_id'])
        return {
            'npu_smi_version': self.version,
            'npus': npus,
            'processes': self.processes,
            'npu_ids': [npu['npu_id'] for npu in npus],
            'chip_count': sum(len(npu['chips']) for npu in npus),
            # No NPU seen is not a healthy host.
            'healthy': bool(npus) and all(npu['health'] == 'OK' for npu in npus),
            'busy_npu_ids': sorted(set(proc['npu_id'] for proc in self.processes)),
        }


def _first_line(text):
    return next(_clean_lines(text), '')


def parse_info(text):
    """Parse ``npu-smi info`` output into a dict (see the npu_info module's RETURN for the contract).

    Truncated or trimmed pastes give what is there. ``npu_smi_version`` is None when there is no header line
    or the header holds a doc placeholder (``xxx.xxx.xxx``). On the Ascend 950 layout ``aicore_pct`` holds
    ``NPU Util(%)``, chips have ``chip_id`` 0 and processes ``chip_id`` None.

    Raises NpuSmiError for a ``dcmi ... ret is -NNNN`` error or when no npu-smi table is found.
    """
    raise_for_dcmi_error(text)
    parser = _InfoParser()
    for line in _clean_lines(text):
        parser.feed(line)
    if not parser.recognised:
        raise NpuSmiError(
            'no `npu-smi info` table found in the output (first line: %r). Hint: expected the box table with '
            '`| NPU  Name | Health | ...` rows; run `npu-smi info` by hand to see what it prints' % _first_line(text)
        )
    return parser.result()


def _snake_case(key):
    return re.sub(r'[^0-9a-z]+', '_', key.lower()).strip('_')


def parse_board(text):
    """Parse ``npu-smi info -t board -i N`` (``Key   : value`` lines) into a dict with snake_case keys.

    Plain decimal values become ints (NPU ID, Chip Count, Slot ID, ...); hex ids, versions and the serial
    number stay strings. Raises NpuSmiError for a dcmi error or when no ``key : value`` line is found.
    """
    raise_for_dcmi_error(text)
    board = {}
    for line in _clean_lines(text):
        match = _KEY_VALUE.match(line)
        if match is None:
            continue
        key, value = _snake_case(match.group(1)), match.group(2).strip()
        board[key] = int(value) if _PLAIN_INT.match(value) and key not in _TEXT_KEYS else value
    if not board:
        raise NpuSmiError('no `key : value` lines found in the npu-smi board output (first line: %r)' % _first_line(text))
    return board


def parse_map(text):
    """Parse ``npu-smi info -m`` into [{npu_id, chip_id, chip_logic_id, chip_name}] in printed order.

    ``Mcu`` rows (logic id ``-``) are management controllers, not NPU chips, and are skipped.
    Raises NpuSmiError for a dcmi error or when no mapping row is found.
    """
    raise_for_dcmi_error(text)
    rows = []
    for line in _clean_lines(text):
        fields = line.split(None, 3)
        if len(fields) < 4 or not all(_is_int_token(field) for field in fields[:2]):
            continue  # header line or prompt
        if not _is_int_token(fields[2]):
            continue  # Mcu row
        rows.append({
            'npu_id': int(fields[0]),
            'chip_id': int(fields[1]),
            'chip_logic_id': int(fields[2]),
            'chip_name': ' '.join(fields[3].split()),
        })
    if not rows:
        raise NpuSmiError('no `npu-smi info -m` mapping rows found in the output (first line: %r)' % _first_line(text))
    return rows


EXCERPT_LINES = 5


def _excerpt(text):
    return '\n'.join(text.strip().splitlines()[:EXCERPT_LINES])


def checked_output(argv, rc, out, err):
    """Return stdout of a finished npu-smi run, or raise NpuSmiError quoting the problem."""
    # npu-smi prints dcmi errors on stdout or stderr, with or without a non-zero rc.
    raise_for_dcmi_error(out + '\n' + err)
    if rc != 0:
        raise NpuSmiError('`%s` exited with rc=%d: %s' % (' '.join(argv), rc, _excerpt(err) or _excerpt(out) or '(no output)'))
    return out


def read_boards(run_command, warn, npu_smi, npu_ids):
    """Board info per NPU (run_command(argv) -> (rc, out, err)); a failed query is only a warning (warn(text)),
    because the main table already succeeded."""
    boards = []
    for npu_id in npu_ids:
        argv = [npu_smi, 'info', '-t', 'board', '-i', str(npu_id)]
        rc, out, err = run_command(argv)
        try:
            board = parse_board(checked_output(argv, rc, out, err))
        except NpuSmiError as exc:
            warn('board info of NPU %d skipped: %s' % (npu_id, exc.msg))
            continue
        board.setdefault('npu_id', npu_id)
        boards.append(board)
    return boards


# Every npu-smi call is bounded: an npu-smi that never returns (a hung driver) would hang the pre-check.
NPU_SMI_TIMEOUT = 60


def bounded(module, seconds=NPU_SMI_TIMEOUT):
    """module.run_command, each call stopped after `seconds` (coreutils timeout: TERM, then KILL 5 s later)."""
    timeout = module.get_bin_path('timeout')

    def run(argv, **kwargs):
        if not timeout:
            return module.run_command(argv, **kwargs)
        rc, out, err = module.run_command([timeout, '-k', '5', str(seconds)] + list(argv), **kwargs)
        if rc in (124, 137):
            err = ('%s did not answer within %d s and was stopped. %s' % (argv[0], seconds, err or '')).strip()
        return rc, out, err
    return run


# Where the Ascend driver installs npu-smi when PATH does not hold it (a container's PATH, sudo's secure_path).
NPU_SMI_FALLBACKS = ('/usr/local/sbin/npu-smi', '/usr/local/bin/npu-smi')


def executable(path):
    return os.path.isfile(path) and os.access(path, os.X_OK)


def locate(module, explicit, option):
    """(the npu-smi to run, or None; why it was not found, naming every place looked at and `option`, the setting)."""
    if explicit:
        return (explicit if executable(explicit) else None,
                'npu-smi not found or not executable at %s (%s)' % (explicit, option))
    found = module.get_bin_path('npu-smi') or next((path for path in NPU_SMI_FALLBACKS if executable(path)), None)
    return found, ('npu-smi not found: searched PATH (%s) and %s. Fix: install the Ascend driver (or mount it into the container), '
                   'or set %s.' % (os.environ.get('PATH', ''), ', '.join(NPU_SMI_FALLBACKS), option))


def read_npu(module, explicit, option, board=False, answered=None):
    """npu_info's result (npu-smi info read, each process it lists annotated with what it is here), with failed False; or
    {failed, msg, dcmi_code}: never a module failure. answered: a list that gets (npu-smi, rc, stdout, stderr) of the first
    `npu-smi info`, for a reader of the same table (the failure scan's health lines)."""
    from ansible_collections.verl.deploy.plugins.module_utils import _node_facts as nf
    npu_smi, missing = locate(module, explicit, option)
    if answered is not None:
        answered.append((npu_smi, 127, '', missing))
    if not npu_smi:
        return {'failed': True, 'msg': missing, 'dcmi_code': None}
    argv = [npu_smi, 'info']
    rc, out, err = bounded(module)(argv)
    if answered is not None:
        answered[-1] = (npu_smi, rc, out, err)
    try:
        facts = parse_info(checked_output(argv, rc, out, err))
    except NpuSmiError as exc:
        return {'failed': True, 'msg': exc.msg, 'dcmi_code': exc.code, 'rc': rc, 'npu_smi_path': npu_smi}
    # npu-smi prints host pids: what each process is here (the training's container, another, the host).
    facts['processes'] = nf.annotate_processes(facts['processes'], nf.read_text, nf.read_text('/proc/1/cgroup') or '')
    if any(not process['seen'] for process in facts['processes']):
        # A pid /proc no longer shows may have ended between npu-smi's read and ours (a training's worker that
        # exits): ask npu-smi once more, and keep only the unseen pids it still lists.
        rc, out, err = bounded(module)(argv)
        try:
            again = parse_info(checked_output(argv, rc, out, err))
        except NpuSmiError:
            again = None
        if again is not None:
            facts['processes'] = nf.still_listed(facts['processes'], again['processes'])
    facts.update(failed=False, npu_smi_path=npu_smi)
    if board:
        facts['boards'] = read_boards(bounded(module), module.warn, npu_smi, facts['npu_ids'])
    return facts
