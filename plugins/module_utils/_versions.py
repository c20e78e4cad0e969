# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Private to the verl.deploy collection: may change without notice.
"""The verl releases this collection renders for: one table, and the rules that read an image against it.

Each entry is a verl release series whose Hydra keys and entry points the rendered run_training.sh is written
for (where each algorithm's entry point lives in that tree is the algorithm table's, _algorithms.py), and the
companion packages known to work with it on Ascend (from that release's own docker/ascend/Dockerfile.ascend_<cann>_a2/_a3 and
docs/ascend_tutorial/ascend_quick_start.rst). The container stage reads the image in one call (its
npu_stack_check.sh: each module imported, its version, transformer_engine, the entry point's file) and
check_stack() turns that into problems (the deploy stops before Ray) and notes (shown). The probe also loads CANN's
ATB library as vLLM-Ascend does and runs one operation on the first NPU, where a driver that does not fit the image's
CANN first shows.
No Ansible imports.
"""
from __future__ import annotations

import base64
import re

from ansible_collections.verl.deploy.plugins.module_utils import _algorithms as algorithms
from ansible_collections.verl.deploy.plugins.module_utils._chips import FAMILIES, image_family
from ansible_collections.verl.deploy.plugins.module_utils._control_step import read_answer
from ansible_collections.verl.deploy.plugins.module_utils._features import FEATURES
from ansible_collections.verl.deploy.plugins.module_utils._hydra_overrides import value_of

# --------------------------------------------------------------------------- the releases (profiles)
#
# A profile is a verl release whose Hydra keys and entry points run_training.sh can be rendered for (the setting
# verl_version names one). The 0.8.x and 0.9.x series are one profile each, but 0.9.1 removed a key the command
# renders in every mask (megatron.grad_offload), so 0.9.0 and 0.9.1 are two sub-profiles of the series "0.9.x".
# Every fact comes from that release's PyPI wheel (verl/trainer/config/**, verl/**.py; the tests pin each one by
# sha256) or from its docker/ascend/ Dockerfiles and docs/ascend_tutorial/ (images, stack); docs/versions.md
# (generated from this table by tools/settings_table.py) cites them.
PROFILES = ("0.7.0", "0.7.1", "0.8.0", "0.9.0", "0.9.1")
DEFAULT_PROFILE = "0.7.0"


# transformers 5 loads a checkpoint's shards asynchronously, with a higher host-memory peak while the model loads; verl's
# multi-machine guide (docs/ascend_tutorial/model_support/examples/multi-machine_task_startup_practice.rst, v0.9.0) exports
# this to turn it off. For the releases whose images ship transformers 5 (0.8.0: about 5.3; 0.9.x requires >= 5.5.3);
# transformers 4 does not read it.
TRANSFORMERS_5_ENV = {"HF_DEACTIVATE_ASYNC_LOAD": "1"}


def _release(profile, series, tag, recognised, images, known_good, stack, max_num_seqs, image_note="", env=None,
             vanilla_mbridge=True):
    return {
        "profile": profile,  # the value of verl_version that renders for it
        "series": series,  # the releases it stands for (0.8.x: 0.8.0 and the 0.8.0.dev commits with its markers)
        "tag": tag,  # verl's git tag and its date
        "recognised": recognised,  # how profile_of() tells it inside an image, for the docs
        # verl's Ascend images (quay.io/ascend/verl) per chip family; empty where verl published none for this profile
        "images": dict(images),
        "image_note": image_note,
        # companion versions known to work (check_stack compares torch_npu, vllm, vllm_ascend, megatron.core by prefix)
        "known_good": tuple(known_good),
        "stack": stack,  # the whole stack of its Ascend image, for the docs
        # verl's defaults the settings rules read (keys run_training.sh does not render)
        "defaults": {"actor_rollout_ref.rollout.max_num_seqs": max_num_seqs},
        # engine/megatron.yaml's vanilla_mbridge: the weight bridge the Megatron worker builds the model with when no line sets
        # it, mbridge (True) or Megatron-Bridge (False; weight_bridge)
        "vanilla_mbridge": vanilla_mbridge,
        # what start_verl.sh exports for this release before Ray
        "env": dict(env or {}),
    }


_IMAGE = "quay.io/ascend/verl:"
RELEASES = (
    _release(
        "0.7.0", "0.7.0", "v0.7.0 (2026-01-05)",
        "version 0.7.0 (an image of the tag reports 0.7.0.dev); the legacy Megatron workers "
        "(verl/workers/megatron_workers.py) and no verl/trainer/config/legacy_reward_impl.yaml",
        {"910b": _IMAGE + "verl-8.3.rc1-910b-ubuntu22.04-py3.11-v0.7.0", "a3": _IMAGE + "verl-8.3.rc1-a3-ubuntu22.04-py3.11-v0.7.0"},
        # Dockerfile.ascend_8.3.rc1_a2/_a3 and Dockerfile.ascend_8.2.rc1_a2/_a3 of release/v0.7.0
        ({"cann": "8.3.RC1", "torch_npu": "2.7.1", "vllm": "0.11.0", "vllm_ascend": "0.11.0rc1", "megatron.core": "0.12.1"},
         {"cann": "8.2.RC1", "torch_npu": "2.5.1", "vllm": "0.9.1", "vllm_ascend": "0.9.1", "megatron.core": "0.12.1"}),
        "CANN 8.3.RC1, Python 3.11, torch/torch_npu 2.7.1, vLLM 0.11.0, vllm-ascend 0.11.0rc1, Megatron-LM core_v0.12.1, "
        "MindSpeed f2b0977e, mbridge",
        1024,
    ),
    _release(
        "0.7.1", "0.7.1", "v0.7.1 (2026-03-16)",
        "version 0.7.1; verl/trainer/config/legacy_reward_impl.yaml exists (the reward group moved to `reward`), the legacy "
        "Megatron workers are still there (trainer.use_legacy_worker_impl: auto)",
        {"910b": _IMAGE + "verl-8.5.0-910b-ubuntu22.04-py3.11-v0.7.1", "a3": _IMAGE + "verl-8.5.0-a3-ubuntu22.04-py3.11-v0.7.1"},
        # Dockerfile.ascend_8.5.0_a2_v0.7.1 / _a3_v0.7.1 (verl from release/v0.7.1)
        ({"cann": "8.5.0", "torch_npu": "2.8.0", "vllm": "0.13.0", "vllm_ascend": "0.13.", "megatron.core": "0.12.1"},),
        "CANN 8.5.0, Python 3.11, torch/torch_npu 2.8.0, vLLM/vllm-ascend 0.13.0, Megatron-LM core_v0.12.1, MindSpeed "
        "2.3.0_core_r0.12.1, mbridge 0.15.1, transformers 4.57.6",
        1024,
    ),
    _release(
        "0.8.0", "0.8.x", "v0.8.0 (2026-06-01; the tag reports 0.8.0.dev)",
        "version 0.8.*, or any version whose markers say so: no verl/workers/megatron_workers.py (the legacy workers are "
        "gone, engine workers everywhere) or trainer.use_legacy_worker_impl: disable, and no verl/trainer/main_ppo_v0.py; "
        "main commits of 2026-03-26 to 2026-06-01 (e.g. the Qwen3.5 image, 0.8.0.dev) are this profile",
        {"910b": _IMAGE + "v0.8.0-cann9.0.0-torch_npu2.9.0.post2-910b-ubuntu22.04-py3.11-vllm",
         "a3": _IMAGE + "v0.8.0-cann9.0.0-torch_npu2.9.0.post2-a3-ubuntu22.04-py3.11-vllm"},
        # Dockerfile.ascend_9.0.0_a2_v0.8.0 / _a3 (verl from release/v0.8.0)
        ({"cann": "9.0.0", "torch_npu": "2.9.0", "vllm": "0.18.0", "vllm_ascend": "0.18.", "megatron.core": "0.16."},),
        "CANN 9.0.0, Python 3.11, torch 2.9.0 / torch_npu 2.9.0.post2, vLLM/vllm-ascend 0.18.0, Megatron-LM core_r0.16.0, "
        "MindSpeed core_r0.16.0, mbridge and Megatron-Bridge de93536e",
        1024, env=TRANSFORMERS_5_ENV,
    ),
    _release(
        "0.9.0", "0.9.x", "v0.9.0 (2026-08-14)",
        "version 0.9.0, or markers: verl/trainer/main_ppo_v0.py exists (the V1 trainer is the default) and "
        "engine/megatron.yaml still has grad_offload",
        {},
        ({"cann": "9.0.0", "torch_npu": "2.10.0", "vllm": "0.23.0", "vllm_ascend": "0.23.", "megatron.core": "0.16."},),
        "CANN 9.0.0, Python 3.12, torch 2.10.0 / torch_npu 2.10.0.post2, vLLM/vllm-ascend 0.23.0, Megatron-LM core_r0.16.0, "
        "MindSpeed core_r0.16.0, mbridge, transformers 5.10.4",
        256, env=TRANSFORMERS_5_ENV, vanilla_mbridge=False,
        image_note="verl published no release image for 0.9.0; the daily latest-* images (see 0.9.1) are built from main.",
    ),
    _release(
        "0.9.1", "0.9.x", "0.9.1 (PyPI 2026-09-20)",
        "version 0.9.1 or later 0.9.*, or markers: verl/trainer/main_ppo_v0.py exists and engine/megatron.yaml has no "
        "grad_offload",
        {"910b": _IMAGE + "latest-vllm-910b-ubuntu", "a3": _IMAGE + "latest-vllm-a3-ubuntu"},
        ({"cann": "9.1.0", "torch_npu": "2.10.0", "vllm": "0.23.0", "vllm_ascend": "0.23.", "megatron.core": "0.16."},
         {"cann": "9.1.0", "torch_npu": "2.10.0", "vllm": "0.23.0", "vllm_ascend": "0.23.", "megatron.core": "0.18."}),
        "CANN 9.1.0, Python 3.12, torch 2.10.0 / torch_npu 2.10.0.post4, vLLM/vllm-ascend 0.23.0, Megatron-LM core_r0.16.0 "
        "(core_r0.18.0 with MegatronAdaptor and Megatron-Bridge from verl PR #7604), transformers 5.10.4",
        256, env=TRANSFORMERS_5_ENV, vanilla_mbridge=False,
        image_note="no release tag: verl's daily latest-vllm-* images (Dockerfile.ascend_9.1.0_a2/_a3, verl main) are the "
                   "0.9.x images; they move every day (main reports 0.10.0.dev after 2026-08-22), so pin a digest.",
    ),
)
BY_PROFILE = {entry["profile"]: entry for entry in RELEASES}
SUPPORTED = BY_PROFILE[DEFAULT_PROFILE]
# What the training imports on Ascend, in the order it does (verl's Megatron workers: torch_npu, transformers,
# vLLM with its Ascend plugin, Megatron core with MindSpeed's adaptor). The weight bridge is not here: which one the
# worker imports depends on the release and the lines (weight_bridge), and the image check imports it with the model's
# own path (engine_probe).
MODULES = ("verl", "torch", "torch_npu", "transformers", "vllm", "vllm_ascend", "megatron.core", "mindspeed.megatron_adaptor")
# CUDA-only: in an NPU image it breaks MindSpeed's import ("import transformer_engine.common ... _load_cudnn").
FORBIDDEN = ("transformer_engine",)
_RELEASE = re.compile(r"^(\d+)\.(\d+)\.(\d+)")


