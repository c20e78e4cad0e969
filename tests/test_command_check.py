"""The install step's check of the training command (roles/training/files/install_files.sh, run_training.sh --cfg-job,
_versions.command_check), run for real: install_files.sh with a stand-in `docker` whose container is this machine (exec
runs the command here, cp copies), run_training.sh rendered for a profile, and a verl checkout whose entry modules are
Hydra's own @hydra.main over the profile's real config tree (its wheel, tests/helpers/hydra_schema.py) or verl-recipe's
first import at a commit that does not fit its verl (tests/sim/stand_in_recipe.py). Hydra and Python answer with their
own lines; the deploy's verdict quotes them, and each suggested fix applied makes the refusal go away.
"""
from __future__ import annotations

import base64
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ansible_collections.verl.deploy.plugins.module_utils import _versions
from ansible_collections.verl.deploy.plugins.module_utils._control_step import read_answer
from helpers.hydra_schema import verl_config_dir
from helpers.launch_helpers import launch_ok, render

REPO = Path(__file__).resolve().parent.parent
INSTALL = REPO / "roles" / "training" / "files" / "install_files.sh"
CANN_ENV = REPO / "roles" / "training" / "files" / "cann_env.sh"

# `docker exec [-e NAME]... CONTAINER ARGV...` runs ARGV here (the environment is this one); `docker cp SRC C:DEST`.
DOCKER = """#!/bin/bash
echo "$*" >>"${DOCKER_LOG}"
case "$1" in
exec) shift; while [ "$1" = -e ]; do shift 2; done; shift; exec "$@" ;;
cp) exec cp "$2" "${3#*:}" ;;
esac
exit 1
"""
# What verl's entry modules do first: @hydra.main with config_path "config", beside the file (a link to the tree).
HYDRA_ENTRY = """import hydra


@hydra.main(config_path="config", config_name=None, version_base=None)
def main(config):
    raise SystemExit("the task ran: --cfg job must not run it")


main()
"""
# verl-recipe's dapo/main_dapo.py at a commit of 2026-06-16 on, in a 0.7.x/0.8.x checkout (tests/sim/stand_in_recipe.py).
BROKEN_RECIPE = "from verl.trainer.main_ppo_v0 import TaskRunner  # noqa: F401\n"


def checkout(folder, profile, recipe=HYDRA_ENTRY):
    """A verl checkout at `folder` whose main_ppo (and recipe/dapo/main_dapo) compose against the profile's config tree."""
    for module, text in (("verl/trainer/main_ppo", HYDRA_ENTRY), ("recipe/dapo/main_dapo", recipe)):
        path = folder / (module + ".py")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        link = path.parent / "config"
        if not link.exists():
            link.symlink_to(verl_config_dir(profile))
    return folder


