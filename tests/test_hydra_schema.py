"""The rendered training command against verl 0.7.0's own Hydra schema (offline, no torch).

For every mask, every algorithm, SwanLab off and on: render run_training.sh, EXECUTE it with a
stand-in python3, take the argument list it recorded and compose it with Hydra against the config
tree of the verl 0.7.0 wheel plus the DAPO overlay (tests/helpers/hydra_schema.py): DAPO's against
`dapo_megatron_trainer`, GRPO's against `ppo_megatron_trainer`, the config each entry point is
started with. That sweep is check_rendered_command_composes() below, run by tests/test_masks.py on the
very command it executes for its exact argument list (one render and run per case for both proofs).
Every override must be accepted (right key, right `+`/`++`, valid grammar, resolvable
interpolations) and the composed config must hold what the mask and the algorithm ask for. Negative
tests prove the validator bites, and that the DAPO-only overrides GRPO leaves out would not compose.

The wheel is downloaded from PyPI on first use (cached in .cache/); if that fails the tests ERROR
on purpose: a silently skipped schema check would look like a passing one.
"""
from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from ansible_collections.verl.deploy.plugins.module_utils._algorithms import CHOICES
from ansible_collections.verl.deploy.plugins.module_utils._versions import entry_of
from helpers.hydra_schema import (
    ARGV_HEAD,
    DAPO_OVERLAY,
    ENTRY_POINTS,
    MARKER,
    PROFILES,
    WHEEL_SHA256,
    ComposeError,
    argv_head,
    compose,
    overrides_from_argv,
    verl_config_dir,
    verl_refusals,
)
from helpers.launch_helpers import SECRET_KEY, SWANLAB_ON, all_masks, launch_ok, render, run_training, stand_in_path

MEGATRON_OVERRIDE = "+actor_rollout_ref.actor.megatron.override_transformer_config."


@pytest.fixture(scope="session", autouse=True)
def schema_dir():
    """verl 0.7.0's config tree; raises (test error, not skip) when the wheel cannot be had."""
    return verl_config_dir()


def rendered_command(folder, mask="0000000", swanlab=False, **settings):
    """Render run_training.sh for one host, execute it with the stand-in python3; (config, argv)."""
    kwargs = {"verl_feature_mask": mask, "verl_workdir": str(folder / "verl"), "verl_log_dir": str(folder / "logs")}
    if swanlab:
        kwargs.update(SWANLAB_ON)
        kwargs["api_key"] = SECRET_KEY
    kwargs.update(settings)
    config = launch_ok(**kwargs)
    script = folder / "run_training.sh"
    script.write_text(render(config, "run_training.sh"))
    script.chmod(0o755)
    (folder / "verl").mkdir()
    proc, argv, cwd = run_training(script, stand_in_path(folder), folder / "record")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert argv is not None, "run_training.sh never started python3:\n" + proc.stdout + proc.stderr
    assert cwd == str(folder / "verl")
    return config, argv


def bits(mask):
    """{bit: on} straight from the mask string (leftmost = bit 0), independent of the feature table."""
    return {bit: char == "1" for bit, char in enumerate(mask)}


