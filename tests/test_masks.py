"""The 128-mask proof (defect 1 of the original design: docs/design.md).

For every mask, every algorithm (DAPO, GRPO, GSPO), SwanLab off and on: render run_training.sh, EXECUTE it
with a stand-in python3 first on PATH, and compare the exact argument list with one written here
independently of the feature table, straight from the original design's tables (docs/features.md)
and, per algorithm, from verl v0.7.0's own recipes (docs/features.md, "DAPO or GRPO"). The same
recorded command is then composed against verl 0.7.0's own Hydra schema and checked for what the mask
asks (tests/test_hydra_schema.py's check_rendered_command_composes): one render and one run per case
for both proofs. Like test_hydra_schema.py it needs the verl wheel (downloaded once into .cache/) and
ERRORs without it.
"""
from __future__ import annotations

import pytest

from ansible_collections.verl.deploy.plugins.module_utils._algorithms import CHOICES
from helpers.hydra_schema import verl_config_dir
from helpers.launch_helpers import SECRET_KEY, SWANLAB_ON, all_masks, launch_ok, run_training, stand_in_path, write_scripts
from test_hydra_schema import check_rendered_command_composes

OVERRIDE = "+actor_rollout_ref.actor.megatron.override_transformer_config."

# What run_training.sh holds for both algorithms (docs/features.md), with the defaults of the original design.
FIXED = [
    "data.train_files=/data/train.parquet",
    "data.val_files=/data/test.parquet",
    "data.prompt_key=prompt",
    "data.truncation=left",
    "data.max_prompt_length=1024",
    "data.max_response_length=4096",
    "data.train_batch_size=32",
    "actor_rollout_ref.rollout.n=8",
    "actor_rollout_ref.actor.ppo_mini_batch_size=32",
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2",
    "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=4",
    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4",
    "algorithm.adv_estimator=grpo",
    "algorithm.use_kl_in_reward=False",
    "algorithm.kl_ctrl.kl_coef=0.0",
    "actor_rollout_ref.actor.optim.lr=1e-6",
    "actor_rollout_ref.actor.optim.lr_warmup_steps=2",
    "actor_rollout_ref.actor.optim.weight_decay=0.1",
    "actor_rollout_ref.actor.optim.clip_grad=1.0",
    "actor_rollout_ref.actor.entropy_coeff=0",
    "actor_rollout_ref.model.path=/models/Qwen3-8B",
    "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=4",
    "actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=2",
    "actor_rollout_ref.ref.megatron.tensor_model_parallel_size=4",
    "actor_rollout_ref.ref.megatron.pipeline_model_parallel_size=2",
    "actor_rollout_ref.rollout.tensor_model_parallel_size=4",
    "actor_rollout_ref.rollout.name=vllm",
    "actor_rollout_ref.rollout.gpu_memory_utilization=0.8",
    "actor_rollout_ref.rollout.enable_chunked_prefill=True",
    "actor_rollout_ref.rollout.max_num_batched_tokens=5120",
    "actor_rollout_ref.rollout.temperature=1.0",
    "actor_rollout_ref.rollout.top_p=1.0",
    "actor_rollout_ref.rollout.top_k=-1",
    "actor_rollout_ref.rollout.val_kwargs.temperature=1.0",
    "actor_rollout_ref.rollout.val_kwargs.top_p=0.7",
    "actor_rollout_ref.rollout.val_kwargs.top_k=-1",
    "actor_rollout_ref.rollout.val_kwargs.do_sample=True",
    "actor_rollout_ref.rollout.val_kwargs.n=1",
    # The NPU settings of verl's NPU recipes (docs/npu-settings.md)
    "actor_rollout_ref.nccl_timeout=3600",
    "actor_rollout_ref.rollout.enforce_eager=True",
    "actor_rollout_ref.rollout.free_cache_engine=True",
    "trainer.project_name=verl_hlm",
    "trainer.n_gpus_per_node=8",
    "trainer.nnodes=1",
    "trainer.val_before_train=False",
    "trainer.test_freq=2",
    "trainer.save_freq=2",
    "trainer.total_epochs=2",
    "trainer.total_training_steps=4",
    "trainer.default_local_dir=/ckpt",
    "trainer.resume_mode=auto",
    "trainer.balance_batch=False",
    "trainer.device=npu",
    OVERRIDE + "use_flash_attn=True",
    OVERRIDE + "apply_rope_fusion=True",
    OVERRIDE + "gradient_accumulation_fusion=True",
    OVERRIDE + "moe_permutation_async_comm=True",
    OVERRIDE + "moe_token_dispatcher_type=alltoall",
    OVERRIDE + "no_gradient_accumulation_fusion=True",
    OVERRIDE + "use_fused_ring_attention_update=True",
    OVERRIDE + "use_distributed_optimizer=True",
    "++actor_rollout_ref.ref.megatron.override_transformer_config.use_flash_attn=True",
]
# Per algorithm (docs/features.md): DAPO's loss and reward manager (verl v0.7.0 recipe/dapo), GRPO's
# KL loss (verl v0.7.0 examples/grpo_trainer/*npu*); the entry point and its Hydra config.
ALGORITHM = {
    "dapo": [
        "actor_rollout_ref.actor.use_kl_loss=False",
        "actor_rollout_ref.actor.kl_loss_coef=0.0",
        "actor_rollout_ref.actor.clip_ratio_low=0.2",
        "actor_rollout_ref.actor.clip_ratio_high=0.28",
        "actor_rollout_ref.actor.clip_ratio_c=10.0",
        "actor_rollout_ref.actor.loss_agg_mode=token-mean",
        # The overlong penalty where verl's reward loop reads it (reward_kwargs) and where main_dapo's own
        # reward manager reads it (overlong_buffer, with data.max_response_length): docs/features.md.
        "reward_model.reward_manager=dapo",
        "+reward_model.reward_kwargs.overlong_buffer_cfg.enable=True",
        "+reward_model.reward_kwargs.overlong_buffer_cfg.len=2048",
        "+reward_model.reward_kwargs.overlong_buffer_cfg.penalty_factor=1.0",
        "+reward_model.reward_kwargs.overlong_buffer_cfg.log=False",
        "+reward_model.reward_kwargs.max_resp_len=4096",
        "reward_model.overlong_buffer.enable=True",
        "reward_model.overlong_buffer.len=2048",
        "reward_model.overlong_buffer.penalty_factor=1.0",
        "reward_model.overlong_buffer.log=False",
    ],
    "grpo": [
        "actor_rollout_ref.actor.use_kl_loss=True",
        "actor_rollout_ref.actor.kl_loss_coef=0.001",
        "actor_rollout_ref.actor.kl_loss_type=low_var_kl",
    ],
    # GSPO's policy loss with the paper's clip, no KL, the DAPO reward manager's overlong penalty where the reward
    # loop reads it (verl v0.7.0 examples/gspo_trainer/test_gspo_qwen30b_a3b_ep.sh; loss_agg_mode as
    # compute_policy_loss_gspo aggregates, examples/gspo_trainer/test_gspo_3b_math.sh).
    "gspo": [
        "actor_rollout_ref.actor.policy_loss.loss_mode=gspo",
        "actor_rollout_ref.actor.use_kl_loss=False",
        "actor_rollout_ref.actor.kl_loss_coef=0.0",
        "actor_rollout_ref.actor.clip_ratio_low=3e-4",
        "actor_rollout_ref.actor.clip_ratio_high=4e-4",
        "actor_rollout_ref.actor.clip_ratio_c=10.0",
        "actor_rollout_ref.actor.loss_agg_mode=seq-mean-token-mean",
        "reward_model.reward_manager=dapo",
        "+reward_model.reward_kwargs.overlong_buffer_cfg.enable=True",
        "+reward_model.reward_kwargs.overlong_buffer_cfg.len=2048",
        "+reward_model.reward_kwargs.overlong_buffer_cfg.penalty_factor=1.0",
        "+reward_model.reward_kwargs.overlong_buffer_cfg.log=False",
        "+reward_model.reward_kwargs.max_resp_len=4096",
    ],
}
HEAD = {
    "dapo": ["-m", "recipe.dapo.main_dapo", "--config-path=config", "--config-name=dapo_megatron_trainer"],
    "grpo": ["-m", "verl.trainer.main_ppo", "--config-path=config", "--config-name=ppo_megatron_trainer"],
    "gspo": ["-m", "verl.trainer.main_ppo", "--config-path=config", "--config-name=ppo_megatron_trainer"],
}


