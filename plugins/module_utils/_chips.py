# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Private to the verl.deploy collection: may change without notice.
#
# What the deploy reads from the npu_info result (plugins/module_utils/_npu_smi.py parse_info): the chip
# family of a host (Atlas A2 910B or Atlas A3), the device ids that verl_npu_devices and
# ASCEND_RT_VISIBLE_DEVICES name, and the verl image that fits the chip (docs/ascend-images.md).
from __future__ import annotations

import re

# The families verl publishes images for (docker/ascend/Dockerfile.ascend_<cann>_a2 and _a3 in verl's
# repository; the quay.io/ascend/verl tags say 910b and a3), with the words the summary uses.
FAMILIES = {
    "910b": "Atlas A2 / 910B",
    "a3": "Atlas A3 / Ascend910_93",
}
# npu-smi's Name column on Atlas A2: 910B1..910B4 and their variants (910B4-1, 910B2C). A plain `910B` (or 910A,
# 910ProA/ProB, 910PremiumA) is a first-generation Ascend 910 (soc 104, 32 GB HBM), which neither verl's images nor
# vllm-ascend support ("Can not support soc_version: 104").
A2_NAME = re.compile(r"^910B[1-4]", re.IGNORECASE)
FIRST_GENERATION_NAME = re.compile(r"^910(A|B|Pro[AB]|PremiumA)?$", re.IGNORECASE)
FIRST_GENERATION = "910"
# A3 prints `Ascend910` (recent drivers) or the SoC name 910_93xx, with a `Chip Phy-ID` header.
A3_NAME = re.compile(r"910_?93", re.IGNORECASE)


def chip_family(info):
    """{'family': '910b' | 'a3' | '', 'name': npu-smi's chip name(s)} of an npu_info result.

    A3 is told by its Phy-ID column (two chips per card, each with its own /dev/davinciN) or its SoC
    name; the 910B family (Atlas A2) by its name, 910B1..910B4; a first-generation Ascend 910 (a plain
    `910B`, 910A, 910ProB) is family '910'. Anything else (310, 310P, 950, a failed npu-smi) has no family.
    """
    npus = (info or {}).get("npus") or []
    names = sorted({str(npu.get("name") or "") for npu in npus} - {""})
    name = "/".join(names)
    chips = [chip for npu in npus for chip in npu.get("chips") or []]
    if (chips and all(chip.get("phy_id") is not None for chip in chips)) or any(A3_NAME.search(n) for n in names):
        return {"family": "a3", "name": name}
    if names and all(A2_NAME.search(n) for n in names):
        return {"family": "910b", "name": name}
    if names and all(FIRST_GENERATION_NAME.search(n) for n in names):
        return {"family": FIRST_GENERATION, "name": name}
    return {"family": "", "name": name}


def device_view(info):
    """The NPUs as verl_npu_devices names them: on A3 each chip is a device (its Phy-ID is the /dev/davinciN
    number and the logical id ASCEND_RT_VISIBLE_DEVICES counts), elsewhere each card (its NPU id).

    Returns {family, name, device_ids, unhealthy, busy: {device id: [pid, ...]}}, ids sorted.
    """
    family = chip_family(info)
    npus = (info or {}).get("npus") or []
    per_chip = family["family"] == "a3"
    ids, unhealthy, by_chip = set(), set(), {}
    for npu in npus:
        chips = npu.get("chips") or []
        own = [chip.get("phy_id") for chip in chips] if per_chip else [npu.get("npu_id")]
        own = [device for device in own if device is not None]
        ids.update(own)
        if npu.get("health") != "OK":
            unhealthy.update(own)
        for chip in chips:
            by_chip[(npu.get("npu_id"), chip.get("chip_id"))] = chip.get("phy_id") if per_chip else npu.get("npu_id")
    busy = {}
    for process in (info or {}).get("processes") or []:
        if per_chip:
            device = by_chip.get((process.get("npu_id"), process.get("chip_id")))
        else:
            device = process.get("npu_id")
        if device is not None:
            pids = busy.setdefault(device, [])
            if process.get("pid") not in pids:
                pids.append(process.get("pid"))
    return {"family": family["family"], "name": family["name"], "device_ids": sorted(ids), "unhealthy": sorted(unhealthy),
            "busy": {device: busy[device] for device in sorted(busy)}}