def _between(first, last=None):
    """The profiles from `first` to `last` (both included; last None: the newest)."""
    return PROFILES[PROFILES.index(first):PROFILES.index(last or PROFILES[-1]) + 1]


# --------------------------------------------------------------------------- the lines that differ
#
# Every Hydra key run_training.sh renders that is not rendered for every profile: its profiles, why, and the verl
# source that says so. A key ending in "." stands for every key under it. A line whose key is not here is rendered for
# every profile (docs/versions.md lists the 77 keys that compose and are read unchanged from 0.7.0 to 0.9.1).
def _key(key, profiles, why, source):
    return {"key": key, "profiles": tuple(profiles), "why": why, "source": source}


KEYS = (
    _key("actor_rollout_ref.nccl_timeout", _between("0.7.0", "0.7.1"),
         "the legacy Megatron workers' torch.distributed timeout; from 0.8.0 the engine workers start their process group "
         "with no timeout and read no nccl_timeout (HCCL_CONNECT_TIMEOUT/HCCL_EXEC_TIMEOUT bound the waits, docs/npu-settings.md)",
         "0.7.1 verl/workers/megatron_workers.py:279; 0.8.0 verl/workers/engine_workers.py:88"),
    _key("actor_rollout_ref.actor.megatron.use_remove_padding", _between("0.7.0", "0.7.1"),
         "bit 0 on the legacy Megatron worker; from 0.8.0 the engine workers overwrite it from "
         "actor_rollout_ref.model.use_remove_padding",
         "0.7.0 verl/workers/actor/megatron_actor.py:658; 0.8.0 verl/workers/engine_workers.py:113"),
    _key("actor_rollout_ref.ref.megatron.use_remove_padding", _between("0.7.0", "0.7.1"),
         "as the actor's: overwritten from actor_rollout_ref.model.use_remove_padding from 0.8.0",
         "0.8.0 verl/workers/engine_workers.py:535"),
    _key("actor_rollout_ref.actor.megatron.grad_offload", _between("0.7.0", "0.9.0"),
         "bit 2's gradient offload; 0.9.1 removed the key from engine/megatron.yaml, so Hydra refuses it "
         "(\"Could not override 'actor_rollout_ref.actor.megatron.grad_offload'\")",
         "0.9.0 verl/trainer/config/engine/megatron.yaml:8; absent in 0.9.1"),
    _key("reward_model.", _between("0.7.0", "0.7.0"),
         "0.7.0's reward config (reward_manager, reward_kwargs; its recipe's overlong_buffer); 0.7.1 moved it to `reward` "
         "(legacy_reward_impl.yaml keeps null placeholders that main_ppo migrates up to 0.8.x, and 0.9.0's main_ppo no "
         "longer migrates: an algorithm with the overlong penalty would train with the naive reward manager)",
         "0.7.1 verl/experimental/reward_loop/reward_loop.py:38-71; 0.9.1 verl/trainer/main_ppo.py (no migration)"),
    _key("reward.", _between("0.7.1"),
         "the overlong-penalty reward manager and its settings where 0.7.1 and later read them",
         "0.9.1 verl/experimental/reward_loop/reward_manager/dapo.py:33-35; 0.7.1 verl/trainer/config/reward/reward.yaml:15-18"),
    _key("actor_rollout_ref.actor.megatron.vanilla_mbridge", _between("0.9.0"),
         "0.9.0 made Megatron-Bridge the default weight bridge (vanilla_mbridge: False), which needs megatron.bridge in the "
         "image; True keeps 0.7.0's mbridge path (verl's own NPU quick start pins it too)",
         "0.9.1 verl/trainer/config/engine/megatron.yaml:99; verl/models/mcore/bridge.py:17-19; "
         "verl/workers/engine/megatron/transformer_impl.py:213"),
)

# The lines run_training.sh adds for the Ascend NPU (docs/npu-settings.md), in the order it renders them.
NPU_LINES = (
    "actor_rollout_ref.nccl_timeout=3600",
    "actor_rollout_ref.rollout.enforce_eager=True",
    "actor_rollout_ref.rollout.free_cache_engine=True",
    "actor_rollout_ref.actor.megatron.vanilla_mbridge=True",
)

# The profiles whose verl has recipe/ in its own tree: an algorithm with an in-tree recipe (the algorithm table's
# `recipe`) runs it there. From 0.7.1 recipe/ is a git submodule (verl-project/verl-recipe) that verl's package does
# not hold and whose commits import on one side of 0.9 only, so the algorithm runs from verl's own PPO trainer.
RECIPE_IN_TREE = _between("0.7.0", "0.7.0")


