# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The filters as a playbook calls them: `render` templates Jinja expressions through ansible-core's own
Templar with this checkout installed where Ansible's collection loader finds `verl.deploy`.

In a child process: the loader must be installed before anything imports `ansible_collections`, and the
tests of this process import it as a plain package."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

COLLECTIONS = Path(__file__).resolve().parents[4] / ".collections"

_CHILD = r"""
import json, sys
from ansible.utils.collection_loader._collection_finder import _AnsibleCollectionFinder
_AnsibleCollectionFinder(paths=[sys.argv[1]])._install()
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template
job = json.load(sys.stdin)
templar = Templar(loader=DataLoader(), variables=job["variables"])
print(json.dumps([templar.template(trust_as_template("{{ %s }}" % e)) for e in job["expressions"]]))
"""


@pytest.fixture(scope="session")
def render():
    """render(expressions, **variables): the values of `{{ expression }}` for each expression (JSON types)."""
    def _render(expressions, **variables):
        proc = subprocess.run([sys.executable, "-c", _CHILD, str(COLLECTIONS)], input=json.dumps(
            {"expressions": list(expressions), "variables": variables}), capture_output=True, text=True, timeout=120, check=False)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return json.loads(proc.stdout)
    return _render


@pytest.fixture
def hostvars(tmp_path):
    """hostvars(inventory): Ansible's own HostVars of a YAML inventory (what `hostvars` is in a play: each host's
    view templates on access and keeps the values as given in `_vars`)."""
    from ansible.inventory.manager import InventoryManager  # pylint: disable=import-outside-toplevel
    from ansible.parsing.dataloader import DataLoader  # pylint: disable=import-outside-toplevel
    from ansible.vars.hostvars import HostVars  # pylint: disable=import-outside-toplevel
    from ansible.vars.manager import VariableManager  # pylint: disable=import-outside-toplevel

    def _hostvars(inventory):
        path = tmp_path / "hosts.yml"
        path.write_text(inventory, encoding="utf-8")
        loader = DataLoader()
        hosts = InventoryManager(loader=loader, sources=[str(path)])
        assert hosts.list_hosts("all"), "the test's inventory did not parse:\n" + inventory
        return HostVars(inventory=hosts, variable_manager=VariableManager(loader=loader, inventory=hosts), loader=loader)
    return _hostvars
