"""Fake `npu-smi` of the simulated Ascend nodes (tests/sim): replays real npu-smi captures.

tests/sim/simcluster.py installs this file, with a `#!/usr/bin/python3` line put in front, as
/usr/local/sbin/npu-smi and /usr/local/bin/npu-smi in the node image (stdlib only, Python 3.8+).

Which capture is replayed (the first that is set wins):
  1. /etc/sim-npu-smi/fixture    a file name in /opt/sim/npu-smi/ written by a test at run time
  2. $SIM_NPU_FIXTURE            the node container's environment
  3. /etc/sim-npu-smi/default    written by sim-node-entrypoint from $SIM_NPU_FIXTURE at start
  4. DEFAULT_FIXTURE             8 idle, healthy NPUs
The board capture (`info -t board -i N`) likewise: /etc/sim-npu-smi/board, $SIM_NPU_BOARD_FIXTURE,
/etc/sim-npu-smi/board-default, DEFAULT_BOARD.

/etc/sim-npu-smi is a link to /usr/local/Ascend/driver/tools/sim-npu-smi/state and the captures are
also under /usr/local/Ascend/driver/tools/sim-npu-smi/fixtures, so a container that gets the node's
driver folder and npu-smi mounted in (as Ascend containers do) replays the same capture.

Behaviour:
  npu-smi info                   the capture, less a leading shell-prompt line; exit 0
  npu-smi info -t board -i N     the board capture with its `NPU ID` value set to N; exit 0
                                 (exit 1 when N is not an NPU id of the main capture)
  an error capture (dcmi ... ret is -8005/-8020) is printed for every command, exit 1
  anything else                  a message naming the supported forms; exit 2
Every call is logged to /var/log/sim-npu-smi.log.
"""
from __future__ import annotations

import os
import re
import sys
import time

FIXTURE_DIRS = ("/opt/sim/npu-smi", "/usr/local/Ascend/driver/tools/sim-npu-smi/fixtures")
# The node's /etc/sim-npu-smi is a link to the second folder, which containers see when the driver is mounted in.
STATE_DIRS = ("/etc/sim-npu-smi", "/usr/local/Ascend/driver/tools/sim-npu-smi/state")
DEFAULT_FIXTURE = "001_info_910ProB-as-910B_8cards_v24.1.0_noproc.txt"
DEFAULT_BOARD = "025_board_t-board_i0_IT21HMDC_Bin5_v25.5.1_indented.txt"
LOG = "/var/log/sim-npu-smi.log"

# A pasted shell prompt before the output, e.g. `[root@host ~]# npu-smi info` or `# npu-smi info -l`.
PROMPT = re.compile(rb"^\s*(\[[^\]\n]*\]\s*[#$]|[#$])\s*\S")
# npu-smi's dcmi failures print no table, only these lines.
ERROR = re.compile(rb"dcmi (module|model) initiali[sz]e(d)? failed|ret is -\d{3,}")
NPU_ID_LINE = re.compile(rb"^(\s*NPU ID\s*:\s*)(\d+)", re.MULTILINE)
VERSION = re.compile(rb"npu-smi\s+\S+\s+Version:\s*(\S+)")


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


def selected(kind="info"):
    """The file name of the capture in force for `kind` ("info" or "board")."""
    if kind == "board":
        return _state("board") or os.environ.get("SIM_NPU_BOARD_FIXTURE", "") or _state("board-default") or DEFAULT_BOARD
    return _state("fixture") or os.environ.get("SIM_NPU_FIXTURE", "") or _state("default") or DEFAULT_FIXTURE


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
        _write(data)
        _log(argv, name, 0)
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
