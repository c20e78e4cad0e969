"""The container check run in the simulated verl image itself (Docker, no cluster; marked integration: the lead's CI runs it).

The image's real transformers (4.57.1) reads the model's config as verl does, the image's mbridge registers the model's type,
and an image built without its weight bridge (`simcluster.py build --without mbridge`, one layer on the default image) is
refused naming the bridge, the model's type and the fix, while the whole image (the fix) passes. A Qwen3.5 config is refused
with transformers' own words (vllm#36217), checking that the stand-in transformers of tests/test_npu_stack_check.py says what
the real one says. Set VERL_DEPLOY_SKIP_SIM=1 to skip on purpose.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ansible_collections.verl.deploy.plugins.filter.image_stack import image_stack
from ansible_collections.verl.deploy.plugins.module_utils import _versions

sys.path.insert(0, str(Path(__file__).resolve().parent))
import simcluster  # noqa: E402  pylint: disable=wrong-import-position

pytestmark = [pytest.mark.integration]

REPO = simcluster.REPO
CHECK = (REPO / "roles/container/files/npu_stack_check.sh").read_text()
CANN_ENV = (REPO / "roles/training/files/cann_env.sh").read_text()
STACK = (REPO / "roles/container/files/npu_stack.py").read_text()
CAPTURE = REPO / "tests/fixtures/npu-smi/007_info_910B3_8cards_v24.1.rc2_procs_emptyname_mixed.txt"
SCRIPTS = ["/usr/local/Ascend/ascend-toolkit/set_env.sh", "/usr/local/Ascend/nnal/atb/set_env.sh"]


@pytest.fixture(scope="module")
def images():
    if os.environ.get("VERL_DEPLOY_SKIP_SIM") == "1":
        pytest.skip("VERL_DEPLOY_SKIP_SIM=1: the simulated images are skipped on purpose")
    return {"whole": simcluster.build(verbose=False)["verl"],
            "without mbridge": simcluster.build(verbose=False, without=("mbridge",))["verl"]}


def _check(image, folder, config, engine=None):
    """The container stage's check in a container of `image`: npu-smi replaying a capture, 8 NPU device files, the model's
    config.json; its verdict for run_training.sh rendered for verl 0.7.0 (the image's release)."""
    (folder / "bin").mkdir(parents=True, exist_ok=True)
    shutil.copy(CAPTURE, folder / "capture.txt")
    (folder / "bin" / "npu-smi").write_text("#!/bin/sh\ncat /sim/capture.txt\n")
    (folder / "bin" / "npu-smi").chmod(0o755)
    (folder / "dev").mkdir(exist_ok=True)
    for number in range(8):
        (folder / "dev" / ("davinci%d" % number)).touch()
    (folder / "model").mkdir(exist_ok=True)
    (folder / "model" / "config.json").write_text(json.dumps(config))
    env = {"PATH": "/sim/bin:/opt/verl-venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "SIM_DEV_DIR": "/sim/dev",
           "VERL_CANN_PROGRAM": CANN_ENV, "VERL_STACK_PROGRAM": STACK, "VERL_LOOK_DIR": "/verl", "VERL_MODEL_PATH": "/sim/model",
           "VERL_PROBE_MODULES": " ".join(_versions.MODULES), "VERL_PROBE_FORBIDDEN": " ".join(_versions.FORBIDDEN),
           "VERL_PROBE_MARKERS": json.dumps({name: list(probe) for name, probe in _versions.MARKER_PROBES.items()}),
           "VERL_ENTRY_FILE": _versions.entry_point("dapo")["file"],
           "VERL_PROBE_ENGINE": json.dumps(engine or _versions.engine_probe("0.7.0"))}
    argv = ["docker", "run", "--rm", "-v", "%s:/sim" % folder]
    for key, value in env.items():
        argv += ["-e", "%s=%s" % (key, value)]
    proc = subprocess.run(argv + [image, "bash", "-c", CHECK, "npu-stack-check", "8"] + SCRIPTS, capture_output=True, text=True,
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return image_stack(proc.stdout, "dapo", {"profile": "0.7.0", "why": "set by verl_version"})


QWEN3 = json.loads((REPO / "tests/sim/models/Qwen3-8B/config.json").read_text())


def test_an_image_without_its_weight_bridge_is_refused_before_ray_and_the_whole_image_passes(images, tmp_path):
    problems = _check(images["without mbridge"], tmp_path / "broken", QWEN3)["problems"]
    assert problems == [
        "mbridge, the weight bridge verl 0.7.0 builds this model (type `qwen3`) with (verl 0.7.0's default "
        "actor_rollout_ref.actor.megatron.vanilla_mbridge: True), does not import: ModuleNotFoundError: No module named 'mbridge': "
        "verl imports it when the actor starts, after Ray. Fix: use verl's own Ascend image of this release (it installs mbridge), "
        "or install mbridge in the image (pip install mbridge)."]
    verdict = _check(images["whole"], tmp_path / "whole", QWEN3)
    assert verdict["problems"] == [], "the fix: verl's image with mbridge"
    assert ("the model's own path imports: transformers 4.57.1 reads its config (type `qwen3`), mbridge 0.15.1 builds it (verl 0.7.0's "
            "default actor_rollout_ref.actor.megatron.vanilla_mbridge: True).") in verdict["notes"]
    assert verdict["ray"] == {"version": simcluster.RAY_VERSION, "python": verdict["ray"]["python"]}


def test_the_images_real_transformers_refuses_a_model_type_it_does_not_know_in_its_own_words(images, tmp_path):
    config = dict(QWEN3, model_type="qwen3_5")
    problems = _check(images["whole"], tmp_path, config)["problems"]
    assert any(problem.startswith(
        "transformers 4.57.1 cannot read the model's config.json (model type `qwen3_5`): ValueError: The checkpoint you are trying to "
        "load has model type `qwen3_5` but Transformers does not recognize this architecture.") and "(KeyError: 'qwen3_5')" in problem
        for problem in problems), problems


def test_megatron_bridge_chosen_by_a_line_and_missing_is_refused(images, tmp_path):
    engine = _versions.engine_probe("0.7.0", extra_overrides=["actor_rollout_ref.actor.megatron.vanilla_mbridge=False"])
    problems = _check(images["whole"], tmp_path, QWEN3, engine)["problems"]
    assert len(problems) == 1 and "No module named 'megatron.bridge'" in problems[0] and "(verl#6931)" in problems[0], problems
