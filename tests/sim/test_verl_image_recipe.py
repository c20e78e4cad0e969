"""The simulated verl image's recipe without Docker (tests/sim/simcluster.py Recipes): an image built without the model's
weight bridge (`build --without mbridge`) holds every stand-in package but mbridge, is one layer on the default image, and
the container check refuses its stack before Ray naming the bridge (tests/test_npu_stack_check.py runs that stack)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import simcluster  # noqa: E402  pylint: disable=wrong-import-position


def test_an_image_without_mbridge_leaves_only_the_bridge_out_and_is_a_layer_of_its_own():
    whole, broken = simcluster.Recipes(), simcluster.Recipes(without=("mbridge",))
    files, left = whole.verl_files(), broken.verl_files()
    assert sorted(name for name in files if name not in left and name != "requirements.txt") == sorted(
        "site/" + name for name in simcluster.stand_in_packages.MBRIDGE), "only mbridge's files are left out"
    assert left["without.txt"] == b"mbridge\n" and left["build.sh"] == simcluster.Recipes.VERL_RELEASE_BUILD.encode()
    assert "requirements.txt" not in left, "one layer on the default image, no venv of its own"
    assert broken.verl().endswith("-v0.7.0-without-mbridge") and broken.verl().split("-")[0] != whole.verl().split("-")[0]


def test_an_unknown_package_to_leave_out_is_refused():
    with pytest.raises(simcluster.SimError, match="can be built without mbridge"):
        simcluster.Recipes(without=("vllm",))
