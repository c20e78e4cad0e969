"""Fake `npu-smi` of the simulated Ascend nodes (tests/sim): a real capture's layout, the node's own processes.

tests/sim/simcluster.py installs this file, with a `#!/usr/bin/python3` line put in front, as
/usr/local/sbin/npu-smi and /usr/local/bin/npu-smi in the node image (stdlib only, Python 3.8+).

What the real one does, and what this one copies of it:
- Real `npu-smi info` (Ascend driver, "npu-smi info" in the Atlas "npu-smi Command Reference") prints
  the chips (name, health, bus id, HBM used/total) from the driver, then a process table of every
  process that has a context on an NPU -- including processes inside containers, with the pid as the
  host sees it (the captures in tests/fixtures/npu-smi show vLLM and MindIE workers, and the
  "Process id" of container processes). HBM-Usage grows with what those processes allocate.
- Here the chip part is a real capture's (its version, names, bus ids, widths), and by default the
  process table and the HBM used are those of this node: every process whose /proc/<pid>/fd holds
  /dev/davinciN open (the node's PID namespace sees its containers' processes, as a host does), with
  its host pid, its name (/proc/<pid>/comm) and the memory the stand-in torch_npu accounted for it
  (tests/sim/stand_in_torch_npu.py writes it under the process's own root, /tmp/.sim-npu/<its pid>;
  a holder with no account shows a bare context, 141 MB, as the idle contexts of capture 005 do).
  Device N is /dev/davinciN: the NPU id, or on Atlas A3 the chip's Phy-ID.
- AICore(%) follows the same processes (a MODEL, not a measurement: npu-smi reads the chip's cube units, which nothing
  here has): a chip whose holders account more than a bare context is busy with the stand-in trainer's work, whose only
  modelled quantity is the memory each of its workers holds (tests/sim/stand_in_main_dapo.py, SIM_TRAINER_WORKER_HBM_MB,
  held for the whole training as verl's workers are busy for the whole of every step); its AICore is that memory's share
  of the chip's HBM (24000 of 65536 MB: 37 %), at least 1 %. A chip with no holder, or only contexts, shows 0 %. So a
  node's AICore rises when the training's workers load and falls to 0 when they go.
- A chip's health can be set for a test: /etc/sim-npu-smi/health, lines "DEVICE HEALTH" (e.g.
  "3 Alarm", the words npu-smi prints: OK, Warning, Alarm, Critical).
- A test can pin a whole capture instead (error captures, foreign processes, exotic layouts): a file
  name written to /etc/sim-npu-smi/fixture is replayed byte for byte (less a pasted prompt line).
  Captures whose layout is not the common one (Ascend 950, the wide v26 layout with a container
  column, fragments) are always replayed as they are.

Which capture gives the layout (the first that is set wins):
  1. /etc/sim-npu-smi/fixture    pinned: replayed byte for byte (a test writes it at run time)
  2. $SIM_NPU_FIXTURE            the node container's environment
  3. /etc/sim-npu-smi/default    written by sim-node-entrypoint from $SIM_NPU_FIXTURE at start
  4. DEFAULT_FIXTURE             8 healthy Atlas A2 NPUs (910B3)
The board capture (`info -t board -i N`) likewise: /etc/sim-npu-smi/board, $SIM_NPU_BOARD_FIXTURE,
/etc/sim-npu-smi/board-default, DEFAULT_BOARD.

/etc/sim-npu-smi is a link to /usr/local/Ascend/driver/tools/sim-npu-smi/state and the captures are
also under /usr/local/Ascend/driver/tools/sim-npu-smi/fixtures, so a container that gets the node's
driver folder and npu-smi mounted in (as Ascend containers do) reads the same capture (it sees only
its own processes: its /proc is its own).

Behaviour:
  npu-smi info                   the chips of the capture with this node's processes, HBM and AICore; exit 0
  npu-smi info -t board -i N     the board capture with its `NPU ID` value set to N; exit 0
                                 (exit 1 when N is not an NPU id of the main capture)
  an error capture (dcmi ... ret is -8005/-8020) is printed for every command, exit 1
  anything else                  a message naming the supported forms; exit 2
Every call is logged to /var/log/sim-npu-smi.log.
"""
from __future__ import annotations

