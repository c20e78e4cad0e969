"""run.sh's prerequisites: what a job provides on a fresh machine, and what it asks for where it cannot.

Each test runs the real run.sh on a machine put together on PATH: stand-ins only for the system
commands whose effect must not happen here (apt-get, dockerd, docker, id), the real bash, coreutils
and Python otherwise. The stand-in docker answers `info` only once the stand-in dockerd has run; the
stand-in apt-get "installs" a package by putting its commands on that PATH. The shared Docker engine
of this machine is never stopped or started.
"""
from __future__ import annotations

import contextlib
import os
import re
import signal
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# The Python the pinned tooling runs on, as run.sh names it (its Debian packages: python<v>, python<v>-venv).
PY = re.search(r'^PYTHON_VERSION="([0-9.]+)"$', (REPO / "run.sh").read_text(), re.M).group(1)
BASH = os.path.realpath(shutil.which("bash"))
PYTHON = os.path.realpath(sys.executable)
NO_ENGINE = "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?"
DENIED = "permission denied while trying to connect to the Docker daemon socket at unix:///var/run/docker.sock"
# The real tools run.sh uses on its set-up path (setup and `test` add the ones after "sleep").
REAL_TOOLS = ("bash", "dirname", "setsid", "timeout", "tail", "sleep", "cat", "sha256sum", "cut", "mkdir", "ln", "readlink", "date")
CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")


class Machine:
    """A PATH with stand-ins, the calls they saw, and run.sh run on it."""

    def __init__(self, tmp_path: Path, uid: int):
        self.root = tmp_path
        self.bin = tmp_path / "bin"
        self.state = tmp_path / "state"
        self.packages = tmp_path / "packages"
        self.calls = tmp_path / "calls.log"
        for folder in (self.bin, self.state, self.packages):
            folder.mkdir()
        self.calls.write_text("")
        for tool in REAL_TOOLS:
            (self.bin / tool).symlink_to(os.path.realpath(shutil.which(tool)))
        self.stub("id", 'echo %d' % uid)
        self.env = {"PATH": str(self.bin), "HOME": str(tmp_path), "TMPDIR": str(tmp_path), "LANG": "C.UTF-8",
                    "VERL_DEPLOY_SBIN_DIRS": "", "VERL_DEPLOY_DOCKERD_WAIT": "3"}

    def stub(self, name, body, folder=None):
        path = (folder or self.bin) / name
        path.write_text('#!/bin/sh\necho "%s $*" >> %s\n%s\n' % (name, self.calls, body))
        path.chmod(0o755)
        return path

    def docker_cli(self, folder=None):
        self.stub("docker", """case "$1" in
info) if [ -e {s}/engine-up ]; then echo 20.10.24; exit 0; fi
      if [ -e {s}/denied ]; then echo '{denied}' >&2; exit 1; fi
      echo '{down}' >&2; exit 1 ;;
esac""".format(s=self.state, denied=DENIED, down=NO_ENGINE), folder)

    def dockerd(self, behaviour="starts", folder=None):
        body = {"starts": ": > %s/engine-up" % self.state,
                "fails": "echo 'failed to start daemon: Error initializing network controller: iptables not found' >&2; exit 1",
                "hangs": "echo $$ > %s/dockerd.pid; exec sleep 30" % self.state}[behaviour]
        self.stub("dockerd", body, folder)

    def python(self, folder=None):
        (folder or self.bin).joinpath("python%s" % PY).symlink_to(PYTHON)

    def tool(self, name, folder=None):
        self.stub(name, "exit 0", folder)

    def apt_get(self):
        """A stand-in apt-get whose `install` puts each package's commands (packages/<name>/) on PATH."""
        offers = {"docker.io": lambda folder: (self.docker_cli(folder), self.dockerd("starts", folder)),
                  "python%s" % PY: self.python, "python%s-venv" % PY: None, "ca-certificates": None,
                  "git": lambda folder: self.tool("git", folder), "iptables": lambda folder: self.tool("iptables", folder),
                  "debootstrap": lambda folder: self.tool("debootstrap", folder)}
        for package, provide in offers.items():
            (self.packages / package).mkdir()
            if provide:
                provide(self.packages / package)
        self.stub("apt-get", """[ "$1" = install ] || exit 0
for arg in "$@"; do
  case "$arg" in -*|install) ;; *) /bin/cp -P {p}/"$arg"/* {b}/ 2>/dev/null || true ;; esac
done""".format(p=self.packages, b=self.bin))

    def run(self, *args, env=None, script="run.sh"):
        started = time.monotonic()
        proc = subprocess.run([BASH, str(REPO / script), *args], env=dict(self.env, **(env or {})), cwd=self.root,
                              capture_output=True, text=True, timeout=120, check=False)
        proc.seconds = time.monotonic() - started
        return proc

    def called(self, name):
        return [line for line in self.calls.read_text().splitlines() if line.split(" ", 1)[0] == name]


