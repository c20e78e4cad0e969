"""The collection as its users get it: the built tarball (checked by Galaxy's own importer), installed
from that tarball and run from an empty folder, its changelog, and the execution environment's build
context. Everything runs offline: community.docker comes from the `ansible` package."""
from __future__ import annotations

import html
import os
import re
import subprocess
import sys
import sysconfig
import tarfile
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
GALAXY = yaml.safe_load((REPO / "galaxy.yml").read_text())
ROLES = sorted(path.name for path in (REPO / "roles").iterdir() if path.is_dir())
DEV_ONLY = ["run.sh", "requirements.txt", "requirements-test.txt", "pytest.ini", ".ansible-lint", ".yamllint", "ansible.cfg",
            "tests/", "extensions/", "benchmarks/", "inventories/sim/", ".ci/", "playbooks/collections/"]
PATHS = ["-e", "verl_model_path=/models/Qwen3-8B", "-e", "verl_train_file=/data/train.parquet",
         "-e", "verl_test_file=/data/test.parquet", "-e", "verl_ckpts_dir=/ckpt"]


def run(argv, cwd, env=None, timeout=600):
    env = dict(os.environ if env is None else env, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
    env["PATH"] = "%s:%s" % (BIN, env.get("PATH", ""))
    proc = subprocess.run([str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    proc.output = proc.stdout + proc.stderr
    return proc


def source_copy(dest):
    """What a fresh clone holds (tracked and new, not ignored, files), copied to dest."""
    names = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    for name in filter(None, names.decode().split("\0")):
        source = REPO / name
        if source.is_file() or source.is_symlink():
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read_bytes())
            target.chmod(source.stat().st_mode)
    return dest


def repository_url():
    """Galaxy requires `repository`. Until galaxy.yml names the project's public home, a release build (and
    this test) takes the URL the checkout was cloned from, else the checkout itself: never a made-up one."""
    origin = subprocess.run(["git", "config", "--get", "remote.origin.url"], cwd=REPO, capture_output=True, text=True, check=False)
    return origin.stdout.strip() or REPO.as_uri()


@pytest.fixture(scope="module")
def tarball(tmp_path_factory):
    src = source_copy(tmp_path_factory.mktemp("src"))
    if not GALAXY.get("repository"):
        with open(src / "galaxy.yml", "a", encoding="utf-8") as handle:
            handle.write("repository: %s\n" % repository_url())
    out = tmp_path_factory.mktemp("dist")
    proc = run([BIN / "ansible-galaxy", "collection", "build", "--output-path", out], cwd=src)
    assert proc.returncode == 0, proc.output
    return out / ("verl-deploy-%s.tar.gz" % GALAXY["version"])


@pytest.fixture(scope="module")
def installed(tarball, tmp_path_factory):
    """The tarball installed with ansible-galaxy; community.docker resolves to the `ansible` package's."""
    path = tmp_path_factory.mktemp("collections")
    proc = run([BIN / "ansible-galaxy", "collection", "install", tarball, "-p", path], cwd=path)
    assert proc.returncode == 0, proc.output
    assert "verl.deploy:%s was installed successfully" % GALAXY["version"] in proc.output
    assert re.search(r"community\.docker:(4\.([6-9]|\d\d)|5)\.\S+' is already installed", proc.output), proc.output
    return path


def test_galaxy_metadata_is_real():
    assert GALAXY["dependencies"] == {"community.docker": ">=4.6.0,<6.0.0"}
    assert yaml.safe_load((REPO / "collections/requirements.yml").read_text())["collections"] == [
        {"name": "community.docker", "version": GALAXY["dependencies"]["community.docker"]}]
    for key in ("repository", "documentation", "homepage", "issues"):
        assert not re.search(r"example\.|\.invalid|localhost|TODO", str(GALAXY.get(key, ""))), key
    assert GALAXY["license"] == ["GPL-3.0-or-later"]
    assert "GNU GENERAL PUBLIC LICENSE" in (REPO / "LICENSE").read_text() and "Version 3" in (REPO / "LICENSE").read_text()
    assert yaml.safe_load((REPO / "meta/runtime.yml").read_text())["requires_ansible"].startswith(">=")


def test_the_claimed_floor_is_the_pinned_core_the_whole_suite_runs_on():
    """meta/runtime.yml and every role claim no older ansible-core than the one CI runs everything on
    (requirements.txt); the other end, the newest release, is `./run.sh newest`."""
    pinned = re.search(r"^ansible-core==(\d+\.\d+)\.\d+$", (REPO / "requirements.txt").read_text(), re.M).group(1)
    assert yaml.safe_load((REPO / "meta/runtime.yml").read_text())["requires_ansible"] == ">=%s.0" % pinned
    for role in ROLES:
        meta = yaml.safe_load((REPO / "roles" / role / "meta/main.yml").read_text())
        assert meta["galaxy_info"]["min_ansible_version"] == pinned, role


def test_the_tarball_holds_the_runtime_content_and_no_dev_files(tarball):
    with tarfile.open(tarball) as archive:
        names = set(archive.getnames())
        manifest = yaml.safe_load(archive.extractfile("MANIFEST.json"))["collection_info"]
    for name in ["LICENSE", "README.md", "meta/runtime.yml", "meta/execution-environment.yml", "collections/requirements.yml",
                 "playbooks/deploy.yml", "playbooks/render.yml", "playbooks/preflight.yml", "plugins/action/confirm.py",
                 "changelogs/config.yaml", "awx/configure.yml"] + ["roles/%s/README.md" % role for role in ROLES]:
        assert name in names, name
    leaked = sorted(name for name in names if any(name == dev.rstrip("/") or name.startswith(dev) for dev in DEV_ONLY))
    assert not leaked, "development files in the tarball: %s" % leaked
    assert manifest["dependencies"] == GALAXY["dependencies"] and manifest["license"] == ["GPL-3.0-or-later"]


def test_galaxy_importer_accepts_the_tarball(tarball, tmp_path):
    """Galaxy's importer, as Galaxy runs it, with ansible-test off (it would need a container registry) and its ansible-lint
    pass off: that pass is `ansible-lint --profile production` over the roles and playbooks, which
    test_quality.py::test_ansible_lint_production_profile_passes runs over the whole checkout with nothing skipped (it took
    100 s of the suite's 2 cores a second time). Any error or warning fails."""
    config = tmp_path / "galaxy-importer.cfg"
    config.write_text("[galaxy-importer]\nRUN_ANSIBLE_TEST = False\nRUN_ANSIBLE_LINT = False\nLOG_LEVEL_MAIN = INFO\n")
    env = dict(os.environ, GALAXY_IMPORTER_CONFIG=str(config))
    proc = run([sys.executable, "-m", "galaxy_importer.main", tarball], cwd=tmp_path, env=env, timeout=900)
    assert proc.returncode == 0, proc.output
    assert "Importer processing completed successfully" in proc.output
    for role in ROLES:
        assert "Loading role %s" % role in proc.output
    problems = [line for line in proc.output.splitlines() if re.search(r"\b(ERROR|WARNING|CRITICAL)\b", line)]
    assert not problems, "\n".join(problems)


def installed_env(installed):
    env = {key: value for key, value in os.environ.items() if not key.startswith("ANSIBLE_")}
    env["ANSIBLE_COLLECTIONS_PATH"] = str(installed)
    return env


def test_installed_collection_renders_from_an_empty_folder(installed, tmp_path):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {"children": {
        "ray_head": {"hosts": {"node1": {"ansible_host": "10.0.0.1"}}},
        "ray_workers": {"hosts": {"node2": {"ansible_host": "10.0.0.2"}}}}}}))
    out = tmp_path / "out"
    proc = run([BIN / "ansible-playbook", "-i", inventory, "verl.deploy.render", "-e", "mask=0000000", *PATHS,
                "-e", "verl_output_dir=%s" % out], cwd=tmp_path, env=installed_env(installed))
    assert proc.returncode == 0, proc.output
    assert "node1" in proc.output and "node2" in proc.output
    listed = run([BIN / "ansible-galaxy", "collection", "list", "verl.deploy", "--format", "json"], cwd=tmp_path, env=installed_env(installed))
    assert list(yaml.safe_load(listed.stdout)) == [str(installed / "ansible_collections")], listed.output
    for node in ("node1", "node2"):
        assert sorted(path.name for path in (out / node).iterdir()) == ["run_training.sh", "start_verl.sh"]
        assert "ray start" in (out / node / "start_verl.sh").read_text()


