# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The NPU sampler of one node: every NPU_SAMPLE_SECONDS, one `npu-smi info` (HBM used, AICore %, temperature, power and
health of every chip in one call), kept while the training's processes hold this node's NPUs.

Installed by verl.deploy in verl_workdir beside verl_control.env (its values, read again before each sample: a deploy's new
values apply at the next one) and _npu_smi.py (the collection's npu-smi parser, plugins/module_utils/_npu_smi.py, as it is).
start_verl.sh starts it with this node's Ray (`python3 npu_sampler.py`, detached); it exits when no raylet runs in the
container any more, when NPU_SAMPLE_SECONDS is 0, or on SIGTERM (verl_control.sh stop-ray). One per container: it holds an
flock on .npu_sampler.pid (its pid inside) for its life; a second one started beside it exits at once.

Each sample taken while a process holds an NPU of this node (npu-smi's process table, else this container's /proc) is:
- one JSON line in LOG_DIR/npu_samples.<HOST>.jsonl (status.yml reads its last lines), cut to a new file past MAX_BYTES,
  the previous one kept as .1;
- with TENSORBOARD_DIR set (tensorboard is one of the run's loggers), scalars npu/<HOST>/<id>/<name> in an event file of
  TENSORBOARD_DIR/npu/<HOST> (a run of its own beside verl's: TensorBoard follows one growing file per folder), written by
  hand in the format torch.utils.tensorboard's SummaryWriter writes, as an image may lack the tensorboard package. The
  step is the sample's Unix time, the same clock on every node;
- with NPU_SWANLAB_PROJECT set (swanlab is one of the run's loggers; SwanLab's own hardware charts stay empty inside NPU
  containers, SwanLab#1384), the same scalars in SwanLab, in a run of this node's own beside the training's:
  <NPU_SWANLAB_EXPERIMENT>-npu-<HOST> in that project (one SwanLab run per process), opened as verl opens its run, with
  the environment start_verl.sh exported (SWANLAB_MODE, SWANLAB_LOG_DIR, the host, and SWANLAB_API_KEY, given to
  swanlab.login only, never an argument or a line here). SwanLab's own monitor stays off (it would run npu-smi again). A
  failure of the SDK turns the charts off for this sampler's life: one line {"time", "node", "swanlab": why}.
An npu-smi that fails is one line {"time", "node", "error"} (at most one per ERROR_EVERY seconds), never an exit.
Python 3.7+, standard library only.
"""
import fcntl
import json
import os
import re
import shlex
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _npu_smi import NPU_SMI_FALLBACKS, NpuSmiError, checked_output, parse_info  # noqa: E402  # pylint: disable=wrong-import-position

VALUES = "verl_control.env"
PID_FILE = ".npu_sampler.pid"
MAX_BYTES = 8 * 1024 * 1024
ERROR_EVERY = 600
NPU_SMI_SECONDS = 30
# The driver's own copy, where the container gets the driver mounted.
DRIVER_NPU_SMI = "/usr/local/Ascend/driver/tools/npu-smi"
_STOP = []


def read_values(path):
    """verl_control.env's NAME=VALUE lines (shell-quoted values), as a dict; {} when it cannot be read."""
    values = {}
    try:
        with open(path) as handle:
            lines = handle.read().splitlines()
    except OSError:
        return values
    for line in lines:
        name, sep, value = line.partition("=")
        if sep and name.isidentifier():
            try:
                words = shlex.split(value)
            except ValueError:
                continue
            values[name] = words[0] if words else ""
    return values


def seconds_of(values):
    """The interval, 0 (off) when the value is missing or not a whole number."""
    text = values.get("NPU_SAMPLE_SECONDS", "")
    return int(text) if text.isdigit() else 0


def npu_smi(values):
    """The npu-smi to run: NPU_SMI (the host's, mounted at its path), else PATH, else where the driver puts it; None if none."""
    for path in [values.get("NPU_SMI", ""), shutil.which("npu-smi")] + list(NPU_SMI_FALLBACKS) + [DRIVER_NPU_SMI]:
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def chip_entries(info):
    """One entry per chip of parse_info's answer: its id (the NPU id, or NPU-CHIP on a card of several chips), HBM used and
    total (MB), AICore %, and its card's temperature and health; the card's power on its first chip only (so that a sum is
    the node's)."""
    entries = []
    for card in info["npus"]:
        chips = card["chips"] or [{"chip_id": 0}]
        for index, chip in enumerate(chips):
            entry = {"id": str(card["npu_id"]) if len(chips) == 1 else "%d-%d" % (card["npu_id"], chip["chip_id"]),
                     "hbm_used_mb": chip.get("hbm_used_mb"), "hbm_total_mb": chip.get("hbm_total_mb"),
                     "aicore_pct": chip.get("aicore_pct"), "temp_c": card.get("temp_c"), "health": card.get("health")}
            if index == 0:
                entry["power_w"] = card.get("power_w")
            entries.append({key: value for key, value in entry.items() if value is not None})
    return entries


def record(node, now, seconds, info):
    """The JSON line of one sample (status.yml reads it: plugins/module_utils/_npu_telemetry.py)."""
    return {"time": int(now), "node": node, "every": seconds, "processes": len(info["processes"]), "npus": chip_entries(info)}


def scalars(node, entry):
    """TensorBoard's scalars of one chip entry: {tag: value}."""
    prefix = "npu/%s/%s/" % (node, entry["id"])
    out = {}
    if entry.get("hbm_used_mb") is not None:
        out[prefix + "hbm_used_gb"] = entry["hbm_used_mb"] / 1024.0
    for name in ("aicore_pct", "temp_c", "power_w"):
        if entry.get(name) is not None:
            out[prefix + name] = float(entry[name])
    if entry.get("health") is not None:
        out[prefix + "health_ok"] = 1.0 if entry["health"] == "OK" else 0.0
    return out


# --- TensorBoard's event file: TFRecord records (length, masked CRC-32C of the length, data, masked CRC-32C of the data)
# holding tensorflow's Event proto (tensorboard/compat/proto/event.proto: wall_time = 1 double, step = 2 int64,
# file_version = 3 string, summary = 5 Summary{value = 1 Value{tag = 1 string, simple_value = 2 float}}).

def _crc_table():
    table = []
    for byte in range(256):
        crc = byte
        for _bit in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
        table.append(crc)
    return table


_CRC_TABLE = _crc_table()


def crc32c(data):
    """CRC-32C (Castagnoli), which TFRecord framing uses."""
    crc = 0xFFFFFFFF
    for byte in bytearray(data):
        crc = _CRC_TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc(data):
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _varint(number):
    out = bytearray()
    while True:
        low, number = number & 0x7F, number >> 7
        out.append(low | (0x80 if number else 0))
        if not number:
            return bytes(out)


def _field(number, wire, payload):
    """A protobuf field: wire 0 varint (payload an int), 1 fixed64 and 5 fixed32 (bytes), 2 length-delimited (bytes)."""
    key = _varint(number << 3 | wire)
    if wire == 0:
        return key + _varint(payload)
    return key + (_varint(len(payload)) + payload if wire == 2 else payload)


def tfrecord(event):
    length = struct.pack("<Q", len(event))
    return length + struct.pack("<I", masked_crc(length)) + event + struct.pack("<I", masked_crc(event))


def scalars_event(wall, step, values):
    """One Event whose Summary holds a Value per tag (as a merged summary does: one record per sample, not per tag)."""
    summary = b"".join(_field(1, 2, _field(1, 2, tag.encode("utf-8")) + _field(2, 5, struct.pack("<f", value)))
                       for tag, value in sorted(values.items()))
    return _field(1, 1, struct.pack("<d", wall)) + _field(2, 0, int(step)) + _field(5, 2, summary)


class EventFile:
    """One event file in a folder, as SummaryWriter names it (events.out.tfevents.<time>.<host>.<pid>.<suffix>)."""

    def __init__(self, folder, now):
        os.makedirs(folder, exist_ok=True)
        self.folder = folder
        self.path = os.path.join(folder, "events.out.tfevents.%010d.%s.%d.npu" % (now, socket.gethostname(), os.getpid()))
        self.handle = open(self.path, "ab")  # pylint: disable=consider-using-with
        self.handle.write(tfrecord(_field(1, 1, struct.pack("<d", now)) + _field(3, 2, b"brain.Event:2")))
        self.handle.flush()

    def add(self, wall, step, values):
        self.handle.write(tfrecord(scalars_event(wall, step, values)))
        self.handle.flush()

    def close(self):
        self.handle.close()


# --- SwanLab

def _import_swanlab():
    # SwanLab's own hardware monitor would sample the NPUs again, and its pip freeze costs a second of CPU (swanlab 0.10's
    # settings read these; older releases ignore them).
    os.environ.setdefault("SWANLAB_PROBE_MONITOR", "false")
    os.environ.setdefault("SWANLAB_PROBE_REQUIREMENTS", "false")
    import swanlab  # pylint: disable=import-outside-toplevel  # the container's, installed by deploy.yml's SwanLab stage
    return swanlab


class SwanLabCharts:
    """This node's run in SwanLab, opened at its first sample (load: the swanlab module)."""

    def __init__(self, load=_import_swanlab, env=None):
        self.load, self.env = load, os.environ if env is None else env
        self.module, self.run, self.opened, self.off = None, None, None, None

    def add(self, values, node, now, tags):
        """The sample's scalars logged; returns why the charts went off now, else None."""
        want = (values.get("NPU_SWANLAB_PROJECT", ""), values.get("NPU_SWANLAB_EXPERIMENT", ""))
        if not want[0] or not self.env.get("SWANLAB_MODE") or self.off == want:
            return None
        if self.opened != want:
            self.close()
        try:
            if self.run is None:
                self.module = self.load()
                if self.env.get("SWANLAB_API_KEY"):
                    self.module.login(self.env["SWANLAB_API_KEY"])
                self.run = self.module.init(
                    project=want[0], experiment_name="%s-npu-%s" % (want[1], node), config={"node": node, "training": want[1]},
                    description="NPU samples of %s (verl.deploy's npu_sampler.py) for the training %s" % (node, want[1]),
                    logdir=os.path.join(self.env.get("SWANLAB_LOG_DIR") or "swanlog", "npu"), mode=self.env["SWANLAB_MODE"])
                self.opened = want
            self.run.log({re.sub(r"[^0-9A-Za-z _/-]", "_", tag): value for tag, value in tags.items()}, step=int(now))
        except Exception as exc:  # pylint: disable=broad-except  # whatever the SDK raises ends the charts, never the sampler
            self.off = want
            self.close()
            why = "%s: %s" % (type(exc).__name__, exc)
            return why.replace(self.env["SWANLAB_API_KEY"], "***") if self.env.get("SWANLAB_API_KEY") else why
        return None

    def close(self):
        if self.run is not None:
            self.run, self.opened = None, None
            try:
                self.module.finish()
            except Exception:  # pylint: disable=broad-except
                pass


# --- The sampler

def append_line(path, line, max_bytes=MAX_BYTES):
    """line appended to path; past max_bytes the file becomes path.1 (the one before goes) and a new one is begun."""
    try:
        if os.path.getsize(path) + len(line) > max_bytes:
            os.replace(path, path + ".1")
    except OSError:
        pass
    with open(path, "a") as handle:
        handle.write(line)


def raylet_runs(proc="/proc"):
    """Whether a raylet runs in this container (its /proc)."""
    for entry in os.listdir(proc):
        if entry.isdigit():
            try:
                with open(os.path.join(proc, entry, "comm")) as handle:
                    if handle.read().strip() == "raylet":
                        return True
            except OSError:
                continue
    return False


def npus_held(proc="/proc"):
    """Whether a process of this container holds an NPU (/dev/davinciN open), as verl_control.sh npus-look reads it: for an
    npu-smi whose process table does not show the container's processes."""
    for entry in os.listdir(proc):
        if not entry.isdigit():
            continue
        folder = os.path.join(proc, entry, "fd")
        try:
            for fd in os.listdir(folder):
                target = os.readlink(os.path.join(folder, fd))
                if target.startswith("/dev/davinci") and target[len("/dev/davinci"):].isdigit():
                    return True
        except OSError:
            continue
    return False


def read_npus(program):
    """parse_info of one `npu-smi info` (bounded); raises NpuSmiError naming what went wrong."""
    argv = [program, "info"]
    try:
        done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=NPU_SMI_SECONDS, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise NpuSmiError("`%s info` failed: %s" % (program, exc))
    out, err = (stream.decode("utf-8", "replace") for stream in (done.stdout, done.stderr))
    return parse_info(checked_output(argv, done.returncode, out, err))


class Sampler:
    """The loop's state: the event file open, when an error was last written."""

    def __init__(self, proc="/proc", swanlab=None):
        self.proc = proc
        self.events = None
        self.swanlab = swanlab or SwanLabCharts()
        self.last_error = 0

    def sample(self, values, now):
        """One sample: returns what was done ("kept", "idle", "error", "off")."""
        seconds = seconds_of(values)
        node, log_dir = values.get("HOST") or socket.gethostname(), values.get("LOG_DIR", "")
        if not seconds or not log_dir:
            return "off"
        samples = os.path.join(log_dir, "npu_samples.%s.jsonl" % node)
        program = npu_smi(values)
        try:
            if program is None:
                raise NpuSmiError("npu-smi not found in the container (NPU_SMI %r, PATH, %s, %s)" % (
                    values.get("NPU_SMI", ""), ", ".join(NPU_SMI_FALLBACKS), DRIVER_NPU_SMI))
            info = read_npus(program)
        except NpuSmiError as exc:
            if now - self.last_error >= ERROR_EVERY:
                self.last_error = now
                os.makedirs(log_dir, exist_ok=True)
                append_line(samples, json.dumps({"time": int(now), "node": node, "every": seconds, "error": exc.msg}) + "\n")
            return "error"
        if not info["processes"] and not npus_held(self.proc):
            return "idle"
        line = record(node, now, seconds, info)
        os.makedirs(log_dir, exist_ok=True)
        append_line(samples, json.dumps(line, sort_keys=True) + "\n")
        tags = {}
        for entry in line["npus"]:
            tags.update(scalars(node, entry))
        self.tensorboard(values.get("TENSORBOARD_DIR", ""), node, now, tags)
        off = self.swanlab.add(values, node, now, tags)
        if off:
            append_line(samples, json.dumps({"time": int(now), "node": node, "every": seconds, "swanlab": off}) + "\n")
        return "kept"

    def tensorboard(self, root, node, now, tags):
        folder = os.path.join(root, "npu", node) if root else ""
        if self.events is not None and self.events.folder != folder:
            self.events.close()
            self.events = None
        if not folder:
            return
        if self.events is None:
            self.events = EventFile(folder, now)
        self.events.add(now, int(now), tags)


def hold(path):
    """The pid file, flock'd for this process's life; None when another sampler holds it."""
    handle = open(path, "a+")  # pylint: disable=consider-using-with
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        return None
    handle.seek(0)
    handle.truncate()
    handle.write("%d\n" % os.getpid())
    handle.flush()
    return handle


def _on_signal(signum, _frame):
    _STOP.append(signum)


def main(workdir, proc="/proc", clock=time.time, sleep=time.sleep, limit=None):
    """The loop; limit: at most that many samples (tests)."""
    held = hold(os.path.join(workdir, PID_FILE))
    if held is None:
        return 0
    signal.signal(signal.SIGTERM, _on_signal)
    sampler, taken = Sampler(proc), 0
    while not _STOP and (limit is None or taken < limit):
        values = read_values(os.path.join(workdir, VALUES))
        seconds = seconds_of(values)
        if not seconds or not raylet_runs(proc):
            break
        started = clock()
        try:
            sampler.sample(values, started)
        except OSError:
            pass  # a full or unwritable log folder loses this sample, not the sampler
        taken += 1
        left = seconds - (clock() - started)
        while left > 0 and not _STOP and (limit is None or taken < limit):
            sleep(min(left, 1.0))
            left -= 1.0
    if sampler.events is not None:
        sampler.events.close()
    sampler.swanlab.close()
    held.close()
    return 0


if __name__ == "__main__":
    try:  # its process name, by which the container stage's check sees whether a sampler runs (pgrep -x npu_sampler)
        with open("/proc/self/comm", "w") as comm:
            comm.write("npu_sampler")
    except OSError:
        pass
    sys.exit(main(os.path.dirname(os.path.abspath(__file__))))
