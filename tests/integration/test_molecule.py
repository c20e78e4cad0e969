"""The Molecule scenarios (extensions/molecule), each a full `molecule test` on simulated Ascend nodes.

one_node     head only, local image, mask features, SwanLab offline from a wheelhouse, the key
             nowhere (its deploys run at -vvv; the whole output is grepped here), verl_restart,
             then AWX jobs through ansible-runner (no confirmation, an unanswered question, stop + deploy)
three_nodes  head + 2 workers, image pulled from a registry: Ray 3 nodes / 24 NPU, training on the
             head only, scripts differ only where they must, re-run changes nothing, status, stop
failures     busy worker, unreachable worker, worker whose Ray never joins: each fails in time, named

Each scenario has nodes and a network of its own. Under pytest-xdist (`--dist loadgroup`, as ./run.sh test runs)
three_nodes, the longest, runs on a worker of its own beside one_node then failures (SCENARIO_GROUPS): one after the
other the three were most of CI's time; all three at once overloaded the 2-core machine (Ray's "The current node
timed out during startup"). A file lock per scenario keeps two runs of the same scenario (two suites in one checkout)
from sharing its nodes. Set
VERL_MOLECULE_KEEP=1 to keep the nodes of a failed scenario for a look (molecule login -s <scenario> --host <node>).
"""
from __future__ import annotations

import fcntl
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
SCENARIOS = REPO / "extensions" / "molecule"
MOLECULE = str(Path(sys.executable).with_name("molecule"))
NAMES = ("one_node", "three_nodes", "failures")
# Two streams of simulated clusters, each on one xdist worker (the sim smoke test joins the first: tests/sim; one_node then
# failures took 1,650 s of CI against three_nodes' 1,530).
SCENARIO_GROUPS = {"three_nodes": "verl-sim-long", "one_node": "verl-sim-short", "failures": "verl-sim-short"}

pytestmark = pytest.mark.integration


def simcluster():
    sys.path.insert(0, str(REPO / "tests" / "sim"))
    try:
        import simcluster as module  # pylint: disable=import-outside-toplevel
    finally:
        sys.path.remove(str(REPO / "tests" / "sim"))
    return module


@pytest.fixture(scope="module")
def scenario_env():
    """Builds (or reuses) the simulated cluster's images; the environment the scenarios read."""
    simcluster().build(verbose=False, verl="all")
    return dict(os.environ, NO_COLOR="1", ANSIBLE_NOCOLOR="1", PY_COLORS="0", **simcluster().scenario_env())


@pytest.fixture
def scenario_nodes_to_itself(scenario):
    lock_path = REPO / ".cache" / "sim" / ("molecule-%s.lock" % scenario)
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def failure_report(output, limit=12000):
    """What failed first: the verifier's pytest failures (each test with its assertion) or the first
    failed Ansible task, then the end of the output (which is Molecule's destroy)."""
    report = []
    failures = output.find("= FAILURES =")
    if failures != -1:
        summary = output.find("short test summary info", failures)
        end = output.find("\n", summary + 200) if summary != -1 else failures + limit
        report.append("The verifier's failures:\n" + output[output.rfind("\n", 0, failures) + 1:end][:limit])
    else:
        fatal = re.search(r"^(fatal|failed): \[.*$", output, re.MULTILINE)
        if fatal:
            task = output.rfind("TASK [", 0, fatal.start())
            report.append("The first failed task:\n" + output[max(task, 0):fatal.start() + 4000])
    report.append("The end of the output:\n" + output[-4000:])
    return "\n\n".join(report)


def test_failure_report_leads_with_the_failing_assertion():
    verifier = ("INFO Running verify\n" + "=" * 20 + " FAILURES " + "=" * 20 + "\n____ test_x ____\n>   assert 1 == 2\nE   AssertionError\n"
                + "=" * 10 + " short test summary info " + "=" * 10 + "\nFAILED test_x.py::test_x - AssertionError\n"
                + "1 failed\nINFO Running destroy\n" + "destroy output\n" * 2000)
    report = failure_report(verifier)
    assert report.index("assert 1 == 2") < report.index("destroy output")
    assert "FAILED test_x.py::test_x" in report
    converge = "TASK [deploy : Start Ray] ***\nfatal: [node2]: FAILED! => ray did not join\n" + "PLAY RECAP\n" * 10
    assert report_starts_with_task(failure_report(converge))


def report_starts_with_task(report):
    return report.startswith("The first failed task:\nTASK [deploy : Start Ray]") and "ray did not join" in report


def test_this_file_runs_every_scenario():
    assert sorted(path.parent.name for path in SCENARIOS.glob("*/molecule.yml")) == sorted(NAMES)


@pytest.mark.parametrize("scenario", [pytest.param(name, marks=pytest.mark.xdist_group(SCENARIO_GROUPS[name])) for name in NAMES])
def test_molecule_scenario(scenario, scenario_env, scenario_nodes_to_itself):
    argv = [MOLECULE, "test", "-s", scenario]
    if os.environ.get("VERL_MOLECULE_KEEP"):
        argv += ["--destroy", "never"]
    try:
        proc = subprocess.run(argv, cwd=REPO, env=scenario_env, capture_output=True, text=True, timeout=3600, check=False)
    finally:
        simcluster().prune_cgroups()  # what the destroyed nodes' containers left (cgroup v1)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, "molecule test -s %s failed (rc %d).\n%s" % (scenario, proc.returncode, failure_report(output))
    if scenario == "one_node":
        key = yaml.safe_load((SCENARIOS / scenario / "settings.yml").read_text())["verl_swanlab_api_key"]
        assert "ESTABLISH DOCKER CONNECTION" in output, "the one_node deploys must run at -vvv"
        assert key not in output, "the SwanLab key is in the output of molecule test -s one_node"
