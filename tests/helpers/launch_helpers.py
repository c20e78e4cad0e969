"""Shared test helpers: build a host's launch configuration, render the real templates, run the scripts.

Rendering uses Ansible's own template engine on the role's real templates, with the configuration
computed by the same code the launch_config module runs; tests/test_render_playbook.py proves the
result is byte-identical to what playbooks/render.yml writes.
"""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from ansible_collections.verl.deploy.plugins.module_utils._launch_config import build
from ansible_collections.verl.deploy.plugins.module_utils._secrets import SECRETS
from ansible_collections.verl.deploy.plugins.module_utils._training_state import CONTROL_VALUES, control_values

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sim"))
import stand_in_packages  # noqa: E402  pylint: disable=wrong-import-position

REPO = Path(__file__).resolve().parents[2]
TEMPLATES = REPO / "roles" / "training" / "templates"
# The training role's vars (the process, the log prefix, the script names). Templated entries are
# passed as templates, as Ansible holds them: they are rendered only when a template reads them (the
# training module follows _verl_launch.algorithm; entries that need a play are never read here).
TRAINING_VARS = {name: trust_as_template(value) if isinstance(value, str) and "{{" in value else value
                 for name, value in yaml.safe_load((REPO / "roles/training/vars/main.yml").read_text()).items()}
# What the role's file lookup reads (tests/test_render_playbook.py compares with what Ansible renders).
TRAINING_VARS["_training_cann_env"] = (REPO / "roles/training/files/cann_env.sh").read_text().rstrip()
# The scripts a node runs: the rendered launch scripts, then the control script, a plain file (files/) whose values are
# verl_control.env beside it.
TEMPLATES_RENDERED = tuple(TRAINING_VARS["_training_templates"])
CONTROL = REPO / "roles" / "training" / "files" / "verl_control.sh"
SCRIPTS = TEMPLATES_RENDERED + (CONTROL.name,)
SPEC = yaml.safe_load((REPO / "roles/verl/meta/argument_specs.yml").read_text())["argument_specs"]["main"]["options"]
RULES = yaml.safe_load((REPO / "roles/verl/meta/setting_rules.yml").read_text())
DEFAULTS = yaml.safe_load((REPO / "roles/verl/defaults/main.yml").read_text())

# The values render.yml is given in the example; paths any test may override.
BASE = {
    "verl_model_path": "/models/Qwen3-8B",
    "verl_train_file": "/data/train.parquet",
    "verl_test_file": "/data/test.parquet",
    "verl_ckpts_dir": "/ckpt",
}
SWANLAB_ON = {
    "verl_swanlab_enabled": True,
    "verl_swanlab_host": "http://192.168.1.100:8000",
}
# Recognisable on purpose: tests grep every output for it.
SECRET_KEY = "sk-TESTKEY-do-not-print-7f3a9c"


def settings(**overrides):
    """The settings of one host: defaults, then BASE, then `overrides` (as the user would state them).
    Defaults that follow another variable (Jinja in defaults/main.yml) are left out: the launch
    configuration derives them from the table's default_from, as Ansible would from the Jinja."""
    values = {k: v for k, v in DEFAULTS.items() if k not in SECRETS and not (isinstance(v, str) and "{{" in v)}
    values.update(BASE)
    values.update(overrides)
    values.pop("mask", None)
    return values


def launch(api_key="", host="node1", is_head=True, nnodes=1, head=None, mask=None, unknown=(), **overrides):
    """(config, errors, warnings) for one host, exactly as the launch_config module computes them."""
    head = head or {"name": host, "ansible_host": "10.0.0.1"}
    return build(settings(**overrides), SPEC, RULES, api_key_set=bool(api_key), host=host, is_head=is_head, nnodes=nnodes,
                 head=head, mask=mask, unknown=unknown)


def launch_ok(**kwargs):
    config, errors, _warnings = launch(**kwargs)
    assert not errors, errors
    return config


def render(config, name, **training_vars):
    """Render roles/training/templates/<name>.j2 for a launch configuration (training_vars: role vars to override)."""
    variables = {"_verl_launch": config, **TRAINING_VARS, **training_vars}
    templar = Templar(loader=DataLoader(), variables=variables)
    source = (TEMPLATES / (name + ".j2")).read_text()
    return templar.template(trust_as_template(source))


