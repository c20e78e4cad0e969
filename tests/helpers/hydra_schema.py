"""Validate Hydra override lists against each verl release's own config schema (0.7.0 by default), offline, without torch.

verl's PyPI wheel ships the whole Hydra config tree (verl/trainer/config/**) and nothing here needs
verl's Python code, so composing needs only hydra-core and omegaconf:

* verl_config_dir() -- the wheel's config tree plus the vendored DAPO overlay
  (tests/helpers/verl_config/dapo_megatron_trainer.yaml), cached under <repo>/.cache/verl-0.7.0/config/.
* verl_source_dir() -- the same wheel's Python files (verl/**.py), cached under
  <repo>/.cache/verl-0.7.0/src/: what tests/helpers/verl_config/verl_checks.py runs verl's own config checks from.
* verl_refusals(cfg, algorithm) -- what verl's own config checks refuse in a composed config
  (tests/helpers/verl_config/verl_checks.py, run from verl_source_dir()).
* compose(overrides, config_name) -- compose `dapo_megatron_trainer` (DAPO; or `ppo_megatron_trainer`,
  GRPO) with the overrides and resolve every interpolation; raises ComposeError on anything Hydra or
  OmegaConf refuses.
* overrides_from_argv(argv, algorithm) -- the overrides of a `python3 -m recipe.dapo.main_dapo ...`
  (or, for GRPO, `python3 -m verl.trainer.main_ppo ...`) argument list.

Timings (this 2-vCPU machine, hydra-core 1.3.2, the ~85 overrides of run_training.sh): a full
Hydra composition costs about 0.8-0.9 s, 0.65 s of it loading the ~20 YAML files of the defaults
tree, which is the same for every call; 256 of them would take four minutes. So compose() composes
the defaults tree once per process with hydra.compose() and then applies each override list with
Hydra's own parser and Hydra's own override step (ConfigLoaderImpl._apply_overrides_to_config, the
very function hydra.compose() runs after building the defaults tree): about 0.12 s per call (a copy
of the base, unpickled, 0.005 s: copy.deepcopy() took 0.016 s; apply 0.025 s; resolving every
interpolation 0.09 s; parsed lines are remembered). Overrides that could change the defaults tree
itself (config-group choices such as `actor=dp_actor`, `@package`, `hydra.*`, sweeps) always take the full path, and
compose(overrides, full=True) runs hydra.initialize_config_dir() + hydra.compose() for the call;
tests/test_hydra_schema.py proves both paths give the same config and the same errors.
"""
from __future__ import annotations

import functools
import hashlib
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import warnings
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DAPO_OVERLAY = REPO / "tests" / "helpers" / "verl_config" / "dapo_megatron_trainer.yaml"

VERL_VERSION = "0.7.0"
# sha256 of each PyPI upload verl-<version>-py3-none-any.whl the proofs compose against: one per profile of the release
# table (plugins/module_utils/_versions.py) but 0.9.0, whose lines are 0.9.1's plus 0.8.0's grad_offload. A different
# value means the file on PyPI (or the mirror) is not the one the validation was written against.
WHEELS = {
    "0.7.0": "676d40f12214df482ec2d2298dc1e8590966ce75a1ab8a5e5afaf26d31cb58fd",  # 1,064,052 bytes
    "0.7.1": "0f7fb1dd6a37d20f7d8795c65ed0d1b9797ffb9947f283bbefd758dced08e216",
    "0.8.0": "4e32830aae80771ee3b5f0d26a2b794d793f3bcece67aff07c2a7c62e948714f",
    "0.9.1": "db6e6f2a8d9d5808d9ec32d357a42319fdc6967df688ff9d9810050f49bfdd14",
}
PROFILES = tuple(WHEELS)  # the profiles proven against their own wheel
WHEEL_SHA256 = WHEELS[VERL_VERSION]
WHEEL_NAME = "verl-%s-py3-none-any.whl" % VERL_VERSION
# Optional: a folder holding copies of these wheels (or the path of the 0.7.0 wheel), for machines without PyPI
# (each checked against its sha256 too).
WHEEL_ENV = "VERL_DEPLOY_VERL_WHEEL"
# The recipe overlay, where the profile runs an in-tree recipe (0.7.0: recipe/dapo/config/dapo_megatron_trainer.yaml).
OVERLAY_PROFILES = ("0.7.0",)


def cache_dir(version=VERL_VERSION):
    return REPO / ".cache" / ("verl-%s" % version)


CACHE = cache_dir()
CONFIG_DIR = CACHE / "config"
SOURCE_DIR = CACHE / "src"
WHEEL_CONFIG_PREFIX = "verl/trainer/config/"
WHEEL_SOURCE_PREFIX = "verl/"
# Written last into the tree before it is renamed into place: its presence means "complete".
MARKER = ".verl-deploy-complete"