def key_of(line):
    """The Hydra key of an override line: 'key=value', '+key=value', '++key=value', '~key' -> 'key'."""
    return str(line).split("=", 1)[0].lstrip("+~")


def _entry_of(key):
    for entry in KEYS:
        if key == entry["key"] or (entry["key"].endswith(".") and key.startswith(entry["key"])):
            return entry
    return None


def rendered_for(line, profile):
    """Whether run_training.sh renders the override line for the profile."""
    entry = _entry_of(key_of(line))
    return entry is None or _profile(profile) in entry["profiles"]


def lines_for(lines, profile):
    """The lines of `lines` the profile renders, in their order."""
    return [line for line in lines if rendered_for(line, profile)]


def _profile(profile):
    if profile not in BY_PROFILE:
        raise KeyError("no verl profile %r (one of %s)" % (profile, ", ".join(PROFILES)))
    return profile


def release(profile):
    """The table entry of a profile (KeyError for any other)."""
    return BY_PROFILE[_profile(profile)]


def defaults(profile):
    """{verl key: its default in that release} for the keys the settings rules read."""
    return dict(release(profile)["defaults"])


def entry_of(algorithm, profile=DEFAULT_PROFILE):
    """(module, Hydra config) of an algorithm's entry point in a profile: its in-tree recipe where the profile has one
    (RECIPE_IN_TREE), else the algorithm table's."""
    entry = algorithms.algorithm(algorithm)
    if entry["recipe"] and _profile(profile) in RECIPE_IN_TREE:
        return tuple(entry["recipe"])
    return entry["module"], entry["config"]


def entry_point(algorithm, profile=DEFAULT_PROFILE):
    """{'module', 'config', 'file'} of an algorithm's entry point (file: relative to verl_workdir, the checkout).
    `profile` may also be a table entry (check_stack passes one)."""
    if isinstance(profile, dict):
        profile = profile["profile"]
    module, config = entry_of(algorithm, profile)
    return {"module": module, "config": config, "file": module.replace(".", "/") + ".py"}


def all_entry_modules():
    """Every module any algorithm starts in any profile (verl_control.sh's pattern finds a training of any of them)."""
    modules = [entry_of(key, profile)[0] for profile in PROFILES for key in algorithms.CHOICES]
    return list(dict.fromkeys(modules))


# --------------------------------------------------------------------------- recognising a profile

# The structural markers profile_of() reads (each True/False, or None when not known), as an image probe finds them:
MARKERS = {
    "main_ppo_v0": "verl/trainer/main_ppo_v0.py exists (0.9.0 on: the old TaskRunner kept beside the V1 trainer)",
    "megatron_workers": "verl/workers/megatron_workers.py exists (the legacy Megatron workers, removed for 0.8.0)",
    "legacy_worker_impl_disable": "trainer.use_legacy_worker_impl is `disable` in ppo_trainer.yaml (main from 2026-03-26 "
                                  "on, before the legacy workers were deleted)",
    "legacy_reward_impl": "verl/trainer/config/legacy_reward_impl.yaml exists (0.7.1 on: the reward config moved to `reward`)",
    "grad_offload": "verl/trainer/config/engine/megatron.yaml has grad_offload (up to 0.9.0)",
}

# How the container stage's probe (npu_stack_check.sh, in the exec that imports the stack) finds each marker:
# {name: (path below verl's package folder, a regular expression its text must match, or "" for "the file exists")}.
MARKER_PROBES = {
    "main_ppo_v0": ("trainer/main_ppo_v0.py", ""),
    "megatron_workers": ("workers/megatron_workers.py", ""),
    "legacy_worker_impl_disable": ("trainer/config/ppo_trainer.yaml", r"^\s*use_legacy_worker_impl:\s*[\"']?disable"),
    "legacy_reward_impl": ("trainer/config/legacy_reward_impl.yaml", ""),
    "grad_offload": ("trainer/config/engine/megatron.yaml", r"^\s*grad_offload:"),
}


def _version_tuple(version):
    release_text = release_of(version)
    return tuple(int(part) for part in release_text.split(".")) if release_text else None


def _by_version(version):
    """The profile a version string alone names, or None (outside the table)."""
    found = _version_tuple(version)
    if found is None:
        return None
    if found[:2] == (0, 7) and found[2] in (0, 1):
        return "0.7.%d" % found[2]
    if found[:2] == (0, 8):
        return "0.8.0"
    if found == (0, 9, 0):
        return "0.9.0"
    if found[:2] == (0, 9):
        return "0.9.1"
    return None


def _by_markers(markers):
    """The profile the structural markers say, or None when they do not say enough."""
    markers = markers or {}
    if markers.get("main_ppo_v0"):
        if markers.get("grad_offload") is None:
            return None
        return "0.9.0" if markers["grad_offload"] else "0.9.1"
    if markers.get("main_ppo_v0") is None:
        return None
    if markers.get("megatron_workers") is False or markers.get("legacy_worker_impl_disable"):
        return "0.8.0"
    if markers.get("megatron_workers") is None or markers.get("legacy_reward_impl") is None:
        return None
    return "0.7.1" if markers["legacy_reward_impl"] else "0.7.0"


def is_newer(version):
    """Whether a version is newer than every release of the table (e.g. main's 0.10.0.dev)."""
    found = _version_tuple(version)
    return found is not None and found[:2] > (0, 9)


def profile_of(version, markers=None, allow_newer=False):
    """The profile of a verl found in an image, or None when it is outside the table.

    version: verl.__version__ ('0.8.0.dev', '0.9.1', ...); markers: {name of MARKERS: True/False/None}.
    The markers decide: the version string does not name the schema (tag v0.8.0 says 0.8.0.dev, as does every main
    commit of March-May 2026, some with 0.7.1's schema and some with 0.8.0's), so a version is placed by what its files
    hold. Without markers that say enough, the version string alone decides. A version older than 0.7.0 is None; one
    newer than the table is None unless allow_newer (then the markers' profile: the caller says it is untested)."""
    found = _version_tuple(version)
    if found is None or found < (0, 7, 0):
        return None
    if is_newer(version) and not allow_newer:
        return None
    by_markers = _by_markers(markers)
    if by_markers is not None:
        return by_markers
    return _by_version(version) if not is_newer(version) else None


def profile_of_image(image):
    """(profile, why) for an image reference: one of the table's images, or a tag that names a release
    (`...-v0.7.1`, `v0.8.0-cann...`, `latest-...`); (None, '') when the reference says nothing. A hint for
    rendering only: the container stage reads the image itself (profile_of)."""
    text = str(image or "")
    for entry in RELEASES:
        if text in entry["images"].values():
            return entry["profile"], "the image %s is verl's %s image" % (text, entry["profile"])
    tag = text.rsplit("/", 1)[-1].partition(":")[2]
    match = re.search(r"(?:^|-)v(\d+\.\d+\.\d+)(?:-|$)", tag)
    if match and _by_version(match.group(1)):
        return _by_version(match.group(1)), "the image's tag %s names verl %s" % (tag, match.group(1))
    return None, ""


def release_of(version):
    """'0.7.0.dev', '0.7.0+npu', '0.7.0rc1' -> '0.7.0'; '' when the version has no X.Y.Z."""
    match = _RELEASE.match(str(version or "").strip())
    return ".".join(match.groups()) if match else ""


def release_for(version, markers=None):
    """The table entry for an installed verl version (and its markers), or None."""
    profile = profile_of(version, markers)
    return BY_PROFILE[profile] if profile else None


def _short(text, limit=300):
    text = " ".join(str(text or "").split()).rstrip(".")
    return text if len(text) <= limit else text[:limit - 3] + "..."