import json
import os
import re
import sys
import time

FIXTURE_DIRS = ("/opt/sim/npu-smi", "/usr/local/Ascend/driver/tools/sim-npu-smi/fixtures")
# The node's /etc/sim-npu-smi is a link to the second folder, which containers see when the driver is mounted in.
STATE_DIRS = ("/etc/sim-npu-smi", "/usr/local/Ascend/driver/tools/sim-npu-smi/state")
DEFAULT_FIXTURE = "007_info_910B3_8cards_v24.1.rc2_procs_emptyname_mixed.txt"
DEFAULT_BOARD = "025_board_t-board_i0_IT21HMDC_Bin5_v25.5.1_indented.txt"
LOG = "/var/log/sim-npu-smi.log"
# Where the stand-in torch_npu accounts a process's HBM, inside that process's own root.
ACCOUNT_DIR = "tmp/.sim-npu"
# A process with only a device context: what capture 005's idle contexts use.
CONTEXT_MB = 141
# An idle chip's HBM use when the capture shows every chip busy (the idle captures show 3 to 3412 MB).
IDLE_MB = 3412

# A pasted shell prompt before the output, e.g. `[root@host ~]# npu-smi info` or `# npu-smi info -l`.
PROMPT = re.compile(rb"^\s*(\[[^\]\n]*\]\s*[#$]|[#$])\s*\S")
# npu-smi's dcmi failures print no table, only these lines.
ERROR = re.compile(rb"dcmi (module|model) initiali[sz]e(d)? failed|ret is -\d{3,}")
NPU_ID_LINE = re.compile(rb"^(\s*NPU ID\s*:\s*)(\d+)", re.MULTILINE)
# The common layout: a card row `| 0     910B3 | OK | ...` and its chip row `| 0 [Phy-ID] | 0000:C1:00.0 | ...`.
CARD_ROW = re.compile(r"^\|\s*(\d+)\s+(\S+)\s*\|(\s*)([A-Za-z]+)(\s*)\|")
CHIP_ROW = re.compile(r"^\|\s*(\d+)(?:\s+(\d+))?\s*\|\s*[0-9A-Fa-fx]{4}:\S*\s*\|")
USED_TOTAL = re.compile(r"(\d+)(\s*/\s*)(\d+)")
DAVINCI = re.compile(r"^/dev/davinci(\d+)$")
HEALTH_WORDS = ("OK", "Warning", "Alarm", "Critical")
WIDTHS = (27, 15, 52)  # the common layout's three columns, as in every 910B/A3 capture of tests/fixtures


def _state(name):
    for folder in STATE_DIRS:
        try:
            with open(os.path.join(folder, name)) as handle:
                value = handle.read().strip()
        except OSError:
            continue
        if value:
            return value
    return ""


def pinned():
    """The capture a test pinned (replayed byte for byte), or ''."""
    return _state("fixture")


def selected(kind="info"):
    """The file name of the capture in force for `kind` ("info" or "board")."""
    if kind == "board":
        return _state("board") or os.environ.get("SIM_NPU_BOARD_FIXTURE", "") or _state("board-default") or DEFAULT_BOARD
    return pinned() or os.environ.get("SIM_NPU_FIXTURE", "") or _state("default") or DEFAULT_FIXTURE


def read_fixture(name):
    """(path, bytes) of a capture by file name; raises LookupError naming the folders searched."""
    if not name or "/" in name or name.startswith("."):
        raise LookupError("invalid capture name %r" % name)
    for folder in FIXTURE_DIRS:
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            with open(path, "rb") as handle:
                return path, handle.read()
    raise LookupError("capture %r not found in %s" % (name, " or ".join(FIXTURE_DIRS)))


def strip_prompt(data):
    """The capture less a first line that is a pasted shell prompt (not part of npu-smi's output)."""
    first, sep, rest = data.partition(b"\n")
    if sep and PROMPT.match(first):
        return rest
    return data


def is_error(data):
    return bool(ERROR.search(data)) and b"+---" not in data and b"NPU ID" not in data


def _cells(line):
    return [cell.strip() for cell in line.strip().strip(">").strip().strip("|").split("|")]