def entry_points(profile=VERL_VERSION):
    """verl_algorithm -> (the module run_training.sh starts, its Hydra config) in a profile, from the release table.
    `--config-path=config` is relative to the module's own folder: recipe/dapo/config for 0.7.0's DAPO, verl/trainer/config
    for the others."""
    from ansible_collections.verl.deploy.plugins.module_utils import _algorithms, _versions

    return {key: _versions.entry_of(key, profile) for key in _algorithms.CHOICES}


ENTRY_POINTS = entry_points()
CONFIG_NAME = ENTRY_POINTS["dapo"][1]


def argv_head(algorithm="dapo", profile=VERL_VERSION):
    module, config_name = entry_points(profile)[algorithm]
    return ["-m", module, "--config-path=config", "--config-name=%s" % config_name]


ARGV_HEAD = argv_head("dapo")

# The overlay's `hydra.searchpath: [file://verl/trainer/config]` is relative to the working
# directory of a real launch (/verl); here the files sit in the primary config dir instead.
_SEARCHPATH_WARNING = r"provider=hydra\.searchpath in main, path=verl/trainer/config is not available"


class ComposeError(Exception):
    """Hydra or OmegaConf refused an override list (message starts with the original exception type)."""


# --------------------------------------------------------------------------- the config tree

def _checked(target, version):
    found = (target / MARKER).read_text().strip()
    if found != WHEELS[version]:
        raise RuntimeError("%s was built from a wheel with sha256 %s, not the pinned %s. Fix: delete %s and run again."
                           % (target, found, WHEELS[version], cache_dir(version)))
    return target


def verl_source_dir(version=VERL_VERSION):
    """A folder holding the pinned verl wheel's Python files at their paths (verl/utils/config.py, ...).

    Built once into <repo>/.cache/verl-<version>/src/ (gitignored) from the same wheel as verl_config_dir(),
    in the same race-safe way; raises RuntimeError (never skips) when the wheel cannot be obtained."""
    target = cache_dir(version) / "src"
    if not (target / MARKER).is_file():
        _build_tree(target, _extract_source, version)
    return _checked(target, version)


def verl_refusals(cfg, algorithm="dapo", profile=VERL_VERSION):
    """What the profile's verl's own config checks refuse in a composed config, for the algorithm's entry point: [] or
    [{"check", "error", "exception"}] (tests/helpers/verl_config/verl_checks.py)."""
    return verl_checks_module().refusals(cfg, entry_points(profile)[algorithm][0], verl_source_dir(profile))


@functools.lru_cache(maxsize=1)
def verl_checks_module():
    """tests/helpers/verl_config/verl_checks.py, imported as the plain module it is (the stand-in trainer imports it the same way)."""
    folder = str(REPO / "tests" / "helpers" / "verl_config")
    if folder not in sys.path:
        sys.path.insert(0, folder)
    import verl_checks  # pylint: disable=import-outside-toplevel

    return verl_checks


def verl_config_dir(version=VERL_VERSION):
    """The directory holding the verl wheel's config tree (and for 0.7.0 the DAPO overlay), ready for Hydra.

    Built once into <repo>/.cache/verl-<version>/config/ (gitignored): downloads the wheel with pip
    (or takes it from $VERL_DEPLOY_VERL_WHEEL), checks its sha256, unpacks only verl/trainer/config/**, adds
    tests/helpers/verl_config/dapo_megatron_trainer.yaml where the profile runs the recipe. Safe with several
    pytest-xdist workers: each builds in its own temporary directory and renames it into place; a loser of that race
    uses the winner's. Raises RuntimeError (never skips) when the wheel cannot be obtained.
    """
    target = cache_dir(version) / "config"
    if not (target / MARKER).is_file():
        _build_tree(target, _extract_config, version)
    _checked(target, version)
    if version in OVERLAY_PROFILES:
        _sync_overlay(target)
    return target


def _build_tree(target, extract, version=VERL_VERSION):
    """Obtain the wheel, extract(wheel, tree) into a temporary tree, rename it to `target` (atomic)."""
    cache = cache_dir(version)
    cache.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".build-", dir=cache))
    try:
        wheel = _obtain_wheel(work, version)
        tree = work / target.name
        extract(wheel, tree)
        (tree / MARKER).write_text(WHEELS[version] + "\n")
        try:
            os.rename(tree, target)  # atomic; fails if another worker got there first
        except OSError:
            if not (target / MARKER).is_file():
                raise RuntimeError("%s exists but is incomplete (no %s). Fix: delete %s and run again." % (target, MARKER, cache))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _extract_source(wheel, tree):
    """The wheel's verl/**.py, at their paths under `tree`."""
    tree.mkdir()
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            if not name.startswith(WHEEL_SOURCE_PREFIX) or not name.endswith(".py"):
                continue
            if name.startswith("/") or ".." in name.split("/"):
                raise RuntimeError("%s holds a suspicious path %r." % (wheel, name))
            target = tree / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(archive.read(name))
    if not (tree / "verl" / "utils" / "config.py").is_file():
        raise RuntimeError("%s has no verl/utils/config.py." % wheel)


