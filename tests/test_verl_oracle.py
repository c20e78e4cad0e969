"""verl's own config checks as the oracle of the deploy's settings check, on edge settings: 0.7.0's for every case
below, and each other profile's (0.7.1, 0.8.0, 0.9.1: the command rendered with its verl_version, its own wheel's
config tree and checks) for a few masks and the cases verl refuses, at the end of the file.

For each case and every algorithm: the settings go through the deploy's check (launch_config), and the
command run_training.sh WOULD run with them (rendered with the parallelism check silenced, executed with
the stand-in python3, composed with Hydra against verl's schema) goes through verl's own checks
(tests/helpers/verl_config/verl_checks.py: validate_config, the config dataclasses, the DAPO reward manager's
assert, unmodified from the pinned wheel). The deploy must refuse at least everything verl refuses; where
it refuses more, each rule is explained below: verl only enforces it later, at run time, or the project
keeps it on purpose. Every one of the 128 masks x every algorithm is checked the same way by
tests/test_masks.py (with tests/test_hydra_schema.py's check_rendered_command_composes).
"""
from __future__ import annotations

import pytest

from ansible_collections.verl.deploy.plugins.module_utils import _launch_config
from ansible_collections.verl.deploy.plugins.module_utils._algorithms import CHOICES
from helpers.hydra_schema import (ENTRY_POINTS, compose, entry_points, overrides_from_argv, verl_checks_module, verl_config_dir,
                                  verl_refusals, verl_source_dir)
from helpers.launch_helpers import launch
from test_hydra_schema import rendered_command

# Why the deploy refuses what verl's config-level checks let through (docs/design.md, the rule ids).
LATER = "verl accepts the config and fails later, at run time:"
EXPLAINED = {
    "R1": "kept on purpose: stricter than verl, from the original design (its message says so)",
    "R2": "kept on purpose: stricter than verl, from the original design (its message says so)",
    "C12": LATER + " Megatron-core's interleaved schedule, at the first pipeline pass",
    "C19": LATER + " verl/protocol.py make_iterator, at the first update of step 1",
    "C20": LATER + " vLLM's SchedulerConfig, when the rollout engine starts",
    "C21": LATER + " verl/utils/seqlen_balancing.py rearrange_micro_batches, mid-run",
}

# id -> (settings, nodes, {algorithm: (the deploy's rule ids, a text verl's refusal must hold or None)}).
ALL = CHOICES  # the algorithm table's
CASES = {
    "defaults": ({}, 1, {a: (set(), None) for a in ALL}),
    "all-features": ({"verl_feature_mask": "1111111"}, 1, {a: (set(), None) for a in ALL}),
    "two-nodes": ({}, 2, {a: (set(), None) for a in ALL}),
    "mini-16": ({"verl_ppo_mini_batch_size": 16}, 1, {a: (set(), None) for a in ALL}),
    "mini-larger-than-batch": ({"verl_train_batch_size": 16, "verl_ppo_mini_batch_size": 32}, 1, {
        a: ({"C4"}, "train_batch_size (16) must be >= actor.ppo_mini_batch_size (32)") for a in ALL}),
    "micro-3": ({"verl_ppo_micro_batch_size_per_gpu": 3}, 1, {
        a: ({"C4"}, "real_train_batch_size (256) must be divisible by minimal possible batch size (3)") for a in ALL}),
    "micro-3-dynamic": ({"verl_ppo_micro_batch_size_per_gpu": 3, "verl_feature_mask": "0100000"}, 1, {a: (set(), None) for a in ALL}),
    "three-nodes": ({}, 3, {
        a: ({"C6"}, "real_train_batch_size (256) must be divisible by minimal possible batch size (6)") for a in ALL}),
    "three-nodes-batch-48": ({"verl_train_batch_size": 48, "verl_ppo_mini_batch_size": 48}, 3, {a: (set(), None) for a in ALL}),
    "tp8-pp2-on-8": ({"verl_train_tp": 8, "verl_train_pp": 2}, 1, {
        a: ({"C2"}, "n_gpus (8) must be divisible by model_parallel_size (16)") for a in ALL}),
    "tp-3": ({"verl_train_tp": 3}, 1, {a: ({"C2"}, "n_gpus (8) must be divisible by model_parallel_size (6)") for a in ALL}),
    "mini-not-dividing-batch": ({"verl_train_batch_size": 48, "verl_ppo_mini_batch_size": 32}, 1, {a: ({"C19"}, None) for a in ALL}),
    "rollout-tp-2": ({"verl_gen_tp": 2}, 1, {a: ({"R1"}, None) for a in ALL}),
    "tp2-pp1": ({"verl_train_tp": 2, "verl_train_pp": 1}, 1, {a: ({"R2"}, None) for a in ALL}),
    "overlong-buffer-longer-than-response": ({"verl_overlong_buffer_len": 8192}, 1, {
        "dapo": ({"C18"}, "max_resp_len must be larger than overlong_buffer.len"),
        "grpo": (set(), None),  # GRPO renders no overlong buffer: nothing to check
        "gspo": ({"C18"}, "max_resp_len must be larger than overlong_buffer.len"),
    }),
    "short-budget": ({"verl_max_prompt_length": 256, "verl_max_response_length": 512, "verl_overlong_buffer_len": 256}, 1, {
        a: ({"C20"}, None) for a in ALL}),
    "short-budget-fewer-seqs": ({"verl_max_prompt_length": 256, "verl_max_response_length": 512, "verl_overlong_buffer_len": 256,
                                 "verl_extra_overrides": ["actor_rollout_ref.rollout.max_num_seqs=512"]}, 1, {a: (set(), None) for a in ALL}),
    "long-sequences-dynamic": ({"verl_feature_mask": "0100000", "verl_max_prompt_length": 2048, "verl_max_response_length": 16384}, 1, {
        a: ({"C21"}, None) for a in ALL}),
    "vpp-3-micro-batches": ({"verl_feature_mask": "0000001", "verl_train_batch_size": 6, "verl_ppo_mini_batch_size": 6,
                             "verl_n_resp_per_prompt": 1}, 1, {a: ({"C12"}, None) for a in ALL}),
    "vpp-one-log-prob-micro-batch": ({"verl_feature_mask": "0000001", "verl_rollout_log_prob_micro_batch_size_per_gpu": 256}, 1, {
        a: ({"C12"}, None) for a in ALL}),
}


