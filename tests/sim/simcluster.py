"""The simulated Ascend cluster of verl.deploy's tests: real Docker engines, real Ray, verl's real schema.

    python3 tests/sim/simcluster.py build [--verl 0.9.1 | all]  # build (or reuse) the four images
    python3 tests/sim/simcluster.py up --nodes 2 [--fixture node2=011_....txt] [--prefix verl-sim] [--verl 0.7.0 --verl 0.9.1]
    python3 tests/sim/simcluster.py status | info --json | inventory | down [--prefix verl-sim]
    python3 tests/sim/simcluster.py prune                       # drop images of superseded recipes

Images, each tagged by a content hash of its recipe (inputs: package lists, copied files, RECIPE_VERSION),
so an unchanged recipe is never rebuilt and a changed one always is:

  verl-sim/base:<h>      debootstrap --variant=minbase bookworm + python3 iproute2 procps iputils-ping
                         ca-certificates, `docker import`ed (rootfs tar cached in .cache/sim/)
  verl-sim/node:<h>      an Ascend host: its own Docker engine (DinD), a fake npu-smi replaying real
                         captures (tests/fixtures/npu-smi), /dev/davinci*, the driver files
  verl-sim/verl:<h>-v<release>  the stand-in verl image of one verl release (--verl, one of VERL_RELEASES; default
                         0.7.0): Ray + Hydra in /opt/verl-venv, /verl laid out like that release's checkout in
                         verl's Ascend image (the wheel's config tree and config checks, its version string and the
                         files that tell releases apart, recipe/ as the image has it, a stand-in trainer),
                         CANN's set_env.sh where verl's images have them and a torch_npu that needs them. Each
                         release is its own image (its files are in the hash); every release but the default is one
                         layer on the default's image (verl/release.sh), built in seconds. `build --without mbridge`:
                         a layer without the weight bridge (tag ...-without-mbridge), an image the deploy's container
                         check must refuse before Ray.
  verl-sim/registry:<h>  Debian's docker-registry, no auth, on :5000

`up` starts, on the network <prefix>-net: the registry container <prefix>-registry (host name and
network alias `registry`, published on 127.0.0.1:5001 -- or any free port with --registry-port 0 -- for
pushes from this machine) holding the verl image as registry:5000/verl/verl-sim:<h>, and the nodes
<prefix>-node1..N (host name = container name), each running its own dockerd (--insecure-registry=
registry:5000, docker0 on 10.96.<i>.1/24). Ansible reaches a node with ansible_connection=
verl_sim.cluster.node (community.docker.docker, pipelined: tests/sim/ansible_collections); inside, the collection pulls
the verl image with the node's engine and runs it with network_mode host. `up` is idempotent: the same arguments change nothing; other arguments
replace only the nodes whose settings changed (and remove nodes beyond --nodes).

`down` removes exactly the containers (with their anonymous volumes), volumes and network labelled
for that prefix. Kept for the next warm `up`: the images and .cache/sim/ (the rootfs tar, the wheels,
the registry storage .cache/sim/registry/<h>/, build logs in .cache/sim/logs/); remove those with
`rm -rf .cache/sim` and `docker rmi` of the verl-sim/* images.

Host prerequisites (checked, with the fix printed): a running Docker engine and, for the first base
build, debootstrap; `./run.sh prereqs` provides them. Python: stdlib only.
Importable: build(), up(), down(), status(), info(), inventory(), prune().
"""
from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import fcntl
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:  # imported from elsewhere: the stand-ins beside it
    sys.path.insert(0, str(Path(__file__).resolve().parent))
import stand_in_packages  # noqa: E402  pylint: disable=wrong-import-position

HERE = Path(__file__).resolve().parent
# The images' Dockerfiles and the verl image's build script are files beside this one (node/Dockerfile,
# registry/Dockerfile with registry/config.yml.in, verl/build.sh.in), str.format templates filled in by Recipes;
# each image's recipe hash covers their filled-in text, so an edit to one rebuilds that image.
REPO = HERE.parent.parent
CACHE = REPO / ".cache" / "sim"
LOGS = CACHE / "logs"
FIXTURES = REPO / "tests" / "fixtures" / "npu-smi"
DAPO_OVERLAY = REPO / "tests" / "helpers" / "verl_config" / "dapo_megatron_trainer.yaml"
STAND_IN = HERE / "stand_in_main_dapo.py"
TORCH_NPU = HERE / "stand_in_torch_npu.py"
NPU_SMI = HERE / "node" / "npu_smi.py"
HCCN_TOOL = HERE / "node" / "hccn_tool.py"
SIM_RUNC = HERE / "node" / "sim_runc.sh"
ENTRYPOINT = HERE / "node" / "sim_node_entrypoint.sh"

# The verl releases the verl image can be built for (--verl): the config tree, config checks, version string and marker
# files come from that release's PyPI wheel (tests/helpers/hydra_schema.py pins each by sha256).
VERL_RELEASES = ("0.7.0", "0.7.1", "0.8.0", "0.9.1")
DEFAULT_VERL = "0.7.0"
# verl.__version__ in the image: the v0.7.0 tag's checkout says 0.7.0.dev (stand_in_packages.VERL_VERSION); the others
# are the wheel's verl/version/version (release branches, as verl's Dockerfiles for 0.7.1 and 0.8.0 clone them).
VERL_VERSION_STRING = {"0.7.0": stand_in_packages.VERL_VERSION, "0.7.1": "0.7.1", "0.8.0": "0.8.0", "0.9.1": "0.9.1"}
# Files whose presence tells the releases apart (plugins/module_utils/_versions.py MARKERS), copied from the wheel where
# the release has them: the legacy Megatron workers (up to 0.7.1) and the V1 trainer's old TaskRunner (0.9.0 on). Never
# imported in the simulated image (they need torch).
VERL_MARKER_FILES = ("verl/workers/megatron_workers.py", "verl/trainer/main_ppo_v0.py")
# The image's packages a verl image may be built without (--without): the weight bridge verl's Megatron worker imports when
# the actor starts (mbridge, verl's vanilla_mbridge path), for the image check's refusal of an image that lacks it.
WITHOUT = ("mbridge",)
# recipe/ of the image from 0.7.1 on: a verl-recipe checkout, not verl's (tests/sim/stand_in_recipe.py).
RECIPE_STAND_IN = HERE / "stand_in_recipe.py"

# Bump a number to force a rebuild of that image (and of those built on it) without other changes.
RECIPE_VERSION = {"base": 1, "node": 1, "verl": 1, "registry": 1}

SUITE = "bookworm"
MIRROR = os.environ.get("SIM_DEBIAN_MIRROR", "http://deb.debian.org/debian")
SECURITY_MIRROR = os.environ.get("SIM_DEBIAN_SECURITY_MIRROR", "http://deb.debian.org/debian-security")
BASE_PACKAGES = ("python3", "iproute2", "procps", "iputils-ping", "ca-certificates")
# bindfs: a FUSE file system to stand for a JuiceFS-like shared checkpoint folder (mounted with JuiceFS's fstype and
# source over the shared folder, extensions/molecule/failures).
NODE_PACKAGES = ("docker.io", "iptables", "python3-requests", "bindfs")
VERL_PACKAGES = ("python3-venv",)
REGISTRY_PACKAGES = ("docker-registry",)