# The container check's exit codes (roles/container/files/npu_stack_check.sh) and the fix each one names; {container},
# {chip}, {devices} and {visible} are the deploy's (launch config: container_name, chip.name, npu_devices_csv,
# visible_devices_csv). Any other non-zero code (the check's own bounded python3 stopped, say) is read as 4's.
PROBE_FIXES = {
    6: "check the driver mounts and devices of the container (docker inspect {container}); -8005/-8020 means another "
       "container or process holds the NPUs.",
    7: "use a verl image with the training's python3 (verl_image, or empty for verl's image of the chip).",
    3: "set verl_ascend_env_scripts to the image's CANN set_env.sh scripts (docker exec {container} find /usr/local/Ascend "
       "-name set_env.sh), or use a verl image with CANN (verl_image; empty chooses verl's image for the chip).",
    4: "use a verl image built for this host's chip ({chip}; verl_image, or empty for verl's image of the chip) whose CANN the "
       "host's driver supports (compare npu-smi info with the image's CANN version), and check verl_ascend_env_scripts.",
    5: "check verl_npu_devices against npu-smi info and the devices of the container (docker inspect {container}); an existing "
       "container keeps the devices it was created with.",
    8: "the container's devices are not those of verl_npu_devices ({devices}, seen in the container as {visible}): an existing "
       "container keeps the devices it was created with (docker inspect {container}); remove it (docker rm) so that the deploy "
       "creates it with these NPUs, or give verl_npu_devices the NPUs it has.",
}


def probe_failure(rc, stdout, stderr, launch):
    """The sentence for a container check that exited rc (not 0): what it said last (or its stderr), the code, the fix.
    rc None: the check did not run (docker exec failed: the container stopped meanwhile, say)."""
    said = read_answer(stdout)["said"]
    what = said[-1] if said else _short(str(stderr or "").strip(), 400)
    if rc is None:
        return "the check did not run: %s. Fix: look at the container (docker ps -a, docker logs %s), then deploy again." % (
            what, launch.get("container_name", ""))
    fix = PROBE_FIXES.get(rc, PROBE_FIXES[4]).format(
        container=launch.get("container_name", ""), chip=(launch.get("chip") or {}).get("name") or "see npu-smi info",
        devices=launch.get("npu_devices_csv", ""), visible=launch.get("visible_devices_csv", ""))
    return "%s (rc %s). Fix: %s" % (what, rc, fix)


def check_stack(stack, algorithm, rendered=None, allow_newer=False, image="", chip=None):
    """(problems, notes) of an image, from what its probe answered (the stack of npu_stack_check.sh's answer).

    image: the container's image reference, chip: the host's {'family', 'name'} (the pre-check's npu-smi): a first
    operation that fails in an image built for another chip is told so, not blamed on the driver.

    stack: {'modules': {name: {'version', 'error'}}, 'forbidden': {name: version or None}, 'workdir', 'entry_file': bool,
    'model': {'architecture', 'supported'} or None, 'markers': {name of MARKERS: True/False/None}}.
    rendered: {'profile', 'why'} run_training.sh is rendered for (the launch config's verl_profile), or None; the image's
    own profile (profile_of its verl version and markers) must be that one. allow_newer (verl_allow_untested_version):
    a verl newer than the table is placed by its markers instead of refused (the summary says it is untested).
    A problem names the package, the version and what failed, with the fix; a note says what was found.
    """
    modules = stack.get("modules") or {}
    problems, notes = [], []
    verl = modules.get("verl") or {}
    release = None
    if verl.get("error"):
        problems.append("verl does not import: %s. Fix: use a verl image (verl_image), or check the image's Python "
                        "(the training runs python3 from verl_workdir)." % _short(verl["error"]))
    else:
        found = profile_of(verl.get("version"), stack.get("markers"), allow_newer=allow_newer)
        release = BY_PROFILE[found] if found else None
        if release is not None and is_newer(verl.get("version")):
            notes.append("verl %s is newer than every release this collection was tested with; it is run as profile %s (its "
                         "files say so) because verl_allow_untested_version is true." % (verl.get("version"), found))
        if release is not None and rendered and rendered.get("profile") and rendered["profile"] != found:
            problems.append(_mismatch(verl.get("version"), found, stack.get("markers"), rendered))
        if release is None and is_newer(verl.get("version")) and not allow_newer:
            problems.append("the image has verl %s, newer than every release this collection renders for (%s): its Hydra keys "
                            "and entry points are untested. Fix: use an image of one of these releases (verl_image, "
                            "docs/versions.md), or set verl_allow_untested_version=true to run it as the profile its files "
                            "match (the deploy still checks the command against the image's own verl)."
                            % (verl.get("version"), ", ".join(PROFILES)))
        elif release is None:
            problems.append("the image has verl %s, but this collection renders its scripts for verl %s (its Hydra keys and entry "
                            "points differ between releases). Fix: use an image of one of these releases (verl_image; empty chooses "
                            "verl's %s image for the chip, docs/versions.md), or a verl.deploy release made for verl %s."
                            % (verl.get("version") or "(no version)", ", ".join(dict.fromkeys(entry["series"] for entry in RELEASES)),
                               SUPPORTED["series"], release_of(verl.get("version")) or verl.get("version")))
    for name in MODULES[1:]:
        found = modules.get(name) or {}
        if found.get("error"):
            problems.append("%s does not import: %s. Fix: use an image whose verl, vLLM, vllm-ascend, Megatron and MindSpeed fit "
                            "together (verl's own Ascend images; see the versions known to work in docs/ascend-images.md)."
                            % (name, _short(found["error"])))
    for name, version in sorted((stack.get("forbidden") or {}).items()):
        problems.append("the image has %s %s, which is for CUDA: on Ascend it breaks MindSpeed's import. Fix: remove it from the "
                        "image (pip uninstall -y %s), or use verl's Ascend image." % (name, version or "(installed)", name.replace("_", "-")))
    model = stack.get("model") or {}
    if model.get("supported") is False:
        problems.append("the image's vLLM %s does not know the model's architecture %s: vLLM would stop with \"Model architectures "
                        "['%s'] are not supported\". Fix: use a verl image whose vLLM supports it, or a model of an architecture it "
                        "knows." % ((modules.get("vllm") or {}).get("version") or "?", model.get("architecture"), model.get("architecture")))
    problems.extend([text for text in [_quantization_problem(model.get("quantization"), modules)] if text])
    engine = engine_problems(stack.get("engine"), modules)
    problems.extend(engine[0])
    torch_npu = (modules.get("torch_npu") or {}).get("version") or "?"
    problems.extend(text for text in (_atb_problem(stack.get("atb"), torch_npu), _first_op_problem(stack.get("first_op"), torch_npu, image, chip))
                    if text)
    if release is not None:
        point = entry_point(algorithm, release)
        if not stack.get("entry_file"):
            package = point["module"].rsplit(".", 1)[0]
            where = (stack.get("workdir"), point["file"], algorithms.algorithm(algorithm)["label"], point["module"], package)
            problems.append("the image's verl checkout in %s has no %s, the %s entry point (python3 -m %s): the training would "
                            "fail with \"No module named '%s'\". Fix: use a verl image with the full checkout (recipe/ included), "
                            "or set verl_workdir to the checkout." % where)
        versions = {name: (modules.get(name) or {}).get("version") for name in ("torch_npu", "vllm", "vllm_ascend", "megatron.core")}
        # 2.7.1.post2 is torch_npu 2.7.1; 0.11.0rc1 is not vLLM-Ascend 0.11.0.
        good = [combo for combo in release["known_good"] if all((versions[name] or "").startswith(combo[name]) for name in versions)]
        notes.append("verl %s; %s" % (verl.get("version"), ", ".join(
            "%s %s" % (name, (modules.get(name) or {}).get("version") or "?") for name in MODULES[1:] if name in modules)))
        if not good and not problems:
            combos = "; ".join(", ".join("%s %s" % item for item in sorted(combo.items()) if item[0] != "cann")
                               for combo in release["known_good"])
            notes.append("these versions are not a combination known to work with verl %s on Ascend (%s); if the training fails "
                         "at import or at its first step, use verl's own image for the chip." % (release["series"], combos))
    notes.extend(engine[1] + _probe_notes(stack))
    return problems, notes


