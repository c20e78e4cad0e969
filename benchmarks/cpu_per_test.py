"""A pytest plugin that writes each test's wall time and the CPU the whole machine spent meanwhile (so, run one stream
of tests at a time): the busy time of /proc/stat, and of that the part in Docker's containers (cgroup v1 cpuacct of
/docker, which keeps the CPU of containers removed meanwhile). Process accounting (`accton`) is not a substitute: for
the `one_node` scenario it counted 308 CPU-s where /proc/stat showed about 500.

    PYTHONPATH=$PWD/benchmarks PYTEST_ADDOPTS="-p cpu_per_test" .venv/bin/python -m pytest tests/integration -k one_node

Each line of $CPU_PER_TEST_OUT (default /tmp/cpu_per_test.tsv): wall seconds, machine CPU-s, containers' CPU-s, test id.
For a Molecule verifier's own tests, copy this file into extensions/molecule/resources (the verifier's PYTHONPATH);
PYTEST_ADDOPTS reaches the verifier's pytest. Prints nothing and asserts nothing (docs/development.md has the figures).
"""
import os
import time

_HZ = os.sysconf("SC_CLK_TCK")
_OUT = os.environ.get("CPU_PER_TEST_OUT", "/tmp/cpu_per_test.tsv")
_DOCKER_CPUACCT = "/sys/fs/cgroup/cpuacct/docker/cpuacct.usage"
_started = {}


def _cpu():
    """(the machine's busy CPU-s, the containers' CPU-s; 0 without cgroup v1)."""
    with open("/proc/stat", encoding="ascii") as stat:
        ticks = [int(field) for field in stat.readline().split()[1:]]
    try:
        with open(_DOCKER_CPUACCT, encoding="ascii") as usage:
            containers = int(usage.read()) / 1e9
    except OSError:
        containers = 0.0
    return (sum(ticks) - ticks[3] - ticks[4]) / _HZ, containers  # idle and iowait are not busy


def pytest_runtest_logstart(nodeid, location):  # pylint: disable=unused-argument
    _started[nodeid] = (time.monotonic(), _cpu())


def pytest_runtest_logfinish(nodeid, location):  # pylint: disable=unused-argument
    began, (busy, containers) = _started.pop(nodeid, (time.monotonic(), _cpu()))
    now_busy, now_containers = _cpu()
    with open(_OUT, "a", encoding="utf-8") as out:
        out.write("%.1f\t%.1f\t%.1f\t%s\n" % (time.monotonic() - began, now_busy - busy, now_containers - containers, nodeid))