def check_rendered_command_composes(config, argv, mask, swanlab, algorithm):
    """The composition proof of one mask, algorithm and SwanLab choice, given the launch configuration and the argv its
    run_training.sh recorded. tests/test_masks.py calls it for all 128 masks x every algorithm x SwanLab off and on, on
    the command it has just executed and compared line by line: each case is rendered and executed once for both proofs."""
    assert SECRET_KEY not in "\0".join(argv)
    node = compose(overrides_from_argv(argv, algorithm), config_name=ENTRY_POINTS[algorithm][1], node=True)
    cfg = OmegaConf.to_container(node)
    on = bits(mask)
    if not swanlab:  # SwanLab changes trainer.logger alone, which none of verl's config checks reads
        # verl's own config checks (validate_config, the config dataclasses, the DAPO reward manager's assert) accept
        # every command the deploy accepts: the deploy refuses at least what they refuse (tests/test_verl_oracle.py).
        assert [found["error"] for found in verl_refusals(node, algorithm)] == []

    arr = cfg["actor_rollout_ref"]
    actor, ref, rollout = arr["actor"], arr["ref"], arr["rollout"]
    transformer = actor["megatron"]["override_transformer_config"]

    # bit 0 Remove Padding: the keys verl 0.7.0's Megatron actor and reference model read (their default is
    # True, so "off" must arrive as False), and the model's, which the new engine workers copy; bit 1 Dynamic Batch Size
    assert actor["megatron"]["use_remove_padding"] is on[0]
    assert ref["megatron"]["use_remove_padding"] is on[0]
    assert arr["model"]["use_remove_padding"] is on[0]
    assert actor["use_dynamic_bsz"] is on[1]
    assert ref["log_prob_use_dynamic_bsz"] is on[1]
    assert rollout["log_prob_use_dynamic_bsz"] is on[1]
    # bit 2 Offload; Swap Optimizer (bit 5) forces optimizer offload off
    assert actor["megatron"]["param_offload"] is on[2]
    assert actor["megatron"]["grad_offload"] is on[2]
    assert actor["megatron"]["optimizer_offload"] is (on[2] and not on[5])
    assert ref["megatron"]["param_offload"] is on[2]
    # bit 3 Prefix Cache: verl 0.7.0 defaults it to true, so "off" must arrive as False
    assert rollout["enable_prefix_caching"] is on[3]
    # bit 4 Recompute (full / block / 8 layers); the schema's own defaults are null
    recompute = (transformer["recompute_granularity"], transformer["recompute_method"], transformer["recompute_num_layers"])
    assert recompute == (("full", "block", 8) if on[4] else (None, None, None))
    # bit 5 Swap Optimizer: a MindSpeed key the schema does not have
    assert transformer.get("swap_optimizer", "absent") == (True if on[5] else "absent")
    # bit 6 VPP; the ref inherits it through ${oc.select:...}
    assert actor["megatron"]["virtual_pipeline_model_parallel_size"] == (2 if on[6] else None)
    assert ref["megatron"]["virtual_pipeline_model_parallel_size"] == (2 if on[6] else None)
    # VPP's documented way out of verl#4815 on 0.7.x: no mbridge; the ref follows the actor (megatron_ref.yaml's oc.select).
    assert actor["megatron"]["use_mbridge"] is not on[6] and ref["megatron"]["use_mbridge"] is not on[6]

    # Always on
    assert transformer["use_flash_attn"] is True
    assert ref["megatron"]["override_transformer_config"]["use_flash_attn"] is True
    assert actor["megatron"]["tensor_model_parallel_size"] == config["train_tp"] == 4
    assert actor["megatron"]["pipeline_model_parallel_size"] == config["train_pp"] == 2
    assert ref["megatron"]["tensor_model_parallel_size"] == config["train_tp"]
    assert ref["megatron"]["pipeline_model_parallel_size"] == config["train_pp"]
    assert rollout["tensor_model_parallel_size"] == config["gen_tp"] == 4
    assert rollout["name"] == "vllm"
    assert rollout["n"] == 8
    assert rollout["max_num_batched_tokens"] == 1024 + 4096

    # The NPU settings (docs/npu-settings.md)
    assert arr["nccl_timeout"] == 3600
    assert rollout["enforce_eager"] is True
    assert rollout["free_cache_engine"] is True

    data = cfg["data"]
    assert data["train_files"] == "/data/train.parquet"
    assert data["val_files"] == "/data/test.parquet"
    assert data["train_batch_size"] == 32

    reward = cfg["reward_model"]
    assert cfg["algorithm"]["adv_estimator"] == "grpo"
    assert cfg["algorithm"]["use_kl_in_reward"] is False
    # Token-level loss for DAPO (it says so) and GRPO (verl 0.7.0's default); GSPO's loss is sequence-level
    assert actor["loss_agg_mode"] == ("seq-mean-token-mean" if algorithm == "gspo" else "token-mean")
    assert actor["policy_loss"]["loss_mode"] == ("gspo" if algorithm == "gspo" else "vanilla")
    if algorithm == "dapo":
        assert data["gen_batch_size"] == 32  # the overlay's ${data.train_batch_size}, resolved
        assert reward["reward_manager"] == "dapo"
        # The same overlong penalty where verl's reward loop reads it and where main_dapo's reward manager does
        # (verl/experimental/reward_loop/reward_manager/dapo.py:33-35, recipe/dapo/main_dapo.py:152-167 at v0.7.0)
        penalty = {"enable": True, "len": 2048, "penalty_factor": 1.0, "log": False}
        assert reward["reward_kwargs"] == {"overlong_buffer_cfg": penalty, "max_resp_len": 4096}
        assert reward["overlong_buffer"] == penalty and data["max_response_length"] == 4096
        assert reward["use_reward_loop"] is True
        assert (actor["use_kl_loss"], actor["kl_loss_coef"]) == (False, 0.0)
        assert (actor["clip_ratio_low"], actor["clip_ratio_high"], actor["clip_ratio_c"]) == (0.2, 0.28, 10.0)
        assert cfg["algorithm"]["filter_groups"]["enable"] is False
    elif algorithm == "gspo":
        # verl's PPO trainer with GSPO's loss: the DAPO reward manager's penalty only where the reward loop reads it
        assert "gen_batch_size" not in data and "filter_groups" not in cfg["algorithm"]
        assert reward["reward_manager"] == "dapo" and "overlong_buffer" not in reward
        penalty = {"enable": True, "len": 2048, "penalty_factor": 1.0, "log": False}
        assert reward["reward_kwargs"] == {"overlong_buffer_cfg": penalty, "max_resp_len": 4096}
        assert (actor["use_kl_loss"], actor["kl_loss_coef"]) == (False, 0.0)
        assert (actor["clip_ratio_low"], actor["clip_ratio_high"], actor["clip_ratio_c"]) == (3e-4, 4e-4, 10.0)
    else:
        # verl's PPO trainer: the naive reward manager, no DAPO key anywhere, a KL loss against the reference
        assert "gen_batch_size" not in data and "filter_groups" not in cfg["algorithm"]
        assert reward["reward_manager"] == "naive"
        assert "overlong_buffer" not in reward and "overlong_buffer_cfg" not in reward.get("reward_kwargs", {})
        assert (actor["use_kl_loss"], actor["kl_loss_coef"], actor["kl_loss_type"]) == (True, 0.001, "low_var_kl")
        assert (actor["clip_ratio_low"], actor["clip_ratio_high"], actor["clip_ratio_c"]) == (0.2, 0.2, 3.0)

    trainer = cfg["trainer"]
    assert trainer["device"] == "npu"
    assert trainer["logger"] == (["console", "swanlab"] if swanlab else ["console"])
    assert trainer["total_training_steps"] == config["train_steps"] == 4
    assert trainer["nnodes"] == 1
    assert trainer["n_gpus_per_node"] == 8
    assert trainer["project_name"] == "verl_hlm"
    assert trainer["default_local_dir"] == "/ckpt"
    assert trainer["val_before_train"] is False
    assert trainer["resume_mode"] == "auto" and trainer["resume_from_path"] is None
    assert trainer["project_name"] == "verl_hlm"


