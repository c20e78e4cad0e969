# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Private to the verl.deploy collection: may change without notice.
"""The checkpoint verl would resume from, against the settings: is its layout the one the training will load it with?

verl 0.7.0's Megatron checkpoint manager (verl/utils/checkpoint/megatron_checkpoint_manager.py, save_checkpoint) writes,
per global_step_<N>/actor/:
  dist_ckpt/                Megatron's dist_checkpointing (torch_dist): a __<rank>_<i>.distcp file per saving rank
                            (torch.distributed.checkpoint's FileSystemWriter), common.pt (the state every rank shares,
                            among it the distributed optimizer's param_state_sharding_type) and metadata.json;
  huggingface/config.json   rank 0, the model's Hugging Face config (hf_config.save_pretrained);
  transformer_config.json   rank 0, with "extra" in save_contents: asdict() of Megatron's TransformerConfig, which holds
                            the parallel layout the ranks ran with (tensor_model_parallel_size, pipeline_...,
                            virtual_pipeline_..., context_parallel_size, expert_model_parallel_size: mbridge fills them
                            from megatron.core.parallel_state).
A resume loads these with the ranks' current layout (load_checkpoint -> dist_checkpointing.load). The RNG state is
sharded by (PP, TP) (get_rng_state: ShardedObject 'rng_state' of shape (pp_size, tp_size)) and the expert weights by
EP, so a checkpoint saved with another TP, PP, VPP, CP or EP fails in Megatron's loader after every model loaded; another
model fails there too. Only the data-parallel size may differ (the world size with the same TP x PP x CP).

read_resume() runs in verl.deploy.node_facts' one call, on the head, and reads only these small files and a listing;
the rules take what it read and the launch configuration and return '' or a sentence naming what changed and the fix.
No Ansible imports.
"""
from __future__ import annotations

import json
import os
import re
import zipfile

from ansible_collections.verl.deploy.plugins.module_utils import _model
from ansible_collections.verl.deploy.plugins.module_utils._ckpts import TRACKER, tracked_step
from ansible_collections.verl.deploy.plugins.module_utils._features import VPP_SIZE
from ansible_collections.verl.deploy.plugins.module_utils._hydra_overrides import value_of, whole_value_of
from ansible_collections.verl.deploy.plugins.module_utils._node_facts import read_text

TRANSFORMER_CONFIG = "actor/transformer_config.json"
HF_CONFIG = "actor/huggingface/config.json"
DIST_CKPT = "actor/dist_ckpt"
COMMON = DIST_CKPT + "/common.pt"
# What the pre-check reads of a file at most: these are kilobytes; a larger one is not what verl wrote.
SMALL_BYTES = 4 * 1024 * 1024
DISTCP = re.compile(r"^__(\d+)_\d+\.distcp$")
# Megatron-core's DistributedOptimizer sharding types, as its common state names them.
SHARDING_TYPES = ("fully_sharded_model_space", "dp_zero_gather_scatter", "dp_reshardable", "fully_reshardable", "fsdp_dtensor")
MEGATRON = "actor_rollout_ref.actor.megatron."
# (TransformerConfig key, its short name, what sets it here; expected() gives the value the settings give)
LAYOUT = (
    ("tensor_model_parallel_size", "TP", "verl_train_tp"),
    ("pipeline_model_parallel_size", "PP", "verl_train_pp"),
    ("virtual_pipeline_model_parallel_size", "VPP", "bit 6 of the feature mask (VPP)"),
    ("context_parallel_size", "CP", "verl_extra_overrides: %scontext_parallel_size" % MEGATRON),
    ("expert_model_parallel_size", "EP", "verl_extra_overrides: %sexpert_model_parallel_size" % MEGATRON),
)
# The model's facts (plugins/module_utils/_model.py parse_config) that make it another model.
MODEL_KEYS = ("architecture", "num_layers", "hidden_size", "num_attention_heads", "num_kv_heads", "vocab_size",
              "intermediate_size", "num_experts")


# --------------------------------------------------------------------------- reads (node_facts)

def resume_folder(ckpts_dir, resume_from):
    """(the global_step folder verl would resume from, the step) for resume_from 'auto' (the tracker file of ckpts_dir,
    as verl's find_latest_ckpt_path reads it) or a folder (verl_resume_from_path); (None, None) when there is none."""
    if resume_from == "auto":
        step = tracked_step(read_text(os.path.join(ckpts_dir, TRACKER))) if ckpts_dir else None
        return (os.path.join(ckpts_dir, "global_step_%d" % step), step) if step is not None else (None, None)
    if not resume_from:
        return None, None
    match = re.search(r"global_step_(\d+)/*$", resume_from)
    return os.path.normpath(resume_from), int(match.group(1)) if match else None