def _obtain_wheel(work, version=VERL_VERSION):
    name = "verl-%s-py3-none-any.whl" % version
    local = os.environ.get(WHEEL_ENV)
    if local:
        wheel = Path(local)
        wheel = wheel / name if wheel.is_dir() else wheel
        if not wheel.is_file():
            raise RuntimeError("%s=%s has no %s." % (WHEEL_ENV, local, name))
    else:
        download = work / "download"
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--disable-pip-version-check",
                   "--quiet", "verl==%s" % version, "-d", str(download)]
        try:
            proc = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise RuntimeError("Could not run `%s`: %s" % (" ".join(command), exc)) from exc
        wheel = download / name
        if proc.returncode != 0 or not wheel.is_file():
            raise RuntimeError(
                "Could not download verl %s from PyPI, which the Hydra schema validation needs (it is not skipped on purpose).\n"
                "Command: %s\nExit code: %s\n%s\nFix: give the tests access to PyPI, or point %s at a folder with a copy of %s."
                % (version, " ".join(command), proc.returncode, (proc.stderr or proc.stdout)[-3000:], WHEEL_ENV, name))
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    if digest != WHEELS[version]:
        raise RuntimeError("%s has sha256 %s, but verl %s was pinned at %s: the upload changed (or the file is not the PyPI "
                           "wheel). Check it before updating WHEELS in %s." % (wheel, digest, version, WHEELS[version], __file__))
    return wheel


def _extract_config(wheel, tree):
    tree.mkdir()
    count = 0
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            if not name.startswith(WHEEL_CONFIG_PREFIX) or name.endswith("/"):
                continue
            relative = name[len(WHEEL_CONFIG_PREFIX):]
            if relative.startswith("/") or ".." in relative.split("/"):
                raise RuntimeError("%s holds a suspicious path %r." % (wheel, name))
            target = tree / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(archive.read(name))
            count += 1
    if not (tree / "ppo_megatron_trainer.yaml").is_file():
        raise RuntimeError("%s has no %sppo_megatron_trainer.yaml (%d config files found)." % (wheel, WHEEL_CONFIG_PREFIX, count))


def _sync_overlay(config_dir=CONFIG_DIR):
    """Keep the cached overlay equal to tests/helpers/verl_config/dapo_megatron_trainer.yaml (it may be edited later)."""
    wanted = DAPO_OVERLAY.read_bytes()
    cached = config_dir / DAPO_OVERLAY.name
    if cached.is_file() and cached.read_bytes() == wanted:
        return
    handle, temporary = tempfile.mkstemp(prefix=".overlay-", dir=config_dir)
    with os.fdopen(handle, "wb") as stream:
        stream.write(wanted)
    os.replace(temporary, cached)  # atomic; concurrent workers write the same bytes
    _base.cache_clear()


# --------------------------------------------------------------------------- composing

def compose(overrides, config_name=CONFIG_NAME, full=False, config_dir=None, node=False):
    """Compose `config_name` with `overrides` against verl 0.7.0's schema; a plain dict, fully resolved
    (node=True: the resolved OmegaConf DictConfig itself, as verl's code receives it).

    Raises ComposeError for anything Hydra refuses (an unknown key without `+`, `+` on a key that
    already holds a non-null value, a grammar error) and for interpolations that do not resolve.
    `full=True` runs hydra.initialize_config_dir() + hydra.compose() for this very call (about
    0.9 s); the default reuses a composed defaults tree and applies the overrides with Hydra's own
    code (about 0.16 s), see the module docstring.
    """
    config_dir = str(config_dir or verl_config_dir())
    overrides = [str(item) for item in overrides]
    if full:
        return _resolve(_compose_full(config_dir, config_name, overrides), node)
    base, repository = _base(config_dir, config_name)
    parsed = [_parse(line) for line in overrides]
    if any(_changes_defaults(override, repository) for override in parsed):
        return _resolve(_compose_full(config_dir, config_name, overrides), node)
    from hydra._internal.config_loader_impl import ConfigLoaderImpl

    cfg = pickle.loads(base)  # a fresh copy, as copy.deepcopy() makes it but in a third of the time
    try:
        ConfigLoaderImpl._apply_overrides_to_config(parsed, cfg)  # pylint: disable=protected-access
    except Exception as exc:
        raise _error(exc) from exc
    return _resolve(cfg, node)