@pytest.mark.parametrize("algorithm", CHOICES)
@pytest.mark.parametrize("mask,swanlab", [("0000000", False), ("1111111", True), ("1010101", True), ("0101010", False)])
def test_fast_path_is_hydra_compose(tmp_path, mask, swanlab, algorithm):
    """compose()'s reused defaults tree gives exactly what a fresh hydra.compose() gives."""
    argv = rendered_command(tmp_path, mask, swanlab, verl_algorithm=algorithm)[1]
    overrides = overrides_from_argv(argv, algorithm)
    config_name = ENTRY_POINTS[algorithm][1]
    assert compose(overrides, config_name) == compose(overrides, config_name, full=True)


@pytest.mark.parametrize("algorithm", CHOICES)
@pytest.mark.parametrize("mode,path", [("disable", ""), ("resume_path", "/ckpt/global_step_40")])
def test_resume_settings_compose(tmp_path, algorithm, mode, path):
    argv = rendered_command(tmp_path, verl_algorithm=algorithm, verl_resume_mode=mode, verl_resume_from_path=path)[1]
    cfg = compose(overrides_from_argv(argv, algorithm), ENTRY_POINTS[algorithm][1])
    assert cfg["trainer"]["resume_mode"] == mode
    assert cfg["trainer"]["resume_from_path"] == (path or None)