def expected_overrides(mask, swanlab, algorithm="dapo"):
    bits = [c == "1" for c in mask]
    rmpad, dynbsz, offload, pfx, recompute, swap, vpp = bits
    tf = {True: "True", False: "False"}
    lines = list(FIXED) + ALGORITHM[algorithm]
    # Megatron's actor and reference model pack by their engine key (default True in verl 0.7.0); the
    # model key is the new engine workers' copy of it (docs/features.md, "Which keys each bit sets").
    lines += [
        "actor_rollout_ref.actor.megatron.use_remove_padding=" + tf[rmpad],
        "actor_rollout_ref.ref.megatron.use_remove_padding=" + tf[rmpad],
        "actor_rollout_ref.model.use_remove_padding=" + tf[rmpad],
    ]
    lines += [
        "actor_rollout_ref.actor.use_dynamic_bsz=" + tf[dynbsz],
        "actor_rollout_ref.ref.log_prob_use_dynamic_bsz=" + tf[dynbsz],
        "actor_rollout_ref.rollout.log_prob_use_dynamic_bsz=" + tf[dynbsz],
    ]
    lines += [
        "actor_rollout_ref.actor.megatron.param_offload=" + tf[offload],
        "actor_rollout_ref.ref.megatron.param_offload=" + tf[offload],
        # Swap Optimizer excludes optimizer offload (docs/features.md).
        "actor_rollout_ref.actor.megatron.optimizer_offload=" + tf[offload and not swap],
        "actor_rollout_ref.actor.megatron.grad_offload=" + tf[offload],
    ]
    # verl 0.7.0 turns prefix caching on by default: off must be said explicitly.
    lines.append("actor_rollout_ref.rollout.enable_prefix_caching=" + tf[pfx])
    if recompute:
        lines += [OVERRIDE + "recompute_granularity=full", OVERRIDE + "recompute_method=block", OVERRIDE + "recompute_num_layers=8"]
    if swap:
        lines.append(OVERRIDE + "swap_optimizer=True")
    if vpp:
        lines.append("actor_rollout_ref.actor.megatron.virtual_pipeline_model_parallel_size=2")
        # verl's Ascend docs: VPP needs mbridge off (verl#4815); 0.7.0's legacy Megatron worker builds without it.
        lines.append("actor_rollout_ref.actor.megatron.use_mbridge=False")
    lines.append('trainer.logger=["console","swanlab"]' if swanlab else 'trainer.logger=["console"]')
    return lines