def _small(path):
    """The bytes of a file of at most SMALL_BYTES, or None (missing, unreadable, larger)."""
    try:
        if os.path.getsize(path) > SMALL_BYTES:
            return None
        with open(path, "rb") as handle:
            return handle.read(SMALL_BYTES)
    except OSError:
        return None


def _json(path):
    data = _small(path)
    if data is None:
        return None
    try:
        value = json.loads(data.decode("utf-8"))
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def saving_ranks(names):
    """How many ranks wrote a __<rank>_<i>.distcp file of Megatron's dist_ckpt (torch's FileSystemWriter: every rank at
    least one), or None when there is none."""
    ranks = {int(match.group(1)) for match in (DISTCP.match(name) for name in names) if match}
    return len(ranks) or None


def sharding_type(data):
    """The distributed optimizer's sharding type in the pickled common state (common.pt, a torch zip archive, read as
    bytes: nothing is unpickled); '' when it has an optimizer's param_groups and no sharding type (not a distributed
    optimizer); None when it says neither."""
    at = data.find(b"param_state_sharding_type")
    if at >= 0:
        window = data[at:at + 256]
        found = [(window.find(kind.encode()), kind) for kind in SHARDING_TYPES if kind.encode() in window]
        return min(found)[1] if found else None
    return "" if b"param_groups" in data else None


def _common_state(path):
    try:
        if os.path.getsize(path) > SMALL_BYTES:
            return None
        with zipfile.ZipFile(path) as archive:
            name = next((n for n in archive.namelist() if n.endswith("data.pkl")), None)
            return archive.read(name)[:SMALL_BYTES] if name else None
    except (OSError, zipfile.BadZipFile, KeyError):
        return None


def read_layout(folder):
    """What a global_step folder records of the layout it was saved with; a key is None when its file was not read."""
    config = _json(os.path.join(folder, TRANSFORMER_CONFIG))
    layout = {key: config.get(key) for key, _short, _setting in LAYOUT} if config is not None else None
    model, model_error = None, ""
    text = _small(os.path.join(folder, HF_CONFIG))
    if text is not None:
        try:
            facts = _model.parse_config(text.decode("utf-8", "replace"), HF_CONFIG)
            model = {key: facts.get(key) for key in MODEL_KEYS}
        except _model.ModelError as exc:
            model_error = str(exc)
    try:
        names = os.listdir(os.path.join(folder, DIST_CKPT))
    except OSError:
        names = []
    common = _common_state(os.path.join(folder, COMMON))
    return {"layout": layout, "model": model, "model_error": model_error, "ranks": saving_ranks(names),
            "sharding": sharding_type(common) if common is not None else None}


def read_resume(ckpts_dir, resume_from):
    """node_facts' read of the checkpoint verl would resume from: {'folder', 'step', 'read', and read_layout()'s keys}.
    resume_from: 'auto' (verl_resume_mode=auto), the folder of verl_resume_from_path, or '' (nothing read)."""
    folder, step = resume_folder(ckpts_dir or "", resume_from or "")
    if not folder or not os.path.isdir(folder):
        return {"folder": folder or "", "step": step, "read": False}
    return dict(read_layout(folder), folder=folder, step=step, read=True)


# --------------------------------------------------------------------------- the settings' layout

def distributed_optimizer(launch):
    """Whether the training's optimizer is Megatron's distributed optimizer: actor.megatron.use_distributed_optimizer,
    True unless verl_extra_overrides turns it off (verl 0.7.0 verl/trainer/config/engine/megatron.yaml, read by
    verl/workers/megatron_workers.py for the actor's optimizer)."""
    value = value_of(launch.get("extra_overrides"), MEGATRON + "use_distributed_optimizer")
    return str(value).strip().lower() not in ("false", "0") if value is not None else True


def expected(launch):
    """The layout the settings give the training: {TransformerConfig key: value} (VPP None when off)."""
    vpp = VPP_SIZE if ((launch.get("features") or {}).get("enabled") or {}).get("vpp") else None
    base = {"tensor_model_parallel_size": launch.get("train_tp"), "pipeline_model_parallel_size": launch.get("train_pp"),
            "virtual_pipeline_model_parallel_size": vpp, "context_parallel_size": 1, "expert_model_parallel_size": 1}
    return {key: whole_value_of(launch.get("extra_overrides"), MEGATRON + key, value) for key, value in base.items()}


def _same(saved, wanted):
    # An unset virtual pipeline is None in TransformerConfig and 1 as a size: the same layout.
    return (saved or 1) == (wanted or 1)


# --------------------------------------------------------------------------- rules

def _where(resume, launch):
    if launch.get("resume_mode") == "resume_path":
        return "verl_resume_from_path=%s" % resume["folder"]
    return "verl_resume_mode=auto resumes from %s (%s in verl_ckpts_dir names step %s)" % (resume["folder"], TRACKER, resume["step"])