# Each verl release's config trees the commands compose against: one algorithm per distinct entry point of each profile
# proven against its own wheel, read from the tables (the logger and runtime_env lines are the same for every algorithm;
# the config tree is not).
ENTRY_TREES = [(algorithm, profile) for profile in PROFILES
               for algorithm in dict((entry_of(name, profile), name) for name in reversed(CHOICES)).values()]


@pytest.mark.parametrize("algorithm, profile", ENTRY_TREES, ids=["%s-%s" % pair for pair in ENTRY_TREES])
def test_tensorboard_logger_composes(tmp_path, algorithm, profile):
    """verl_loggers with tensorboard and swanlab: trainer.logger lists them and the job's runtime environment carries
    TENSORBOARD_DIR (ray_kwargs.ray_init.runtime_env, which each release's run_ppo merges into ray.init's) against each
    release's own config tree; every name is one of Tracking.supported_backend (verl/utils/tracking.py)."""
    argv = rendered_command(tmp_path, "0000000", True, verl_algorithm=algorithm, verl_version=profile,
                            verl_loggers=["tensorboard"], verl_tensorboard_dir="/mnt/tb", verl_experiment_name="e")[1]
    cfg = compose(overrides_from_argv(argv, algorithm, profile), argv_head(algorithm, profile)[3].split("=", 1)[1],
                  config_dir=verl_config_dir(profile))
    assert cfg["trainer"]["logger"] == ["console", "swanlab", "tensorboard"]
    # (0.9.x's schema has runtime_env.py_executable: null beside it)
    assert cfg["ray_kwargs"]["ray_init"]["runtime_env"]["env_vars"] == {"TENSORBOARD_DIR": "/mnt/tb/verl_hlm/e"}


# DAPO-only overrides that GRPO's command leaves out (docs/features.md): against verl's PPO trainer
# config they do not compose at all (the DAPO overlay declares them), or they name DAPO's own
# reward manager and overlong shaping, which the GRPO recipes of verl do not use.
DAPO_ONLY = [
    "data.gen_batch_size=64",
    "algorithm.filter_groups.enable=True",
    "reward_model.overlong_buffer.enable=True",
]


@pytest.mark.parametrize("line", DAPO_ONLY)
def test_dapo_only_keys_do_not_exist_for_grpo(tmp_path, line):
    overrides = overrides_from_argv(rendered_command(tmp_path, verl_algorithm="grpo")[1], "grpo")
    with pytest.raises(ComposeError, match="Could not override"):
        compose(overrides + [line], "ppo_megatron_trainer")
    (tmp_path / "dapo").mkdir()
    compose(overrides_from_argv(rendered_command(tmp_path / "dapo", verl_algorithm="dapo")[1]) + [line])  # DAPO has it


# --------------------------------------------------------------------------- the validator bites

@pytest.fixture(scope="module")
def good_overrides(tmp_path_factory):
    argv = rendered_command(tmp_path_factory.mktemp("good"), "0000000")[1]
    overrides = overrides_from_argv(argv)
    compose(overrides)  # the unchanged command composes: a failure below is the edit's doing
    return overrides