@pytest.fixture(scope="module")
def stand_in(tmp_path_factory):
    return stand_in_path(tmp_path_factory.mktemp("bin"))


def test_the_expected_lines_cover_every_algorithm_of_the_table():
    # A new algorithm in the table (_algorithms.py) needs its expected lines and entry point here before its proofs run.
    assert set(ALGORITHM) == set(HEAD) == set(CHOICES)


@pytest.fixture(scope="module")
def schema_dir():
    """verl 0.7.0's config tree; raises (test error, not skip) when the wheel cannot be had."""
    return verl_config_dir()


@pytest.mark.parametrize("algorithm", CHOICES)
@pytest.mark.parametrize("swanlab", [False, True], ids=["swanlab-off", "swanlab-on"])
@pytest.mark.parametrize("mask", all_masks())
def test_mask_executes_to_exact_override_list_that_composes(mask, swanlab, algorithm, tmp_path, stand_in, schema_dir):
    extra = dict(SWANLAB_ON) if swanlab else {}
    workdir, logs = tmp_path / "verl", tmp_path / "logs"
    workdir.mkdir()
    config = launch_ok(verl_feature_mask=mask, verl_workdir=str(workdir), verl_log_dir=str(logs), verl_algorithm=algorithm,
                       api_key=SECRET_KEY if swanlab else "", **extra)
    folder = write_scripts(config, tmp_path / "out")

    proc, argv, cwd = run_training(folder / "run_training.sh", stand_in, tmp_path / "rec")

    assert proc.returncode == 0, proc.stderr
    assert argv is not None, "the stand-in python3 never ran: the command was cut short"
    assert argv[:4] == HEAD[algorithm]
    overrides = argv[4:]
    # The last line of the original's command; it silently fell off there.
    assert overrides[-1] == "trainer.device=npu"
    experiment = [o for o in overrides if o.startswith("trainer.experiment_name=")]
    # The default experiment name: the model folder's name, the algorithm, the mask, nodes x NPUs.
    name = "qwen3-8b-%s-m%s-1x8" % (algorithm, mask)
    assert experiment == ["trainer.experiment_name=" + name]
    rest = [o for o in overrides if not o.startswith("trainer.experiment_name=")]
    assert sorted(rest) == sorted(expected_overrides(mask, swanlab, algorithm))
    keys = [o.split("=", 1)[0].lstrip("+") for o in overrides]
    assert len(keys) == len(set(keys)), "an override key is given twice"
    # It ran from the verl checkout and wrote its log there.
    assert cwd == str(workdir)
    # The log is named after the model folder (Qwen3-8B) and the experiment.
    log_files = list(logs.glob("verl_qwen3_8b_%s_*.log" % name))
    assert len(log_files) == 1
    assert "stand-in trainer: step 2" in log_files[0].read_text()
    # No commented line can hide inside the command: every line of the array is an override.
    assert "#" not in "".join(overrides)
    text = (folder / "run_training.sh").read_text() + (folder / "start_verl.sh").read_text()
    assert SECRET_KEY not in text
    # The same command against verl 0.7.0's own schema and config checks.
    check_rendered_command_composes(config, argv, mask, swanlab, algorithm)


