"""The simulated trainer's per-step metrics (tests/sim/stand_in_main_dapo.py, imported without Ray or a cluster): verl's
keys, in verl's console line, read back by the comparison's own parser, and values that follow the mask the way its
feature model says (a model: the comparison's tests prove the pipeline, not these numbers)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from ansible_collections.verl.deploy.plugins.module_utils import _compare as compare

_SPEC = importlib.util.spec_from_file_location("sim_stand_in_metrics", Path(__file__).resolve().parent / "sim" / "stand_in_main_dapo.py")
trainer = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(trainer)

OFF = dict.fromkeys(trainer.FEATURE_EFFECTS, False)


def _config(**on):
    """The composed config's keys run_training.sh sets for the bits (docs/features.md)."""
    override = {"recompute_granularity": "full"} if on.get("recompute") else {}
    if on.get("swap_optimizer"):
        override["swap_optimizer"] = True
    return {"actor_rollout_ref": {
        "actor": {"use_dynamic_bsz": on.get("dynamic_bsz", False), "megatron": {
            "use_remove_padding": on.get("remove_padding", False), "param_offload": on.get("offload", False),
            "virtual_pipeline_model_parallel_size": 2 if on.get("vpp") else None, "override_transformer_config": override}},
        "rollout": {"enable_prefix_caching": on.get("prefix_cache", False)}}}


def _figures(features, step=2):
    line = trainer._step_line(step, trainer._metrics(step, 10, features, 8))
    return compare.parse_steps(line)[0]


def test_the_features_are_read_from_the_composed_config():
    assert trainer._features(_config()) == OFF
    assert trainer._features(_config(recompute=True, vpp=True, prefix_cache=True)) == dict(OFF, recompute=True, vpp=True, prefix_cache=True)


def test_every_key_the_comparison_reads_is_in_the_line():
    assert {key for key, *_rest in compare.METRICS} <= set(_figures(OFF))


@pytest.mark.parametrize("feature, faster, less_memory", [
    ("remove_padding", True, False),  # padded tokens cut
    ("dynamic_bsz", True, True),
    ("offload", False, True),  # step time traded for HBM
    ("recompute", False, True),  # step time traded for activation memory
    ("swap_optimizer", False, True),
])
def test_each_feature_moves_step_time_and_memory_its_way(feature, faster, less_memory):
    base, on = _figures(OFF), _figures(dict(OFF, **{feature: True}))
    assert (on["timing_s/step"] < base["timing_s/step"]) is faster
    assert (on["perf/max_memory_reserved_gb"] < base["perf/max_memory_reserved_gb"]) is less_memory
    assert on["perf/throughput"] == pytest.approx(trainer.TOKENS_PER_STEP / (on["timing_s/step"] * 8), rel=1e-3)


def test_the_first_step_is_the_slow_warm_up():
    assert _figures(OFF, step=1)["timing_s/step"] > 1.4 * _figures(OFF, step=2)["timing_s/step"]


def test_a_peak_above_the_npus_memory_ends_in_torch_npus_error():
    assert trainer._out_of_memory(trainer._metrics(2, 10, OFF)) is None
    huge = [(k, 99.0 if k.startswith("perf/max_memory") else v) for k, v in trainer._metrics(2, 10, OFF)]
    assert trainer._out_of_memory(huge).startswith("RuntimeError: NPU out of memory. Tried to allocate")