# The verl venv, every distribution pinned (ray's closure as pip resolved it for cp311 on 2026-11-30;
# the test pins of requirements-test.txt for Hydra). antlr4-python3-runtime has no wheel on PyPI: it
# is built here from its sdist (pure Python).
RAY_VERSION = "2.60.0"
PYTHON_LOCK = (
    "ray==%s" % RAY_VERSION,
    "attrs==26.1.0",
    "certifi==2026.10.19.post1",
    "charset-normalizer==3.5.3",
    "click==8.5.1",
    "filelock==4.3.1",
    "idna==3.20",
    "jsonschema==4.26.0",
    "jsonschema-specifications==2025.9.1",
    "msgpack==1.2.4",
    "packaging==26.4",
    "protobuf==7.36.2",
    "PyYAML==6.0.4",
    "referencing==0.37.0",
    "requests==2.34.2",
    "rpds-py==2026.9.1",
    "typing-extensions==4.16.0",
    "urllib3==2.8.0",
    "hydra-core==1.3.2",
    "omegaconf==2.3.1",
    # The real tokenizer and parquet reader a verl image has (transformers, and pyarrow through `datasets`): the
    # container stage counts the prompts with them, as verl measures them. transformers 4.57.1's closure as pip
    # resolved it for cp311 on 2026-12-02 (without torch: the stand-in torch has no distribution metadata, so
    # transformers loads its tokenizers only, as it does for a tokenizer in a real image).
    "transformers==4.57.1",
    "tokenizers==0.22.2",
    "huggingface-hub==0.36.2",
    "hf-xet==1.8.0",
    "fsspec==2026.9.0",
    "safetensors==0.8.0",
    "regex==2026.11.19",
    "numpy==2.4.6",
    "tqdm==4.70.1",
    "jinja2==3.1.6",
    "markupsafe==3.0.4",
    "pyarrow==26.0.1",
)
SDIST_ONLY = ("antlr4-python3-runtime==4.9.3",)
# A wheelhouse for the swanlab role (not installed in the image): /opt/sim/wheels, as an air-gapped site
# would mount one. swanlab 0.10.3 and its closure as pip resolved it for cp311 on 2026-11-30 (it wants
# protobuf < 7, so installing it downgrades Ray's protobuf, as it would in a real image).
SWANLAB_LOCK = (
    "swanlab==0.10.3",
    "annotated-types==0.8.0", "certifi==2026.10.19.post1", "charset-normalizer==3.5.3", "click==8.5.1", "idna==3.20",
    "jinja2==3.1.6", "markdown-it-py==4.3.0", "markupsafe==3.0.4", "mdurl==0.1.2", "nvidia-ml-py==13.615.71",
    "orjson==3.13.0", "platformdirs==4.14.8", "prettytable==3.18.0", "protobuf==6.33.6", "psutil==7.2.2",
    "pydantic==2.14.4", "pydantic-core==2.50.5", "pydantic-settings==2.16.3", "pyecharts==2.1.0", "pygments==2.21.0",
    "pyroaring==1.0.3", "python-dotenv==1.2.4", "PyYAML==6.0.4", "requests==2.34.2", "rich==15.0.0",
    "setuptools==84.2.1", "simplejson==4.3.0", "typing-extensions==4.16.0", "typing-inspection==0.4.5",
    "urllib3==2.8.0", "watchdog==7.1.0", "wcwidth==0.9.4", "wrapt==2.5.2",
)
SWANLAB_SDIST_ONLY = ("pwinput==1.0.3",)
SIM_WHEELHOUSE = "/opt/sim/wheels"
# manylinux_2_28 too: numpy 2.4 and pyarrow 26 publish no manylinux2014 wheel; the image is Debian bookworm (glibc 2.36).
WHEEL_PLATFORM = ("--platform", "manylinux2014_x86_64", "--platform", "manylinux_2_28_x86_64", "--python-version", "3.11",
                  "--implementation", "cp", "--abi", "cp311")

DEFAULT_PREFIX = "verl-sim"
DEFAULT_REGISTRY_PORT = 5001
REGISTRY_REPO = "verl/verl-sim"
LABEL = "verl-sim"
DEFAULT_FIXTURE = "007_info_910B3_8cards_v24.1.rc2_procs_emptyname_mixed.txt"  # Atlas A2, 8 x 910B3
NODE_SHM = "1g"
DIND_OPTIONS = ("--init", "--cap-add", "SYS_ADMIN", "--cap-add", "NET_ADMIN", "--security-opt", "seccomp=unconfined",
                "--security-opt", "apparmor=unconfined", "-v", "/sys/fs/cgroup:/sys/fs/cgroup:rw", "--shm-size", NODE_SHM)
SIM_FULL_FS = "/sim/full:size=1m"
# The node's memory as its /proc/meminfo says it: a file bind-mounted there (runc allows it, as it does for lxcfs), so a node
# shows a training server's memory, not this machine's (the pre-check refuses a host with less than 8 GiB available per NPU
# worker). A test makes one node short with set_node_memory(); the file is rewritten in place, so the running node sees it.
NODE_MEMORY_KB = 1024 ** 3  # 1 TiB, the memory of an 8-NPU training server (in kB, as meminfo counts)
DOCKERD_TIMEOUT = float(os.environ.get("SIM_DOCKERD_TIMEOUT", "90"))
REGISTRY_TIMEOUT = 30.0
ENV = dict(os.environ, DOCKER_BUILDKIT="0", DOCKER_CLI_HINTS="false")
PREREQS_FIX = ("./run.sh prereqs (as root on Debian/Ubuntu it installs docker.io, iptables and debootstrap and starts dockerd; "
               "otherwise it prints the commands to run)")


class SimError(Exception):
    """Something the simulated cluster needs failed; the message says what, with the relevant log tail."""


def say(message):
    print("simcluster: %s" % message, flush=True)


# --------------------------------------------------------------------------- small helpers

def _tail(text, lines=40):
    text = text.decode("utf-8", "replace") if isinstance(text, bytes) else (text or "")
    return "\n".join(text.rstrip().splitlines()[-lines:])


def _file_tail(path, lines=40):
    try:
        return _tail(Path(path).read_text(errors="replace"), lines)
    except OSError:
        return "(no log at %s)" % path


def run(argv, timeout=120, check=True, log=None, stdin=None):
    """Run a command; stdout+stderr go to `log` (a path, appended) or are captured. Raises SimError."""
    argv = [str(item) for item in argv]
    try:
        if log is not None:
            Path(log).parent.mkdir(parents=True, exist_ok=True)
            with open(log, "a") as handle:
                handle.write("\n$ %s\n" % " ".join(argv))
                handle.flush()
                proc = subprocess.run(argv, stdout=handle, stderr=subprocess.STDOUT, stdin=stdin or subprocess.DEVNULL,
                                      timeout=timeout, env=ENV, check=False)
            proc.stdout = proc.stderr = ""
        else:
            proc = subprocess.run(argv, capture_output=True, text=True, stdin=stdin or subprocess.DEVNULL, timeout=timeout,
                                  env=ENV, check=False)
    except FileNotFoundError as exc:
        raise SimError("%s is not installed (%s). Fix: %s" % (argv[0], exc, PREREQS_FIX))
    except subprocess.TimeoutExpired:
        raise SimError("`%s` did not finish within %s s%s" % (" ".join(argv), timeout,
                                                              ("; log %s:\n%s" % (log, _file_tail(log))) if log else ""))
    if check and proc.returncode != 0:
        detail = _file_tail(log) if log else _tail((proc.stderr or "") + (proc.stdout or ""))
        raise SimError("`%s` failed (exit %d)%s:\n%s" % (" ".join(argv), proc.returncode, (" -- log %s" % log) if log else "", detail))
    return proc


def docker(*argv, **kwargs):
    return run(["docker"] + list(argv), **kwargs)


def _exists(kind, name):
    return docker(kind, "inspect", name, check=False, timeout=30).returncode == 0


def _inspect(name):
    proc = docker("inspect", name, check=False, timeout=30)
    return json.loads(proc.stdout)[0] if proc.returncode == 0 else None


def _sha(*parts):
    digest = hashlib.sha256()
    for part in parts:
        data = part if isinstance(part, bytes) else str(part).encode()
        digest.update(len(data).to_bytes(8, "big"))
        digest.update(data)
    return digest.hexdigest()


