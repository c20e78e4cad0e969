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
import threading
import time
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
SCENARIOS = REPO / "extensions" / "molecule"
MOLECULE = str(Path(sys.executable).with_name("molecule"))
NAMES = ("one_node", "three_nodes", "failures")
# Two streams of simulated clusters, each on one xdist worker (the sim smoke test joins the first, before three_nodes:
# tests/sim, tests/conftest.py; one_node then failures took 1,650 s of CI against three_nodes' 1,530).
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
    # DOCKER_TIMEOUT: Molecule's own create and destroy (community.docker, 60 s by default) wait longer for the engine,
    # which took over a minute to remove a node's container while the other scenario ran (a fresh-clone run, 2026-12-05).
    return dict(os.environ, NO_COLOR="1", ANSIBLE_NOCOLOR="1", PY_COLORS="0", DOCKER_TIMEOUT="300", **simcluster().scenario_env())


@pytest.fixture
def scenario_nodes_to_itself(scenario):
    lock_path = REPO / ".cache" / "sim" / ("molecule-%s.lock" % scenario)
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


# Where each scenario's time went (Molecule's steps, the verifier's slowest tests), read by tests/conftest.py's
# summary at the end of the run: the figures that say which deploy to make cheaper.
TIMES = REPO / ".cache" / "scenario-times"
_STEP = re.compile(r"\b(dependency|cleanup|destroy|syntax|create|prepare|converge|idempotence|side_effect|verify)\b.*\bExecuting\b")


def run_timed(argv, env, timeout):
    """(returncode, output, [(step, seconds)]) of a `molecule test`: each step timed from its "Executing" line to the next."""
    started, lines, steps = time.monotonic(), [], []
    with subprocess.Popen(argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        try:
            for line in proc.stdout:
                lines.append(line)
                match = _STEP.search(line)
                if match and not (steps and steps[-1][0] == match.group(1)):  # a step may say "Executing" twice
                    steps.append([match.group(1), time.monotonic()])
        finally:
            timer.cancel()
        returncode = proc.wait()
    ends = [at for _step, at in steps[1:]] + [time.monotonic()]
    return returncode, "".join(lines), [(step, end - at) for (step, at), end in zip(steps, ends)] or [("all", time.monotonic() - started)]


def times_table(scenario, steps, output):
    """The scenario's steps with their seconds, then the verifier's slowest tests (pytest's --durations table)."""
    table = ["%s: %.0f s: %s" % (scenario, sum(seconds for _step, seconds in steps), ", ".join("%s %.0f s" % step for step in steps))]
    durations = re.search(r"=+ slowest \d+ durations =+\n(.*?)(?:\n\n|\n=|\Z)", output, re.DOTALL)
    if durations:
        table += ["    " + line.strip() for line in durations.group(1).splitlines() if line.strip()]
    return "\n".join(table) + "\n"


def test_the_times_table_reads_molecule_steps_and_the_verifiers_durations():
    output = ("INFO     one_node ➜ create: Executing\n...\n" + "=" * 10 + " slowest 2 durations " + "=" * 10 + "\n"
              "301.20s call     tests/test_2_restart.py::test_restart\n12.00s call     tests/test_1.py::test_x\n\n1 passed\n")
    assert _STEP.search(output.splitlines()[0]).group(1) == "create"
    assert times_table("one_node", [("create", 30.4), ("verify", 400.0)], output) == (
        "one_node: 430 s: create 30 s, verify 400 s\n"
        "    301.20s call     tests/test_2_restart.py::test_restart\n    12.00s call     tests/test_1.py::test_x\n")


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
        returncode, output, steps = run_timed(argv, scenario_env, timeout=3600)
    finally:
        simcluster().prune_cgroups()  # what the destroyed nodes' containers left (cgroup v1)
    TIMES.mkdir(parents=True, exist_ok=True)
    (TIMES / ("%s.txt" % scenario)).write_text(times_table(scenario, steps, output), encoding="utf-8")
    assert returncode == 0, "molecule test -s %s failed (rc %d).\n%s" % (scenario, returncode, failure_report(output))
    if scenario == "one_node":
        key = yaml.safe_load((SCENARIOS / scenario / "settings.yml").read_text())["verl_swanlab_api_key"]
        assert "ESTABLISH DOCKER CONNECTION" in output, "the one_node deploys must run at -vvv"
        assert key not in output, "the SwanLab key is in the output of molecule test -s one_node"