@pytest.mark.parametrize("algorithm", CHOICES)
@pytest.mark.parametrize("mask", ["0000000", "1101101"])
def test_tensorboard_adds_its_logger_and_its_folder_to_the_command(mask, algorithm, tmp_path, stand_in):
    """verl_loggers with tensorboard: trainer.logger names it, and TENSORBOARD_DIR reaches verl's TaskRunner through the
    job's runtime environment (ray_kwargs.ray_init.runtime_env.env_vars, which run_ppo passes to ray.init)."""
    workdir, logs = tmp_path / "verl", tmp_path / "logs"
    workdir.mkdir()
    config = launch_ok(verl_feature_mask=mask, verl_workdir=str(workdir), verl_log_dir=str(logs), verl_algorithm=algorithm,
                       verl_loggers=["console", "tensorboard"])
    proc, argv, _cwd = run_training(write_scripts(config, tmp_path / "out") / "run_training.sh", stand_in, tmp_path / "rec")
    assert proc.returncode == 0, proc.stderr
    overrides = argv[4:]
    name = "qwen3-8b-%s-m%s-1x8" % (algorithm, mask)
    board = "+ray_kwargs.ray_init.runtime_env.env_vars.TENSORBOARD_DIR=%s/tensorboard/verl_hlm/%s" % (logs, name)
    rest = [o for o in overrides if not o.startswith("trainer.experiment_name=") and o != board]
    assert board in overrides
    assert sorted(rest) == sorted([line for line in expected_overrides(mask, False, algorithm) if not line.startswith("trainer.logger=")]
                                  + ['trainer.logger=["console","tensorboard"]'])


def test_swap_optimizer_with_offload_warns():
    from helpers.launch_helpers import launch

    config, errors, warnings = launch(verl_feature_mask="0010010")
    assert not errors
    assert config["features"]["switches"]["OPTIMIZER_OFFLOAD"] == "False"
    assert config["features"]["switches"]["PARAM_OFFLOAD"] == "True"
    assert any("optimizer offload is forced to False" in w for w in warnings)


@pytest.mark.parametrize("mode,path", [("auto", ""), ("disable", ""), ("resume_path", "/ckpt/old-run/global_step_40")])
def test_resume_mode_reaches_the_command(mode, path, tmp_path, stand_in):
    """verl_resume_mode / verl_resume_from_path as verl reads them: trainer.resume_mode, and trainer.resume_from_path
    only with resume_path."""
    workdir = tmp_path / "verl"
    workdir.mkdir()
    config = launch_ok(verl_workdir=str(workdir), verl_log_dir=str(tmp_path / "logs"), verl_resume_mode=mode,
                       verl_resume_from_path=path)
    folder = write_scripts(config, tmp_path / "out")
    proc, argv, _cwd = run_training(folder / "run_training.sh", stand_in, tmp_path / "rec")
    assert proc.returncode == 0, proc.stderr
    resume = [o for o in argv if o.startswith("trainer.resume_")]
    assert resume == ["trainer.resume_mode=" + mode] + (["trainer.resume_from_path=" + path] if path else [])