@contextlib.contextmanager
def _lock(name):
    """An exclusive lock between processes (pytest-xdist workers, parallel CLI calls)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / (".%s.lock" % name), "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _debootstrap():
    return shutil.which("debootstrap") or next((path for path in ("/usr/sbin/debootstrap",) if os.access(path, os.X_OK)), None)


def check_host(need_debootstrap=False):
    """Fail early, with the fix, when the host lacks the docker CLI, a running engine or debootstrap."""
    if shutil.which("docker") is None:
        raise SimError("the docker command is not installed. Fix: %s" % PREREQS_FIX)
    proc = docker("info", "--format", "{{.ServerVersion}}", check=False, timeout=30)
    if proc.returncode != 0:
        raise SimError("the Docker engine is not running or not reachable (`docker info`: %s). Fix: %s"
                       % (_tail(proc.stderr, 5), PREREQS_FIX))
    if need_debootstrap and _debootstrap() is None:
        raise SimError("debootstrap is not installed; the base image is built with it. Fix: %s" % PREREQS_FIX)
    if need_debootstrap and os.geteuid() != 0:
        raise SimError("debootstrap must run as root to build the base image (run `simcluster.py build` as root once).")


# --------------------------------------------------------------------------- recipes

class Recipes:
    """Every image's recipe text and inputs, and the content hashes derived from them."""

    def __init__(self, verl=DEFAULT_VERL, without=()):
        if verl not in VERL_RELEASES:
            raise SimError("--verl %s: the verl image can be built for %s." % (verl, ", ".join(VERL_RELEASES)))
        if set(without) - set(WITHOUT):
            raise SimError("--without %s: the verl image can be built without %s." % (",".join(without), ", ".join(WITHOUT)))
        self.verl_release = verl
        self.without = tuple(sorted(set(without)))
        self.hashes = {}

    # -- base
    @staticmethod
    def sources_list():
        return ("deb %s %s main\ndeb %s %s-updates main\ndeb %s %s-security main\n"
                % (MIRROR, SUITE, MIRROR, SUITE, SECURITY_MIRROR, SUITE))

    APT_CONF = {
        # As Debian's official images: no kept .debs or caches in image layers, no translations.
        "etc/apt/apt.conf.d/docker-clean": (
            'DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb '
            '/var/cache/apt/*.bin || true"; };\n'
            'APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb '
            '/var/cache/apt/*.bin || true"; };\n'
            'Dir::Cache::pkgcache ""; Dir::Cache::srcpkgcache "";\n'),
        "etc/apt/apt.conf.d/docker-no-languages": 'Acquire::Languages "none";\n',
        "etc/apt/apt.conf.d/docker-no-recommends": 'APT::Install-Recommends "false"; APT::Install-Suggests "false";\n',
        "etc/dpkg/dpkg.cfg.d/docker-apt-speedup": "force-unsafe-io\n",
        "etc/dpkg/dpkg.cfg.d/docker-slim": ("path-exclude=/usr/share/doc/*\npath-include=/usr/share/doc/*/copyright\n"
                                            "path-exclude=/usr/share/man/*\npath-exclude=/usr/share/info/*\n"
                                            "path-exclude=/usr/share/locale/*\npath-include=/usr/share/locale/locale.alias\n"),
        # Package scripts must not try to start services during image builds (there is no init).
        "usr/sbin/policy-rc.d": "#!/bin/sh\nexit 101\n",
    }
    TAR_EXCLUDES = ("./var/cache/apt/archives/*.deb", "./var/cache/apt/archives/partial/*", "./var/cache/apt/*.bin",
                    "./var/lib/apt/lists/*", "./var/log/*", "./tmp/*", "./dev/*", "./proc/*", "./sys/*", "./debootstrap")
    BASE_CHANGES = ('CMD ["/bin/bash"]', "ENV LANG=C.UTF-8")

    def base(self):
        if "base" not in self.hashes:
            self.hashes["base"] = _sha("base", RECIPE_VERSION["base"], SUITE, "minbase", ",".join(BASE_PACKAGES),
                                       self.sources_list(), json.dumps(self.APT_CONF, sort_keys=True),
                                       ",".join(self.TAR_EXCLUDES), ",".join(self.BASE_CHANGES))[:12]
        return self.hashes["base"]

    # -- node
    def node_dockerfile(self):
        return (HERE / "node" / "Dockerfile").read_text().format(base=self.base(), packages=" ".join(NODE_PACKAGES))

    @staticmethod
    def node_files():
        """{context path: bytes} of the node image."""
        files = {"npu-smi": b"#!/usr/bin/python3\n" + NPU_SMI.read_bytes(), "sim-node-entrypoint": ENTRYPOINT.read_bytes(),
                 "hccn_tool": b"#!/usr/bin/python3\n" + HCCN_TOOL.read_bytes(), "sim-runc": SIM_RUNC.read_bytes()}
        for path in sorted(FIXTURES.glob("*.txt")):
            files["fixtures/" + path.name] = path.read_bytes()
        return files

    def node(self):
        if "node" not in self.hashes:
            files = self.node_files()
            self.hashes["node"] = _sha("node", RECIPE_VERSION["node"], self.node_dockerfile(),
                                       *[_sha(name, data) for name, data in sorted(files.items())])[:12]
        return self.hashes["node"]

    # -- registry
    REGISTRY_CONFIG = (HERE / "registry" / "config.yml.in").read_text()

    def registry_dockerfile(self):
        return (HERE / "registry" / "Dockerfile").read_text().format(base=self.base(), packages=" ".join(REGISTRY_PACKAGES))

    def registry(self):
        if "registry" not in self.hashes:
            self.hashes["registry"] = _sha("registry", RECIPE_VERSION["registry"], self.registry_dockerfile(),
                                           self.REGISTRY_CONFIG)[:12]
        return self.hashes["registry"]

    # -- verl
    # verl's Ascend images' layout (docker/ascend/Dockerfile.ascend_*: /usr/local/Ascend/ascend-toolkit/ and nnal/atb/).
    SET_ENV = {
        "ascend/ascend-toolkit/set_env.sh": (
            "# Stand-in for CANN's ascend-toolkit set_env.sh (verl-sim): the variables the real one exports.\n"
            "export ASCEND_TOOLKIT_HOME=/usr/local/Ascend/ascend-toolkit/latest\n"
            "export ASCEND_HOME_PATH=${ASCEND_TOOLKIT_HOME}\n"
            "export ASCEND_OPP_PATH=${ASCEND_TOOLKIT_HOME}/opp\n"
            "export ASCEND_AICPU_PATH=${ASCEND_TOOLKIT_HOME}\n"
            "export LD_LIBRARY_PATH=${ASCEND_TOOLKIT_HOME}/lib64:${LD_LIBRARY_PATH}\n"
            "export VERL_SIM_ASCEND_TOOLKIT=sourced\n"),
        "ascend/nnal/atb/set_env.sh": (
            "# Stand-in for CANN's nnal/atb set_env.sh (verl-sim).\n"
            "export ATB_HOME_PATH=/usr/local/Ascend/nnal/atb/latest/atb/cxx_abi_1\n"
            "export LD_LIBRARY_PATH=${ATB_HOME_PATH}/lib:${LD_LIBRARY_PATH}\n"
            "export VERL_SIM_ATB=sourced\n"),
        # NNAL's ATB library, which torch_npu's op plugin loads (tests/sim/stand_in_packages.py).
        "ascend/nnal/atb/latest/atb/cxx_abi_1/lib/libatb.so": stand_in_packages.ATB_LIBRARY,
    }
    # Run in the base image with the wheels (/w) and the context (/ctx) mounted; {packages} and {wheelhouse} filled in.
    VERL_BUILD = (HERE / "verl" / "build.sh.in").read_text()
    # Another release's image: one layer on the default release's image (its venv, about 700 MB, is the same for every
    # release), so that it builds in seconds and a node that has one release's image loads another's top layer only.
    VERL_RELEASE_BUILD = (HERE / "verl" / "release.sh").read_text()
    VERL_CHANGES = ("ENV PATH=/opt/verl-venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                    "ENV VIRTUAL_ENV=/opt/verl-venv", "WORKDIR /verl", 'CMD ["sleep", "infinity"]')

    @staticmethod
    def requirements():
        return "".join(line + "\n" for line in PYTHON_LOCK + SDIST_ONLY)

    def verl_files(self):
        """{context path: bytes} of the verl image (the verl checkout layout and the CANN stand-ins)."""
        # tests/helpers/hydra_schema.py reads the release table of this checkout (.collections: ./run.sh link).
        paths = [str(REPO / "tests"), str(REPO / ".collections")]
        sys.path[:0] = paths
        try:
            from helpers import hydra_schema  # pylint: disable=import-outside-toplevel
        finally:
            for path in paths:
                sys.path.remove(path)
        release = self.verl_release
        config_dir = Path(hydra_schema.verl_config_dir(release))
        source_dir = Path(hydra_schema.verl_source_dir(release))
        files = {}
        for path in sorted(config_dir.rglob("*")):
            relative = path.relative_to(config_dir).as_posix()
            # The cache dir also holds the DAPO overlay and a completion marker: neither is in verl's tree.
            if path.is_file() and relative not in (DAPO_OVERLAY.name, hydra_schema.MARKER) and "__pycache__" not in relative:
                files["verl/verl/trainer/config/" + relative] = path.read_bytes()
        files["verl/recipe/__init__.py"] = b""
        files["verl/recipe/dapo/__init__.py"] = b""
        if release == "0.7.0":  # verl's own recipe/, in its tree up to 0.7.0
            files["verl/recipe/dapo/config/" + DAPO_OVERLAY.name] = DAPO_OVERLAY.read_bytes()
            files["verl/recipe/dapo/main_dapo.py"] = STAND_IN.read_bytes()
        else:  # the verl-recipe submodule, at a commit that does not import on this verl (tests/sim/stand_in_recipe.py)
            files["verl/recipe/dapo/main_dapo.py"] = RECIPE_STAND_IN.read_bytes()
        for name in VERL_MARKER_FILES:
            if (source_dir / name).is_file():
                files["verl/" + name] = (source_dir / name).read_bytes()
        # GRPO's entry point (verl_algorithm=grpo; every algorithm from 0.7.1): the same stand-in, as verl's own module.
        files["verl/verl/__init__.py"] = stand_in_packages.VERL_INIT.encode()
        files["verl/verl/version/version"] = (VERL_VERSION_STRING[release] + "\n").encode()
        files["verl/verl/trainer/__init__.py"] = b""
        files["verl/verl/trainer/main_ppo.py"] = STAND_IN.read_bytes()
        for name, text in Recipes.SET_ENV.items():
            files[name] = text.encode()
        files["site/torch_npu/__init__.py"] = TORCH_NPU.read_bytes()
        # The rest of the image's stack (vLLM, vllm-ascend, Megatron, MindSpeed, mbridge; transformers is real), and the
        # CUDA-only package a test may install by mistake.
        for name, text in stand_in_packages.SITE.items():
            if name.split("/", maxsplit=1)[0] not in self.without:
                files["site/" + name] = text.encode()
        files["stand-ins/transformer_engine/__init__.py"] = stand_in_packages.TRANSFORMER_ENGINE.encode()
        # verl's own config checks, run by the stand-in trainer as verl runs them: the files that hold them,
        # from the pinned wheel at their paths in the checkout (not verl/__init__.py, which imports torch), and
        # the loader that runs them without torch.
        sys.path.insert(0, str(REPO / "tests" / "helpers" / "verl_config"))
        try:
            import verl_checks  # pylint: disable=import-outside-toplevel
        finally:
            sys.path.remove(str(REPO / "tests" / "helpers" / "verl_config"))
        for name in verl_checks.SOURCES:
            if (source_dir / name).is_file():  # verl_checks.OPTIONAL: files only some releases have
                files["verl/" + name] = (source_dir / name).read_bytes()
        # The config packages' other modules, which their __init__ imports (0.8.0's disaggregation.py, 0.9.1's checkpoint.py).
        for folder in ("verl/workers/config", "verl/trainer/config"):
            for path in sorted((source_dir / folder).glob("*.py")):
                files.setdefault("verl/%s/%s" % (folder, path.name), path.read_bytes())
        files["stand-ins/verl_checks.py"] = (REPO / "tests" / "helpers" / "verl_config" / "verl_checks.py").read_bytes()
        if self.without:  # the packages the layer removes from the default image's site-packages (verl/release.sh)
            files["without.txt"] = "".join(name + "\n" for name in self.without).encode()
        if self._full_build():
            files["requirements.txt"] = Recipes.requirements().encode()
            files["build.sh"] = Recipes.VERL_BUILD.format(packages=" ".join(VERL_PACKAGES), wheelhouse=SIM_WHEELHOUSE).encode()
        else:
            files["build.sh"] = Recipes.VERL_RELEASE_BUILD.encode()
        return files

    def _full_build(self):
        """Whether this verl image is built from the base (the default release's), not as one layer on that image."""
        return self.verl_release == DEFAULT_VERL and not self.without

    def verl(self):
        if "verl" not in self.hashes:
            files = self.verl_files()
            on = self.base() if self._full_build() else Recipes().verl()  # the image it is built on
            digest = _sha("verl", RECIPE_VERSION["verl"], on, ",".join(self.VERL_CHANGES), ",".join(SWANLAB_LOCK + SWANLAB_SDIST_ONLY),
                          *[_sha(name, data) for name, data in sorted(files.items())])[:12]
            # The tag ends with the release, as verl's own image tags do (`...-py3.11-v0.7.1`): the deploy renders for the
            # release the image's name says, and checks the image's files against it.
            self.hashes["verl"] = "%s-v%s" % (digest, self.verl_release) + "".join("-without-" + name for name in self.without)
        return self.hashes["verl"]

    def refs(self):
        return {name: "verl-sim/%s:%s" % (name, getattr(self, name)()) for name in ("base", "node", "verl", "registry")}


# --------------------------------------------------------------------------- building

def _write_context(folder, files):
    if folder.exists():
        shutil.rmtree(folder)
    for name, data in files.items():
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return folder


def _mounts_under(path):
    prefix = str(path).rstrip("/") + "/"
    with open("/proc/mounts") as handle:
        return [line.split()[1] for line in handle if line.split()[1].startswith(prefix)]


def _remove_rootfs(path):
    """Remove a (failed) debootstrap target, never following a mount that debootstrap left behind."""
    if not path.exists():
        return
    for mount in sorted(_mounts_under(path), reverse=True):
        subprocess.run(["umount", "-l", mount], check=False, capture_output=True)
    left = _mounts_under(path)
    if left:
        raise SimError("%s still has mounts (%s); unmount them, then delete it." % (path, ", ".join(left)))
    shutil.rmtree(path)


def _delete(path):
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


def _slim_rootfs(rootfs):
    """What the dpkg excludes of APT_CONF keep out of later installs, removed from debootstrap's packages too."""
    for package in sorted((rootfs / "usr/share/doc").iterdir()):
        if package.is_dir() and not package.is_symlink():
            for entry in package.iterdir():
                if entry.name != "copyright":
                    _delete(entry)
    for folder in ("usr/share/man", "usr/share/info"):
        for entry in (rootfs / folder).glob("*"):
            _delete(entry)
    for entry in (rootfs / "usr/share/locale").glob("*"):
        if entry.name != "locale.alias":
            _delete(entry)


def _base_tar(recipes, log):
    """The cached rootfs tar of the base image (.cache/sim/base-<hash>.tar), debootstrapped if absent."""
    tar = CACHE / ("base-%s.tar" % recipes.base())
    if tar.is_file():
        return tar, False
    check_host(need_debootstrap=True)
    rootfs = CACHE / "build" / ("rootfs-%s" % recipes.base())
    _remove_rootfs(rootfs)
    rootfs.parent.mkdir(parents=True, exist_ok=True)
    try:
        run([_debootstrap(), "--variant=minbase", "--include=" + ",".join(BASE_PACKAGES), "--components=main", SUITE, rootfs, MIRROR],
            timeout=900, log=log)
        for name, text in Recipes.APT_CONF.items():
            target = rootfs / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
        (rootfs / "usr/sbin/policy-rc.d").chmod(0o755)
        (rootfs / "etc/apt/sources.list").write_text(Recipes.sources_list())
        _slim_rootfs(rootfs)
        partial = tar.with_suffix(".tar.partial")
        run(["tar", "--numeric-owner", "-C", rootfs, "-cf", partial] + ["--exclude=%s" % item for item in Recipes.TAR_EXCLUDES] + ["."],
            timeout=600, log=log)
        os.replace(partial, tar)
    finally:
        _remove_rootfs(rootfs)
    return tar, True


def _wheels_folder():
    return CACHE / "wheels" / _sha(Recipes.requirements(), " ".join(WHEEL_PLATFORM), ",".join(SWANLAB_LOCK + SWANLAB_SDIST_ONLY))[:12]


def _wheels(log):
    """.cache/sim/wheels/<hash of the lock>/: every wheel of PYTHON_LOCK + SDIST_ONLY for cp311 x86_64."""
    folder = _wheels_folder()
    marker = folder / ".complete"
    if marker.is_file():
        return folder
    partial = Path(tempfile.mkdtemp(prefix=".wheels-", dir=CACHE))
    try:
        pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
        run(pip + ["download", "--no-deps", "--only-binary=:all:"] + list(WHEEL_PLATFORM) + ["-d", partial] + list(PYTHON_LOCK),
            timeout=600, log=log)
        run(pip + ["wheel", "--no-deps", "-w", partial] + list(SDIST_ONLY), timeout=600, log=log)
        got = sorted(path.name for path in partial.glob("*.whl"))
        if len(got) != len(PYTHON_LOCK) + len(SDIST_ONLY):
            wanted = len(PYTHON_LOCK) + len(SDIST_ONLY)
            raise SimError("expected %d wheels, pip left %d in %s: %s (log %s)" % (wanted, len(got), partial, got, log))
        swanlab = partial / "swanlab"
        run(pip + ["download", "--no-deps", "--only-binary=:all:"] + list(WHEEL_PLATFORM) + ["-d", swanlab] + list(SWANLAB_LOCK),
            timeout=600, log=log)
        run(pip + ["wheel", "--no-deps", "-w", swanlab] + list(SWANLAB_SDIST_ONLY), timeout=600, log=log)
        if len(list(swanlab.glob("*.whl"))) != len(SWANLAB_LOCK) + len(SWANLAB_SDIST_ONLY):
            raise SimError("expected %d swanlab wheels in %s (log %s)" % (len(SWANLAB_LOCK) + len(SWANLAB_SDIST_ONLY), swanlab, log))
        (partial / ".complete").write_text("\n".join(got) + "\n")
        folder.parent.mkdir(parents=True, exist_ok=True)
        if folder.exists():
            shutil.rmtree(folder)
        os.replace(partial, folder)
    finally:
        if partial.exists():
            shutil.rmtree(partial)
    return folder


def _image_exists(ref):
    return docker("image", "inspect", "--format", "{{.Id}}", ref, check=False, timeout=30).returncode == 0


def _image_size(ref):
    proc = docker("image", "inspect", "--format", "{{.Size}}", ref, check=False, timeout=30)
    return int(proc.stdout.strip()) if proc.returncode == 0 and proc.stdout.strip().isdigit() else 0


def _log_path(kind, digest):
    LOGS.mkdir(parents=True, exist_ok=True)
    return LOGS / ("build-%s-%s.log" % (kind, digest))


def _build_base(recipes):
    ref = "verl-sim/base:%s" % recipes.base()
    if _image_exists(ref):
        return ref, "reused"
    log = _log_path("base", recipes.base())
    tar, fresh = _base_tar(recipes, log)
    changes = []
    for change in Recipes.BASE_CHANGES + ("LABEL %s.recipe=%s" % (LABEL, recipes.base()),):
        changes += ["--change", change]
    docker("import", *changes, tar, ref, timeout=600, log=log)
    return ref, ("debootstrapped + imported" if fresh else "imported from the cached rootfs %s" % tar.name)


def _build_dockerfile(kind, recipes, dockerfile, files):
    digest = getattr(recipes, kind)()
    ref = "verl-sim/%s:%s" % (kind, digest)
    if _image_exists(ref):
        return ref, "reused"
    _build_base(recipes)
    log = _log_path(kind, digest)
    context = _write_context(CACHE / "build" / ("%s-%s" % (kind, digest)), dict(files, Dockerfile=dockerfile.encode()))
    try:
        docker("build", "--force-rm", "--label", "%s.recipe=%s" % (LABEL, digest), "-t", ref, context, timeout=1200, log=log)
    finally:
        shutil.rmtree(context, ignore_errors=True)
    return ref, "built"


def _build_verl(recipes):
    digest = recipes.verl()
    ref = "verl-sim/verl:%s" % digest
    if _image_exists(ref):
        return ref, "reused"
    log = _log_path("verl", digest)
    if recipes._full_build():  # pylint: disable=protected-access
        base, _how = _build_base(recipes)
        mounts = ["-v", "%s:/w:ro" % _wheels(log)]
    else:  # one layer on the default release's image (verl/release.sh)
        base, _how = _build_verl(Recipes())
        mounts = []
    context = _write_context(CACHE / "build" / ("verl-%s" % digest), recipes.verl_files())
    name = "verl-sim-build-verl-%s" % digest
    docker("rm", "-f", name, check=False, timeout=60)
    try:
        # One `docker run` + `docker commit`: the wheels and the context are bind mounts, so they never become
        # an image layer (the legacy builder has no RUN --mount).
        docker("run", "--name", name, "--label", "%s.build=1" % LABEL, *mounts, "-v", "%s:/ctx:ro" % context,
               base, "bash", "/ctx/build.sh", timeout=1200, log=log)
        changes = []
        for change in Recipes.VERL_CHANGES + ("LABEL %s.recipe=%s" % (LABEL, digest),):
            changes += ["--change", change]
        docker("commit", *changes, name, ref, timeout=600, log=log)
    finally:
        docker("rm", "-f", name, check=False, timeout=60)
        shutil.rmtree(context, ignore_errors=True)
    return ref, "built"


def _prune_cache(refs):
    """This checkout's cache files of superseded recipes (rootfs tars, wheel folders)."""
    for tar in CACHE.glob("base-*.tar"):
        if tar.name != "base-%s.tar" % refs["base"].split(":")[1]:
            tar.unlink()
    wheels = _wheels_folder()
    for folder in (CACHE / "wheels").glob("*"):
        if folder != wheels and folder.is_dir():
            shutil.rmtree(folder)


def prune(verbose=True):
    """Remove verl-sim images of other recipes than this checkout's that no container uses, and stale cache files.

    Not done by `build` on its own: checkouts of different revisions may share one Docker engine.
    """
    check_host()
    refs = Recipes().refs()
    # The verl image of every release this checkout builds (--verl) stays.
    verl_refs = {"verl-sim/verl:%s" % Recipes(verl).verl() for verl in VERL_RELEASES}
    removed = []
    with _lock("build"):
        for kind in ("verl", "registry", "node", "base"):  # children first, so that superseded bases can go too
            proc = docker("images", "--format", "{{.Repository}}:{{.Tag}}", "verl-sim/%s" % kind, timeout=30)
            for ref in proc.stdout.split():
                if ref not in (verl_refs if kind == "verl" else {refs[kind]}) and docker("rmi", ref, check=False, timeout=120).returncode == 0:
                    removed.append(ref)  # `docker rmi` refuses while a container uses the image
        _prune_cache(refs)
    if verbose:
        say("prune: removed %s" % (", ".join(removed) if removed else "no image"))
    return removed


def _timed(step):
    """(what step() returned, its seconds)."""
    begin = time.monotonic()
    return step(), time.monotonic() - begin


def build(verbose=True, verl=DEFAULT_VERL, without=()):
    """Build (or reuse) the four images, the verl image for verl release `verl` ("all": the default's refs, and the
    verl image of every release; without: stand-in packages left out of it, WITHOUT); returns {kind: image ref}. Prints
    what it did and how long it took."""
    if verl == "all":
        for release in VERL_RELEASES[::-1]:  # the default (0.7.0, the others' base) last: its refs are returned
            refs = build(verbose=verbose, verl=release)
        return refs
    check_host()
    recipes = Recipes(verl, without)
    refs = {}
    fresh = False
    started = time.monotonic()
    with _lock("build"):
        steps = (
            ("node", lambda: _build_dockerfile("node", recipes, recipes.node_dockerfile(), recipes.node_files())),
            ("registry", lambda: _build_dockerfile("registry", recipes, recipes.registry_dockerfile(),
                                                   {"config.yml": Recipes.REGISTRY_CONFIG.encode()})),
            ("verl", lambda: _build_verl(recipes)),
        )
        # The three others start from the base alone: built side by side, the node's and the registry's apt installs while
        # the verl image's pip installs run (13 s of a fresh build's 90 on the 2-core machine). The verl image's wheels come
        # from the package mirror: fetched while the base is debootstrapped (13 s, most of it waiting).
        default_verl = Recipes()
        with concurrent.futures.ThreadPoolExecutor(max_workers=len(steps) + 1) as pool:
            wheels = None
            if not _image_exists("verl-sim/verl:%s" % default_verl.verl()):
                wheels = pool.submit(_wheels, _log_path("verl", default_verl.verl()))
            built = [("base", _timed(lambda: _build_base(recipes)))]
            if wheels is not None:
                wheels.result()  # before the verl image reads them (one fetch, never two at once)
            running = [(kind, pool.submit(_timed, step)) for kind, step in steps]
            built += [(kind, future.result()) for kind, future in running]
        for kind, ((ref, how), seconds) in built:
            refs[kind] = ref
            if verbose:
                kind = "verl %s" % verl if kind == "verl" else kind
                log = _log_path(kind.split()[0], ref.split(":")[1]).relative_to(REPO)
                say("%-30s %-44s %6.1f s  %4d MB  (log %s)" % (ref, how, seconds, _image_size(ref) / 1e6, log))
            fresh = fresh or how != "reused"
        if fresh:
            _prune_cache(refs)
    if verbose:
        say("build: %.1f s in all" % (time.monotonic() - started))
    return refs


# --------------------------------------------------------------------------- the cluster

def _names(prefix):
    return {"network": "%s-net" % prefix, "registry": "%s-registry" % prefix, "ckpts": "%s-ckpts" % prefix}


def node_name(prefix, index):
    return "%s-node%d" % (prefix, index)


def meminfo_text(total_kb, available_kb):
    """/proc/meminfo's lines that free(1), Docker and the pre-check read, in the kernel's layout."""
    used = total_kb - available_kb
    lines = [("MemTotal", total_kb), ("MemFree", available_kb), ("MemAvailable", available_kb), ("Buffers", 0),
             ("Cached", 0), ("SwapCached", 0), ("Active", used), ("Inactive", 0), ("SwapTotal", 0), ("SwapFree", 0),
             ("Shmem", 0), ("SReclaimable", 0)]
    return "".join("%-16s%8d kB\n" % (name + ":", value) for name, value in lines)


def meminfo_path(prefix, name):
    return CACHE / "meminfo" / prefix / name


def set_node_memory(prefix, index, available_kb=None):
    """Give node `index` this much available memory (None: the default, all of NODE_MEMORY_KB); rewritten in place."""
    path = meminfo_path(prefix, node_name(prefix, index))
    path.parent.mkdir(parents=True, exist_ok=True)
    text = meminfo_text(NODE_MEMORY_KB, NODE_MEMORY_KB if available_kb is None else available_kb)
    if path.exists():
        with open(path, "r+", encoding="ascii") as handle:  # the same inode: the bind mount keeps showing it
            handle.write(text)
            handle.truncate()
    else:
        path.write_text(text, encoding="ascii")


def verl_image(recipes=None, registry="registry:5000"):
    """The reference nodes pull the stand-in verl image by: registry:5000/verl/verl-sim:<hash>."""
    return "%s/%s:%s" % (registry, REGISTRY_REPO, (recipes or Recipes()).verl())


def _labels(prefix, role, spec):
    return ["--label", "%s=1" % LABEL, "--label", "%s.prefix=%s" % (LABEL, prefix), "--label", "%s.role=%s" % (LABEL, role),
            "--label", "%s.spec=%s" % (LABEL, spec)]


def _containers(prefix):
    """{name: inspect dict} of every container of this cluster (running or not)."""
    proc = docker("ps", "-aq", "--filter", "label=%s.prefix=%s" % (LABEL, prefix), timeout=30)
    ids = proc.stdout.split()
    if not ids:
        return {}
    data = json.loads(docker("inspect", *ids, timeout=60).stdout)
    return {item["Name"].lstrip("/"): item for item in data}


def _ensure_network(prefix):
    name = _names(prefix)["network"]
    found = _inspect_network(name)
    if found is not None:
        if (found.get("Labels") or {}).get("%s.prefix" % LABEL) != prefix:
            raise SimError("a Docker network %s exists that verl-sim did not create; remove or rename it." % name)
        return False
    docker("network", "create", "--label", "%s=1" % LABEL, "--label", "%s.prefix=%s" % (LABEL, prefix), name, timeout=60)
    return True


def _inspect_network(name):
    proc = docker("network", "inspect", name, check=False, timeout=30)
    return json.loads(proc.stdout)[0] if proc.returncode == 0 else None


def _claim(name, prefix, existing):
    """Refuse to touch a container of that name that is not this cluster's."""
    if name not in existing and _exists("container", name):
        raise SimError("a container named %s exists that is not part of the verl-sim cluster %r; remove or rename it." % (name, prefix))


def _ensure_container(name, prefix, role, spec, run_argv, existing, changes):
    """Create/start the container so it matches `spec`; records what changed. Returns True when (re)started."""
    current = existing.get(name)
    if current is not None and (current["Config"].get("Labels") or {}).get("%s.spec" % LABEL) == spec:
        if current["State"].get("Running"):
            return False
        docker("start", name, timeout=120)
        changes.append("started %s" % name)
        return True
    if current is not None:
        _remove_containers({name: current})
        changes.append("replaced %s (its settings changed)" % name)
    else:
        changes.append("created %s" % name)
    _claim(name, prefix, existing)
    docker("run", "-d", "--name", name, *_labels(prefix, role, spec), *run_argv, timeout=120)
    return True


def _registry_port(name):
    proc = docker("port", name, "5000/tcp", check=False, timeout=30)
    match = re.search(r":(\d+)\s*$", proc.stdout.strip().splitlines()[0] if proc.stdout.strip() else "")
    return int(match.group(1)) if match else None


def _http_status(url, method="GET", headers=None, timeout=5):
    request = urllib.request.Request(url, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except (urllib.error.URLError, OSError):
        return None


def _wait_registry(name, port):
    deadline = time.monotonic() + REGISTRY_TIMEOUT
    while time.monotonic() < deadline:
        if _http_status("http://127.0.0.1:%d/v2/" % port) == 200:
            return
        state = _inspect(name)
        if state is None or not state["State"].get("Running"):
            break
        time.sleep(0.3)
    logs = docker("logs", "--tail", "40", name, check=False, timeout=30)
    raise SimError("the registry %s did not answer on 127.0.0.1:%d/v2/ within %.0f s. Its log:\n%s"
                   % (name, port, REGISTRY_TIMEOUT, _tail(logs.stdout + logs.stderr)))


def _push(recipes, port, prefix):
    """Push verl-sim/verl:<h> to the registry unless it already holds that tag. Returns True when pushed."""
    digest = recipes.verl()
    accept = ", ".join(("application/vnd.docker.distribution.manifest.v2+json", "application/vnd.oci.image.manifest.v1+json"))
    url = "http://127.0.0.1:%d/v2/%s/manifests/%s" % (port, REGISTRY_REPO, digest)
    if _http_status(url, method="HEAD", headers={"Accept": accept}) == 200:
        return False
    target = "127.0.0.1:%d/%s:%s" % (port, REGISTRY_REPO, digest)
    log = LOGS / ("push-%s.log" % prefix)
    docker("tag", "verl-sim/verl:%s" % digest, target, timeout=60)
    try:
        docker("push", target, timeout=900, log=log)
    finally:
        docker("rmi", target, check=False, timeout=60)  # only the extra tag; the image stays
    return True


def _registry_key(every):
    """The registry storage's name for a set of verl images (Recipes): the one image's hash, as before, or a hash of them."""
    digests = [recipes.verl() for recipes in every]
    return digests[0] if len(digests) == 1 else _sha(*digests)[:12]


def _registry_data(digest):
    """The registry's storage for verl image <digest>; storage of other digests that no registry uses is deleted."""
    root = CACHE / "registry"
    root.mkdir(parents=True, exist_ok=True)
    proc = docker("ps", "-a", "--filter", "label=%s.registry-data" % LABEL, "--format", '{{.Label "%s.registry-data"}}' % LABEL,
                  timeout=30)
    in_use = set(proc.stdout.split()) | {digest}
    for folder in root.iterdir():
        if folder.is_dir() and folder.name not in in_use:
            shutil.rmtree(folder)
    data = root / digest
    data.mkdir(exist_ok=True)
    return data


def _wait_dockerd(names):
    """Wait (bounded) until every node's inner engine answers; fail with the node's dockerd log."""
    deadline = time.monotonic() + DOCKERD_TIMEOUT
    versions = {}
    for name in names:
        while True:
            proc = docker("exec", name, "docker", "version", "--format", "{{.Server.Version}}", check=False, timeout=30)
            if proc.returncode == 0 and proc.stdout.strip():
                versions[name] = proc.stdout.strip()
                break
            state = _inspect(name)
            running = state is not None and state["State"].get("Running")
            if not running or time.monotonic() > deadline:
                logs = docker("logs", "--tail", "40", name, check=False, timeout=30)
                why = "exited (%s)" % (state or {}).get("State", {}).get("Status") if not running else \
                    "did not answer within %.0f s (SIM_DOCKERD_TIMEOUT)" % DOCKERD_TIMEOUT
                raise SimError("the Docker engine inside node %s %s. `docker exec %s docker version`: %s\nThe node's dockerd log "
                               "(docker logs %s):\n%s" % (name, why, name, _tail(proc.stderr, 5), name,
                                                          _tail(logs.stdout + logs.stderr)))
            time.sleep(0.3)
    return versions


def _fixture_map(fixtures, count, prefix):
    """{index: file name} from ["node2=FILE", "3=FILE", "<prefix>-node1=FILE"]."""
    chosen = {}
    for item in fixtures or ():
        node, sep, name = item.partition("=")
        match = re.fullmatch(r"(?:%s-)?(?:node)?(\d+)" % re.escape(prefix), node.strip())
        if not sep or not match or not 1 <= int(match.group(1)) <= count:
            raise SimError("--fixture %r: give NODE=FILE with NODE one of node1..node%d (or its number)." % (item, count))
        if not (FIXTURES / name).is_file():
            raise SimError("--fixture %r: %s is not a file in %s." % (item, name, FIXTURES.relative_to(REPO)))
        chosen[int(match.group(1))] = name
    return chosen


def up(nodes=2, fixtures=None, prefix=DEFAULT_PREFIX, registry_port=DEFAULT_REGISTRY_PORT, npu_count=None, verbose=True,
       verls=(DEFAULT_VERL,)):
    """Bring the cluster to the wanted shape (idempotent) and return info(prefix). The registry holds the verl image of
    each release of `verls` (info()'s verl_images; verl_image is the first's)."""
    if not 1 <= nodes <= 200:
        raise SimError("--nodes must be 1..200, not %d" % nodes)
    if not re.fullmatch(r"[a-z0-9][a-z0-9_.-]{0,40}", prefix):
        raise SimError("--prefix %r: use lower-case letters, digits, '-', '_', '.' (at most 41)." % prefix)
    chosen = _fixture_map(fixtures, nodes, prefix)
    started = time.monotonic()
    verls = tuple(dict.fromkeys(verls or (DEFAULT_VERL,)))
    refs = build(verbose=verbose, verl=verls[0])
    for extra in verls[1:]:
        build(verbose=verbose, verl=extra)
    every = [Recipes(verl) for verl in verls]
    recipes = every[0]
    names = _names(prefix)
    changes = []
    with _lock("cluster-%s" % prefix):
        if _ensure_network(prefix):
            changes.append("created network %s" % names["network"])
        existing = _containers(prefix)

        # The registry: host name `registry` on the cluster network, published for pushes from this machine.
        # Its storage is .cache/sim/registry/<verl hash>/, kept between clusters, so that a warm `up` pushes nothing.
        with _lock("registry-cache"):
            data = _registry_data(_registry_key(every))
            spec = _sha(refs["registry"], registry_port, names["network"], data)[:12]
            publish = "127.0.0.1:%d:5000" % registry_port if registry_port else "127.0.0.1::5000"
            _ensure_container(names["registry"], prefix, "registry", spec,
                              ["--hostname", "registry", "--network", names["network"], "--network-alias", "registry",
                               "-p", publish, "-v", "%s:/var/lib/docker-registry" % data,
                               "--label", "%s.registry-data=%s" % (LABEL, data.name), refs["registry"]], existing, changes)
            port = _registry_port(names["registry"])
            if port is None:
                raise SimError("the registry %s publishes no port for 5000/tcp." % names["registry"])
            _wait_registry(names["registry"], port)
            for each in every:
                begin = time.monotonic()
                if _push(each, port, prefix):
                    changes.append("pushed %s (%.1f s)" % (verl_image(each), time.monotonic() - begin))

        # The nodes.
        wanted = []
        for index in range(1, nodes + 1):
            name = node_name(prefix, index)
            env = {"SIM_NPU_FIXTURE": chosen.get(index, DEFAULT_FIXTURE), "SIM_DOCKER_BIP": "10.96.%d.1/24" % index}
            if npu_count:
                env["SIM_NPU_COUNT"] = str(npu_count)
            set_node_memory(prefix, index)
            spec = _sha(refs["node"], names["network"], json.dumps(env, sort_keys=True), " ".join(DIND_OPTIONS), names["ckpts"], SIM_FULL_FS,
                        NODE_MEMORY_KB)[:12]
            argv = ["--hostname", name, "--network", names["network"], *DIND_OPTIONS,
                    "-v", "%s:/proc/meminfo:ro" % meminfo_path(prefix, name),
                    "--mount", "type=volume,dst=/var/lib/docker,volume-label=%s=1,volume-label=%s.prefix=%s" % (LABEL, LABEL, prefix),
                    # One volume on every node at /sim/ckpts: the shared storage verl_ckpts_dir must be on (the pre-check
                    # refuses a checkpoint folder that is not the same storage on every node); `down` removes it.
                    "--mount", "type=volume,src=%s,dst=/sim/ckpts,volume-label=%s=1,volume-label=%s.prefix=%s" % (
                        names["ckpts"], LABEL, LABEL, prefix),
                    # A tiny file system that is full at once (1 MiB of tmpfs): a checkpoint folder without room.
                    "--tmpfs", SIM_FULL_FS]
            for key, value in sorted(env.items()):
                argv += ["-e", "%s=%s" % (key, value)]
            _ensure_container(name, prefix, "node", spec, argv + [refs["node"]], existing, changes)
            wanted.append(name)
        extra = {name: item for name, item in existing.items()
                 if (item["Config"].get("Labels") or {}).get("%s.role" % LABEL) == "node" and name not in wanted}
        if extra:
            _remove_containers(extra)
            changes += ["removed %s (beyond --nodes %d)" % (name, nodes) for name in sorted(extra)]
        _wait_dockerd(wanted)
    result = info(prefix, verls)
    if verbose:
        say("up %s: %s (%.1f s)" % (prefix, "; ".join(changes) if changes else "already up, nothing changed",
                                    time.monotonic() - started))
        _print_summary(result)
    return result


def _remove_containers(containers):
    """Remove containers {name: inspect dict} with their anonymous volumes; returns how many inner containers went too.

    Running nodes are stopped first: that lets each node's dockerd stop its own containers, which removes their
    cgroups. With the host's /sys/fs/cgroup mounted in, those sit beside the node's and would outlive a plain kill.
    """
    nodes = sorted(name for name, item in containers.items() if item["State"].get("Running")
                   and (item["Config"].get("Labels") or {}).get("%s.role" % LABEL) == "node")
    inner = []
    for name in nodes:
        proc = docker("exec", name, "docker", "ps", "-aq", "--no-trunc", check=False, timeout=30)
        inner += proc.stdout.split() if proc.returncode == 0 else []
    if nodes:
        docker("stop", "-t", "30", *nodes, check=False, timeout=180)
    if containers:
        docker("rm", "-f", "-v", *sorted(containers), timeout=180)
    for container_id in inner:
        for path in Path("/sys/fs/cgroup").glob("*/docker/%s" % container_id):
            with contextlib.suppress(OSError):
                path.rmdir()  # only ever succeeds on an empty cgroup
    return len(inner)


@contextlib.contextmanager
def paused(name, tries=6):
    """A node that stops answering, as a hung host does: `docker pause` (its processes frozen) for the block, then unpaused.
    A pause is tried again when runc's cgroup freezer gives up on a busy host ("OCI runtime pause failed: unable to
    freeze", now and then under load: moby/moby#48205); a later try freezes it."""
    for attempt in range(tries):
        proc = docker("pause", name, check=False, timeout=60)
        if proc.returncode == 0:
            break
        if "unable to freeze" not in proc.stderr or attempt == tries - 1:
            raise SimError("`docker pause %s` failed (exit %d): %s" % (name, proc.returncode, proc.stderr.strip()))
        time.sleep(2)
    try:
        yield
    finally:
        docker("unpause", name, check=False, timeout=60)


def prune_cgroups():
    """Remove the empty cgroups that removed nested containers left beside the nodes'; returns how many.

    With the host's /sys/fs/cgroup (v1) mounted into a node, its engine's containers get cgroups at
    /sys/fs/cgroup/<controller>/docker/<id>, beside the node's own. A node removed without stopping its
    containers first (as Molecule's destroy does) leaves them behind, empty. rmdir only ever removes an
    empty cgroup, so a running container (of any engine) is never touched.
    """
    removed = 0
    for path in Path("/sys/fs/cgroup").glob("*/docker/*"):
        if re.fullmatch(r"[0-9a-f]{64}", path.name) and path.is_dir():
            try:
                path.rmdir()
                removed += 1
            except OSError:
                pass  # in use, or not empty
    return removed


def down(prefix=DEFAULT_PREFIX, verbose=True):
    """Remove exactly what `up` created for this prefix: its containers (with their volumes), volumes, network."""
    check_host()
    removed = []
    with _lock("cluster-%s" % prefix):
        containers = _containers(prefix)
        inner = _remove_containers(containers)
        removed += ["container %s" % name for name in sorted(containers)]
        if inner:
            removed.append("%d container(s) inside the nodes" % inner)
        proc = docker("volume", "ls", "-q", "--filter", "label=%s.prefix=%s" % (LABEL, prefix), timeout=30)
        for volume in proc.stdout.split():
            docker("volume", "rm", volume, timeout=60)
            removed.append("volume %s" % volume[:12])
        network = _names(prefix)["network"]
        found = _inspect_network(network)
        if found is not None and (found.get("Labels") or {}).get("%s.prefix" % LABEL) == prefix:
            docker("network", "rm", network, timeout=60)
            removed.append("network %s" % network)
        shutil.rmtree(CACHE / "meminfo" / prefix, ignore_errors=True)
    if verbose:
        say("down %s: %s" % (prefix, ", ".join(removed) if removed else "nothing to remove"))
    return removed


def info(prefix=DEFAULT_PREFIX, verls=(DEFAULT_VERL,)):
    """Image refs, nodes, network, registry: a dict (what `info --json` prints)."""
    recipes = Recipes(verls[0])
    refs = recipes.refs()
    names = _names(prefix)
    containers = _containers(prefix) if shutil.which("docker") else {}
    nodes = []
    for name, item in sorted(containers.items(), key=lambda pair: _node_index(pair[0])):
        if (item["Config"].get("Labels") or {}).get("%s.role" % LABEL) != "node":
            continue
        env = dict(entry.split("=", 1) for entry in item["Config"].get("Env") or [] if "=" in entry)
        network = (item["NetworkSettings"].get("Networks") or {}).get(names["network"]) or {}
        nodes.append({"name": name, "hostname": item["Config"].get("Hostname"), "ip": network.get("IPAddress") or None,
                      "running": bool(item["State"].get("Running")), "fixture": env.get("SIM_NPU_FIXTURE"),
                      "docker_bip": env.get("SIM_DOCKER_BIP"), "image": item["Config"].get("Image")})
    registry = containers.get(names["registry"])
    port = _registry_port(names["registry"]) if registry and registry["State"].get("Running") else None
    return {
        "prefix": prefix,
        "network": names["network"],
        "images": refs,
        "built": {kind: _image_exists(ref) for kind, ref in refs.items()} if shutil.which("docker") else {},
        "verl_image": verl_image(recipes),
        "verl_images": {verl: verl_image(Recipes(verl)) for verl in verls},
        "verl_image_push": ("127.0.0.1:%d/%s:%s" % (port, REGISTRY_REPO, recipes.verl())) if port else None,
        "registry": {"container": names["registry"], "hostname": "registry", "address": "registry:5000",
                     "host_port": port, "running": bool(registry and registry["State"].get("Running"))},
        "nodes": nodes,
        "up": bool(nodes) and all(node["running"] for node in nodes) and bool(registry and registry["State"].get("Running")),
    }


def _node_index(name):
    match = re.search(r"-node(\d+)$", name)
    return int(match.group(1)) if match else 0


def _print_summary(data):
    say("network %s; registry %s (%s, host 127.0.0.1:%s) %s" % (
        data["network"], data["registry"]["container"], data["registry"]["address"], data["registry"]["host_port"],
        "running" if data["registry"]["running"] else "NOT running"))
    for node in data["nodes"]:
        say("  %-22s %-15s %-8s bip %-15s npu-smi: %s" % (node["name"], node["ip"] or "-", "running" if node["running"] else "STOPPED",
                                                          node["docker_bip"], node["fixture"]))
    say("nodes pull the verl image as: %s" % data["verl_image"])


def status(prefix=DEFAULT_PREFIX):
    """Print what is up (and each node's inner containers); returns info()."""
    check_host()
    data = info(prefix)
    if not data["nodes"] and not data["registry"]["running"]:
        say("%s: nothing is up (images built: %s)" % (prefix, ", ".join(k for k, v in data["built"].items() if v) or "none"))
        return data
    _print_summary(data)
    for node in data["nodes"]:
        if not node["running"]:
            continue
        proc = docker("exec", node["name"], "docker", "ps", "-a", "--format", "{{.Names}} {{.Image}} {{.Status}}", check=False, timeout=30)
        inner = proc.stdout.strip().splitlines() if proc.returncode == 0 else ["(inner engine not answering: %s)" % _tail(proc.stderr, 1)]
        for line in inner or ["(no containers)"]:
            say("    %s: %s" % (node["name"], line))
    return data


def push(port):
    """Push the stand-in verl image to a registry published on 127.0.0.1:<port> (unless it holds it already)."""
    check_host()
    recipes = Recipes()
    build(verbose=False)
    begin = time.monotonic()
    pushed = _push(recipes, port, "port-%d" % port)
    say("push: %s (%.1f s)" % ("pushed %s" % verl_image(recipes) if pushed else "the registry already holds %s" % verl_image(recipes),
                               time.monotonic() - begin))
    return pushed


def scenario_env():
    """The environment the Molecule scenarios (extensions/molecule) read: image refs, the registry's storage, the nodes' meminfo."""
    recipes = Recipes()
    refs = recipes.refs()
    with _lock("registry-cache"):
        data = _registry_data(recipes.verl())
    # Every scenario node's /proc/meminfo (its platforms mount it read-only): a training server's memory, as `up` gives its nodes.
    meminfo = CACHE / "meminfo" / "molecule" / "node"
    meminfo.parent.mkdir(parents=True, exist_ok=True)
    text = meminfo_text(NODE_MEMORY_KB, NODE_MEMORY_KB)
    if not meminfo.exists() or meminfo.read_text(encoding="ascii") != text:
        meminfo.write_text(text, encoding="ascii")
    env = {"VERL_SIM_NODE_IMAGE": refs["node"], "VERL_SIM_REGISTRY_IMAGE": refs["registry"],
           "VERL_SIM_VERL_IMAGE": verl_image(recipes), "VERL_SIM_VERL_LOCAL_IMAGE": refs["verl"],
           "VERL_SIM_REGISTRY_DATA": str(data), "VERL_SIM_NODE_MEMINFO": str(meminfo)}
    # Each release's local image (build(verl="all")), e.g. VERL_SIM_VERL_LOCAL_IMAGE_0_9_1: a scenario trains on the release
    # it names (its molecule.yml sets VERL_SIM_VERL_LOCAL_IMAGE from one of them).
    for release in VERL_RELEASES:
        env["VERL_SIM_VERL_LOCAL_IMAGE_%s" % release.replace(".", "_")] = "verl-sim/verl:%s" % Recipes(release).verl()
    return env


def inventory(prefix=DEFAULT_PREFIX):
    """An Ansible inventory (YAML text) for the running nodes: node1 is the Ray head, the others workers."""
    data = info(prefix)
    if not data["nodes"]:
        raise SimError("the cluster %r is not up; run `simcluster.py up` first." % prefix)
    names = [node["name"] for node in data["nodes"]]
    lines = ["---", "# verl-sim cluster %r (tests/sim/simcluster.py inventory); ansible reaches the nodes with docker exec." % prefix,
             "ray_cluster:", "  vars:", "    ansible_connection: verl_sim.cluster.node", "    ansible_pipelining: true",
             "    ansible_python_interpreter: /usr/bin/python3", "    verl_image: %s" % data["verl_image"], "  children:",
             "    ray_head:", "      hosts:", "        %s: {}" % names[0], "    ray_workers:", "      hosts:"]
    lines += ["        %s: {}" % name for name in names[1:]] or []
    if len(names) == 1:
        lines[-1] = "      hosts: {}"
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- command line

def main(argv=None):
    parser = argparse.ArgumentParser(prog="simcluster.py", description=__doc__.split("\n\n", maxsplit=1)[0])
    commands = parser.add_subparsers(dest="command", required=True)
    build_parser = commands.add_parser("build", help="build (or reuse) the images")
    build_parser.add_argument("--verl", default=DEFAULT_VERL, choices=VERL_RELEASES + ("all",),
                              help="the verl release of the verl image (all: every release's)")
    build_parser.add_argument("--without", action="append", choices=WITHOUT, default=[],
                              help="leave a package of the image's stack out (a broken image the deploy must refuse)")
    up_parser = commands.add_parser("up", help="start (or adjust) the cluster; idempotent")
    up_parser.add_argument("--nodes", type=int, default=2)
    up_parser.add_argument("--fixture", action="append", default=[], metavar="NODE=FILE",
                           help="npu-smi capture of a node, e.g. node2=019_error_dcmi_module_initialize_failed_-8005_container.txt")
    up_parser.add_argument("--npu-count", type=int, default=None, help="/dev/davinci0..N-1 on every node (default: from the capture)")
    up_parser.add_argument("--verl", action="append", choices=VERL_RELEASES, default=None,
                           help="a verl release whose image the registry holds (repeat for several; default %s)" % DEFAULT_VERL)
    up_parser.add_argument("--registry-port", type=int, default=DEFAULT_REGISTRY_PORT, help="host port for pushes (0: any free port)")
    commands.add_parser("prune", help="remove verl-sim images of other recipes (unused ones) and stale cache files")
    push_parser = commands.add_parser("push", help="push the stand-in verl image to a registry published on 127.0.0.1:PORT")
    push_parser.add_argument("--port", type=int, required=True)
    commands.add_parser("env", help="print the environment of the Molecule scenarios (export lines)")
    for name in ("up", "down", "status", "info", "inventory"):
        sub = up_parser if name == "up" else commands.add_parser(name)
        sub.add_argument("--prefix", default=DEFAULT_PREFIX)
        if name == "info":
            sub.add_argument("--json", action="store_true", help="print JSON (the default)")
    args = parser.parse_args(argv)
    try:
        if args.command == "build":
            build(verl=args.verl, without=tuple(args.without))
        elif args.command == "up":
            up(args.nodes, args.fixture, args.prefix, args.registry_port, args.npu_count, verls=tuple(args.verl or (DEFAULT_VERL,)))
        elif args.command == "prune":
            prune()
        elif args.command == "push":
            push(args.port)
        elif args.command == "env":
            sys.stdout.write("".join("export %s=%s\n" % (key, shlex.quote(value)) for key, value in sorted(scenario_env().items())))
        elif args.command == "down":
            down(args.prefix)
        elif args.command == "status":
            status(args.prefix)
        elif args.command == "info":
            print(json.dumps(info(args.prefix), indent=2, sort_keys=True))
        elif args.command == "inventory":
            sys.stdout.write(inventory(args.prefix))
    except SimError as exc:
        print("simcluster: ERROR: %s" % exc, file=sys.stderr, flush=True)
        return 1
    except KeyboardInterrupt:
        print("simcluster: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