def _quantization_problem(quant, modules):
    """A quantized checkpoint (config.json's quantization_config) whose method the image's vLLM, with vllm-ascend's platform,
    does not run: vLLM stops when the rollout starts ("fp8 quantization is currently not supported in npu", the words
    vllm-ascend's own FP8-on-NPU notes record, .agents/skills/vllm-ascend-model-adapter/references/fp8-on-npu-lessons.md)."""
    if not (quant or {}).get("error"):
        return None

    def version(name):
        return (modules.get(name) or {}).get("version") or "?"

    return ("the model's checkpoint is quantized with `%s` (config.json quantization_config.quant_method), which the image's vLLM "
            "%s with vllm-ascend %s does not run on the NPU: %s. verl's rollout would stop when vLLM starts, after Ray. Fix: use the "
            "model's unquantized (bf16) checkpoint (an FP8 one dequantized to bf16), or one quantized for Ascend with msModelSlim "
            "(vLLM-Ascend's `ascend` method, W8A8), or an image whose vllm-ascend runs `%s`."
            % (quant["method"], version("vllm"), version("vllm_ascend"), _short(quant["error"]), quant["method"]))


def _mismatch(version, found, markers, rendered):
    """The refusal of an image whose verl is not the profile run_training.sh is rendered for."""
    said = ", ".join("%s %s" % (name, "yes" if value else "no") for name, value in sorted((markers or {}).items())
                     if value is not None)
    return ("the image's verl %s is profile %s (its files: %s), but run_training.sh is rendered for verl profile %s (%s): its "
            "entry point and Hydra keys would not be the ones this verl reads. Fix: set verl_version=%s (or use an image of "
            "verl %s)." % (version or "(no version)", found, said or "not read", rendered["profile"], rendered.get("why") or
                           "verl_version", found, rendered["profile"]))


def _atb_problem(atb, torch_npu):
    """CANN's ATB library (NNAL) that torch_npu's op plugin cannot load, as vLLM-Ascend would fail at its start."""
    if not (atb or {}).get("error"):
        return None
    error = atb["error"]
    if "cannot open shared object" in error:
        fix = ("source NNAL's environment (nnal/atb/set_env.sh in verl_ascend_env_scripts), or use an image with CANN's NNAL "
               "package installed (verl's Ascend images have it)")
    else:
        fix = ("use an image whose NNAL (nnal/atb) is of the same CANN release as its toolkit and the one torch_npu %s is "
               "built for (verl's Ascend images pair them; see docs/ascend-images.md)" % torch_npu)
    return ("torch_npu %s cannot load CANN's ATB op library (ATB_HOME_PATH=%s): %s. vLLM-Ascend loads it at its start. Fix: %s."
            % (torch_npu, atb.get("home") or "(not set)", _short(error), fix))


# CANN's words when its kernels are built for another SoC than the device's: the op package's check ("the socversion
# Ascend910B1 of bin package does not match the current device socverison Ascend310P3", vllm-project/vllm-ascend#2725,
# #6676), the runtime's model check ("EE1001 ... ModelCheckCompatibility failed, supported socVersion=Ascend910B2, but the
# model socVersion=Ascend910B ... [soc version error]"), torch_npu's ("Unsupported SOC version: Ascend310B4",
# Ascend/pytorch#57) and vllm-ascend's ("Can not support soc_version: 104").
WRONG_SOC = re.compile(r"socversion|soc[ _]?version", re.IGNORECASE)


def _first_op_problem(first_op, torch_npu, image="", chip=None):
    """The first operation on the deploy's first NPU failed: the stack imports, but cannot compute there.

    In an image whose tag names another chip than the host's, or with CANN's wrong-SoC words, the image is the cause
    (verl builds its images per chip on that chip's CANN); otherwise the image's CANN does not fit the driver."""
    if not (first_op or {}).get("error"):
        return None
    error = _short(first_op["error"])
    head = "the first operation on NPU %s (set_device, then a small tensor operation) failed with torch_npu %s: %s." % (
        first_op.get("device", 0), torch_npu, error)
    family, name = (chip or {}).get("family") or "", (chip or {}).get("name") or "?"
    built_for = image_family(image or "")
    if (built_for and family and built_for != family) or WRONG_SOC.search(error):
        if built_for and family and built_for != family:
            why = "The image %s is built for %s (its tag says %s), but this host's NPUs are %s (%s)" % (
                image, FAMILIES[built_for], built_for, name, FAMILIES.get(family, family))
        else:
            why = "CANN says its kernels are built for another chip than this host's NPUs (%s)" % name
        fix = ("leave verl_image empty to take verl_image_by_chip.%s, or set verl_image to verl's image for %s" % (family, FAMILIES[family])
               if family in FAMILIES else "use a verl image built for this host's chip")
        return "%s %s: verl builds its images per chip, on that chip's CANN. Fix: %s." % (head, why, fix)
    return ("%s An error code there (561103, 500001, 507033, E30006) means the image's CANN does not fit the host's driver and "
            "firmware. Fix: use a verl image whose CANN this driver supports (compare npu-smi info's version with the CANN "
            "release's compatibility: docs/versions.md, Driver and firmware per CANN), or upgrade the driver and firmware; the "
            "device log is in ~/ascend/log inside the container." % head)


def _probe_notes(stack):
    """What the probe's ATB load and first operation found, for the summary."""
    notes = []
    atb = stack.get("atb") or {}
    if atb and not atb.get("error"):
        notes.append("ATB op library loaded (ATB_HOME_PATH=%s)." % (atb.get("home") or "(not set)"))
    first_op = stack.get("first_op") or {}
    if first_op.get("ok"):
        notes.append("NPU %s computes." % first_op.get("device", 0))
    elif first_op.get("skipped"):
        notes.append("NPU %s not touched: %s (the deploy's training runs there)." % (first_op.get("device", 0), first_op["skipped"]))
    return notes


def choose_profile(stated, image):
    """(profile, why) that run_training.sh is rendered for: verl_version when given, else the release of the image
    (profile_of_image), else DEFAULT_PROFILE, the release of the default images. The container stage reads the image
    itself before Ray starts."""
    if stated:
        return _profile(stated), "set by verl_version"
    profile, why = profile_of_image(image)
    if profile:
        return profile, "%s; set verl_version to override" % why
    return DEFAULT_PROFILE, ("verl %s, the default: the image %s names no release; set verl_version to its release"
                             % (DEFAULT_PROFILE, image or "(none)"))


def features_for(decoded, profile, extra_overrides=()):
    """A decoded feature mask (_features.decode_mask) with only the switch lines the profile renders; a switch variable
    none of whose keys it renders is left out (0.9.1's GRAD_OFFLOAD); plus the way-out lines of the known-broken
    combinations the mask turns on (BROKEN) that the profile has and verl_extra_overrides does not set itself."""
    overrides = [pair for pair in decoded["switch_overrides"] if rendered_for(pair[0], profile)]
    used = {var for _key, var in overrides}
    return dict(decoded, switch_overrides=overrides, lines=list(decoded["lines"]) + way_out_lines(decoded, profile, extra_overrides),
                switches={var: value for var, value in decoded["switches"].items() if var in used})


# --------------------------------------------------------------------------- known-broken combinations
#
# Combinations of feature bits, releases and model kinds that a public report shows failing only after Ray and the model
# load. Checked before launch (known_broken, from the settings check): where the release documents a way out, its
# lines are rendered with the mask (features_for); else the deploy stops naming the report and a mask that works.
# The architectures verl 0.7.x builds and syncs without mbridge: verl/models/mcore/registry.py's SupportedModel entries that
# have a weight converter (MODEL_WEIGHT_CONVERTER_REGISTRY; the causal LMs), the same at v0.7.0 and v0.7.1; any other stops
# with "NotImplementedError: Model Type: ... not supported".
VERL_OWN_MCORE_MODELS = ("LlamaForCausalLM", "Qwen2ForCausalLM", "Qwen2MoeForCausalLM", "MixtralForCausalLM",
                         "DeepseekV3ForCausalLM", "Qwen3ForCausalLM", "Qwen3MoeForCausalLM")
USE_MBRIDGE = "actor_rollout_ref.actor.megatron.use_mbridge"
LEGACY_WORKER = "trainer.use_legacy_worker_impl"