def _replace(overrides, old, new):
    assert overrides.count(old) == 1, old
    return [new if item == old else item for item in overrides]


BROKEN = {
    "misspelled-key": (
        lambda o: o + ["actor_rollout_ref.actor.megatron.param_ofload=True"],
        r"Could not override 'actor_rollout_ref\.actor\.megatron\.param_ofload'",
    ),
    "plus-on-non-null-key": (
        lambda o: _replace(o, "actor_rollout_ref.rollout.enable_prefix_caching=False", "+actor_rollout_ref.rollout.enable_prefix_caching=True"),
        r"Could not append to config\. An item is already at 'actor_rollout_ref\.rollout\.enable_prefix_caching'",
    ),
    "grammar-error": (
        lambda o: _replace(o, 'trainer.logger=["console"]', "trainer.logger=[console"),
        r"OverrideParseException: no viable alternative at input '\[console'",
    ),
    "config-group-choice": (  # a defaults-tree override: compose() falls back to the full path
        lambda o: o + ["actor=dp_actor"],
        r"Could not override 'actor'",
    ),
    "unresolvable-interpolation": (
        lambda o: o + ["trainer.nnodes=${trainer.no_such_key}"],
        r"Interpolation key 'trainer\.no_such_key' not found",
    ),
}


@pytest.mark.parametrize("full", [False, True], ids=["fast", "full"])
@pytest.mark.parametrize("case", sorted(BROKEN))
def test_validator_rejects(good_overrides, case, full):
    edit, message = BROKEN[case]
    with pytest.raises(ComposeError, match=message):
        compose(edit(list(good_overrides)), full=full)


def test_plus_is_accepted_on_a_null_key(good_overrides):
    """Hydra only refuses `+` on keys holding a non-null value (see the recompute lines)."""
    cfg = compose(good_overrides + ["+actor_rollout_ref.actor.megatron.virtual_pipeline_model_parallel_size=2"])
    assert cfg["actor_rollout_ref"]["actor"]["megatron"]["virtual_pipeline_model_parallel_size"] == 2


def test_extra_overrides_reach_the_command_and_compose(tmp_path):
    extra = ["trainer.val_before_train=True", "+actor_rollout_ref.model.override_config.attention_dropout=0."]
    argv = rendered_command(tmp_path, "1000000", verl_extra_overrides=extra)[1]
    overrides = overrides_from_argv(argv)
    for line in extra:
        assert line in overrides
    assert overrides[-1] == "trainer.device=npu"
    cfg = compose(overrides)
    assert cfg["trainer"]["val_before_train"] is True  # the extra comes after the template's False
    assert cfg["actor_rollout_ref"]["model"]["override_config"]["attention_dropout"] == 0.0


def test_misspelled_extra_override_is_caught(tmp_path):
    """launch_config accepts any key=value; only the schema knows param_ofload is not a key."""
    argv = rendered_command(tmp_path, "0010000", verl_extra_overrides=["actor_rollout_ref.actor.megatron.param_ofload=True"])[1]
    with pytest.raises(ComposeError, match=r"Could not override 'actor_rollout_ref\.actor\.megatron\.param_ofload'"):
        compose(overrides_from_argv(argv))


# --------------------------------------------------------------------------- the helpers themselves

def test_config_dir_is_the_pinned_wheel_plus_the_overlay(schema_dir):
    assert (schema_dir / "ppo_megatron_trainer.yaml").is_file()
    assert (schema_dir / "actor" / "megatron_actor.yaml").is_file()
    assert (schema_dir / MARKER).read_text().strip() == WHEEL_SHA256
    cached = schema_dir / DAPO_OVERLAY.name
    assert cached.read_bytes() == DAPO_OVERLAY.read_bytes()