@pytest.fixture(scope="module", autouse=True)
def source_dir():
    """The pinned wheel's source; raises (test error, not skip) when the wheel cannot be had."""
    return verl_source_dir()


def the_deploys_rules(monkeypatch, settings, nodes):
    """The parallelism rules the deploy's settings check refuses the settings by (its other checks must pass)."""
    _config, errors, _warnings = launch(nnodes=nodes, **settings)
    found = []
    real = _launch_config.check_parallelism

    def recording(numbers):
        found.extend(real(numbers))
        return []

    monkeypatch.setattr(_launch_config, "check_parallelism", recording)
    _config, other_errors, _warnings = launch(nnodes=nodes, **settings)
    assert other_errors == [], other_errors
    assert len(errors) == len(found)  # every rule the check found is an error the deploy reports
    return {error["rule"] for error in found}


@pytest.mark.parametrize("algorithm", ALL)
@pytest.mark.parametrize("case", sorted(CASES))
def test_the_deploy_refuses_at_least_what_verl_refuses(tmp_path, monkeypatch, case, algorithm):
    settings, nodes, expected = CASES[case]
    settings = dict(settings, verl_algorithm=algorithm)
    rules = the_deploys_rules(monkeypatch, settings, nodes)  # leaves the parallelism check silenced, so that it renders
    _config, argv = rendered_command(tmp_path, settings.pop("verl_feature_mask", "0000000"), nnodes=nodes, **settings)
    node = compose(overrides_from_argv(argv, algorithm), ENTRY_POINTS[algorithm][1], node=True)
    refused = [found["error"] for found in verl_refusals(node, algorithm)]

    wanted_rules, wanted_refusal = expected[algorithm]
    assert rules == wanted_rules
    if wanted_refusal is None:
        assert refused == []
    else:
        assert refused and wanted_refusal in refused[0], refused
    if refused:
        assert rules, "verl refuses %s but the deploy accepts it" % refused
    else:
        assert all(rule in EXPLAINED for rule in rules), "the deploy refuses %s, which verl accepts, unexplained" % rules


def test_the_oracle_runs_verls_own_files(source_dir):
    """The checks are verl's code from the pinned wheel; verl's torch-importing package __init__s were not run, and the
    stand-ins are not left in sys.modules."""
    import sys

    verl_checks = verl_checks_module()
    modules = verl_checks.load(source_dir)
    assert modules["verl.utils.config"].__file__ == str(source_dir / "verl" / "utils" / "config.py")
    assert modules["verl.workers.config.actor"].__file__ == str(source_dir / "verl" / "workers" / "config" / "actor.py")
    assert modules["verl.workers.reward_manager.dapo"].__file__ == str(source_dir / "verl" / "workers" / "reward_manager" / "dapo.py")
    assert getattr(modules["verl"], "__file__", None) is None  # a stand-in package: verl/__init__.py imports torch
    assert isinstance(modules["torch"].Tensor, verl_checks.NeverCalled)
    with pytest.raises(RuntimeError, match="is a stand-in"):
        modules["verl.utils"].hf_tokenizer("/models/Qwen3-8B")
    assert sys.modules.get("torch") is not modules["torch"] and sys.modules.get("verl") is not modules["verl"]


# One extra override that breaks one of verl's checks each, with verl's own message (the oracle bites).
BITES = {
    "validate_config": (["actor_rollout_ref.rollout.temperature=0"], "validation gen temperature should be greater than 0"),
    "McoreActorConfig": (["actor_rollout_ref.actor.loss_agg_mode=sum"], "Invalid loss_agg_mode: sum"),
    "McoreEngineConfig": (["actor_rollout_ref.actor.megatron.dtype=float32"], "dtype float32 not supported"),
    "RolloutConfig": (["actor_rollout_ref.rollout.mode=sync"], "Rollout mode 'sync' has been removed"),
}
REWARD_BITES = {  # the DAPO reward manager's assert, with the arguments each entry point gives it
    "dapo": ["reward_model.overlong_buffer.len=99999"],
    "grpo": ["reward_model.reward_manager=dapo", "+reward_model.reward_kwargs.overlong_buffer_cfg.len=99999",
             "+reward_model.reward_kwargs.max_resp_len=16"],
    "gspo": ["reward_model.reward_kwargs.overlong_buffer_cfg.len=99999"],
}


