"""The checkpoint verl would resume from against the settings (plugins/module_utils/_resume.py): folders laid out as verl
0.7.0's Megatron checkpoint manager saves them, read as node_facts reads them, and the pre-check's refusal with each of
its fixes applied.

How the failure shows without the check (public reports; the check's sentence names the same loader): a Megatron
distributed checkpoint loaded with another TP stops in `dist_checkpointing.load` ->
`validate_sharding_integrity(nested_values(sharded_state_dict))` (NVIDIA-NeMo issue 8460, "Exception running inference
with MCore Distributed Checkpoint with different TP setting than training"); a torch_dist checkpoint saved with PP 4 and
loaded with EP 4 fails with "the optimizer state is not correctly sharded" (NVIDIA Megatron-LM issue 1517, "Error when
changing parallel strategy while using dist checkpoing"). Both after every rank built its model.
"""
from __future__ import annotations

import json
import pickle
import re
import zipfile
from pathlib import Path

import pytest

from ansible_collections.verl.deploy.plugins.module_utils import _model
from ansible_collections.verl.deploy.plugins.module_utils import _precheck as pc
from ansible_collections.verl.deploy.plugins.module_utils import _resume as rs

MODELS = Path(__file__).resolve().parents[3] / "sim" / "models"
QWEN3_8B = (MODELS / "Qwen3-8B" / "config.json").read_text(encoding="utf-8")
QWEN25_7B = (MODELS / "Qwen2.5-7B" / "config.json").read_text(encoding="utf-8")
LAUNCH = {"resume_mode": "auto", "is_head": True, "train_tp": 4, "train_pp": 1, "world_size": 16, "nnodes": 2,
          "extra_overrides": [], "features": {"enabled": {"vpp": False}}}


def save(ckpts, step=4, tp=4, pp=1, vpp=None, cp=1, ep=1, ranks=16, sharding="fully_sharded_model_space", model=QWEN3_8B,
         extra=True, tracker=True):
    """global_step_<step>/actor as verl 0.7.0 saves it (megatron_checkpoint_manager.py save_checkpoint): the
    distributed checkpoint (a .distcp file per rank, common.pt as torch.save writes it: a zip with a pickle, and
    metadata.json), the Hugging Face config (rank 0) and, with "extra", transformer_config.json; then the tracker."""
    actor = ckpts / ("global_step_%d" % step) / "actor"
    (actor / "dist_ckpt").mkdir(parents=True, exist_ok=True)
    for rank in range(ranks):
        for index in range(2):  # Megatron's torch_dist writes with 2 threads per rank
            (actor / "dist_ckpt" / ("__%d_%d.distcp" % (rank, index))).write_bytes(b"shard")
    optimizer = {"optimizer": {"param_groups": [{"lr": 1e-6, "params": [0, 1]}]}}
    if sharding:
        optimizer["param_state_sharding_type"] = sharding
    with zipfile.ZipFile(actor / "dist_ckpt" / "common.pt", "w") as archive:
        archive.writestr("common/data.pkl", pickle.dumps({"optimizer": optimizer, "lr_scheduler": {"num_steps": 64}}, protocol=2))
        archive.writestr("common/version", "3\n")
    (actor / "dist_ckpt" / "metadata.json").write_text('{"sharded_backend": "torch_dist", "sharded_backend_version": 1}')
    (actor / "huggingface").mkdir(exist_ok=True)
    (actor / "huggingface" / "config.json").write_text(model)
    if extra:
        facts = json.loads(model)
        (actor / "transformer_config.json").write_text(json.dumps({
            "tensor_model_parallel_size": tp, "pipeline_model_parallel_size": pp, "virtual_pipeline_model_parallel_size": vpp,
            "context_parallel_size": cp, "expert_model_parallel_size": ep, "expert_tensor_parallel_size": tp,
            "sequence_parallel": tp > 1, "num_layers": facts["num_hidden_layers"], "hidden_size": facts["hidden_size"],
            "params_dtype": "torch.bfloat16"}, indent=2))
    if tracker:
        (ckpts / "latest_checkpointed_iteration.txt").write_text(str(step))
    return ckpts / ("global_step_%d" % step)


