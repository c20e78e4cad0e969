# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""A task that uses one filter of the collection pays for that filter only.

To find `verl.deploy.<name>`, ansible-core (2.19) loads every file under plugins/filter/, in the worker process of each
task and host, and its collection loader compiles them from source every time (it keeps no bytecode). So the filter
files import the module_utils they call inside the function that calls them: loading all of them then takes about 15 ms
instead of 80 (which every task that used a filter paid, a fifth of the controller's CPU in a re-run of deploy.yml;
docs/development.md has the figures)."""
from __future__ import annotations

import json
import subprocess
import sys

from conftest import COLLECTIONS

_CHILD = r"""
import json, sys
from ansible.utils.collection_loader._collection_finder import _AnsibleCollectionFinder
_AnsibleCollectionFinder(paths=[sys.argv[1]])._install()
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template
groups = {"all": ["h", "w"], "ungrouped": [], "ray_head": ["h"], "ray_workers": ["w"]}
value = Templar(loader=DataLoader(), variables={"groups": groups}).template(trust_as_template("{{ groups | verl.deploy.ray_head }}"))
prefix = "ansible_collections.verl.deploy.plugins."
print(json.dumps({"value": value, "loaded": sorted(name[len(prefix):] for name in sys.modules if name.startswith(prefix))}))
"""


def test_one_filter_loads_every_filter_file_but_only_its_own_module_utils():
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(COLLECTIONS)], capture_output=True, text=True, timeout=120, check=True)
    result = json.loads(proc.stdout.splitlines()[-1])
    assert result["value"] == "h"
    filters = [name for name in result["loaded"] if name.startswith("filter.")]
    assert len(filters) > 30, result["loaded"]  # Ansible's loader did look through them all
    assert [name for name in result["loaded"] if name.startswith("module_utils.")] == ["module_utils._ray_nodes"], result["loaded"]