def device_ids(data):
    """The /dev/davinciN numbers of a main-table capture: Phy-IDs on Atlas A3, else the NPU ids."""
    text = data.decode("utf-8", "replace")
    a3 = "Phy-ID" in text
    npus, phys = [], []
    for line in text.splitlines():
        if "|" not in line:
            continue
        cells = _cells(line)
        if len(cells) < 2:
            continue
        first = cells[0].split()
        health = re.match(r"^[A-Za-z]+$", cells[1]) and cells[1] != "NA"
        if len(first) == 2 and first[0].isdigit() and health:
            npus.append(int(first[0]))          # `| 0     910B3 | OK | ...`
        elif a3 and len(first) == 2 and first[0].isdigit() and first[1].isdigit() and re.match(r"^[0-9A-Fa-fx]{4}:", cells[1]):
            phys.append(int(first[1]))          # A3 chip row `| 1     3 | 0000:9B:00.0 | ...`
        elif len(first) == 1 and first[0].isdigit() and len(cells) > 2 and re.match(r"^[A-Za-z]", cells[1]) \
                and re.match(r"^[A-Za-z]+$", cells[2]):
            npus.append(int(first[0]))          # Ascend 950: `| 0 | Ascend950DT | OK | ...`
    found = phys if a3 and phys else npus
    return sorted(set(found))


# --------------------------------------------------------------------------- the node's processes

def _read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return ""


def _namespace_pid(proc, pid):
    """The pid a process has in its own (innermost) PID namespace, from NSpid in /proc/<pid>/status."""
    for line in _read(os.path.join(proc, str(pid), "status")).splitlines():
        if line.startswith("NSpid:"):
            fields = line.split()[1:]
            if fields and fields[-1].isdigit():
                return int(fields[-1])
    return pid


def _accounted(proc, pid):
    """{device: MB} the stand-in torch_npu accounted for the process (under its own root), or {}."""
    path = os.path.join(proc, str(pid), "root", ACCOUNT_DIR, str(_namespace_pid(proc, pid)))
    try:
        with open(path) as handle:
            return {int(device): int(mb) for device, mb in json.load(handle).items()}
    except (OSError, ValueError, AttributeError, TypeError):
        return {}


def device_holders(proc="/proc"):
    """{device number: [{'pid', 'name', 'memory_mb'}]}: the processes that hold /dev/davinciN open."""
    holders = {}
    try:
        pids = sorted(int(entry) for entry in os.listdir(proc) if entry.isdigit())
    except OSError:
        return holders
    for pid in pids:
        folder = os.path.join(proc, str(pid), "fd")
        try:
            targets = [os.readlink(os.path.join(folder, fd)) for fd in os.listdir(folder)]
        except OSError:
            continue  # gone, or not ours to read
        devices = sorted({int(m.group(1)) for m in (DAVINCI.match(target) for target in targets) if m})
        if not devices:
            continue
        memory = _accounted(proc, pid)
        name = _read(os.path.join(proc, str(pid), "comm")).strip()
        for device in devices:
            holders.setdefault(device, []).append({"pid": pid, "name": name, "memory_mb": memory.get(device, CONTEXT_MB)})
    return holders


def read_health():
    """{device number: health word} set by a test in /etc/sim-npu-smi/health."""
    health = {}
    for line in _state("health").splitlines():
        fields = line.split()
        if len(fields) == 2 and fields[0].isdigit() and fields[1] in HEALTH_WORDS:
            health[int(fields[0])] = fields[1]
    return health


# --------------------------------------------------------------------------- the live table

def _chips(lines):
    """[(device, npu_id, chip_id, card line index, chip line index)] of a capture in the common layout."""
    a3 = any("Phy-ID" in line for line in lines)
    chips = []
    for index, line in enumerate(lines[:-1]):
        card = CARD_ROW.match(line)
        chip = CHIP_ROW.match(lines[index + 1]) if card else None
        if not chip:
            continue
        npu_id, chip_id = int(card.group(1)), int(chip.group(1))
        phy = chip.group(2)
        device = int(phy) if a3 and phy is not None else npu_id
        chips.append((device, npu_id, chip_id, index, index + 1))
    return chips


