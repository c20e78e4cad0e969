# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: preload
type: aggregate
short_description: Imports this collection's Python once in the controller, before Ansible forks its task workers
version_added: 0.5.0
description:
  - "Ansible runs each task on each host in a worker process forked from the controller's. A worker imports the
    collection's filters, action plugins and module_utils that its task uses, and Ansible's collection loader compiles
    each from its source every time (it keeps no bytecode for a collection): on an unchanged re-run of 3 nodes, 15
    workers compiled the pre-check's rules and 82 one filter, about 0.9 CPU-s of the controller's 10."
  - When the playbook starts, this callback imports them in the controller, so that every worker inherits them.
  - It prints nothing and changes no result. A file that does not import is left to the worker that needs it, which
    reports its error as before.
  - The repository's C(ansible.cfg) enables it (C(callbacks_enabled)), as do the Molecule scenarios' configuration.
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  modules:
    description:
      - More Python modules to import the same way, by their full name, such as the connection plugin of another
        collection that every host is reached through (the simulated cluster's,
        C(ansible_collections.verl_sim.cluster.plugins.connection.node)).
    type: list
    elements: str
    default: []
    env:
      - name: VERL_DEPLOY_PRELOAD_MODULES
    ini:
      - section: callback_verl_preload
        key: modules
requirements:
  - enabled in configuration (C(callbacks_enabled = verl.deploy.preload))
"""

import importlib
import pkgutil

from ansible.plugins.callback import CallbackBase

# What the workers import: the filters and action plugins the roles call, and the module_utils those import.
PACKAGES = ("module_utils", "filter", "action")


def import_collection(prefix="ansible_collections.verl.deploy.plugins."):
    """Import every module of PACKAGES; returns the names of those that did not import (their worker says why)."""
    failed = []
    for kind in PACKAGES:
        try:
            package = importlib.import_module(prefix + kind)
        except Exception:  # pylint: disable=broad-except  # nothing to preload there
            failed.append(prefix + kind)
            continue
        failed += import_modules("%s.%s" % (package.__name__, info.name) for info in pkgutil.iter_modules(package.__path__))
    return failed


def import_modules(names):
    """Import each of `names`; returns those that did not import."""
    failed = []
    for name in names:
        try:
            importlib.import_module(name)
        except Exception:  # pylint: disable=broad-except  # the worker that imports it reports the error
            failed.append(name)
    return failed


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "verl.deploy.preload"
    CALLBACK_NEEDS_ENABLED = True

    def v2_playbook_on_start(self, playbook):
        for name in import_collection() + import_modules(self.get_option("modules") or []):
            self._display.vvvv("verl.deploy.preload: %s did not import here; the worker that needs it will say why" % name)
