"""The stand-in trainer's TensorBoard logger (tests/sim/stand_in_main_dapo.py) without a cluster: it writes where verl's
_TensorboardAdapter writes (verl/utils/tracking.py, v0.7.0) and the file SummaryWriter writes, read back here by the
TFRecord framing and the Event proto's field numbers (tensorboard/compat/proto/event.proto, summary.proto)."""
from __future__ import annotations

import importlib.util
import struct
from pathlib import Path

HERE = Path(__file__).resolve().parent
_SPEC = importlib.util.spec_from_file_location("sim_stand_in_trainer", HERE / "stand_in_main_dapo.py")
trainer = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(trainer)


def _records(data):
    """The TFRecord records of a file, each CRC checked."""
    records, at = [], 0
    while at < len(data):
        length = data[at:at + 8]
        (size,) = struct.unpack("<Q", length)
        assert struct.unpack("<I", data[at + 8:at + 12])[0] == trainer._masked_crc(length)
        body = data[at + 12:at + 12 + size]
        assert struct.unpack("<I", data[at + 12 + size:at + 16 + size])[0] == trainer._masked_crc(body)
        records.append(body)
        at += 16 + size
    return records


def _fields(data):
    """{field number: [values]} of a protobuf message (varint, fixed64, length-delimited, fixed32)."""
    fields, at = {}, 0
    while at < len(data):
        key, at = _read_varint(data, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, at = _read_varint(data, at)
        elif wire == 1:
            value, at = data[at:at + 8], at + 8
        elif wire == 5:
            value, at = data[at:at + 4], at + 4
        else:
            size, at = _read_varint(data, at)
            value, at = data[at:at + size], at + size
        fields.setdefault(number, []).append(value)
    return fields


def _read_varint(data, at):
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, at


def test_crc32c_is_castagnoli():
    assert trainer._crc32c(b"123456789") == 0xE3069283  # the check value of CRC-32C


def test_tensorboard_writes_scalars_where_the_job_environment_says(tmp_path, capsys):
    folder = tmp_path / "logs" / "tensorboard" / "p" / "qwen3-8b-dapo-m0000000-1x8"
    resolved = {"ray_kwargs": {"ray_init": {"runtime_env": {"env_vars": {"TENSORBOARD_DIR": str(folder)}}}}}
    board = trainer._tensorboard({"logger": ["console", "tensorboard"], "project_name": "p", "experiment_name": "e"}, resolved)
    board.log(dict(trainer._metrics(1, 10)), step=1)
    board.log({"timing_s/step": 2.5}, step=2)
    board.finish()
    assert "Saving tensorboard log to %s." % folder in capsys.readouterr().out
    files = list(folder.iterdir())
    assert len(files) == 1 and files[0].name.startswith("events.out.tfevents.")
    events = [_fields(record) for record in _records(files[0].read_bytes())]
    assert events[0][3] == [b"brain.Event:2"]
    scalars = {}
    for event in events[1:]:
        for value in _fields(event[5][0])[1]:
            value = _fields(value)
            scalars[(event[2][0], value[1][0].decode())] = struct.unpack("<f", value[2][0])[0]
    assert scalars[(1, "training/global_step")] == 1.0 and scalars[(2, "timing_s/step")] == 2.5
    assert len([key for key in scalars if key[0] == 1]) == len(trainer._metrics(1, 10))


def test_tensorboard_only_when_a_logger(tmp_path, monkeypatch):
    assert trainer._tensorboard({"logger": ["console"]}, {}) is None
    monkeypatch.chdir(tmp_path)
    board = trainer._tensorboard({"logger": ["tensorboard"], "project_name": "p", "experiment_name": "e"}, {})
    board.finish()
    assert list((tmp_path / "tensorboard_log" / "p" / "e").iterdir())  # verl's own default, below the working directory