# Parsed overrides by text: the 128 masks share almost every line, and parsing is a fifth of a call.
# Hydra only reads an Override (OmegaConf copies its value into the config), so sharing one is safe.
_PARSED = {}
_GROUPS = {}
_PARSER = []


def _parse(line):
    """hydra's parse_overrides() for one line, remembered; ComposeError on a grammar error."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    if not _PARSER:
        _PARSER.append(OverridesParser.create())
    if line not in _PARSED:
        try:
            _PARSED[line] = _PARSER[0].parse_overrides(overrides=[line])[0]
        except Exception as exc:  # OverrideParseException
            raise _error(exc) from exc
    return _PARSED[line]


def _changes_defaults(override, repository):
    """True when hydra.compose() would treat the override as more than a value (see hydra's Overrides class)."""
    if override.is_hydra_override() or override.is_sweep_override() or override.package is not None:
        return True
    key = (repository, override.key_or_group)
    if key not in _GROUPS:
        _GROUPS[key] = repository.group_exists(override.key_or_group)
    return _GROUPS[key] and not isinstance(override.value(), dict)


@functools.lru_cache(maxsize=4)
def _base(config_dir, config_name):
    """(config composed without overrides, pickled; Hydra's config repository) -- once per process."""
    from hydra.core.global_hydra import GlobalHydra

    holder = {}

    def grab():
        holder["repository"] = GlobalHydra.instance().config_loader().repository

    base = _compose_full(config_dir, config_name, [], inside=grab)
    return pickle.dumps(base), holder["repository"]


def _compose_full(config_dir, config_name, overrides, inside=None):
    """hydra.initialize_config_dir() + hydra.compose(); Hydra's global state is left as it was found."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.initialize import get_gh_backup, restore_gh_from_backup

    saved = get_gh_backup() if GlobalHydra.instance().is_initialized() else None
    GlobalHydra.instance().clear()
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=_SEARCHPATH_WARNING, category=UserWarning)
            with initialize_config_dir(config_dir=config_dir, version_base=None):
                try:
                    cfg = hydra_compose(config_name=config_name, overrides=overrides)
                except Exception as exc:
                    raise _error(exc) from exc
                if inside is not None:
                    inside()
    finally:
        if saved is not None:
            restore_gh_from_backup(saved)
    return cfg


@functools.lru_cache(maxsize=1)
def _remember_interpolation_parses():
    """OmegaConf parses an interpolation's text again each time it resolves it (ANTLR, about 1 ms: a third of a mask's
    proof, 65 a call). The parse tree is a function of the text alone, and OmegaConf's resolver only reads it, so every
    proof in this process shares one tree per text; its tokens keep their own input, so a later parse changes none."""
    from omegaconf import _utils, base, grammar_parser

    remembered = functools.lru_cache(maxsize=None)(grammar_parser.parse)
    for module in (base, _utils):
        if module.parse is grammar_parser.parse:
            module.parse = remembered


def _resolve(cfg, node=False):
    from omegaconf import OmegaConf

    _remember_interpolation_parses()
    try:
        if node:
            OmegaConf.resolve(cfg)  # cfg is this call's own copy
            return cfg
        return OmegaConf.to_container(cfg, resolve=True)
    except Exception as exc:
        raise _error(exc) from exc


def _error(exc):
    message = "%s: %s" % (type(exc).__name__, exc)
    cause = exc.__cause__
    if cause is not None and str(cause) not in message:
        message += "\n(caused by %s: %s)" % (type(cause).__name__, cause)
    return ComposeError(message)


# --------------------------------------------------------------------------- the recorded command

def overrides_from_argv(argv, algorithm="dapo", profile=VERL_VERSION):
    """The Hydra overrides of the stand-in python3's recorded argv.

    The argv must start exactly with `-m recipe.dapo.main_dapo --config-path=config
    --config-name=dapo_megatron_trainer` (GRPO: `-m verl.trainer.main_ppo --config-path=config
    --config-name=ppo_megatron_trainer`); everything after it must be overrides (no further flags).
    """
    argv, head = list(argv or []), argv_head(algorithm, profile)
    if argv[:len(head)] != head:
        raise AssertionError("the training command does not start with %r; it starts with %r" % (head, argv[:len(head)]))
    overrides = argv[len(head):]
    flags = [item for item in overrides if item.startswith("-")]
    if flags:
        raise AssertionError("the training command has flags after its head, not Hydra overrides: %r" % flags)
    return overrides
