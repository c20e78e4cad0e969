"""The identity status.yml, stop.yml and logs.yml check: only what names the deployment, whatever else is wrong."""
from __future__ import annotations

import pytest

from ansible_collections.verl.deploy.plugins.module_utils._launch_config import identity
from helpers.launch_helpers import RULES, SPEC


def test_defaults_name_the_container_and_workdir():
    found, errors, warnings = identity({}, SPEC, RULES)
    assert not errors and not warnings
    assert found == {"container_name": "verl", "workdir": "/verl", "log_dir": "/mnt/project/verl/logs",
                     "host_stage_dir": "/var/lib/verl-deploy", "status_log_lines": 20, "status_stall_seconds": 1800,
                     "status_fail_on": ["crashed", "stalled", "orphaned", "out-of-ray"],
                     "stop_containers": False, "logs_dir": "/tmp/verl_logs", "logs_max_mb": 20, "log_prefix": "verl_",
                     "deploy_lock_timeout": 300, "ray_start_args": [], "ray_temp_dir": "/tmp/ray"}


def test_rays_folder_is_where_the_ray_start_args_move_it():
    """logs.yml collects Ray's logs from <its temporary folder>/session_latest/logs."""
    found, errors, _warnings = identity({"verl_ray_start_args": ["--num-cpus=8", "--temp-dir=/data/ray/"]}, SPEC, RULES)
    assert not errors and found["ray_temp_dir"] == "/data/ray"


def test_the_trainings_inputs_are_not_needed_even_when_wrong():
    found, errors, _warnings = identity({"verl_train_file": "", "verl_model_path": "relative/path", "verl_train_tp": "x",
                                         "verl_swanlab_enabled": True, "verl_container_name": "train-1"}, SPEC, RULES)
    assert not errors and found["container_name"] == "train-1"


@pytest.mark.parametrize("name, value", [
    ("verl_container_name", "bad name;rm"),
    ("verl_workdir", "relative"),
    ("verl_status_log_lines", "many"),
    ("verl_status_stall_seconds", 0),
    ("verl_stop_containers", "perhaps"),
    ("verl_log_dir", "relative/logs"),
    ("verl_logs_dir", "/"),
    ("verl_logs_max_mb", 0),
    ("verl_logs_max_mb", 10 ** 6),
    ("verl_ray_start_args", ["num-cpus=8"]),
])
def test_a_bad_identity_setting_is_named(name, value):
    _found, errors, _warnings = identity({name: value}, SPEC, RULES)
    assert [error["variable"] for error in errors] == [name]


def test_typos_are_warned_about():
    _found, _errors, warnings = identity({"verl_stop_container": True}, SPEC, RULES)
    assert warnings and "Did you mean verl_stop_containers?" in warnings[0]
