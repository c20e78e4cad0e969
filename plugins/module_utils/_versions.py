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

import re

from ansible_collections.verl.deploy.plugins.module_utils import _algorithms as algorithms
from ansible_collections.verl.deploy.plugins.module_utils._chips import FAMILIES, image_family

# verl v0.7.0: Dockerfile.ascend_8.3.rc1_a2/_a3 (torch 2.7.1, vLLM v0.11.0, vllm-ascend v0.11.0rc1, MindSpeed
# f2b0977e, Megatron-LM core_v0.12.1, mbridge) and Dockerfile.ascend_8.2.rc1_a2/_a3 (torch 2.5.1, vLLM and
# vllm-ascend v0.9.1); the quick start names CANN 8.3.RC1, torch and torch_npu 2.7.1, transformers' latest release.
RELEASES = (
    {
        "series": "0.7.0",
        "known_good": (
            {"cann": "8.3.RC1", "torch_npu": "2.7.1", "vllm": "0.11.0", "vllm_ascend": "0.11.0rc1", "megatron.core": "0.12.1"},
            {"cann": "8.2.RC1", "torch_npu": "2.5.1", "vllm": "0.9.1", "vllm_ascend": "0.9.1", "megatron.core": "0.12.1"},
        ),
    },
)
SUPPORTED = RELEASES[0]
# What the training imports on Ascend, in the order it does (verl's Megatron workers: torch_npu, transformers,
# vLLM with its Ascend plugin, Megatron core with MindSpeed's adaptor, mbridge for the weights).
MODULES = ("verl", "torch", "torch_npu", "transformers", "vllm", "vllm_ascend", "megatron.core", "mindspeed.megatron_adaptor", "mbridge")
# CUDA-only: in an NPU image it breaks MindSpeed's import ("import transformer_engine.common ... _load_cudnn").
FORBIDDEN = ("transformer_engine",)
_RELEASE = re.compile(r"^(\d+)\.(\d+)\.(\d+)")


def release_of(version):
    """'0.7.0.dev', '0.7.0+npu', '0.7.0rc1' -> '0.7.0'; '' when the version has no X.Y.Z."""
    match = _RELEASE.match(str(version or "").strip())
    return ".".join(match.groups()) if match else ""


def release_for(version):
    """The table entry for an installed verl version, or None."""
    release = release_of(version)
    return next((entry for entry in RELEASES if entry["series"] == release), None)


def entry_point(algorithm, release=None):
    """{'module', 'config', 'file'} of an algorithm's entry point (file: relative to verl_workdir, the checkout).

    The algorithm table is written for SUPPORTED, the one release in RELEASES; `release` is taken for when there
    are more."""
    del release
    entry = algorithms.algorithm(algorithm)
    return {"module": entry["module"], "config": entry["config"], "file": entry["module"].replace(".", "/") + ".py"}


def _short(text, limit=300):
    text = " ".join(str(text or "").split()).rstrip(".")
    return text if len(text) <= limit else text[:limit - 3] + "..."


def check_stack(stack, algorithm, image="", chip=None):
    """(problems, notes) of an image, from what its probe printed (the stack= line of npu_stack_check.sh).

    image: the container's image reference, chip: the host's {'family', 'name'} (the pre-check's npu-smi): a first
    operation that fails in an image built for another chip is told so, not blamed on the driver.

    stack: {'modules': {name: {'version', 'error'}}, 'forbidden': {name: version or None}, 'workdir', 'entry_file': bool,
    'model': {'architecture', 'supported'} or None}.
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
        release = release_for(verl.get("version"))
        if release is None:
            problems.append("the image has verl %s, but this collection renders its scripts for verl %s (its Hydra keys and entry "
                            "points differ between releases). Fix: use a verl %s image (verl_image; empty chooses verl's image for "
                            "the chip), or a verl.deploy release made for verl %s."
                            % (verl.get("version") or "(no version)", ", ".join(entry["series"] for entry in RELEASES),
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
    notes.extend(_probe_notes(stack))
    return problems, notes


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
            "release's compatibility list), or upgrade the driver and firmware; the device log is in ~/ascend/log inside the "
            "container." % head)


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