def write_scripts(config, folder, lock_folder="", **training_vars):
    """The node's scripts as install.yml installs them: the rendered launch scripts, verl_control.env, verl_control.sh and
    keep-alive's Python."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for name in TEMPLATES_RENDERED:
        path = folder / name
        path.write_text(render(config, name, **training_vars))
        path.chmod(0o755)
    (folder / CONTROL_VALUES).write_text(control_values(config, lock_folder))
    shutil.copy(CONTROL, folder / CONTROL.name)
    for name in ("_failures.py", "_keep_alive.py", "_deploy_lock.py"):  # keep-alive's decision and the lock, beside the script as install.yml puts them
        shutil.copy(REPO / "plugins" / "module_utils" / name, folder / name)
    shutil.copy(CONTROL.parent / "ray_members.py", folder / "ray_members.py")
    return folder


STAND_IN = """#!/bin/sh
# Stand-in for python3: records its working directory and argument list, prints a few log lines.
pwd > "$VERL_TEST_RECORD.cwd"
printf '%s\\0' "$@" > "$VERL_TEST_RECORD.argv"
echo "stand-in trainer: step 1"
echo "stand-in trainer: step 2"
"""


def stand_in_path(folder):
    """A folder holding stand-in `python3` and `python` executables, to put first on PATH."""
    bin_dir = Path(folder) / "stand-in-bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name in ("python3", "python"):
        exe = bin_dir / name
        exe.write_text(STAND_IN)
        exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return bin_dir


# Stand-ins for CANN's environment scripts, in the layout of verl's Ascend images (<root>/ascend-toolkit/set_env.sh,
# <root>/nnal/atb/set_env.sh): each exports what the real one is read for, and reads an unset variable as the real
# ones do (start_verl.sh must source them with -u off).
CANN_SET_ENV = {
    "ascend-toolkit/set_env.sh": ('export ASCEND_TOOLKIT_HOME="$(dirname "${BASH_SOURCE[0]}")/latest"\n'
                                  'export ASCEND_HOME_PATH="${ASCEND_TOOLKIT_HOME}"\n'
                                  'export LD_LIBRARY_PATH="${ASCEND_TOOLKIT_HOME}/lib64:${LD_LIBRARY_PATH}"\n'),
    "nnal/atb/set_env.sh": ('export ATB_HOME_PATH="$(dirname "${BASH_SOURCE[0]}")/latest/atb/cxx_abi_${ATB_ABI_UNSET}1"\n'
                            'export LD_LIBRARY_PATH="${ATB_HOME_PATH}/lib:${LD_LIBRARY_PATH}"\n'),
}
# NNAL's ATB library where its set_env.sh points (tests/sim/stand_in_packages.py's _atb_ops loads it).
ATB_LIBRARY = "nnal/atb/latest/atb/cxx_abi_1/lib/libatb.so"


def cann_stand_in(root):
    """Write the CANN stand-ins under `root`; returns their paths, for verl_ascend_env_scripts."""
    paths = []
    for relative, text in CANN_SET_ENV.items():
        path = Path(root) / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        paths.append(str(path))
    library = Path(root) / ATB_LIBRARY
    library.parent.mkdir(parents=True, exist_ok=True)
    library.write_text(stand_in_packages.ATB_LIBRARY)
    return paths


def run_training(script, bin_dir, record, env=None, timeout=60):
    """Execute run_training.sh with the stand-ins first on PATH. Returns (process, argv, cwd)."""
    environment = {"PATH": "%s:%s" % (bin_dir, os.environ.get("PATH", "/usr/bin:/bin")), "VERL_TEST_RECORD": str(record)}
    environment.update(env or {})
    proc = subprocess.run(["bash", str(script)], env=environment, capture_output=True, text=True, timeout=timeout, check=False)
    argv_file = Path(str(record) + ".argv")
    argv = argv_file.read_text().split("\0")[:-1] if argv_file.exists() else None
    cwd_file = Path(str(record) + ".cwd")
    cwd = cwd_file.read_text().strip() if cwd_file.exists() else None
    return proc, argv, cwd


def all_masks():
    return [format(i, "07b") for i in range(128)]