def launch(tmp_path, **changes):
    return dict(LAUNCH, ckpts_dir=str(tmp_path), **changes)


def facts(text=QWEN3_8B):
    return _model.parse_config(text)


def test_the_read_finds_the_tracked_step_and_its_layout(tmp_path):
    save(tmp_path, step=4, tp=2, ranks=8)
    save(tmp_path, step=2, tp=2, ranks=8, tracker=False)
    resume = rs.read_resume(str(tmp_path), "auto")
    assert resume["folder"] == str(tmp_path / "global_step_4") and resume["step"] == 4 and resume["read"]
    assert resume["layout"] == {"tensor_model_parallel_size": 2, "pipeline_model_parallel_size": 1,
                                "virtual_pipeline_model_parallel_size": None, "context_parallel_size": 1, "expert_model_parallel_size": 1}
    assert resume["ranks"] == 8 and resume["sharding"] == "fully_sharded_model_space"
    assert resume["model"]["architecture"] == "Qwen3ForCausalLM" and resume["model"]["num_layers"] == 36
    # resume_path names the folder itself; nothing to read: nothing judged.
    assert rs.read_resume("", str(tmp_path / "global_step_2"))["step"] == 2
    assert rs.read_resume(str(tmp_path / "none"), "auto") == {"folder": "", "step": None, "read": False}
    assert rs.read_resume(str(tmp_path), "") == {"folder": "", "step": None, "read": False}


def test_a_save_without_extra_or_a_distributed_optimizer_is_read_as_such(tmp_path):
    save(tmp_path, extra=False, sharding="")
    resume = rs.read_resume(str(tmp_path), "auto")
    assert resume["layout"] is None and resume["sharding"] == ""
    (tmp_path / "global_step_4" / "actor" / "dist_ckpt" / "common.pt").write_text("not a zip")
    assert rs.read_resume(str(tmp_path), "auto")["sharding"] is None


@pytest.mark.parametrize("saved, now, words", [
    ({"tp": 2}, {}, "TP (tensor_model_parallel_size): 2 in the checkpoint, 4 now (verl_train_tp)"),
    ({"pp": 2}, {}, "PP (pipeline_model_parallel_size): 2 in the checkpoint, 1 now (verl_train_pp)"),
    ({"pp": 2, "vpp": 2}, {"train_pp": 2}, "VPP (virtual_pipeline_model_parallel_size): 2 in the checkpoint, 1 now (bit 6"),
    ({}, {"features": {"enabled": {"vpp": True}}}, "VPP (virtual_pipeline_model_parallel_size): 1 in the checkpoint, 2 now"),
    ({"cp": 2}, {}, "CP (context_parallel_size): 2 in the checkpoint, 1 now (verl_extra_overrides: "
                    "actor_rollout_ref.actor.megatron.context_parallel_size)"),
    ({}, {"extra_overrides": ["actor_rollout_ref.actor.megatron.expert_model_parallel_size=2"]},
     "EP (expert_model_parallel_size): 1 in the checkpoint, 2 now"),
    ({}, {"extra_overrides": ["actor_rollout_ref.actor.megatron.use_distributed_optimizer=False"]},
     "the distributed optimizer: on (fully_sharded_model_space) in the checkpoint, off now"),
    ({"model": QWEN25_7B}, {}, "the model's architecture: Qwen2ForCausalLM in the checkpoint, Qwen3ForCausalLM now (verl_model_path)"),
])
def test_a_checkpoint_of_another_layout_is_refused_naming_what_changed(tmp_path, saved, now, words):
    save(tmp_path, **saved)
    text = rs.layout_changed(rs.read_resume(str(tmp_path), "auto"), launch(tmp_path, **now), facts())
    assert text.startswith("verl_resume_mode=auto resumes from %s/global_step_4 (latest_checkpointed_iteration.txt in "
                           "verl_ckpts_dir names step 4), which was saved with another layout" % tmp_path), text
    assert words in text, text
    assert "fail in Megatron's checkpoint loader" in text and "Fix: one of: restore the checkpoint's layout (" in text, text
    assert "-e verl_ckpts_dir=<another folder>" in text and "-e verl_resume_mode=disable, after moving" in text, text