def _broken(name, bits, report, error, why, way_out=None):
    return {"name": name, "bits": tuple(bits), "report": report, "error": error, "why": why,
            # {profiles, line, models: the architectures it works for, needs: why not elsewhere, source}; None: no way out
            "way_out": way_out}


BROKEN = (
    _broken(
        "VPP with mbridge", (6,), "verl#4815", "IndexError: too many indices for tensor of dimension 3",
        "at the first log-prob pass, in Megatron's interleaved schedule; verl's Ascend feature docs (npu_advance_features.md, "
        "v0.8.0 on): mbridge and VPP cannot be on together, use_mbridge must be set False with VPP",
        {"profiles": _between("0.7.0", "0.7.1"), "line": USE_MBRIDGE + "=False", "models": VERL_OWN_MCORE_MODELS,
         "needs": "from 0.8.0 the Megatron engine asserts 'use_mbridge must be True' (verl/workers/engine/megatron/"
                  "transformer_impl.py:90; verl#6658: 0.8 forces mbridge), and only 0.7.x's legacy Megatron worker "
                  "(trainer.use_legacy_worker_impl: auto) builds the model without it",
         "source": "v0.7.0 verl/workers/megatron_workers.py:168-215 (use_mbridge False: hf_to_mcore_config)"}),
)


def _on(decoded, entry):
    return all(decoded["mask"][bit] == "1" for bit in entry["bits"])


def _way_out_open(entry, profile, extra_overrides):
    """Whether the entry's way out applies: its release, and no verl_extra_overrides line that closes it."""
    out = entry["way_out"]
    if not out or _profile(profile) not in out["profiles"]:
        return False
    return (value_of(extra_overrides, LEGACY_WORKER) or "auto").strip("'\"") != "disable"


def way_out_lines(decoded, profile, extra_overrides=()):
    """The lines the profile renders for the known-broken combinations of this mask (verl_extra_overrides' own value of
    the same key wins: it is the user's, and known_broken judges it)."""
    return [entry["way_out"]["line"] for entry in BROKEN if _on(decoded, entry) and _way_out_open(entry, profile, extra_overrides)
            and value_of(extra_overrides, key_of(entry["way_out"]["line"])) is None]


def working_mask(mask, bits):
    return "".join("0" if index in bits else char for index, char in enumerate(mask))


def known_broken(decoded, profile, architecture=None, extra_overrides=()):
    """The refusals (sentences) of the known-broken combinations this mask, release and model meet with no way out."""
    problems = []
    for entry in BROKEN:
        if not _on(decoded, entry):
            continue
        out, names = entry["way_out"], " and ".join("bit %d (%s)" % (bit, FEATURES[bit]["name"]) for bit in entry["bits"])
        head = ("verl_feature_mask=%s turns on %s, known broken with verl %s (%s: '%s' %s)"
                % (decoded["mask"], names, profile, entry["report"], entry["error"], entry["why"]))
        mask = "verl_feature_mask=%s (the same mask with %s off)" % (working_mask(decoded["mask"], entry["bits"]), names)
        if not _way_out_open(entry, profile, extra_overrides):
            why = ("verl_extra_overrides sets %s=disable, so n" % LEGACY_WORKER if out and profile in out["profiles"] else "N")
            problems.append("%s. %so way out is rendered: %s. Fix: %s%s." % (
                head, why, out["needs"] if out else "none is documented", mask,
                ", or verl_version %s with its image" % " / ".join(out["profiles"])
                if out and profile not in out["profiles"] and architecture in out["models"] + (None,) else ""))
            continue
        given = value_of(extra_overrides, key_of(out["line"]))
        if given is not None and given != out["line"].split("=", 1)[1]:
            problems.append("%s. verl_extra_overrides sets %s=%s, against the documented way out %s. Fix: remove that line (the "
                            "deploy renders %s), or %s." % (head, key_of(out["line"]), given, out["line"], out["line"], mask))
        elif architecture and architecture not in out["models"]:
            problems.append("%s. Its way out (%s) builds the model with verl's own Megatron converters, which have no %s (verl "
                            "would stop with \"NotImplementedError: Model Type: %s not supported\"; it knows %s). Fix: %s." % (
                                head, out["line"], architecture, architecture, ", ".join(out["models"]), mask))
    return problems


# --------------------------------------------------------------------------- the model's own engine path
#
# What verl imports for this model only when the actor starts, after Ray: transformers' config of the model's type
# (AutoConfig of the model folder) and the weight bridge the Megatron worker builds the model with. The container stage
# imports both in the image before Ray (npu_stack_check.sh, VERL_PROBE_ENGINE). Which bridge, as every release from 0.7.0
# to 0.9.1 decides it (0.7.x verl/workers/megatron_workers.py:164-210; 0.8.0/0.9.1
# verl/workers/engine/megatron/transformer_impl.py:185-245 / :326-390): use_mbridge=False, on the 0.7.x legacy worker only,
# builds with verl's own converters; else vanilla_mbridge=True imports mbridge (verl/models/mcore/mbridge.py,
# AutoBridge.from_config(hf_config): its registry is keyed by config.json's model_type) and False imports Megatron-Bridge
# (verl/models/mcore/bridge.py: `from megatron.bridge import AutoBridge`). The default of vanilla_mbridge is the release
# table's (engine/megatron.yaml).
VANILLA_MBRIDGE = "actor_rollout_ref.actor.megatron.vanilla_mbridge"
TRUST_REMOTE_CODE = "actor_rollout_ref.model.trust_remote_code"


def _true(text):
    return str(text).strip("'\"").lower() == "true"


def weight_bridge(profile, lines=(), extra_overrides=()):
    """{'package': 'mbridge' | 'megatron.bridge' | None (verl's own converters), 'why', 'set_by': 'extra_overrides' |
    'rendered' | 'default'}: the weight bridge verl's Megatron worker of this release imports for the model, from the lines
    run_training.sh renders (NPU_LINES for the profile, `lines`: the mask's) and verl_extra_overrides (rendered last: its
    value wins)."""
    entry, rendered, extra = release(profile), lines_for(NPU_LINES, profile) + list(lines or ()), list(extra_overrides or ())
    use = value_of(rendered + extra, USE_MBRIDGE)
    legacy = (value_of(extra, LEGACY_WORKER) or "auto").strip("'\"") != "disable"
    if use is not None and not _true(use) and profile in _between("0.7.0", "0.7.1") and legacy:
        return {"package": None, "set_by": "extra_overrides" if value_of(extra, USE_MBRIDGE) is not None else "rendered",
                "why": "%s=False: verl %s's legacy Megatron worker builds the model with its own converters" % (USE_MBRIDGE, profile)}
    for set_by, said in (("extra_overrides", extra), ("rendered", rendered)):
        given = value_of(said, VANILLA_MBRIDGE)
        if given is not None:
            vanilla = _true(given)
            why = "%s %s=%s" % ("verl_extra_overrides sets" if set_by == "extra_overrides" else "run_training.sh renders",
                                VANILLA_MBRIDGE, given)
            break
    else:
        set_by, vanilla = "default", entry["vanilla_mbridge"]
        why = "verl %s's default %s: %s" % (profile, VANILLA_MBRIDGE, vanilla)
    return {"package": "mbridge" if vanilla else "megatron.bridge", "set_by": set_by, "why": why}


def engine_probe(profile, lines=(), extra_overrides=()):
    """What the image check imports of the model's own path (VERL_PROBE_ENGINE): the weight bridge and whether transformers
    may run the model folder's own code (verl's model.trust_remote_code, default False)."""
    return dict(weight_bridge(profile, lines, extra_overrides), profile=profile,
                trust_remote_code=_true(value_of(extra_overrides, TRUST_REMOTE_CODE) or "False"))