def test_overlay_defaults():
    """What the DAPO overlay adds to ppo_megatron_trainer, composed without overrides."""
    cfg = compose([])
    assert cfg["data"]["gen_batch_size"] == cfg["data"]["train_batch_size"]
    assert cfg["reward_model"]["reward_manager"] == "dapo"
    assert cfg["reward_model"]["overlong_buffer"] == {"enable": False, "len": 0, "penalty_factor": 0.0, "log": False}
    assert cfg["algorithm"]["filter_groups"] == {
        "_target_": "verl.trainer.config.FilterGroupsConfig", "enable": False, "metric": None, "max_num_gen_batches": 0,
    }
    assert cfg["trainer"]["project_name"] == "verl-dapo"
    assert cfg["trainer"]["device"] == "cuda"  # why run_training.sh passes trainer.device=npu
    assert cfg["actor_rollout_ref"]["rollout"]["enable_prefix_caching"] is True  # why bit 3 off is explicit


@pytest.mark.parametrize("head", [
    ["-m", "verl.trainer.main_ppo", "--config-path=config", "--config-name=dapo_megatron_trainer"],
    ["-m", "recipe.dapo.main_dapo", "--config-path=config", "--config-name=dapo_trainer"],
    ["-m", "recipe.dapo.main_dapo", "--config-name=dapo_megatron_trainer"],
    ["recipe/dapo/main_dapo.py", "--config-path=config", "--config-name=dapo_megatron_trainer"],
], ids=["main_ppo", "fsdp-config", "no-config-path", "script-path"])
def test_overrides_from_argv_checks_the_head(head):
    with pytest.raises(AssertionError):
        overrides_from_argv(head + ["trainer.device=npu"])


@pytest.mark.parametrize("head", [
    argv_head("dapo"),
    ["-m", "verl.trainer.main_ppo", "--config-path=config", "--config-name=ppo_trainer"],
    ["-m", "verl.trainer.main_ppo", "--config-name=ppo_megatron_trainer"],
], ids=["dapo-head", "fsdp-config", "no-config-path"])
def test_overrides_from_argv_checks_the_grpo_head(head):
    assert overrides_from_argv(argv_head("grpo") + ["trainer.device=npu"], "grpo") == ["trainer.device=npu"]
    with pytest.raises(AssertionError):
        overrides_from_argv(head + ["trainer.device=npu"], "grpo")


def test_overrides_from_argv_rejects_trailing_flags():
    assert overrides_from_argv(ARGV_HEAD + ["trainer.device=npu"]) == ["trainer.device=npu"]
    with pytest.raises(AssertionError):
        overrides_from_argv(ARGV_HEAD + ["trainer.device=npu", "--multirun"])


# --------------------------------------------------------------------------- every profile of the release table

# What each profile renders differently from 0.7.0, written from each release's own files (the verl wheels; not from
# plugins/module_utils/_versions.py, which these tests check): keys it drops, lines it adds.
DROPPED_FROM_0_8 = {"actor_rollout_ref.nccl_timeout", "actor_rollout_ref.actor.megatron.use_remove_padding",
                    "actor_rollout_ref.ref.megatron.use_remove_padding",
                    # VPP's way out on 0.7.x (no mbridge): 0.8.0's engine asserts use_mbridge, so VPP is refused there
                    # (verl/workers/engine/megatron/transformer_impl.py:90) and the renderer adds nothing for it.
                    "actor_rollout_ref.actor.megatron.use_mbridge"}
OLD_REWARD = {"reward_model.reward_manager", "reward_model.reward_kwargs.overlong_buffer_cfg.enable",
              "reward_model.reward_kwargs.overlong_buffer_cfg.len", "reward_model.reward_kwargs.overlong_buffer_cfg.penalty_factor",
              "reward_model.reward_kwargs.overlong_buffer_cfg.log", "reward_model.reward_kwargs.max_resp_len",
              "reward_model.overlong_buffer.enable", "reward_model.overlong_buffer.len", "reward_model.overlong_buffer.penalty_factor",
              "reward_model.overlong_buffer.log"}