@pytest.mark.parametrize("saved, now", [
    ({}, {}),
    ({"tp": 2, "ranks": 8}, {"train_tp": 2, "world_size": 8}),
    ({"pp": 2, "vpp": 2}, {"train_pp": 2, "features": {"enabled": {"vpp": True}}}),
    ({"cp": 2}, {"extra_overrides": ["actor_rollout_ref.actor.megatron.context_parallel_size=2"]}),
    ({"extra": False, "tp": 1}, {}),  # no transformer_config.json (save_contents without extra): the layout is not known
])
def test_a_checkpoint_of_the_same_layout_passes(tmp_path, saved, now):
    save(tmp_path, **saved)
    assert rs.layout_changed(rs.read_resume(str(tmp_path), "auto"), launch(tmp_path, **now), facts()) == ""


def _restored(case, text):
    """The settings the first choice of the refusal names, applied."""
    restore = text.split("restore the checkpoint's layout (")[1].split(");")[0]
    changed = dict(case)
    for name, value in re.findall(r"-e (verl_train_tp|verl_train_pp)=(\d+)", restore):
        changed[name[len("verl_"):]] = int(value)
    for key, value in re.findall(r"(actor_rollout_ref\.actor\.megatron\.\w+)=(\w+) in verl_extra_overrides", restore):
        changed["extra_overrides"] = list(changed.get("extra_overrides") or []) + ["%s=%s" % (key, value)]
    if "bit 6 of the mask (VPP)" in restore:
        changed["features"] = {"enabled": {"vpp": "(VPP) on" in restore}}
    return changed


@pytest.mark.parametrize("saved, now", [
    ({"tp": 2, "pp": 2}, {}),
    ({"cp": 2}, {}),
    ({"pp": 2, "vpp": 2}, {"train_pp": 2}),
    ({}, {"extra_overrides": ["actor_rollout_ref.actor.megatron.use_distributed_optimizer=False"]}),
])
def test_each_choice_of_the_refusal_is_a_fix(tmp_path, saved, now):
    ckpts = tmp_path / "ckpts"
    save(ckpts, **saved)
    case = launch(ckpts, **now)
    text = rs.layout_changed(rs.read_resume(str(ckpts), "auto"), case, facts())
    assert text, "refused first"
    # 1. The checkpoint's layout, given back.
    assert rs.layout_changed(rs.read_resume(str(ckpts), "auto"), _restored(case, text), facts()) == ""
    # 2. A new, empty verl_ckpts_dir: nothing to resume from there.
    (tmp_path / "new").mkdir()
    assert rs.layout_changed(rs.read_resume(str(tmp_path / "new"), "auto"), dict(case, ckpts_dir=str(tmp_path / "new")), facts()) == ""
    # 3. verl_resume_mode=disable: node_facts reads nothing to resume from, and the rule judges nothing.
    disabled = dict(case, resume_mode="disable")
    assert rs.layout_changed(rs.read_resume(str(ckpts), ""), disabled, facts()) == ""
    assert rs.layout_changed(rs.read_resume(str(ckpts), "auto"), disabled, facts()) == ""


def test_the_model_s_fix_is_the_model_it_was_saved_from(tmp_path):
    save(tmp_path, model=QWEN25_7B)
    text = rs.layout_changed(rs.read_resume(str(tmp_path), "auto"), launch(tmp_path), facts())
    assert "restore the checkpoint's layout (verl_model_path=<the model it was saved from>)" in text, text
    assert rs.layout_changed(rs.read_resume(str(tmp_path), "auto"), launch(tmp_path), facts(QWEN25_7B)) == ""