def logical_ids(devices, container_devices=None):
    """The ids the Ascend runtime in the container gives `devices` (host /dev/davinciN numbers).

    The runtime numbers the devices a process can open 0..N-1 in ascending N, and ASCEND_RT_VISIBLE_DEVICES,
    set_device() and Ray's NPU ids speak those logical ids (CANN's environment-variable reference,
    ASCEND_RT_VISIBLE_DEVICES). A container created with --device for `devices` only has just those
    (container_devices None); a privileged one has every device of the host (container_devices: the host's,
    as npu-smi lists them). Returns the logical ids in ascending order; a device the container lacks is left out.
    """
    present = sorted(set(container_devices if container_devices is not None else devices))
    return [present.index(device) for device in sorted(set(devices)) if device in present]


# The chip in a verl image's tag, as verl publishes them (quay.io/ascend/verl:verl-8.3.rc1-910b-ubuntu22.04-...,
# ...-a3-...; a2 is the 910b family's other name).
IMAGE_CHIP = re.compile(r"(?:^|[-_.])(910b|a2|a3)(?=$|[-_.])", re.IGNORECASE)


def image_family(ref):
    """The chip family an image reference's tag names ('910b', 'a3'), or '' (an untagged or custom image)."""
    tag = ref.rsplit("/", 1)[-1].partition("@")[0]
    tag = tag.rsplit(":", 1)[1] if ":" in tag else ""
    found = {match.lower() for match in IMAGE_CHIP.findall(tag)}
    found = {"910b" if item == "a2" else item for item in found}
    return found.pop() if len(found) == 1 else ""


def chip_refused(chip):
    """Whether choose_image refuses this chip whatever the image: a first-generation 910, or a named chip of no family verl
    has images for."""
    family = (chip or {}).get("family") or ""
    return family == FIRST_GENERATION or bool((chip or {}).get("name")) and family not in FAMILIES


def choose_image(stated, by_chip, chip):
    """(image, why, problem) for a host: the stated verl_image, else verl_image_by_chip's image for the
    detected chip family, else (nothing detected) its 910b image. `problem` is an error message (with the
    fix) when the chip is one verl has no image for (whatever verl_image says), or no image is known for it;
    `why` says where the image came from."""
    by_chip = by_chip or {}
    family, name = (chip or {}).get("family") or "", (chip or {}).get("name") or ""
    if family == FIRST_GENERATION:
        return None, None, ("this host's NPUs are a first-generation Ascend 910 (npu-smi: %s; soc 104, 32 GB HBM), not Atlas A2 "
                            "(910B1 to 910B4) or A3: verl's Ascend images and vllm-ascend do not run on it (\"Can not support "
                            "soc_version: 104\"). Fix: deploy on Atlas A2 or A3 nodes; leave this host out of the inventory." % name)
    if name and family not in FAMILIES:
        # 310, 310P, 310B (inference cards), Ascend950 (A5): verl's Ascend images and their CANN, torch_npu, vllm-ascend and
        # MindSpeed are built for the A2 and A3 SoCs only; a stated image does not change the chip.
        return None, None, ("this host's NPUs are %s (npu-smi), a chip verl publishes no image for: verl's Ascend images exist for "
                            "%s only. Fix: deploy on Atlas A2 or A3 nodes; leave this host out of the inventory."
                            % (name, " and ".join("%s (verl_image_by_chip.%s)" % (FAMILIES[key], key) for key in FAMILIES)))
    if stated:
        built_for = image_family(stated)
        if family and built_for and built_for != family:
            return None, None, ("verl_image=%s is built for %s (its tag says %s), but this host's NPUs are %s (%s). Fix: use the "
                                "image for %s (verl_image_by_chip.%s: %s), or leave verl_image empty to choose it by chip."
                                % (stated, FAMILIES[built_for], built_for, name, FAMILIES.get(family, family), FAMILIES.get(family, family),
                                   family, by_chip.get(family) or "not set"))
        if family and not built_for:
            return stated, "set by verl_image; its tag names no chip: it must be built for %s" % FAMILIES.get(family, family), None
        return stated, "set by verl_image", None
    if family and by_chip.get(family):
        why = "chosen for %s (npu-smi: %s); set verl_image to override" % (FAMILIES.get(family, family), name or "?")
        return by_chip[family], why, None
    if family:
        known = ", ".join(sorted(by_chip)) or "none"
        return None, None, ("verl_image is empty and this host's NPUs are %s (%s), for which verl_image_by_chip has no image (it has: "
                            "%s). Fix: add verl_image_by_chip.%s, a verl image built for %s, or set verl_image to one."
                            % (name or family, FAMILIES[family], known, family, FAMILIES[family]))
    if by_chip.get("910b"):
        return by_chip["910b"], "the 910b image: no NPU was read on this host; set verl_image to choose", None
    return None, None, "verl_image and verl_image_by_chip are both empty. Fix: set verl_image to the verl image to run."
