"""Test-wide setup: make `ansible_collections.verl.deploy` importable from this checkout.

The collection must sit at `<path>/ansible_collections/verl/deploy` for Python (and Ansible) to
import it; ./run.sh setup creates that link, and this does the same when pytest runs alone.
"""
from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
_STARTED = time.time()  # this run's start: only the tables this run wrote are shown
COLLECTIONS = REPO / ".collections"
_LINK = COLLECTIONS / "ansible_collections" / "verl" / "deploy"

if not _LINK.exists():
    _LINK.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(os.path.relpath(REPO, _LINK.parent), _LINK)
# What the first play of every playbook links in (playbooks/preflight.yml), made here once so that
# parallel test workers do not race to create it.
_ADJACENT = REPO / "playbooks" / "collections" / "ansible_collections" / "verl" / "deploy"
if not _ADJACENT.is_symlink():
    try:
        os.symlink(os.path.relpath(REPO, _ADJACENT.parent), _ADJACENT)
    except FileExistsError:
        pass
# The tests read the default callback's whole task stream; ansible.cfg sets the short verl.deploy.report, which a test
# asks for by name where it reads the report (every ansible-playbook and ansible-runner here inherits this).
os.environ["ANSIBLE_STDOUT_CALLBACK"] = "default"
# pgrep and pkill started by a test see this machine's own processes only. The machine's pid namespace holds the simulated
# nodes' containers too, and a host-side verl_control.sh step (stop-training's pkill of the training pattern) once stopped
# the trainings of the clusters running beside the suite (docs/development.md).
_OWN = REPO / ".cache" / "own-processes"
_OWN.mkdir(parents=True, exist_ok=True)
for _name in ("pgrep", "pkill"):
    _real = shutil.which(_name)
    if _real and not _real.startswith(str(_OWN)):
        _text = '#!/bin/sh\nexec %s --ns $$ --nslist pid "$@"\n' % _real
        if not (_OWN / _name).is_file() or (_OWN / _name).read_text() != _text:
            _temporary = _OWN / ("%s.%d" % (_name, os.getpid()))
            _temporary.write_text(_text)
            _temporary.chmod(0o755)
            os.replace(_temporary, _OWN / _name)
if not os.environ.get("PATH", "").startswith(str(_OWN)):
    os.environ["PATH"] = "%s:%s" % (_OWN, os.environ.get("PATH", ""))
if str(COLLECTIONS) not in sys.path:
    sys.path.insert(0, str(COLLECTIONS))


def pytest_collection_modifyitems(items):
    """The simulated cluster's smoke test (tests/sim/test_sim_cluster.py) before the Molecule scenarios, so that on its
    xdist worker it runs before three_nodes, not after: most of its time is waiting on the stand-in trainer's steps, which
    the other tests fill at the start of a run, while at the end only the scenarios are left to fill it (docs/development.md)."""
    smoke = [item for item in items if item.nodeid.startswith("tests/sim/test_sim_cluster.py::")]
    rest = [item for item in items if not item.nodeid.startswith("tests/sim/test_sim_cluster.py::")]
    first = next((index for index, item in enumerate(rest) if item.nodeid.startswith("tests/integration/test_molecule.py::")), None)
    if smoke and first is not None:
        items[:] = rest[:first] + smoke + rest[first:]


def pytest_report_collectionfinish(config, items):
    """With --collect-only, the count of selected tests that need a Docker engine (those marked integration).

    ./run.sh test reads this line to start (or ask for) the engine only when the selection needs it.
    """
    if not config.getoption("collectonly"):
        return []
    needing = sum(1 for item in items if item.get_closest_marker("integration"))
    return "verl-deploy: %d selected test(s) need a Docker engine" % needing


def pytest_terminal_summary(terminalreporter):
    """The Molecule scenarios' times of this run, written by tests/integration/test_molecule.py: each step and the
    verifier's slowest tests (where a scenario's time went)."""
    times = REPO / ".cache" / "scenario-times"
    tables = [path.read_text(encoding="utf-8") for path in sorted(times.glob("*.txt")) if path.stat().st_mtime >= _STARTED]
    if tables:
        terminalreporter.write_sep("=", "the Molecule scenarios' time")
        terminalreporter.write("".join(tables))
