"""verl's own config checks of each release the collection renders for (0.7.0, 0.7.1, 0.8.0, 0.9.1), run unmodified
from that release's source and without torch: the test oracle.

What a training start runs of verl's code before any model is loaded, and what it refuses (line numbers of 0.7.0;
the other releases' in brackets, from their PyPI wheels):

* verl/utils/config.py validate_config() -- verl.trainer.main_ppo runs it (verl/trainer/main_ppo.py:292-296, after
  the reference worker is added [0.7.1 :299, 0.8.0 :255, 0.9.1 :177]); 0.7.0's recipe.dapo.main_dapo does not, but
  its Megatron workers fail on the same arithmetic later ("only support equal chunk"), so it is run for both entry
  points. It builds the actor's config dataclass (McoreActorConfig, with McoreEngineConfig, OptimizerConfig,
  CheckpointConfig, ProfilerConfig inside; 0.7.1 on also QATConfig, verl/utils/qat/core.py) through Hydra's
  instantiate, so their __post_init__ and validate() run too (verl/workers/config/).
* RolloutConfig.__post_init__ -- every Megatron worker converts actor_rollout_ref.rollout to it
  (verl/workers/megatron_workers.py:490 [0.7.1 on: the engine workers, verl/workers/engine_workers.py:546, 0.8.0
  :592, 0.9.1 :651; 0.8.0 removed the legacy megatron_workers.py]).
* CriticConfig (McoreCriticConfig) -- when verl needs a critic (verl/trainer/ppo/utils.py:86-97 [0.8.0 on :96],
  need_critic; never for GRPO or DAPO as rendered here, checked anyway), validate_config builds it.
* The DAPO reward manager's constructor asserts (verl/workers/reward_manager/dapo.py:45-51 [0.7.1 on :46-53]),
  called as each entry point calls it: 0.7.0's main_dapo passes max_resp_len=data.max_response_length and
  overlong_buffer_cfg=reward_model.overlong_buffer (recipe/dapo/main_dapo.py:152-167); 0.7.0's main_ppo passes
  reward_model.reward_kwargs (verl/trainer/main_ppo.py:313-318), when reward_manager is dapo. From 0.7.1 main_ppo
  runs every algorithm here (the recipe is no longer in verl's package) and reads the `reward` group
  (verl/trainer/config/reward/reward.yaml): reward.reward_manager.name and reward.reward_kwargs. Its reward loop's
  DAPO manager (verl/experimental/reward_loop/reward_manager/dapo.py:33-48) makes the same asserts on the same
  reward_kwargs as the file run here (0.9.1: only when the overlong buffer is enabled, as rendered).

Which release's checks run is the source folder's: each wheel's files are loaded and cached per folder, so the
releases never mix (a file only some releases have is in OPTIONAL).

How it loads verl without torch: the package __init__s that import torch (verl/__init__.py,
verl/utils/__init__.py, verl/utils/profiler/__init__.py, verl/workers/reward_manager/__init__.py) are
not run; stand-in package modules take their place, holding the real submodules the checks need. The
few names those submodules import but never call during the checks (torch, transformers,
verl.DataProto, hf_tokenizer, copy_to_local, ...) are objects that raise if called or used. Every
module that holds a check (listed in SOURCES) is executed from verl's file as it is.

A plain module (no pytest): tests/sim/stand_in_main_dapo.py can use it too. Usage:

    import verl_checks                                # tests/verl_config on sys.path
    refusals = verl_checks.refusals(config, "recipe.dapo.main_dapo", source_dir)   # or "verl.trainer.main_ppo"
    # config: the composed, resolved config (a dict or an OmegaConf DictConfig); source_dir: a folder
    # holding verl's files at their paths (verl/utils/config.py, ...), e.g. the wheel unpacked, or a
    # verl checkout such as /verl in the simulated cluster's image. [] when verl accepts it, else one
    # {"check", "error"} per check that refused, "error" starting with the exception's type.
    verl_checks.raise_first(refusals)                # raises the first refusal's exception again, as verl would

The stand-in modules live in sys.modules only while a check runs (and while the files are loaded), so
a real verl, torch or transformers elsewhere in the process is never shadowed for long.
"""
from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import sys
import threading
import types
import warnings