def test_every_case_names_every_algorithm_of_the_table():
    # A new algorithm in the table (_algorithms.py) needs its expected rules and refusals in each case before its proofs run.
    assert all(set(answers) == set(CHOICES) for _settings, _nodes, answers in CASES.values())
    assert set(REWARD_BITES) == set(CHOICES)


@pytest.mark.parametrize("algorithm", ALL)
def test_the_oracle_bites_on_each_check(tmp_path, algorithm):
    overrides = overrides_from_argv(rendered_command(tmp_path, verl_algorithm=algorithm)[1], algorithm)
    config_name = ENTRY_POINTS[algorithm][1]
    assert verl_refusals(compose(overrides, config_name, node=True), algorithm) == []
    cases = dict(BITES, reward=(REWARD_BITES[algorithm], "max_resp_len must be larger than overlong_buffer.len"))
    for case, (extra, message) in cases.items():
        found = verl_refusals(compose(overrides + extra, config_name, node=True), algorithm)
        assert len(found) == 1 and message in found[0]["error"], (case, found)
        assert found[0]["check"] == {"reward": "reward manager", "RolloutConfig": "RolloutConfig"}.get(case, "validate_config")


# --------------------------------------------------------------------------- every profile of the release table

# Per profile (0.7.0 is the cases above): the command rendered for it (verl_version), composed against its own wheel's
# config tree and run through its own release's checks (verl_checks.py loads them from that wheel's source). Batched:
# one test per profile and algorithm, masks that put every feature line on and off (all on; two complements; all off is
# the "defaults" case) and the cases whose refusal is verl's, each with the message that release gives (CI time: not
# all 128 masks, which test_hydra_schema.py composes per profile).
PROFILE_MASKS = ("1111111", "1010010", "0101101")
PROFILE_CASES = ("defaults", "two-nodes", "mini-larger-than-batch", "micro-3", "three-nodes", "tp8-pp2-on-8",
                 "overlong-buffer-longer-than-response", "short-budget")
# Where a profile's answer differs from 0.7.0's: 0.9.0 on defaults rollout.max_num_seqs to 256 (0.7.0-0.8.x: 1024), so
# the short budget's 256 x 768 tokens fit vLLM's batch and neither the deploy (C20 reads the release's default) nor
# verl refuses it.
PROFILE_DIFFERS = {("0.9.1", "short-budget"): (set(), None)}


@pytest.mark.parametrize("algorithm", ALL)
@pytest.mark.parametrize("profile", ["0.7.1", "0.8.0", "0.9.1"])
def test_each_profiles_own_verl_refuses_no_more_than_the_deploy(tmp_path, monkeypatch, profile, algorithm):
    config_dir = verl_config_dir(profile)
    config_name = entry_points(profile)[algorithm][1]
    # From 0.8.0 VPP is refused (verl#4815, no way out: tests/unit/plugins/module_utils/test_versions.py): its masks without bit 6.
    masks = PROFILE_MASKS if profile in ("0.7.1",) else [mask[:6] + "0" for mask in PROFILE_MASKS]
    runs = [(mask, {}, 1, (set(), None)) for mask in masks]
    runs += [(CASES[case][0].get("verl_feature_mask", "0000000"), CASES[case][0], CASES[case][1],
              PROFILE_DIFFERS.get((profile, case), CASES[case][2][algorithm])) for case in PROFILE_CASES]
    for number, (mask, settings, nodes, (wanted_rules, wanted_refusal)) in enumerate(runs):
        settings = dict(settings, verl_algorithm=algorithm, verl_version=profile)
        settings.pop("verl_feature_mask", None)
        with monkeypatch.context() as patch:
            rules = the_deploys_rules(patch, dict(settings, verl_feature_mask=mask), nodes)
            folder = tmp_path / str(number)
            folder.mkdir()
            _config, argv = rendered_command(folder, mask, nnodes=nodes, **settings)
        node = compose(overrides_from_argv(argv, algorithm, profile), config_name, config_dir=config_dir, node=True)
        refused = [found["error"] for found in verl_refusals(node, algorithm, profile)]
        where = (profile, algorithm, mask, settings)
        assert rules == wanted_rules, where
        if wanted_refusal is None:
            assert refused == [], where
        else:
            assert refused and wanted_refusal in refused[0], (where, refused)
        if refused:
            assert rules, "verl %s refuses %s but the deploy accepts it" % (profile, refused)
        else:
            assert all(rule in EXPLAINED for rule in rules), "the deploy refuses %s, which verl %s accepts, unexplained" % (rules, profile)