def _common_layout(lines):
    """The 910B/A3 layout of 27/15/52-character columns (the wide v26 one has a container column and 70)."""
    rules = {"+%s+%s+%s+" % (c * WIDTHS[0], c * WIDTHS[1], c * WIDTHS[2]) for c in "-="}
    header = [line for line in lines if "Health" in line and "Name" in line]
    return bool(header) and len(_cells(header[0])) == 3 and any(line in rules for line in lines)


def _set_width(line, width):
    """The line with spaces added or taken before its last `|`, so that it keeps `width` characters (one space stays)."""
    if not line.endswith("|") or len(line) == width:
        return line
    body = line[:-1]
    if len(line) < width:
        return body + " " * (width - len(line)) + "|"
    spare = len(body) - len(body.rstrip(" "))
    cut = min(spare - 1, len(line) - width)
    return body[:len(body) - cut] + "|" if cut > 0 else line


def _with_health(line, match, word):
    before, old, after = match.group(3), match.group(4), match.group(5)
    room = len(before) + len(old) + len(after)
    cell = (before + word).ljust(room)
    return line[:match.start(3)] + cell + line[match.end(5):]


def _with_hbm(line, used):
    pairs = list(USED_TOTAL.finditer(line))
    if not pairs:
        return line
    last = pairs[-1]
    old = last.group(1)
    new = ("%d" % used).rjust(len(old)) if len("%d" % used) <= len(old) else "%d" % used
    changed = line[:last.start(1)] + new + line[last.end(1):]
    return _set_width(changed, len(line))


def aicore_pct(holders, total_mb):
    """The modelled AICore % of a chip (see the module's docstring): the share of its HBM that its holders' work holds."""
    work = sum(holder["memory_mb"] for holder in holders if holder["memory_mb"] > CONTEXT_MB)
    if not work or not total_mb:
        return 0
    return max(1, min(100, int(round(100.0 * work / total_mb))))


def _with_aicore(line, pct):
    """The chip row with its AICore(%) value (the first of its third cell) set, keeping the line's width."""
    bars = [index for index, char in enumerate(line) if char == "|"]
    if len(bars) < 4:
        return line
    cell = line[bars[2] + 1:bars[3]]
    match = re.match(r"^(\s*)(\S+)(\s*)", cell)
    if not match:
        return line
    room = len(match.group(2)) + len(match.group(3))
    value = ("%d" % pct).ljust(room - 1) + " " if len("%d" % pct) < room else "%d " % pct
    return _set_width(line[:bars[2] + 1] + match.group(1) + value + cell[match.end():] + line[bars[3]:], len(line))


def _process_section(chips, holders):
    wide, mid, right = WIDTHS
    rule = "+%s+%s+%s+" % ("-" * wide, "-" * mid, "-" * right)
    double = "+%s+%s+%s+" % ("=" * wide, "=" * mid, "=" * right)
    width = len(rule)
    out = [rule, "| NPU     Chip              | Process id    | Process name             | Process memory(MB)      |", double]
    by_card = {}
    for device, npu_id, chip_id, _card, _chip in chips:
        by_card.setdefault(npu_id, []).append((chip_id, device))
    for npu_id in sorted(by_card):
        rows = []
        for chip_id, device in sorted(by_card[npu_id]):
            for holder in holders.get(device, []):
                ids = "%-7d %d" % (npu_id, chip_id)
                rows.append("| %-25s | %-13s | %-24s | %-23s |" % (ids, holder["pid"], holder["name"][:24], holder["memory_mb"]))
        if not rows:
            rows.append("| %s |" % ("No running processes found in NPU %d" % npu_id).ljust(width - 4))
        out += rows + [double]
    return out