@pytest.fixture
def user(tmp_path):
    return Machine(tmp_path, uid=1000)


@pytest.fixture
def root(tmp_path):
    machine = Machine(tmp_path, uid=0)
    yield machine
    pid_file = machine.state / "dockerd.pid"
    if pid_file.exists():  # the stand-in dockerd that never answers: end it while it is still ours (a pid is reused)
        pid = int(pid_file.read_text())
        with contextlib.suppress(OSError):
            if Path("/proc/%d/cmdline" % pid).read_bytes() == b"sleep\x0030\x00":
                os.kill(pid, signal.SIGTERM)


def test_as_a_user_it_stops_at_once_with_the_commands_to_run(user):
    user.python()
    user.tool("git")
    user.docker_cli()
    user.apt_get()
    proc = user.run("prereqs")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stderr.splitlines() == [
        "run.sh prereqs: this machine lacks what the job needs. Run, then try again:",
        "  - install the missing packages: sudo apt-get update && sudo apt-get install -y docker.io iptables debootstrap",
        "  - start the Docker engine: sudo systemctl start docker, or without a service manager: "
        "sudo sh -c 'dockerd > /tmp/dockerd.log 2>&1 &' (then `docker info` answers)",
    ]
    assert user.called("apt-get") == [] and user.called("dockerd") == []
    assert proc.seconds < 10


def test_as_a_user_with_docker_installed_it_asks_only_to_start_the_engine(user):
    user.python()
    user.tool("git")
    user.tool("debootstrap")
    user.tool("iptables")
    user.docker_cli()
    user.dockerd()
    proc = user.run("prereqs")
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[1:] == [
        "  - start the Docker engine: sudo systemctl start docker, or without a service manager: "
        "sudo sh -c 'dockerd > /tmp/dockerd.log 2>&1 &' (then `docker info` answers)"]
    assert user.called("dockerd") == []


def test_an_engine_that_refuses_the_user_names_the_docker_group(user):
    user.python()
    user.tool("git")
    user.tool("debootstrap")
    user.docker_cli()
    (user.state / "denied").write_text("")
    proc = user.run("prereqs")
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[1:] == [
        '  - the Docker engine runs but refuses you: sudo usermod -aG docker "${USER}", then log in again']


def test_as_a_user_without_python_311_it_names_the_packages(user):
    user.tool("git")
    user.apt_get()
    proc = user.run("setup")
    assert proc.returncode == 1
    ca_certificates = "" if CA_BUNDLE.exists() else " ca-certificates"
    assert proc.stderr.splitlines()[1:] == [
        "  - install the missing packages: sudo apt-get update && sudo apt-get install -y python%s python%s-venv" % (PY, PY)
        + ca_certificates]


def test_as_root_on_debian_it_installs_once_and_starts_dockerd(root):
    root.apt_get()
    proc = root.run("prereqs")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ca_certificates = [] if CA_BUNDLE.exists() else ["ca-certificates"]
    packages = ["python" + PY, "python%s-venv" % PY, *ca_certificates, "git", "docker.io", "iptables", "debootstrap"]
    assert root.called("apt-get") == ["apt-get update -qq",
                                      "apt-get install -y -qq --no-install-recommends " + " ".join(packages)]
    assert root.called("dockerd") == ["dockerd "]
    log = root.root / "dockerd.log"
    assert "run.sh: starting the Docker engine: %s (log: %s; waiting at most 3 s)" % (root.bin / "dockerd", log) in proc.stdout
    assert proc.stdout.splitlines()[-1].startswith("run.sh: Python %s." % PY)
    assert "Docker engine 20.10.24, %s" % (root.bin / "debootstrap") in proc.stdout


def test_as_root_a_running_engine_is_left_alone(root):
    root.apt_get()
    for name in ("git", "debootstrap"):
        root.tool(name)
    root.python()
    root.docker_cli()
    root.dockerd()
    (root.state / "engine-up").write_text("")
    proc = root.run("prereqs")
    assert proc.returncode == 0, proc.stderr
    assert root.called("apt-get") == [] and root.called("dockerd") == []