# verl's files whose code runs, at their paths in each wheel (the same at each release's tag).
SOURCES = (
    "verl/base_config.py",
    "verl/utils/config.py",
    "verl/utils/qat/core.py",  # 0.7.1 on: QATConfig, which the actor's config imports (the package __init__ needs triton)
    "verl/utils/profiler/config.py",
    "verl/trainer/config/__init__.py",
    "verl/trainer/config/algorithm.py",
    "verl/trainer/config/config.py",
    "verl/workers/config/__init__.py",
    "verl/workers/config/actor.py",
    "verl/workers/config/critic.py",
    "verl/workers/config/engine.py",
    "verl/workers/config/megatron_peft.py",
    "verl/workers/config/model.py",
    "verl/workers/config/optimizer.py",
    "verl/workers/config/reward_model.py",  # 0.7.0 only (0.7.1 moved the reward config to verl/trainer/config)
    "verl/workers/config/rollout.py",
    "verl/workers/reward_manager/abstract.py",
    "verl/workers/reward_manager/registry.py",
    "verl/workers/reward_manager/dapo.py",
)
ENTRY_POINTS = ("recipe.dapo.main_dapo", "verl.trainer.main_ppo")
# Packages whose __init__ imports torch: never executed, a stand-in package holds their real submodules.
BYPASSED = ("verl", "verl.utils", "verl.utils.profiler", "verl.utils.qat", "verl.workers", "verl.workers.reward_manager",
            "verl.trainer")
# SOURCES that only some releases have (0.7.0: its reward model config; 0.7.1 on: QAT's config).
OPTIONAL = ("verl/workers/config/reward_model.py", "verl/utils/qat/core.py")
# Modules the checks' files import from but never call during the checks: name -> attributes.
NEVER_CALLED = {
    "torch": (),
    "torch.nn": (),
    "transformers": ("AutoConfig",),
    "verl.protocol": ("DataProto",),
    "verl.utils.fs": ("copy_to_local",),
    "verl.utils.import_utils": ("import_external_libs",),
    "verl.utils.model": ("get_generation_config", "update_model_config"),
    "verl.utils.reward_score": ("default_compute_score",),
}
# Names a bypassed package exports that the files import from it (all never called).
PACKAGE_NAMES = {"verl": ("DataProto",), "verl.utils": ("hf_processor", "hf_tokenizer")}

_LOCK = threading.Lock()
_LOADED = {}


class NeverCalled:
    """Stands in for something verl's config checks import but do not use: any call raises.

    Attribute access gives another stand-in (so `torch.Tensor | None` in a signature still works)."""

    def __init__(self, name):
        self._name = name

    def __getattr__(self, attribute):
        if attribute.startswith("__") and attribute.endswith("__"):
            raise AttributeError(attribute)
        return NeverCalled("%s.%s" % (self._name, attribute))

    def __call__(self, *args, **kwargs):
        raise RuntimeError("verl_checks: %s is a stand-in (verl's config checks were not expected to call it)" % self._name)

    def __or__(self, other):
        return self

    __ror__ = __or__

    def __getitem__(self, item):
        return self

    def __repr__(self):
        return "<stand-in %s>" % self._name


def _package(name, path=None):
    module = types.ModuleType(name)
    module.__path__ = [path] if path else []
    module.__package__ = name
    for attribute in PACKAGE_NAMES.get(name, ()):
        setattr(module, attribute, NeverCalled("%s.%s" % (name, attribute)))
    return module


def _stand_in(name):
    module = types.ModuleType(name)
    for attribute in NEVER_CALLED[name]:
        setattr(module, attribute, NeverCalled("%s.%s" % (name, attribute)))
    if name in ("torch", "torch.nn"):
        module.__getattr__ = lambda attribute, name=name: NeverCalled("%s.%s" % (name, attribute))
    return module


@contextlib.contextmanager
def _installed(modules):
    """Put `modules` into sys.modules (and each into its parent's attributes) for the duration."""
    saved = {name: sys.modules.get(name) for name in modules}
    sys.modules.update(modules)
    try:
        yield
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


def _link(modules):
    for name, module in modules.items():
        parent, _dot, child = name.rpartition(".")
        if parent in modules:
            setattr(modules[parent], child, module)


def load(source_dir):
    """verl's check modules loaded from `source_dir` (cached per folder): {module name: module}."""
    source_dir = os.path.abspath(str(source_dir))
    with _LOCK:
        if source_dir not in _LOADED:
            _LOADED[source_dir] = _load(source_dir)
        return _LOADED[source_dir]