def live(data, holders, health):
    """The capture's chips with the node's processes, HBM and health; None when its layout is not the common one."""
    text = data.decode("utf-8", "replace")
    lines = text.split("\n")
    if not _common_layout(lines):
        return None
    chips = _chips(lines)
    if not chips:
        return None
    cut = next((i for i, line in enumerate(lines) if "Process id" in line), None)
    if cut is not None:
        cut = cut - 1 if cut > 0 and lines[cut - 1].startswith("+") else cut
        lines = lines[:cut]
    while lines and not lines[-1].strip():
        lines.pop()
    used = {}
    for device, _npu, _chip, _card, chip_index in chips:
        pairs = list(USED_TOTAL.finditer(lines[chip_index]))
        if pairs:
            used[device] = int(pairs[-1].group(1))
    # A chip's own figure is its idle use unless the capture showed it busy: then the capture's lowest.
    lowest = min(used.values()) if used else IDLE_MB
    lowest = lowest if lowest <= IDLE_MB else IDLE_MB
    for device, _npu, _chip, card_index, chip_index in chips:
        if device in health:
            lines[card_index] = _with_health(lines[card_index], CARD_ROW.match(lines[card_index]), health[device])
        idle = used.get(device, lowest)
        idle = idle if idle <= IDLE_MB else lowest
        load = sum(holder["memory_mb"] for holder in holders.get(device, []))
        lines[chip_index] = _with_hbm(lines[chip_index], idle + load)
        pairs = list(USED_TOTAL.finditer(lines[chip_index]))
        total = int(pairs[-1].group(3)) if pairs else 0
        lines[chip_index] = _with_aicore(lines[chip_index], aicore_pct(holders.get(device, []), total))
    lines += _process_section(chips, holders)
    return ("\n".join(lines) + "\n").encode("utf-8")


# --------------------------------------------------------------------------- the command

def _log(argv, name, code):
    try:
        with open(LOG, "a") as handle:
            handle.write("%s pid=%d argv=%r fixture=%s rc=%d\n" % (time.strftime("%Y-%m-%dT%H:%M:%S"), os.getpid(), argv, name, code))
    except OSError:
        pass


def _write(data, stream=None):
    stream = stream or sys.stdout
    stream.flush()
    stream.buffer.write(data)
    stream.buffer.flush()


def _board_id(argv):
    """N of `info -t board -i N [-c C]` (options in any order), or None when argv is not that."""
    if not argv or argv[0] != "info":
        return None
    options = {}
    rest = argv[1:]
    if len(rest) % 2:
        return None
    for index in range(0, len(rest), 2):
        options[rest[index]] = rest[index + 1]
    if options.get("-t") != "board" or not options.get("-i", "").isdigit() or set(options) - {"-t", "-i", "-c"}:
        return None
    return int(options["-i"])


def _load(argv, name):
    """The capture's bytes, or None after saying why it is missing (and logging exit code 3)."""
    try:
        return read_fixture(name)[1]
    except LookupError as exc:
        sys.stderr.write("npu-smi (simulated by verl-sim): %s\n" % exc)
        _log(argv, name, 3)
        return None


def main(argv):
    if argv[:1] == ["--sim-device-ids"] and len(argv) == 2:
        # Internal, for sim-node-entrypoint: the device numbers of a capture, one per line.
        _path, data = read_fixture(argv[1])
        print("\n".join(str(number) for number in device_ids(data)))
        return 0
    name = selected()
    data = _load(argv, name)
    if data is None:
        return 3
    data = strip_prompt(data)
    if is_error(data):
        _write(data)
        _log(argv, name, 1)
        return 1
    if argv == ["info"]:
        shown = None if pinned() else live(data, device_holders(), read_health())
        _write(shown if shown is not None else data)
        _log(argv, name + ("" if shown is None else " (live)"), 0)
        return 0
    npu = _board_id(argv)
    if npu is not None:
        ids = device_ids(data)
        if ids and npu not in ids and "Phy-ID" not in data.decode("utf-8", "replace"):
            sys.stderr.write("npu-smi (simulated by verl-sim): no NPU with id %d in %s (ids: %s)\n" % (npu, name, ids))
            _log(argv, name, 1)
            return 1
        board_name = selected("board")
        board = _load(argv, board_name)
        if board is None:
            return 3
        board = NPU_ID_LINE.sub(lambda match: match.group(1) + str(npu).encode(), strip_prompt(board), count=1)
        _write(board)
        _log(argv, board_name, 0)
        return 0
    sys.stderr.write("npu-smi (simulated by verl-sim): unsupported arguments %r; this stand-in answers `npu-smi info` and "
                     "`npu-smi info -t board -i <id>` from the captures in %s\n" % (argv, FIXTURE_DIRS[0]))
    _log(argv, name, 2)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