NEW_REWARD = ["reward.reward_manager.name=dapo", "+reward.reward_kwargs.overlong_buffer_cfg.enable=True",
              "+reward.reward_kwargs.overlong_buffer_cfg.len=%(overlong_buffer_len)d",
              "+reward.reward_kwargs.overlong_buffer_cfg.penalty_factor=1.0",
              "+reward.reward_kwargs.overlong_buffer_cfg.log=False", "+reward.reward_kwargs.max_resp_len=%(max_response_length)d"]
DROPPED = {"0.7.1": OLD_REWARD, "0.8.0": OLD_REWARD | DROPPED_FROM_0_8,
           "0.9.1": OLD_REWARD | DROPPED_FROM_0_8 | {"actor_rollout_ref.actor.megatron.grad_offload"}}
ADDED = {"0.7.1": [], "0.8.0": [], "0.9.1": ["actor_rollout_ref.actor.megatron.vanilla_mbridge=True"]}


def _key(line):
    return line.split("=", 1)[0].lstrip("+")


# The feature lines do not depend on the algorithm (tests/test_masks.py): DAPO's run sweeps all 128 masks per profile,
# GRPO's and GSPO's (whose own lines differ from DAPO's in the algorithm part only) these, which put each feature line
# on and off and bit 5 with and without bit 2 (CI time: a full sweep costs about 25 s of CPU per profile and algorithm).
SAMPLE_MASKS = ("0000000", "1111111", "1010010", "0101101", "0010010")
# 0.7.0's executed argv by (algorithm, mask): the same for every profile's sweep, so rendered and run once per process.
_ARGV_0_7_0 = {}


@pytest.mark.parametrize("algorithm", CHOICES)
@pytest.mark.parametrize("profile", ["0.7.1", "0.8.0", "0.9.1"])
def test_every_mask_composes_against_each_profiles_own_verl(tmp_path, profile, algorithm):
    """The masks (DAPO: all 128) rendered for the profile and executed (the exact argv): the argv is 0.7.0's for the
    same mask without the keys the profile drops and with the lines it adds, and it composes against that release's
    own config tree (its wheel), meaning there what the mask and the algorithm ask for. One test per profile and
    algorithm: the settings are validated once, each mask's features swapped in (what build() computes for it);
    0.7.0 itself is proven by the tests above, every mask and algorithm with SwanLab off and on."""
    from ansible_collections.verl.deploy.plugins.module_utils import _features, _versions

    config_dir = verl_config_dir(profile)
    base = {version: launch_ok(verl_workdir=str(tmp_path / "verl"), verl_log_dir=str(tmp_path / "logs"),
                               verl_algorithm=algorithm, verl_version=version, verl_experiment_name="profiles")
            for version in ("0.7.0", profile)}
    (tmp_path / "verl").mkdir()
    bin_dir = stand_in_path(tmp_path)
    config_name = argv_head(algorithm, profile)[3].split("=", 1)[1]
    assert config_name == "ppo_megatron_trainer"

    def argv_of(version, mask):
        config = dict(base[version], features=_versions.features_for(_features.decode_mask(mask), version), feature_mask=mask)
        script = tmp_path / ("run_training-%s.sh" % version)
        script.write_text(render(config, "run_training.sh"))
        proc, argv, _cwd = run_training(script, bin_dir, tmp_path / "record")
        assert proc.returncode == 0 and argv, proc.stdout + proc.stderr
        return argv

    reward = [line % base[profile] for line in NEW_REWARD] if algorithm in ("dapo", "gspo") else []
    for mask in all_masks() if algorithm == "dapo" else SAMPLE_MASKS:
        on = bits(mask)
        if (algorithm, mask) not in _ARGV_0_7_0:
            _ARGV_0_7_0[algorithm, mask] = argv_of("0.7.0", mask)
        old, new = _ARGV_0_7_0[algorithm, mask], argv_of(profile, mask)
        overrides = overrides_from_argv(new, algorithm, profile)
        expected = [line for line in overrides_from_argv(old, algorithm) if _key(line) not in DROPPED[profile]]
        assert [line for line in overrides if line not in reward + ADDED[profile]] == expected, mask
        assert [line for line in overrides if line in reward + ADDED[profile]] == [
            line for line in overrides if line in reward] + ADDED[profile] and set(reward) <= set(overrides), mask
        cfg = compose(overrides, config_name, config_dir=config_dir)
        arr = cfg["actor_rollout_ref"]
        actor, ref = arr["actor"], arr["ref"]
        # bit 0: the key the profile's workers read (0.8.0 on: the model's, copied over the engine's)
        assert arr["model"]["use_remove_padding"] is on[0]
        if profile == "0.7.1":
            assert actor["megatron"]["use_remove_padding"] is on[0] and ref["megatron"]["use_remove_padding"] is on[0]
        # bit 2, with Swap Optimizer's exclusion; 0.9.1 has no gradient offload key
        assert actor["megatron"]["param_offload"] is on[2] and ref["megatron"]["param_offload"] is on[2]
        assert actor["megatron"]["optimizer_offload"] is (on[2] and not on[5])
        assert actor["megatron"].get("grad_offload", "absent") == ("absent" if profile == "0.9.1" else on[2])
        assert arr["rollout"]["enable_prefix_caching"] is on[3]
        assert actor["megatron"]["virtual_pipeline_model_parallel_size"] == (2 if on[6] else None)
        if profile == "0.9.1":
            assert actor["megatron"]["vanilla_mbridge"] is True
        # the reward manager and its overlong penalty where this release reads them
        manager = cfg["reward"]["reward_manager"]["name"]
        if reward:
            kwargs = cfg["reward"]["reward_kwargs"]
            assert manager == "dapo" and kwargs["max_resp_len"] == base[profile]["max_response_length"]
            assert kwargs["overlong_buffer_cfg"] == {"enable": True, "len": base[profile]["overlong_buffer_len"], "penalty_factor": 1.0,
                                                     "log": False}
        else:
            assert manager == "naive"