@pytest.mark.parametrize("groups, named", [
    ({"ray_workers": {"hosts": {"node2": {}}}}, "ray_head"),
    ({"ray_head": {"hosts": {"node1": {}}}, "ray_worker": {"hosts": {"node2": {}}}}, "ray_worker"),
])
def test_installed_collection_rejects_a_misshapen_inventory(installed, tmp_path, groups, named):
    """No head, or a mistyped group: an error naming the group, never a run on fewer hosts."""
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {"children": groups}}))
    out = tmp_path / "out"
    proc = run([BIN / "ansible-playbook", "-i", inventory, "verl.deploy.render", "-e", "mask=0000000", *PATHS,
                "-e", "verl_output_dir=%s" % out], cwd=tmp_path, env=installed_env(installed))
    assert proc.returncode != 0, proc.output
    assert re.search(r"group\(?s?\)? %s\b|group %s must" % (named, named), " ".join(proc.output.split())), proc.output
    assert "Fix:" in proc.output
    assert not out.exists(), "nothing may be rendered"


def test_installed_collection_deploy_under_awx_stops_unconfirmed_before_any_host(installed, tmp_path):
    inventory = tmp_path / "hosts.yml"
    # Closed ports on 127.0.0.1: a run that tried to reach them would fail naming the nodes instead.
    inventory.write_text(yaml.safe_dump({"all": {"children": {
        "ray_head": {"hosts": {"node1": {"ansible_host": "127.0.0.1", "ansible_port": 9}}}}}}))
    proc = run([BIN / "ansible-playbook", "-i", inventory, "verl.deploy.deploy", "-e", "mask=0000000", *PATHS,
                "-e", "awx_job_id=42"], cwd=tmp_path, env=installed_env(installed), timeout=120)
    assert proc.returncode != 0
    assert "verl_confirm is not true" in " ".join(proc.output.split()), proc.output
    assert "node1" not in proc.output.rsplit("PLAY RECAP", maxsplit=1)[-1]