def changes(resume, launch, model_facts=None):
    """[(what, saved, now, the setting that gives it now)] between the checkpoint verl would resume from and the settings."""
    found = []
    layout, wanted = resume.get("layout") or {}, expected(launch)
    for key, short, setting in LAYOUT if layout else ():
        saved = layout.get(key)
        vpp = key == "virtual_pipeline_model_parallel_size"
        if (saved is None or wanted[key] is None) and not vpp:
            continue
        if not _same(saved, wanted[key]):
            found.append(("%s (%s)" % (short, key), saved or 1, wanted[key] or 1, setting))
    sharding = resume.get("sharding")
    if sharding is not None and bool(sharding) != distributed_optimizer(launch):
        found.append(("the distributed optimizer", "on (%s)" % sharding if sharding else "off", "on" if distributed_optimizer(launch) else "off",
                      "verl_extra_overrides: %suse_distributed_optimizer" % MEGATRON))
    saved_model = resume.get("model") or {}
    for key in MODEL_KEYS:
        if saved_model and model_facts and saved_model.get(key) is not None and model_facts.get(key) is not None \
                and saved_model[key] != model_facts[key]:
            found.append(("the model's %s" % key, saved_model[key], model_facts[key], "verl_model_path"))
    return found


def _restore(found):
    """The settings that give the checkpoint's layout back."""
    parts = []
    for what, saved, _now, setting in found:
        if what == "the distributed optimizer":
            parts.append("%suse_distributed_optimizer=%s in verl_extra_overrides" % (MEGATRON, saved != "off"))
        elif setting in ("verl_train_tp", "verl_train_pp"):
            parts.append("-e %s=%s" % (setting, saved))
        elif setting == "verl_model_path":
            if "verl_model_path=<the model it was saved from>" not in parts:
                parts.append("verl_model_path=<the model it was saved from>")
        elif setting.startswith("verl_extra_overrides: "):
            parts.append("%s=%s in verl_extra_overrides" % (setting.split(": ", 1)[1], saved))
        else:
            parts.append("bit 6 of the mask (VPP) %s" % ("on" if saved != 1 else "off"))
    return ", ".join(parts)


def layout_changed(resume, launch, model_facts=None):
    """The refusal: the checkpoint verl would resume from was saved with another layout or model than the settings give."""
    if not resume or not resume.get("read") or launch.get("resume_mode") not in ("auto", "resume_path") or not launch.get("is_head"):
        return ""
    found = changes(resume, launch, model_facts)
    if not found:
        return ""
    what = "; ".join("%s: %s in the checkpoint, %s now (%s)" % (name, saved, now, setting) for name, saved, now, setting in found)
    choices = ["restore the checkpoint's layout (%s)" % _restore(found)]
    if launch.get("resume_mode") == "auto":
        choices.append("keep the new layout and start from step 0 in a new, empty folder: -e verl_ckpts_dir=<another folder> "
                       "(the old checkpoints stay where they are)")
    else:
        choices.append("resume from a checkpoint saved with these settings: -e verl_resume_from_path=<its global_step_<N> folder>")
    choices.append("start from step 0 with -e verl_resume_mode=disable, after moving the old global_step_<N> folders out of "
                   "%s: the new saves go there, and Megatron refuses to save into a folder that is not empty (\"Checkpoint "
                   "destination directory (...) is not empty\")" % (launch.get("ckpts_dir") or "verl_ckpts_dir"))
    return ("%s, which was saved with another layout or model than these settings give: %s. verl would load the model on every node "
            "and then fail in Megatron's checkpoint loader (dist_checkpointing.load: the RNG state is sharded by PP and TP, "
            "the experts by EP, the weights by the model's shape). Fix: one of: %s." % (
                _where(resume, launch), what, "; or ".join(choices)))


def world_changed(resume, launch):
    """A warning: the checkpoint was saved by another number of ranks with the same layout (a data-parallel size that
    differs, which Megatron's distributed checkpoint re-shards)."""
    if not resume or not resume.get("read") or not launch.get("is_head") or not resume.get("ranks") or not launch.get("world_size") \
            or launch.get("resume_mode") not in ("auto", "resume_path") or changes(resume, launch):
        return ""
    if resume["ranks"] == launch["world_size"]:
        return ""
    return ("%s, saved by %d ranks; these settings run %d (the same TP, PP, CP and EP: only the data-parallel size differs, "
            "which Megatron's distributed checkpoint loads re-sharded%s)." % (
                _where(resume, launch), resume["ranks"], launch["world_size"],
                "; its optimizer state is %s" % resume["sharding"] if resume.get("sharding") else ""))