@pytest.mark.parametrize("profile", PROFILES)
def test_the_weight_bridge_facts_of_the_release_table_are_each_wheels(profile):
    """The release table's vanilla_mbridge default is the wheel's engine/megatron.yaml, and the wheel's Megatron worker picks
    the bridge by it: mbridge (verl/models/mcore/mbridge.py) when True, Megatron-Bridge (verl/models/mcore/bridge.py) when False,
    what the image check imports for the model (_versions.weight_bridge)."""
    import re

    from ansible_collections.verl.deploy.plugins.module_utils import _versions
    from helpers.hydra_schema import verl_source_dir

    engine = (verl_config_dir(profile) / "engine" / "megatron.yaml").read_text()
    assert re.search(r"^vanilla_mbridge: (\w+)", engine, re.MULTILINE).group(1) == str(_versions.release(profile)["vanilla_mbridge"])
    source = verl_source_dir(profile) / "verl"
    assert "from mbridge import AutoBridge" in (source / "models/mcore/mbridge.py").read_text()
    assert "from megatron.bridge import AutoBridge" in (source / "models/mcore/bridge.py").read_text()
    worker = source / ("workers/megatron_workers.py" if profile in ("0.7.0", "0.7.1") else "workers/engine/megatron/transformer_impl.py")
    chooser = re.search(r"vanilla_bridge = [^\n]*vanilla_mbridge[^\n]*\n(?:.*\n){0,3}?\s*if (?:megatron_config\.use_mbridge:\n\s*if )?"
                        r"self\.vanilla_bridge:\n\s*from verl\.models\.mcore\.mbridge import AutoBridge", worker.read_text())
    assert chooser, "the worker no longer picks mbridge by vanilla_mbridge: read %s again" % worker