def plain(text):
    """The text without its markup (Markdown, and the HTML antsibull-changelog writes for inline code)."""
    text = html.unescape(re.sub(r"</?(code|a|em|strong)\b[^>]*>", "", text))
    return " ".join(re.sub(r"[`*\\]", "", text).split())


def test_changelog_fragments_lint_and_build_the_changelog(tmp_path):
    assert run([BIN / "antsibull-changelog", "lint"], cwd=REPO).returncode == 0
    src = tmp_path / "src"
    src.mkdir()
    for name in ("galaxy.yml", "changelogs/config.yaml", *[str(p.relative_to(REPO)) for p in (REPO / "changelogs/fragments").iterdir()]):
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text((REPO / name).read_text())
    proc = run([BIN / "antsibull-changelog", "release", "--version", GALAXY["version"], "--date", "2026-01-01"], cwd=src)
    assert proc.returncode == 0, proc.output
    changelog = plain((src / "CHANGELOG.md").read_text())
    assert "v%s" % GALAXY["version"] in changelog
    for fragment in (REPO / "changelogs/fragments").iterdir():
        for entries in yaml.safe_load(fragment.read_text()).values():
            for entry in [entries] if isinstance(entries, str) else entries:
                assert plain(entry)[:60] in changelog, entry


def test_ansible_builder_creates_the_execution_environment_context(installed, tmp_path):
    definition = yaml.safe_load((REPO / "execution-environment.yml").read_text())
    assert definition["version"] == 3
    context = tmp_path / "context"
    proc = run([BIN / "ansible-builder", "create", "-f", REPO / "execution-environment.yml", "-c", context], cwd=REPO)
    assert proc.returncode == 0, proc.output
    containerfile = next(context / name for name in ("Containerfile", "Dockerfile") if (context / name).is_file())
    text = containerfile.read_text()
    assert 'ARG EE_BASE_IMAGE="%s"' % definition["images"]["base_image"]["name"] in text
    # The execution environment runs the ansible-core the whole suite runs on, on the Python run.sh names for it.
    pinned_core = re.search(r"^ansible-core==\S+$", (REPO / "requirements.txt").read_text(), re.M).group(0)
    assert definition["dependencies"]["ansible_core"]["package_pip"] == pinned_core
    assert "%s ansible-runner==2.4.3" % pinned_core in text
    python_version = re.search(r'^PYTHON_VERSION="([0-9.]+)"$', (REPO / "run.sh").read_text(), re.M).group(1)
    assert definition["dependencies"]["python_interpreter"] == {"package_system": "python" + python_version,
                                                                "python_path": "/usr/bin/python" + python_version}
    assert yaml.safe_load((context / "_build/requirements.yml").read_text()) == yaml.safe_load(
        (REPO / "collections/requirements.yml").read_text())
    assert "openssh-clients [platform:rpm]" in (context / "_build/bindep.txt").read_text()
    # What the image build's introspection step computes from the installed collections: the collection's
    # own needs (meta/execution-environment.yml) and community.docker's, none of the development tools.
    collections = tmp_path / "collections"
    (collections / "ansible_collections" / "community").mkdir(parents=True)
    (collections / "ansible_collections" / "verl").symlink_to(installed / "ansible_collections" / "verl")
    # The `ansible` package's copy of community.docker.
    (collections / "ansible_collections" / "community" / "docker").symlink_to(
        Path(sysconfig.get_paths()["purelib"]) / "ansible_collections" / "community" / "docker")
    proc = run([sys.executable, context / "_build/scripts/introspect.py", "introspect", collections,
                "--user-pip", context / "_build/requirements.txt", "--user-bindep", context / "_build/bindep.txt"], cwd=tmp_path)
    assert proc.returncode == 0, proc.output
    found = yaml.safe_load(proc.stdout)
    assert "openssh-clients [platform:rpm]  # from collection verl.deploy" in found["system"], found
    python = " ".join(found["python"])
    assert "from collection community.docker" in python
    # hydra-core is a run-time need (the settings check parses verl_extra_overrides with its parser).
    assert "hydra-core==1.3.2  # from collection verl.deploy" in python, python
    for dev in ("pytest", "molecule", "ansible-lint", "testinfra", "ansible==", "shellcheck"):
        assert dev not in python, dev