@pytest.mark.parametrize("behaviour", ["fails", "hangs"])
def test_a_dockerd_that_does_not_answer_stops_within_the_bound_with_its_log(root, behaviour):
    for name in ("git", "debootstrap", "iptables"):
        root.tool(name)
    root.python()
    root.docker_cli()
    root.dockerd(behaviour)
    proc = root.run("prereqs", env={"VERL_DEPLOY_DOCKERD_WAIT": "2"})
    assert proc.returncode == 1
    log = root.root / "dockerd.log"
    assert "run.sh: dockerd did not answer within 2 s (or exited); the end of its log, %s:" % log in proc.stderr
    if behaviour == "fails":
        assert "failed to start daemon: Error initializing network controller: iptables not found" in proc.stderr
        assert proc.seconds < 5
    else:
        assert 1 <= proc.seconds < 8  # bounded by VERL_DEPLOY_DOCKERD_WAIT (bash counts whole seconds)


def test_as_root_without_apt_get_it_names_what_to_install(root):
    root.python()
    root.tool("git")
    root.docker_cli()
    root.dockerd()
    root.tool("iptables")
    proc = root.run("prereqs")
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[1:] == [
        "  - install the missing packages (their Debian names: debootstrap) with this system's package manager",
        "  - start the Docker engine: systemctl start docker, or without a service manager: "
        "sh -c 'dockerd > /tmp/dockerd.log 2>&1 &' (then `docker info` answers)"]
    assert root.called("dockerd") == []


def test_the_test_job_provides_docker_only_for_a_selection_that_needs_it(root):
    """./run.sh test from a machine with neither Python nor an engine: the venv's prerequisites first,
    then (the selection has a Molecule scenario) the engine's; apt-get update once."""
    root.apt_get()
    proc = root.run("test", "--collect-only", "-q", "tests/integration", "-k", "one_node")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ca_certificates = [] if CA_BUNDLE.exists() else ["ca-certificates"]
    assert root.called("apt-get") == [
        "apt-get update -qq",
        "apt-get install -y -qq --no-install-recommends " + " ".join(["python" + PY, "python%s-venv" % PY, *ca_certificates, "git"]),
        "apt-get install -y -qq --no-install-recommends docker.io iptables debootstrap"]
    assert root.called("dockerd") == ["dockerd "]
    assert "tests/integration/test_molecule.py::test_molecule_scenario[one_node]" in proc.stdout


@pytest.mark.parametrize("job", [("test", "--collect-only", "-q", "-m", "not integration"), ("render",)])
def test_jobs_that_need_no_docker_run_without_an_engine(user, job):
    user.docker_cli()
    user.env["PATH"] = "%s:%s" % (user.bin, os.environ["PATH"])  # this machine's tools, but no engine and not root
    proc = user.run(*job, env={"VERL_DEMO_OUTPUT": str(user.root / "scripts")})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Docker" not in proc.stderr
    assert user.called("docker") == [] and user.called("dockerd") == []


def test_a_selection_with_simulated_cluster_tests_asks_for_the_engine(user):
    user.docker_cli()
    user.env["PATH"] = "%s:%s" % (user.bin, os.environ["PATH"])
    proc = user.run("test", "--collect-only", "-q", "tests/sim")
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[1:] == [
        "  - start the Docker engine: sudo systemctl start docker, or without a service manager: "
        "sudo sh -c 'dockerd > /tmp/dockerd.log 2>&1 &' (then `docker info` answers)"]
    assert "test_sim_cluster.py::" not in proc.stdout


def test_ci_starts_from_no_engine_and_runs_only_the_readme_commands(root):
    """.ci/run on a machine with no engine, no Docker, git or Python packages: ./run.sh prereqs
    installs them in one apt-get run and starts dockerd; the test phase finds everything there. The
    suite is only collected here (PYTEST_ADDOPTS), the way `./run.sh test` passes it to pytest. This
    machine has no Python >= 3.12 (as Debian 12): the newest-release leg stops at once naming what to
    install, and that fails the run."""
    root.apt_get()
    proc = root.run(env={"PYTEST_ADDOPTS": "--collect-only -q"}, script=".ci/run")
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "run.sh newest: no Python >= 3.12 with venv and ensurepip" in proc.stderr
    assert "pyenv install 3.13" in proc.stderr and "==> FAILED: ./run.sh newest exited 1" in proc.stderr
    ca_certificates = [] if CA_BUNDLE.exists() else ["ca-certificates"]
    packages = ["python" + PY, "python%s-venv" % PY, *ca_certificates, "git", "docker.io", "iptables", "debootstrap"]
    assert root.called("apt-get") == ["apt-get update -qq",
                                      "apt-get install -y -qq --no-install-recommends " + " ".join(packages)]
    assert root.called("dockerd") == ["dockerd "]
    assert "tests/integration/test_molecule.py::test_molecule_scenario[three_nodes]" in proc.stdout
    assert "==> tests passed" in proc.stdout