def install(tmp_path, settings, head=True):
    """Render run_training.sh with `settings`, run install_files.sh as install.yml does; (answer, verdict, config)."""
    workdir = tmp_path / "verl"
    config = launch_ok(verl_workdir=str(workdir), verl_log_dir=str(tmp_path / "logs"), verl_experiment_name="check", **settings)
    text = render(config, "run_training.sh")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "docker").write_text(DOCKER)
    (bin_dir / "docker").chmod(0o755)
    (bin_dir / "python3").write_text('#!/bin/sh\nexec %s "$@"\n' % sys.executable)  # this Python, with Hydra
    (bin_dir / "python3").chmod(0o755)
    env = {"PATH": "%s:%s" % (bin_dir, os.environ["PATH"]), "DOCKER_LOG": str(tmp_path / "docker.log"),
           "VERL_CANN_PROGRAM": CANN_ENV.read_text(), "HOME": str(tmp_path)}
    argv = ["sh", "-c", INSTALL.read_text(), "install", str(tmp_path / "stage"), "container", str(workdir)]
    if head:
        argv += ["60", "/usr/local/Ascend/ascend-toolkit/set_env.sh"]
    stdin = "755 run_training.sh %s\n644 launch.json %s\n" % (base64.b64encode(text.encode()).decode(),
                                                              base64.b64encode(b"{}\n").decode())
    proc = subprocess.run(argv, input=stdin, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    verdict = _versions.command_check(read_answer(proc.stdout)["answer"], config["verl_profile"]["profile"], config["training"]["module"],
                                      str(workdir), config["extra_overrides"], None, 60)
    return proc.stdout, verdict, config


def installed(tmp_path):
    return sorted(path.name for path in (tmp_path / "verl").iterdir() if path.is_file())


def test_a_schema_that_refuses_a_rendered_line_stops_the_install_and_the_named_fix_passes(tmp_path):
    """A verl whose schema is 0.9.1's while the command is rendered for 0.9.0 (a dev commit between them, or a wrong
    verl_version with an untested version): Hydra's own refusal of grad_offload; verl_version=0.9.1 renders what it reads."""
    checkout(tmp_path / "verl", "0.9.1")
    answer, verdict, _config = install(tmp_path, {"verl_version": "0.9.0", "verl_algorithm": "grpo"})
    assert read_answer(answer)["answer"]["command_check_rc"] == "1"
    assert "Could not override 'actor_rollout_ref.actor.megatron.grad_offload'. / Key 'grad_offload' is not in struct" in verdict["problem"]
    assert "profile 0.9.0" in verdict["problem"] and "set verl_version" in verdict["problem"]
    assert installed(tmp_path) == []  # nothing installed: a re-run looks, differs and checks again
    answer, verdict, _config = install(tmp_path, {"verl_version": "0.9.1", "verl_algorithm": "grpo"})
    assert verdict == {"checked": True, "problem": None, "note": verdict["note"]} and "composed" in verdict["note"]
    assert installed(tmp_path) == ["launch.json", "run_training.sh"]
    assert "installed %s/run_training.sh" % (tmp_path / "verl") in read_answer(answer)["said"]
    assert read_answer(answer)["answer"] == {"command_check_rc": "0", "command_check_tail": read_answer(answer)["answer"]["command_check_tail"],
                                             "changed": "true"}


def test_a_recipe_that_does_not_import_is_refused_with_pythons_line_and_verls_own_recipe_passes(tmp_path):
    checkout(tmp_path / "verl", "0.7.0", recipe=BROKEN_RECIPE)
    _answer, verdict, _config = install(tmp_path, {"verl_algorithm": "dapo"})
    assert "ModuleNotFoundError: No module named 'verl.trainer.main_ppo_v0'" in verdict["problem"]
    assert "python3 -m recipe.dapo.main_dapo" in verdict["problem"] and "verl profile 0.7.0" in verdict["problem"]
    assert installed(tmp_path) == []
    checkout(tmp_path / "verl", "0.7.0")  # the fix: a checkout whose recipe/ is its verl's own (verl's 0.7.0 image)
    _answer, verdict, _config = install(tmp_path, {"verl_algorithm": "dapo"})
    assert verdict["problem"] is None and verdict["checked"]


def test_a_users_extra_override_that_the_schema_lacks_is_named_and_removing_it_passes(tmp_path):
    checkout(tmp_path / "verl", "0.7.1")
    settings = {"verl_version": "0.7.1", "verl_algorithm": "dapo"}
    _answer, verdict, _config = install(tmp_path, dict(settings, verl_extra_overrides=["actor_rollout_ref.rollout.n_vote=64"]))
    assert "Could not override 'actor_rollout_ref.rollout.n_vote'. / Key 'n_vote' is not in struct" in verdict["problem"]
    assert "correct or remove actor_rollout_ref.rollout.n_vote=64 in verl_extra_overrides" in verdict["problem"]
    _answer, verdict, _config = install(tmp_path, settings)
    assert verdict["problem"] is None and verdict["checked"]


@pytest.mark.parametrize("head", [True, False], ids=["head-without-the-script", "worker"])
def test_no_check_where_the_command_is_not_installed_or_not_run(tmp_path, head):
    """A worker never runs the command; an install of launch.json alone (run_training.sh unchanged) checks nothing."""
    checkout(tmp_path / "verl", "0.7.0", recipe=BROKEN_RECIPE)
    if head:
        workdir = tmp_path / "verl"
        env = {"PATH": "%s:%s" % (tmp_path / "bin", os.environ["PATH"]), "DOCKER_LOG": str(tmp_path / "docker.log")}
        (tmp_path / "bin").mkdir()
        (tmp_path / "bin" / "docker").write_text(DOCKER)
        (tmp_path / "bin" / "docker").chmod(0o755)
        proc = subprocess.run(["sh", "-c", INSTALL.read_text(), "install", str(tmp_path / "stage"), "container", str(workdir), "60"],
                              input="644 launch.json %s\n" % base64.b64encode(b"{}\n").decode(), env=env, capture_output=True,
                              text=True, timeout=60, check=False)
        answer = proc.stdout
        assert proc.returncode == 0, proc.stderr
    else:
        answer, _verdict, _config = install(tmp_path, {"verl_algorithm": "dapo"}, head=False)
    assert read_answer(answer)["read"] and "command_check_rc" not in read_answer(answer)["answer"]
    assert _versions.command_check(read_answer(answer)["answer"], "0.7.0", "recipe.dapo.main_dapo")["checked"] is False
    assert "launch.json" in installed(tmp_path)
