# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""verl.deploy.preload: the controller imports the collection's Python once, and the task workers it forks compile none of it."""
from __future__ import annotations

import configparser
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import yaml

from ansible_collections.verl.deploy.plugins.callback import preload

REPO = Path(__file__).resolve().parents[4]
PLAYBOOK = str(Path(sys.executable).with_name("ansible-playbook"))

# Loaded in every Python that Ansible starts (PYTHONPATH): each module the collection loader compiles, with the process.
COMPILES = '''
import os


def _log_compiles():
    from ansible.utils.collection_loader import _collection_finder as finder

    original = finder._AnsibleCollectionPkgLoaderBase.get_code

    def get_code(self, fullname):
        if not self._compiled_code:
            with open(os.environ["COMPILED_LOG"], "a", encoding="utf-8") as log:
                log.write("%d %s\\n" % (os.getpid(), fullname))
        return original(self, fullname)

    finder._AnsibleCollectionPkgLoaderBase.get_code = get_code


_log_compiles()
'''


def test_every_module_of_the_collection_imports_here():
    assert preload.import_collection() == []
    for kind in preload.PACKAGES:
        names = {path.stem for path in (REPO / "plugins" / kind).glob("*.py") if path.stem != "__init__"}
        assert names and all("ansible_collections.verl.deploy.plugins.%s.%s" % (kind, name) in sys.modules for name in names), kind


def test_a_module_that_does_not_import_is_named_and_the_others_are_imported(tmp_path, monkeypatch):
    for kind in preload.PACKAGES:
        package = tmp_path / "fake" / kind
        package.mkdir(parents=True)
        (package / "__init__.py").write_text("")
        (package / "good.py").write_text("VALUE = 1\n")
    (tmp_path / "fake" / "__init__.py").write_text("")
    (tmp_path / "fake" / "filter" / "broken.py").write_text("import no_such_module_anywhere\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert preload.import_collection(prefix="fake.") == ["fake.filter.broken"]
    assert all("fake.%s.good" % kind in sys.modules for kind in preload.PACKAGES)


def test_the_repository_and_the_molecule_scenarios_enable_it():
    config = configparser.ConfigParser()
    config.read(REPO / "ansible.cfg")
    assert "verl.deploy.preload" in config["defaults"]["callbacks_enabled"].split(",")
    molecule = yaml.safe_load((REPO / "extensions" / "molecule" / "config.yml").read_text())
    assert "verl.deploy.preload" in molecule["provisioner"]["config_options"]["defaults"]["callbacks_enabled"].split(",")


def _compiled_in_workers(tmp_path, callbacks):
    """What the task workers of a playbook using the collection's filters compiled of the collection."""
    (tmp_path / "site").mkdir(exist_ok=True)
    (tmp_path / "site" / "sitecustomize.py").write_text(COMPILES)
    log = tmp_path / ("compiled-%s.log" % (callbacks or "none"))
    playbook = tmp_path / "play.yml"
    playbook.write_text(textwrap.dedent("""\
        - hosts: localhost
          gather_facts: false
          tasks:
            - name: Two filters, one whose module_utils import the pre-check's rules
              ansible.builtin.debug:
                msg: "{{ {} | verl.deploy.precheck_report }} {{ 'true' | verl.deploy.setting_bool }}"
        """))
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "site"), COMPILED_LOG=str(log), ANSIBLE_STDOUT_CALLBACK="default")
    if callbacks:
        env["ANSIBLE_CALLBACKS_ENABLED"] = callbacks
    else:
        env["ANSIBLE_CONFIG"] = str(tmp_path / "ansible.cfg")  # the repository's, without callbacks_enabled
        (tmp_path / "ansible.cfg").write_text("".join(line for line in (REPO / "ansible.cfg").read_text().splitlines(True)
                                                      if not line.startswith("callbacks_enabled")).replace("./", str(REPO) + "/"))
    with subprocess.Popen([PLAYBOOK, str(playbook)], cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:
        output = proc.communicate(timeout=120)[0]
    assert proc.returncode == 0, output
    lines = [line.split(" ", 1) for line in log.read_text().splitlines()] if log.exists() else []
    return {name for pid, name in lines if int(pid) != proc.pid and name.startswith("ansible_collections.verl.deploy.")}


def test_the_workers_compile_none_of_the_collection_when_the_controller_preloaded_it(tmp_path):
    assert "ansible_collections.verl.deploy.plugins.module_utils._precheck" in _compiled_in_workers(tmp_path, None)
    assert _compiled_in_workers(tmp_path, "verl.deploy.preload") == set()