def _load(source_dir):
    missing = [path for path in SOURCES if path not in OPTIONAL and not os.path.isfile(os.path.join(source_dir, path))]
    if missing:
        raise RuntimeError("verl_checks: %s lacks verl's %s. Fix: point it at a verl release's source (its wheel unpacked)."
                           % (source_dir, ", ".join(missing)))
    modules = {name: _package(name, os.path.join(source_dir, *name.split("."))) for name in BYPASSED}
    modules.update({name: _stand_in(name) for name in NEVER_CALLED})
    _link(modules)
    before = set(sys.modules)
    with _installed(modules), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # The profiler package's ProfilerConfig is its config module's (verl/utils/profiler/__init__.py:18, via .profile).
        for path in (path for path in SOURCES if os.path.isfile(os.path.join(source_dir, path))):
            name = path[:-len(".py")].replace("/", ".")
            if name.endswith(".__init__"):
                name = name[:-len(".__init__")]
            if name in sys.modules and name not in BYPASSED and name not in NEVER_CALLED:
                continue  # a package __init__ already imported it as a submodule
            module = _exec(name, os.path.join(source_dir, path), is_package=path.endswith("__init__.py"))
            modules[name] = module
            if name == "verl.utils.qat.core":  # what verl/utils/qat/__init__.py:33 exports of it
                modules["verl.utils.qat"].QATConfig = module.QATConfig
            if name == "verl.utils.profiler.config":
                modules["verl.utils.profiler"].ProfilerConfig = module.ProfilerConfig
            if name == "verl.workers.reward_manager.registry":  # what verl/workers/reward_manager/__init__.py:15 exports
                modules["verl.workers.reward_manager"].register = module.register
                modules["verl.workers.reward_manager"].get_reward_manager_cls = module.get_reward_manager_cls
        # Every verl module the files imported (e.g. verl.workers.config.actor via the package __init__).
        modules.update({name: module for name, module in sys.modules.items() if name == "verl" or name.startswith("verl.")})
        _link(modules)
        for name in set(sys.modules) - before:  # what the files imported of verl: only while a check runs
            if name in modules:
                del sys.modules[name]
    return modules


def _exec(name, path, is_package):
    spec = importlib.util.spec_from_file_location(name, path, submodule_search_locations=[os.path.dirname(path)] if is_package else None)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    parent, _dot, child = name.rpartition(".")
    if parent in sys.modules:
        setattr(sys.modules[parent], child, module)
    spec.loader.exec_module(module)
    return module


# --------------------------------------------------------------------------- the checks

def refusals(config, entry_point, source_dir):
    """What verl's own checks refuse in `config` for `entry_point`: [] or [{"check", "error"}, ...]."""
    from omegaconf import DictConfig, OmegaConf

    if entry_point not in ENTRY_POINTS:
        raise ValueError("verl_checks: entry point %r is not one of %s" % (entry_point, ", ".join(ENTRY_POINTS)))
    modules = load(source_dir)
    cfg = config if isinstance(config, DictConfig) else OmegaConf.create(config)
    found = []
    with _installed(modules), warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        for check, run in _checks(modules, cfg, entry_point):
            try:
                run()
            except Exception as exc:  # each check's refusal, whatever verl raises
                found.append({"check": check, "error": "%s: %s" % (type(exc).__name__, exc), "exception": exc})
    return found


def raise_first(found):
    """Raise the first refusal's own exception (as verl would stop), if there is one."""
    if found:
        raise found[0]["exception"]


def _checks(modules, cfg, entry_point):
    config_utils = modules["verl.utils.config"]

    def validate():
        # verl/trainer/main_ppo.py:242-256 (add_ref_policy_worker, called at :289): the reference worker exists with a
        # KL loss or a KL reward; verl/trainer/ppo/utils.py:86-97 need_critic(): critic.enable, else the GAE estimator.
        uses_reference = bool(cfg.algorithm.use_kl_in_reward or cfg.actor_rollout_ref.actor.use_kl_loss)
        uses_critic = bool(cfg.critic.enable) if cfg.critic.get("enable") is not None else cfg.algorithm.adv_estimator == "gae"
        config_utils.validate_config(config=cfg, use_reference_policy=uses_reference, use_critic=uses_critic)

    yield "validate_config", validate
    yield "RolloutConfig", lambda: config_utils.omega_conf_to_dataclass(cfg.actor_rollout_ref.rollout)
    yield "reward manager", lambda: _reward_manager(modules, cfg, entry_point)


def _reward_manager(modules, cfg, entry_point):
    """The reward manager's constructor, with the arguments the entry point gives it (recipe/dapo/main_dapo.py:152-167,
    verl/trainer/main_ppo.py:313-318 via verl/trainer/ppo/reward.py:99-175 load_reward_manager)."""
    if cfg.get("reward") is not None and entry_point != "recipe.dapo.main_dapo":
        # 0.7.1 on: the `reward` group (verl/trainer/config/reward/reward.yaml); what main_ppo reads after migrating the legacy
        # reward_model.* keys (0.7.1, 0.8.x) -- the migration is not run here: the rendered lines use the new keys.
        name, kwargs = cfg.reward.reward_manager.name, dict(cfg.reward.get("reward_kwargs") or {})
    else:
        name = cfg.reward_manager.name if cfg.get("reward_manager") is not None else cfg.reward_model.reward_manager
        if entry_point == "recipe.dapo.main_dapo":
            kwargs = {"max_resp_len": cfg.data.max_response_length, "overlong_buffer_cfg": cfg.reward_model.overlong_buffer}
        else:
            kwargs = dict(cfg.reward_model.get("reward_kwargs", {}))
    if name != "dapo":
        return  # naive (GRPO here): its constructor checks nothing
    manager = modules["verl.workers.reward_manager.registry"].get_reward_manager_cls(name)
    manager(tokenizer=None, num_examine=0, compute_score=None, reward_fn_key=cfg.data.reward_fn_key, **kwargs)
