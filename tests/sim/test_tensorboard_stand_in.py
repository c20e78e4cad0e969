"""The stand-in trainer's TensorBoard logger (tests/sim/stand_in_main_dapo.py) without a cluster: it writes where verl's
_TensorboardAdapter writes (verl/utils/tracking.py, v0.7.0) and the file SummaryWriter writes, read back here by the
TFRecord framing and the Event proto's field numbers (tensorboard/compat/proto/event.proto, summary.proto)."""
from __future__ import annotations

import importlib.util
import struct
from pathlib import Path

from helpers import tfevents

HERE = Path(__file__).resolve().parent
_SPEC = importlib.util.spec_from_file_location("sim_stand_in_trainer", HERE / "stand_in_main_dapo.py")
trainer = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(trainer)


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
    events = [tfevents.fields(record) for record in tfevents.records(files[0].read_bytes())]
    assert events[0][3] == [b"brain.Event:2"]
    scalars = {}
    for event in events[1:]:
        for value in tfevents.fields(event[5][0])[1]:
            value = tfevents.fields(value)
            scalars[(event[2][0], value[1][0].decode())] = struct.unpack("<f", value[2][0])[0]
    assert scalars[(1, "training/global_step")] == 1.0 and scalars[(2, "timing_s/step")] == 2.5
    assert len([key for key in scalars if key[0] == 1]) == len(trainer._metrics(1, 10))


def test_tensorboard_only_when_a_logger(tmp_path, monkeypatch):
    assert trainer._tensorboard({"logger": ["console"]}, {}) is None
    monkeypatch.chdir(tmp_path)
    board = trainer._tensorboard({"logger": ["tensorboard"], "project_name": "p", "experiment_name": "e"}, {})
    board.finish()
    assert list((tmp_path / "tensorboard_log" / "p" / "e").iterdir())  # verl's own default, below the working directory