def engine_problems(engine, modules):
    """(problems, notes) of what the image check found of the model's own path (the stack= line's `engine`): each problem
    names the package, the model type, the error as the training would print it, the cause and the fix."""
    if not engine or engine.get("unread"):
        return [], []
    asked, model_type = engine.get("asked") or {}, engine.get("model_type") or "(none)"
    profile, package, bridge = asked.get("profile") or "?", asked.get("package"), engine.get("bridge") or {}
    problems, notes = [], []
    config = engine.get("config") or {}
    transformers = (modules.get("transformers") or {}).get("version") or "?"
    if config.get("error"):
        if "trust_remote_code" in config["error"]:
            fix = ("the model folder brings its own code: add %s=True to verl_extra_overrides if you trust it, or use a model "
                   "whose type this transformers has" % TRUST_REMOTE_CODE)
        else:
            fix = ("use an image whose transformers knows model type `%s` (the model's card names the transformers release "
                   "that added it; verl publishes images per model, e.g. verl-8.5.2-910b-ubuntu22.04-py3.11-qwen3-5 for "
                   "Qwen3.5), or a model of a type this transformers knows" % model_type)
        problems.append("transformers %s cannot read the model's config.json (model type `%s`): %s%s. verl reads it with "
                        "AutoConfig when the actor and the rollout start, after Ray. Fix: %s." % (
                            transformers, model_type, _short(config["error"]),
                            " (%s)" % _short(config["cause"], 100) if config.get("cause") else "", fix))
    if not package:
        return problems, notes
    name = {"mbridge": "mbridge", "megatron.bridge": "Megatron-Bridge (megatron.bridge)"}[package]
    head = "%s, the weight bridge verl %s builds this model (type `%s`) with (%s)," % (name, profile, model_type, asked.get("why"))
    core = (modules.get("megatron.core") or {}).get("version") or "?"
    if bridge.get("error"):
        error = bridge["error"]
        if package == "megatron.bridge":  # only a verl_extra_overrides line chooses it: every release's default there is mbridge
            fix = ("remove %s=False from verl_extra_overrides (verl then builds with mbridge, which verl's images have), or use "
                   "an image with Megatron-Bridge (verl's image for the model; verl#6083: pip3 install megatron-bridge --no-deps)"
                   % VANILLA_MBRIDGE)
            why = "verl imports it when the actor starts, after Ray (verl#6931)"
        elif "megatron.core" in error:
            why = ("one of mbridge's model modules needs a newer Megatron core than the image's megatron.core %s, and mbridge "
                   "imports every model module (mbridge#50)" % core)
            fix = ("use verl's own image of this release (its mbridge and Megatron core are built together), or the mbridge "
                   "release made for Megatron core %s" % core)
        else:
            why = "verl imports it when the actor starts, after Ray"
            fix = "use verl's own Ascend image of this release (it installs mbridge), or install mbridge in the image (pip install mbridge)"
        problems.append("%s does not import: %s: %s. Fix: %s." % (head, _short(error), why, fix))
    elif bridge.get("registered") is False and package == "megatron.bridge":
        architecture = bridge.get("architecture") or "?"
        problems.append("%s has no bridge for the model's architecture `%s` (type `%s`): verl would stop when the actor starts with "
                        "\"ValueError: %s\" (Megatron-Bridge's AutoBridge; it knows %s). Fix: remove %s=False from verl_extra_overrides "
                        "(verl then builds with mbridge), or use an image whose Megatron-Bridge has a bridge for `%s` (verl's image "
                        "made for the model)." % (head.rstrip(","), architecture, model_type, bridge.get("said") or "?",
                                                  ", ".join(bridge.get("supported") or ()) or "no architecture", VANILLA_MBRIDGE,
                                                  architecture))
    elif bridge.get("registered") is False:
        module = bridge.get("module") or {}
        why = ("; its module %s, which registers it, does not import: %s (the image's megatron.core %s is not the one it is made for)"
               % (module["name"], _short(module["error"]), core) if module.get("error") else "")
        problems.append("%s has no bridge for model type `%s`%s: verl would stop when the actor starts with \"ValueError: "
                        "Unregistered model type: %s, now only support dict_keys([%s])\". Fix: use an image whose mbridge and "
                        "Megatron core build `%s` (verl's image made for the model), or a model of a type it registers." % (
                            head.rstrip(","), model_type, why, model_type,
                            ", ".join("'%s'" % item for item in bridge.get("supported") or ()), model_type))
    elif not problems:
        notes.append("the model's own path imports: transformers %s reads its config (type `%s`), %s %s builds it (%s)." % (
            transformers, model_type, name, bridge.get("version") or "?", asked.get("why")))
    return problems, notes


def ray_skew(mine, head, head_host=""):
    """The refusal of a worker's container whose Ray or Python (X.Y.Z) is not the head's: its `ray start --address` would
    stop (Ray's check_version_info compares both exactly, ray#50511). None when they are the same or either is unknown."""
    mine, head = mine or {}, head or {}
    if not (mine.get("version") and head.get("version")) or (mine["version"], mine.get("python")) == (head["version"], head.get("python")):
        return None
    return ("its Ray %s with Python %s is not the head %s's Ray %s with Python %s: the worker's `ray start --address` would stop "
            "with \"RuntimeError: Version mismatch: The cluster was started with: Ray: %s Python: %s This process on node ... was "
            "started with: Ray: %s Python: %s\" (ray#50511). Fix: run one image on every node (verl_image set once for all, pinned "
            "by digest: a tag such as latest-* moves between pulls), and remove this node's container (docker rm -f) so that the "
            "deploy creates it from that image." % (mine["version"], mine.get("python"), head_host or "node", head["version"],
                                                    head.get("python"), head["version"], head.get("python"), mine["version"],
                                                    mine.get("python")))


# --------------------------------------------------------------------------- the host's driver and firmware against the image's CANN
#
# Per CANN release (a prefix of its version): the oldest Ascend HDK (driver and firmware, installed as one release) Huawei
# lists it as compatible with, and the HDK it is released with, which the fix names. Sources: "CANN and Ascend HDK Version
# Compatibility" of CANN 9.1.0's and 9.2.0's release notes (hiascend.com, CANNCommunityEdition 910/920: 8.5.2 and 9.0.X from
# 25.0.X, 9.1.X from 25.2.X, 9.2.0 from 25.3.X); CANN 8.5.0's "CANN与驱动版本配套关系" (25.0.X to 25.5.X). 8.2.RC1's and
# 8.3.RC1's notes give no oldest HDK (MindIE 2.1.RC1 lists 8.2.RC1 with 24.1.RC2 on, MindSDK 7.2.RC1 8.3.RC1 with 24.1.0 on,
# neither says what fails below): None, nothing refused. The HDK each is released with: Ascend's installer (ascend-deployer
# downloader/software/CANN_<version>.json, required NPU) and the release notes' mapping table (9.1.0: 26.0.RC1, 9.2.0: 26.2.RC1).
# An HDK between the two is compatible, yet one report failed there and an upgrade to the released-with HDK fixed it
# (vllm-ascend#15411, CANN 9.1.0 on driver 25.2.2): a note, not a refusal.
def _hdk(cann, oldest, released_with, source):
    return {"cann": cann, "oldest": oldest, "released_with": released_with, "source": source}


CANN_HDK = (
    _hdk("8.2.RC1", None, "25.2.0", "ascend-deployer CANN_8.2.RC1.json"),
    _hdk("8.3.RC1", None, "25.3.RC1", "ascend-deployer CANN_8.3.RC1.json"),
    _hdk("8.5.", "25.0", "25.5.0", "CANN 8.5.0 and 9.1.0 release notes; ascend-deployer CANN_8.5.0.json"),
    _hdk("9.0.", "25.0", "26.0.RC1", "CANN 9.1.0 release notes; ascend-deployer CANN_9.0.0.json"),
    _hdk("9.1.", "25.2", "26.0.RC1", "CANN 9.1.0 release notes"),
    _hdk("9.2.", "25.3", "26.2.RC1", "CANN 9.2.0 release notes"),
)
_HDK = re.compile(r"^\s*(\d+)\.(\d+)(?:\.(rc)?(\d+)(?:\.(\d+))?)?", re.IGNORECASE)


def hdk_key(version):
    """An Ascend HDK version as a sortable tuple ('24.1.rc2' < '24.1.0' < '24.1.0.3' < '24.1.1'; '25.0' is the first of
    25.0.X), or None."""
    match = _HDK.match(str(version or ""))
    if not match:
        return None
    third = (0, 0) if match.group(4) is None else (0 if match.group(3) else 1, int(match.group(4)))
    return (int(match.group(1)), int(match.group(2))) + third + (int(match.group(5) or 0),)


