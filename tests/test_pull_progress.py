"""roles/container/files/pull_progress.sh: the look at a background docker pull that the pull's wait prints."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

PROBE = Path(__file__).resolve().parent.parent / "roles" / "container" / "files" / "pull_progress.sh"

LOG = """abc: Pulling fs layer
def: Pulling fs layer
123: Already exists
abc: Waiting
def: Downloading
abc: Download complete
abc: Pull complete
"""


def look(tmp_path, log, image_there=False):
    fake = tmp_path / "bin"
    fake.mkdir(exist_ok=True)
    (fake / "docker").write_text("#!/bin/sh\nexit %d\n" % (0 if image_there else 1))
    (fake / "docker").chmod(0o755)
    (tmp_path / "pull.log").write_text(log)
    return subprocess.run(["sh", "-c", PROBE.read_text(), "probe", "registry:5000/verl:1", str(tmp_path / "pull.log")],
                          env=dict(os.environ, PATH="%s:%s" % (fake, os.environ["PATH"])), capture_output=True, text=True, timeout=30,
                          check=False)


@pytest.mark.parametrize("log, rc, out", [
    ("", 3, "0/0 layers"),
    (LOG, 3, "2/3 layers"),
    (LOG + "def: Pull complete\nDigest: sha256:1\n", 3, "3/3 layers"),
])
def test_layers_done_of_all(tmp_path, log, rc, out):
    proc = look(tmp_path, log)
    assert (proc.returncode, proc.stdout.strip()) == (rc, out), proc.stderr


def test_done_when_the_image_is_there(tmp_path):
    proc = look(tmp_path, LOG, image_there=True)
    assert (proc.returncode, proc.stdout.strip()) == (0, "pulled")


def test_an_error_stops_with_the_pull_s_words(tmp_path):
    proc = look(tmp_path, LOG + "Error response from daemon: manifest for registry:5000/verl:1 not found\n")
    assert proc.returncode == 1 and "manifest for registry:5000/verl:1 not found" in proc.stderr