def test_resume_path_is_judged_on_its_folder_and_offers_another_one(tmp_path):
    folder = save(tmp_path, step=6, tp=2, tracker=False)
    case = launch(tmp_path, resume_mode="resume_path")
    text = rs.layout_changed(rs.read_resume("", str(folder)), case, facts())
    assert text.startswith("verl_resume_from_path=%s, which was saved with another layout" % folder), text
    assert "-e verl_resume_from_path=<its global_step_<N> folder>" in text and "verl_ckpts_dir=<another" not in text, text
    other = save(tmp_path, step=8, tp=4, tracker=False)
    assert rs.layout_changed(rs.read_resume("", str(other)), case, facts()) == ""


def test_only_the_data_parallel_size_changed_is_a_warning_not_a_refusal(tmp_path):
    save(tmp_path, tp=4, ranks=8)
    resume = rs.read_resume(str(tmp_path), "auto")
    assert rs.layout_changed(resume, launch(tmp_path), facts()) == ""
    warning = rs.world_changed(resume, launch(tmp_path))
    assert "saved by 8 ranks; these settings run 16 (the same TP, PP, CP and EP" in warning, warning
    assert rs.world_changed(resume, launch(tmp_path, world_size=8)) == ""


def test_the_pre_check_runs_the_rule_on_the_head_only(tmp_path):
    save(tmp_path, tp=2)
    checked = {"launch": launch(tmp_path), "facts": {"resume": rs.read_resume(str(tmp_path), "auto"), "model": {"facts": facts()}}}
    assert "TP (tensor_model_parallel_size): 2 in the checkpoint, 4 now" in pc.ckpts_resume_layout_changed(checked)
    checked["launch"]["is_head"] = False
    assert pc.ckpts_resume_layout_changed(checked) == ""
    assert pc.ckpts_resume_layout_changed({"launch": launch(tmp_path), "facts": {}}) == ""


def test_only_small_files_are_read(tmp_path, monkeypatch):
    save(tmp_path, tp=2)
    monkeypatch.setattr(rs, "SMALL_BYTES", 64)
    resume = rs.read_resume(str(tmp_path), "auto")
    assert resume["layout"] is None and resume["model"] is None and resume["sharding"] is None and resume["ranks"] == 16


def stand_in_config(tmp_path, tp=2, pp=1, nnodes=2, per_node=8):
    """The part of the resolved config tests/sim/stand_in_main_dapo.py saves from, as verl's Hydra config holds it."""
    model = tmp_path / "model"
    model.mkdir(exist_ok=True)
    (model / "config.json").write_text(QWEN3_8B)
    return {"trainer": {"nnodes": nnodes, "n_gpus_per_node": per_node},
            "actor_rollout_ref": {"model": {"path": str(model)}, "actor": {
                "megatron": {"tensor_model_parallel_size": tp, "pipeline_model_parallel_size": pp,
                             "virtual_pipeline_model_parallel_size": None, "context_parallel_size": 1,
                             "expert_model_parallel_size": 1, "use_distributed_optimizer": True},
                "checkpoint": {"save_contents": ["model", "optimizer", "extra"]}}}}


def test_the_simulated_trainer_saves_the_files_the_rule_reads(tmp_path):
    """tests/sim/stand_in_main_dapo.py writes the layout files from the config it runs with, so the simulated cluster
    can prove the refusal: a save with TP 2 on 2 x 8 NPUs, resumed with TP 4, is refused; with TP 2 it passes."""
    import sys

    sys.path.insert(0, str(MODELS.parent))
    try:
        import stand_in_main_dapo
    finally:
        sys.path.pop(0)
    ckpts = tmp_path / "ckpts"
    ckpts.mkdir()
    stand_in_main_dapo._save_checkpoint(str(ckpts), 2, stand_in_config(tmp_path, tp=2))
    resume = rs.read_resume(str(ckpts), "auto")
    assert resume["ranks"] == 16 and resume["sharding"] == "fully_sharded_model_space" and resume["model"]["num_layers"] == 36
    text = rs.layout_changed(resume, launch(ckpts), facts())
    assert "TP (tensor_model_parallel_size): 2 in the checkpoint, 4 now (verl_train_tp)" in text, text
    assert rs.layout_changed(resume, launch(ckpts, train_tp=2), facts()) == ""
