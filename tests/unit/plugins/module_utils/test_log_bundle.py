# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The log bundle's pure parts: the last bytes of a file or stream in bounded memory, and redaction that
leaves no part of a secret, also one the bound cut in half. (The module itself: tests/unit/plugins/modules.)"""
from __future__ import annotations

import io
import json
import tarfile

import pytest

from ansible_collections.verl.deploy.plugins.module_utils import _log_bundle as log_bundle

SECRET = b"sk-0123456789abcdef"


class CountingStream(io.BytesIO):
    """A stream that records the largest read asked of it."""

    def __init__(self, data):
        super().__init__(data)
        self.largest = 0

    def read(self, size=-1):
        self.largest = max(self.largest, size)
        return super().read(size)


@pytest.mark.parametrize(("size", "limit"), [(0, 10), (5, 10), (10, 10), (11, 10), (3 * log_bundle.CHUNK + 7, log_bundle.CHUNK)])
def test_tail_of_stream_keeps_the_last_bytes_and_counts_all(size, limit):
    data = bytes(i % 251 for i in range(size))
    stream = CountingStream(data)
    kept, total = log_bundle.tail_of_stream(stream, limit)
    assert kept == data[-limit:] if size else kept == b""
    assert total == size
    assert stream.largest <= log_bundle.CHUNK  # never the whole stream at once


def test_tail_of_file(tmp_path):
    path = tmp_path / "verl.log"
    path.write_bytes(b"a" * 100 + b"the end\n")
    assert log_bundle.tail_of_file(path, 8) == (b"the end\n", 108)
    assert log_bundle.tail_of_file(path, 1000) == (b"a" * 100 + b"the end\n", 108)


@pytest.mark.parametrize(("data", "truncated", "expected"), [
    (b"key=" + SECRET + b" and " + SECRET, False, b"key=<redacted> and <redacted>"),
    (SECRET[-10:] + b" rest", True, b"<redacted> rest"),      # the bound cut the secret: its tail is a secret too
    (SECRET[-10:] + b" rest", False, SECRET[-10:] + b" rest"),  # not cut: ordinary text that happens to match
    (SECRET[-3:] + b" rest", True, SECRET[-3:] + b" rest"),    # 3 bytes are too few to tell
    (b"nothing secret", True, b"nothing secret"),
])
def test_redact(data, truncated, expected):
    assert log_bundle.redact(data, [SECRET], truncated) == expected


def test_a_bundle_cuts_redacts_and_lists_what_it_holds(tmp_path):
    path = tmp_path / "logs.tar.gz"
    bundle = log_bundle.Bundle(str(path), 1, [SECRET, b"short"], exclude=["*.key"])
    big = b"x" * (1024 * 1024) + SECRET + b"\n"
    bundle.add("head/verl.log", big[-1024 * 1024:], len(big))
    bundle.add("head/verl.log", b"again", 5)
    bundle.miss("head/start_verl.out", "container", "no such file")
    assert bundle.excluded("ray/api.key") and not bundle.excluded("ray/raylet.out")
    bundle.close()
    with tarfile.open(path) as tar:
        names = tar.getnames()
        first = tar.extractfile("head/verl.log").read()
        manifest = json.loads(tar.extractfile("MANIFEST.json").read())
    assert names == ["head/verl.log", "head/verl.log_", "MANIFEST.json"]
    assert first.startswith(b"[verl.deploy log_bundle: the first") and SECRET not in first and first.endswith(b"<redacted>\n")
    assert manifest["files"][0]["truncated"] is True and manifest["files"][1]["truncated"] is False
    assert manifest["missing"] == [{"name": "head/start_verl.out", "source": "container", "reason": "no such file"}]
    assert bundle.secrets == [SECRET]  # "short" would redact ordinary words


@pytest.mark.parametrize(("relative", "patterns", "expected"), [
    ("logs/verl_qwen3_8b_1.log", ["*.log"], True), ("logs/raylet.out", ["*.log"], False), ("anything", [], True)])
def test_wanted(relative, patterns, expected):
    assert log_bundle.wanted(relative, patterns) is expected