def cann_hdk(cann):
    """The CANN_HDK entry of a CANN version ('8.3.rc1', '9.1.0'), or None (a release outside the table)."""
    text = str(cann or "").strip().upper()
    return next((entry for entry in CANN_HDK if text.startswith(entry["cann"].upper())), None)


def image_cann(image):
    """(CANN version, why) an image reference names before its container runs: verl's tags say it (`verl-8.3.rc1-910b-...`,
    `v0.8.0-cann9.0.0-...`), and the release table's own images are of their release's CANN; (None, '') otherwise."""
    text = str(image or "")
    tag = text.rsplit("/", 1)[-1].partition(":")[2]
    match = re.search(r"(?:^|-)cann(\d+\.\d+\.(?:\d+|rc\d+))(?:-|$)", tag, re.IGNORECASE) or \
        re.match(r"^verl-(\d+\.\d+\.(?:\d+|rc\d+))-", tag, re.IGNORECASE)
    if match:
        return match.group(1).upper(), "its tag %s names CANN %s" % (tag, match.group(1).upper())
    for entry in RELEASES:
        if text in entry["images"].values():
            return entry["known_good"][0]["cann"], "verl's %s image is built on CANN %s" % (entry["profile"], entry["known_good"][0]["cann"])
    return None, ""


def driver_fit(found, image, host="this node"):
    """(problem, note) of a host's driver and firmware (node_facts' ascend: driver, firmware, firmware_hdk) against the CANN of
    the image (image_cann): a problem when either is older than the oldest HDK that CANN is compatible with, a note when older
    than the HDK it is released with. ('', '') when a version or the image's CANN is not known (nothing refused on a guess)."""
    cann, why = image_cann(image)
    entry = cann_hdk(cann)
    found = found or {}
    if not entry:
        return "", ""
    parts = [("driver", found.get("driver"), found.get("driver")),
             ("firmware", found.get("firmware_hdk"), "%s (HDK %s)" % (found.get("firmware"), found.get("firmware_hdk")))]
    parts = [(name, hdk_key(version), said) for name, version, said in parts if hdk_key(version)]
    old = [(name, said) for name, key, said in parts if entry["oldest"] and key < hdk_key(entry["oldest"])]
    behind = [(name, said) for name, key, said in parts if key < hdk_key(entry["released_with"])]
    head = "%s's %s" % (host, " and ".join("%s %s" % item for item in (old or behind)))
    upgrade = ("upgrade the node's Ascend HDK (driver, then firmware: Ascend-hdk-<chip>-npu-driver_<version>_linux-<arch>.run "
               "and ...-npu-firmware_<version>.run, then reboot) to %s, the release CANN %s is released with" % (entry["released_with"], cann))
    if old:
        return ("%s %s older than %s, the oldest Ascend HDK that CANN %s supports (%s; the image %s: %s): the first NPU operation or "
                "HCCL fails after Ray starts. Fix: %s, or use an image of an older CANN this driver supports (verl_image)."
                % (head, "are" if len(old) > 1 else "is", entry["oldest"], cann, entry["source"], image, why, upgrade)), ""
    if behind:
        return "", ("%s %s older than %s, the Ascend HDK CANN %s (the image %s) is released with; Huawei lists it as compatible, but "
                    "a report failed there until the upgrade (vllm-ascend#15411: CANN 9.1.0 on driver 25.2.2, fixed by 26.1.1). If "
                    "the training fails at an NPU operation: %s." % (
                        head, "are" if len(behind) > 1 else "is", entry["released_with"], cann, image, upgrade))
    return "", ""


# --------------------------------------------------------------------------- the image's verl checks the command
#
# The training role's install step runs the rendered command once on the head with Hydra's `--cfg job` (run_training.sh
# --cfg-job), inside the container, bounded (the training role's _training_check_seconds): python3 -m <entry module> imports the module (the
# image's verl and, where 0.7.0 runs the recipe's entry point, its recipe/), and Hydra composes every override against the image's own schema,
# prints the job's config and exits without starting anything. install_files.sh answers command_check_rc (N) and
# command_check_tail (the output's last lines, base64) in its one document.
# Hydra's own lines (hydra/_internal/config_loader_impl.py _apply_overrides_to_config; omegaconf's ConfigKeyError) and the
# last line of a Python traceback: what the refusal quotes.
_HYDRA_LINE = re.compile(r"^(Could not (override|append to config|delete from config)|Key '[^']*' is not in struct"
                         r"|mismatched input|no viable alternative|Error merging override|.*Exception: |\w*Error: |\S*: No module named )")
_OVERRIDE_KEY = re.compile(r"^Could not (?:override|append to config|delete from config)[^']*'([^']+)'")
_IMPORT = re.compile(r"^(ModuleNotFoundError: |ImportError: |\S*: No module named )")


def command_check(answer, profile, module, workdir="", extra_overrides=(), version=None, seconds=60):
    """The verdict on the image's `--cfg job` run of the rendered command, from install_files.sh's answer as
    verl.deploy.node_step returns it read (its answer: a dict of strings).

    Returns {'checked': bool, 'problem': str or None, 'note': str or None}: not checked when the answer has no
    command_check_rc (the install changed no script on this host, or it is not the head); a timeout is a note, not
    a refusal (importing torch and vLLM the first time can take that long, and the training's own start shows the same
    error); any other failure is a problem quoting Hydra's own lines, naming the profile and the fix."""
    found = dict(answer or {})
    if "command_check_rc" not in found:
        return {"checked": False, "problem": None, "note": None}
    try:
        tail = base64.b64decode(found.get("command_check_tail", ""), validate=True).decode("utf-8", "replace")
    except ValueError:
        tail = ""
    said = [line.strip() for line in tail.split("\n")]
    code = int(found["command_check_rc"]) if found["command_check_rc"].lstrip("-").isdigit() else -1
    what = "verl %s" % version if version else "verl"
    command = "python3 -m %s ... --cfg job" % module
    if code == 0:
        return {"checked": True, "problem": None,
                "note": "the image's %s composed the training command rendered for verl profile %s (%s): the entry module "
                        "imports and every override is in its schema." % (what, profile, command)}
    if code == 124:
        return {"checked": True, "problem": None,
                "note": "the image's %s did not finish composing the training command rendered for verl profile %s (%s) within "
                        "%s s; not checked, the training's start shows any error (start_verl.out)." % (what, profile, command, seconds)}
    quoted = [line for line in said if _HYDRA_LINE.match(line)] or [line for line in said if line][-1:]
    text = " / ".join(quoted) or "(no output)"
    key_match = next((_OVERRIDE_KEY.match(line) for line in quoted if _OVERRIDE_KEY.match(line)), None)
    if key_match:
        key = key_match.group(1)
        mine = [line for line in extra_overrides or () if key_of(line) == key]
        if mine:
            fix = "correct or remove %s in verl_extra_overrides (this verl's schema has no such key, or has it already)" % mine[0]
        else:
            fix = ("the line is rendered for profile %s, whose schema this image's verl does not have: use verl's image of "
                   "that release (docs/versions.md), or set verl_version to the release the image's verl is" % profile)
    elif any(_IMPORT.match(line) for line in quoted):
        fix = ("the entry module does not import from the image's verl checkout in %s: use verl's own image of the release, "
               "whose recipe/ (the entry point 0.7.0 runs from it) fits its verl, or set verl_workdir to a checkout where `python3 -m %s` imports"
               % (workdir or "verl_workdir", module))
    else:
        fix = ("run it by hand to see the whole error: docker exec <container> bash %s/run_training.sh --cfg-job"
               % (workdir or "<verl_workdir>"))
    return {"checked": True, "note": None,
            "problem": "the image's %s refuses the training command rendered for verl profile %s, before Ray starts (%s, exit "
                       "code %s): %s. Fix: %s." % (what, profile, command, code, text, fix)}
