"""Programs live in files, facts in one place: no task embeds a multi-line program, and the training
process (the algorithm table, plugins/module_utils/_algorithms.py) and its log name (the validated
configuration, plugins/module_utils/_launch_config.py, never a role variable that an inventory or -e could
replace) are defined once for every script and task."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
TASK_FILES = sorted([*REPO.glob("roles/*/tasks/*.yml"), *REPO.glob("playbooks/*.yml")])
# Where the collection's behaviour lives (tests, docs and the stand-in image may name the facts too).
PRODUCTION = [path for path in [*REPO.glob("roles/**/*"), *REPO.glob("plugins/**/*.py"), *REPO.glob("playbooks/*.yml")] if path.is_file()]


def _strings(node, key=None):
    """(key, string) for every string in a task tree."""
    if isinstance(node, dict):
        for name, value in node.items():
            yield from _strings(value, name)
    elif isinstance(node, list):
        for value in node:
            yield from _strings(value, key)
    elif isinstance(node, str):
        yield key, node


@pytest.mark.parametrize("path", TASK_FILES, ids=lambda path: str(path.relative_to(REPO)))
def test_no_task_embeds_a_multi_line_program(path):
    programs = [text for key, text in _strings(yaml.safe_load(path.read_text())) if key in ("argv", "cmd", "_raw_params", "shell", "command")
                and "\n" in text.strip()]
    assert not programs, "%s embeds a program; put it in a script or a file of its role:\n%s" % (path, programs[0])


@pytest.mark.parametrize("fact, home", [
    # The entry points live in the algorithm table (with the rest of what each algorithm is).
    ("recipe.dapo.main_dapo", "plugins/module_utils/_algorithms.py"), ("verl.trainer.main_ppo", "plugins/module_utils/_algorithms.py"),
    # The log's name is part of the validated configuration (never a role variable an inventory or -e could replace):
    # the prefix every training log has (the readers' pattern) and the writer's, from the model folder's name.
    ("LOG_PREFIX = ", "plugins/module_utils/_launch_config.py"), ("def log_name_prefix(", "plugins/module_utils/_launch_config.py"),
])
def test_the_training_process_and_its_log_name_are_defined_once(fact, home):
    places = [str(path.relative_to(REPO)) for path in PRODUCTION
              if re.search(re.escape(fact) + r"(?!<)", path.read_text(errors="replace"))]
    assert places == [home], places


def test_the_log_is_named_after_the_model():
    """No production file names one model's log (verl_qwen3_8b_ was the name of every model's log up to 0.x): the writer
    takes training.log_name, the readers training.log_prefix (every log of any model)."""
    fixed = re.compile(r"verl_qwen3_8b_\*|[\"']verl_qwen3_8b_[\"']")
    places = [str(path.relative_to(REPO)) for path in PRODUCTION if fixed.search(path.read_text(errors="replace"))]
    assert places == [], places
    assert "_verl_launch.training.log_name" in (REPO / "roles/training/templates/run_training.sh.j2").read_text()
    from helpers.launch_helpers import launch_ok  # pylint: disable=import-outside-toplevel
    from ansible_collections.verl.deploy.plugins.module_utils._launch_config import LOG_PREFIX  # pylint: disable=import-outside-toplevel
    from ansible_collections.verl.deploy.plugins.module_utils._training_state import control_values  # pylint: disable=import-outside-toplevel
    assert "\nLOG_PREFIX=%s\n" % LOG_PREFIX in control_values(launch_ok())  # what verl_control.sh reads every log by


def test_cann_is_sourced_in_one_place():
    """start_verl.sh (its template reads the file in) and the container stage's check (given it as VERL_CANN_PROGRAM)
    source CANN's environment with the same code: a script is sourced nowhere else (verl_control.sh reads its own values,
    verl_control.env, a file of assignments)."""
    sourcing = re.compile(r"^\s*(source|\.)\s+(?!\./verl_control\.env$)\S", re.MULTILINE)
    places = [str(path.relative_to(REPO)) for path in PRODUCTION if path.suffix in (".sh", ".j2") and sourcing.search(path.read_text())]
    assert places == ["roles/training/files/cann_env.sh"], places
    assert "{{ _training_cann_env }}" in (REPO / "roles/training/templates/start_verl.sh.j2").read_text()
    # deploy.yml hands the file's text to the container stage (a declared input of its argument spec), which runs it.
    assert "roles/training/files/cann_env.sh') }}" in (REPO / "playbooks/deploy.yml").read_text()
    assert "VERL_CANN_PROGRAM: \"{{ _container_cann_program }}\"" in (REPO / "roles/container/tasks/main.yml").read_text()


def test_no_role_reads_another_roles_files():
    """A stage's files are its own: what another stage needs of them, the playbook passes as a declared input."""
    places = [str(path.relative_to(REPO)) for path in REPO.glob("roles/*/tasks/*.yml") if "role_path ~ '/../" in path.read_text()]
    assert places == [], places


def test_three_nodes_moves_rays_folder_on_top_of_the_simulated_clusters_own_ray_arguments():
    """three_nodes' settings.yml replaces verl_ray_start_args as extra vars do: it must be the simulated cluster's list
    (inventories/sim) with --temp-dir added, not a copy that drifts from it."""
    sim = yaml.safe_load((REPO / "inventories/sim/group_vars/ray_cluster.yml").read_text())["verl_ray_start_args"]
    scenario = yaml.safe_load((REPO / "extensions/molecule/three_nodes/settings.yml").read_text())["verl_ray_start_args"]
    assert scenario == sim + ["--temp-dir=/tmp/ray-verl"]
