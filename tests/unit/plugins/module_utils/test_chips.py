# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The chip family, the device ids verl_npu_devices names, and the image chosen for the chip: on the real
npu-smi captures of tests/fixtures/npu-smi, and through the launch configuration."""
from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.verl.deploy.plugins.filter.npu_devices import FilterModule
from ansible_collections.verl.deploy.plugins.module_utils._chips import chip_family, choose_image, device_view, image_family, logical_ids
from ansible_collections.verl.deploy.plugins.module_utils._launch_config import build
from ansible_collections.verl.deploy.plugins.module_utils._npu_smi import parse_info
from helpers.launch_helpers import DEFAULTS, RULES, SPEC, settings

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "npu-smi"
IMAGES = DEFAULTS["verl_image_by_chip"]
A3_BUSY = "005_info_A3_Ascend910_16chips_v25.2.0_busy_procs_emptyname.txt"
A3_IDLE = "synthetic_info_A3_Ascend910_16chips_idle.txt"


def parsed(name):
    return parse_info((FIXTURES / name).read_text(encoding="utf-8"))


@pytest.mark.parametrize(("fixture", "family", "name"), [
    ("001_info_910ProB-as-910B_8cards_v24.1.0_noproc.txt", "910", "910B"),  # first-generation 910, not Atlas A2
    ("007_info_910B3_8cards_v24.1.rc2_procs_emptyname_mixed.txt", "910b", "910B3"),
    ("011_info_910B2_8cards_v24.1.0_procs_mindie.txt", "910b", "910B2"),
    ("014_info_910B3_8cards_v26.1.0_widelayout_proc_container_col.txt", "910b", "910B3"),
    ("017_info_910B4-1_2cards_v25.2.0_masked_busid_truncated.txt", "910b", "910B4-1"),
    (A3_BUSY, "a3", "Ascend910"),
    (A3_IDLE, "a3", "Ascend910"),
    ("016a_info_A3_v26.0.rc2_widelayout_HEAD_fragment.txt", "a3", "Ascend910"),
    ("016b_info_A3_v26.0.rc2_widelayout_TAIL_fragment_proc_container_col.txt", "a3", "Ascend910"),
    ("002_info_310_1card_v23.0.0_noproc.txt", "", "310"),
    ("004_info_310P3_2cards_noheader_narrow.txt", "", "310P3"),
    ("018_info_Ascend950DT_8cards_A5_layout_noheader_fixture.txt", "", "Ascend950DT"),
])
def test_the_family_of_each_capture(fixture, family, name):
    assert chip_family(parsed(fixture)) == {"family": family, "name": name}


def test_nothing_read_is_no_family():
    assert chip_family({}) == {"family": "", "name": ""}
    assert chip_family({"failed": True, "msg": "npu-smi: not found"}) == {"family": "", "name": ""}
    assert chip_family({"npus": [{"name": "Ascend910_9392", "chips": []}]})["family"] == "a3"


def test_on_a3_every_chip_is_a_device_numbered_by_its_phy_id():
    view = device_view(parsed(A3_BUSY))
    assert view["device_ids"] == list(range(16)) and view["unhealthy"] == []
    # npu 0 chip 1 is Phy-ID 1: its process shows on device 1, not on card 0's first chip.
    assert view["busy"][1] == [929405] and 929405 not in view["busy"][0]
    assert sorted(view["busy"]) == sorted({phy for phy in range(16) if view["busy"].get(phy)})
    idle = device_view(parsed(A3_IDLE))
    assert idle["device_ids"] == list(range(16)) and idle["busy"] == {} and idle["family"] == "a3"


def test_elsewhere_every_card_is_a_device():
    view = device_view(parsed("007_info_910B3_8cards_v24.1.rc2_procs_emptyname_mixed.txt"))
    assert view["device_ids"] == list(range(8))
    assert sorted(view["busy"]) == [0, 1, 4, 5, 6, 7]
    assert device_view(parsed("010_info_910B3_1card_npu4_v23.0.1_noproc.txt"))["device_ids"] == [4]


def test_an_unhealthy_card_makes_its_chips_unhealthy():
    info = parsed(A3_IDLE)
    info["npus"][1]["health"] = "Alarm"
    assert device_view(info)["unhealthy"] == [2, 3]


def test_the_filter_reads_a_failed_result_as_no_devices():
    npu_devices = FilterModule().filters()["npu_devices"]
    assert npu_devices({"failed": True}) == {"family": "", "name": "", "device_ids": [], "unhealthy": [], "busy": {}}
    assert npu_devices(None)["device_ids"] == []


@pytest.mark.parametrize(("stated", "chip", "image", "why"), [
    ("my/verl:1", {"family": "a3", "name": "Ascend910"}, "my/verl:1",
     "set by verl_image; its tag names no chip: it must be built for Atlas A3 / Ascend910_93"),
    ("my/verl:verl-8.3.rc1-a3-ubuntu22.04", {"family": "a3", "name": "Ascend910"}, "my/verl:verl-8.3.rc1-a3-ubuntu22.04", "set by verl_image"),
    ("my/verl:1", {}, "my/verl:1", "set by verl_image"),
    ("", {"family": "a3", "name": "Ascend910"}, IMAGES["a3"],
     "chosen for Atlas A3 / Ascend910_93 (npu-smi: Ascend910); set verl_image to override"),
    ("", {"family": "910b", "name": "910B3"}, IMAGES["910b"],
     "chosen for Atlas A2 / 910B (npu-smi: 910B3); set verl_image to override"),
    ("", {}, IMAGES["910b"], "the 910b image: no NPU was read on this host; set verl_image to choose"),
])
def test_the_image_is_the_stated_one_else_the_chips(stated, chip, image, why):
    assert choose_image(stated, IMAGES, chip) == (image, why, None)


@pytest.mark.parametrize("fixture", ["002_info_310_1card_v23.0.0_noproc.txt", "004_info_310P3_2cards_noheader_narrow.txt",
                                     "018_info_Ascend950DT_8cards_A5_layout_noheader_fixture.txt"])
@pytest.mark.parametrize("stated", ["", "my/verl:1", "quay.io/ascend/verl:verl-8.3.rc1-910b-ubuntu22.04-py3.11-v0.7.0"])
def test_a_chip_of_no_family_verl_has_images_for_is_refused_whatever_the_image(fixture, stated):
    """Issue 28: 310, 310P3, Ascend950DT (real npu-smi outputs) were accepted once verl_image was stated, and with it empty the
    fix named a verl_image_by_chip entry the settings check refuses."""
    chip = chip_family(parsed(fixture))
    image, _why, problem = choose_image(stated, IMAGES, chip)
    assert image is None
    assert problem.startswith("this host's NPUs are %s (npu-smi), a chip verl publishes no image for: verl's Ascend images exist "
                              "for Atlas A2 / 910B (verl_image_by_chip.910b) and Atlas A3 / Ascend910_93 (verl_image_by_chip.a3) "
                              "only." % chip["name"]), problem
    assert "Fix: deploy on Atlas A2 or A3 nodes" in problem


def test_a_family_without_an_image_names_a_key_the_settings_check_takes():
    image, _why, problem = choose_image("", {"910b": IMAGES["910b"]}, {"family": "a3", "name": "Ascend910"})
    assert image is None and "Fix: add verl_image_by_chip.a3, a verl image built for Atlas A3 / Ascend910_93" in problem
    # The fix applied: that key passes the settings check, and the image is chosen.
    config, errors, _warnings = _build({"family": "a3", "name": "Ascend910"}, verl_npu_devices=list(range(16)), verl_train_tp=8,
                                       verl_image_by_chip={"910b": IMAGES["910b"], "a3": IMAGES["a3"]})
    assert not errors and config["image"] == IMAGES["a3"]
    assert choose_image("", {}, {})[2].startswith("verl_image and verl_image_by_chip are both empty")


def _build(chip, **overrides):
    return build(settings(**overrides), SPEC, RULES, host="node1", head={"name": "node1", "ansible_host": "10.0.0.1"},
                 detected={"chip": chip})


def test_the_launch_configuration_carries_the_chosen_image_and_why():
    config, errors, _warnings = _build(chip_family(parsed(A3_IDLE)), verl_npu_devices=list(range(16)), verl_train_tp=8)
    assert not errors, errors
    assert config["image"] == "quay.io/ascend/verl:verl-8.3.rc1-a3-ubuntu22.04-py3.11-v0.7.0"
    assert config["image_source"].startswith("chosen for Atlas A3") and config["chip"] == {"family": "a3", "name": "Ascend910"}
    assert config["container"]["devices"][:16] == ["/dev/davinci%d" % d for d in range(16)]
    config, errors, _warnings = _build({"family": "a3", "name": "Ascend910"}, verl_image="registry:5000/verl:mine")
    assert config["image"] == "registry:5000/verl:mine" and config["image_source"].startswith("set by verl_image; its tag names no chip")
    config, errors, _warnings = _build({"family": "a3", "name": "Ascend910"}, verl_image_by_chip={"a3": "registry:5000/verl:a3"})
    assert config["image"] == "registry:5000/verl:a3"


def test_a_chip_without_an_image_stops_the_settings_check():
    for stated in ("", "registry:5000/verl:mine"):
        config, errors, _warnings = _build({"family": "", "name": "310P3"}, verl_image=stated)
        assert config is None and [e["variable"] for e in errors] == ["verl_image"]


@pytest.mark.parametrize("devices, container, logical", [
    ([0, 1, 2, 3, 4, 5, 6, 7], None, [0, 1, 2, 3, 4, 5, 6, 7]),
    ([4, 5, 6, 7], None, [0, 1, 2, 3]),                      # --device /dev/davinci4..7: the container's 0..3
    ([1, 3, 5, 7], None, [0, 1, 2, 3]),
    ([4, 5, 6, 7], list(range(8)), [4, 5, 6, 7]),            # privileged: every device of the host
    ([8, 9], list(range(16)), [8, 9]),                       # A3 chips by Phy-ID
    ([2, 6], [0, 2, 4, 6], [1, 3]),                          # a host that lists only some device numbers
    ([5], [0, 1], []),                                       # not a device of the container
])
def test_logical_ids_as_the_runtime_in_the_container_numbers_them(devices, container, logical):
    assert logical_ids(devices, container) == logical


@pytest.mark.parametrize("privileged, detected, visible", [
    (False, None, "0,1,2,3"), (True, list(range(8)), "4,5,6,7"), (True, None, "4,5,6,7"), (True, [0, 4, 5, 6, 7], "1,2,3,4")])
def test_the_launch_configuration_says_what_ascend_rt_visible_devices_is_in_the_container(privileged, detected, visible):
    config, errors, _warnings = build(
        settings(verl_npu_devices="7,6,5,4", verl_container_privileged=privileged, verl_train_tp=2, verl_train_pp=2, verl_gen_tp=2),
        SPEC, RULES, host="node1", head={"name": "node1", "ansible_host": "10.0.0.1"},
        detected={"device_ids": detected} if detected else {})
    assert not errors, errors
    assert config["npu_devices_csv"] == "4,5,6,7" and config["visible_devices_csv"] == visible
    assert "is used as 4,5,6,7" in config["npu_devices_note"]


@pytest.mark.parametrize("ref, family", [
    ("quay.io/ascend/verl:verl-8.3.rc1-910b-ubuntu22.04-py3.11-v0.7.0", "910b"),
    ("quay.io/ascend/verl:verl-8.3.rc1-a3-ubuntu22.04-py3.11-v0.7.0", "a3"),
    ("registry:5000/verl:8.2.rc1_a2", "910b"),
    ("registry:5000/a3/verl:latest", ""),          # the chip in the repository path is not the tag's
    ("registry:5000/verl/verl-sim:0123456789ab", ""),
    ("verl", ""),
    ("my/verl:a3-910b-both", ""),                   # two chips: says nothing
])
def test_the_chip_an_image_tag_names(ref, family):
    assert image_family(ref) == family


def test_an_image_built_for_another_chip_is_refused():
    image, _why, problem = choose_image("quay.io/ascend/verl:verl-8.3.rc1-a3-ubuntu22.04-py3.11-v0.7.0", IMAGES,
                                        {"family": "910b", "name": "910B3"})
    assert image is None and problem.startswith(
        "verl_image=quay.io/ascend/verl:verl-8.3.rc1-a3-ubuntu22.04-py3.11-v0.7.0 is built for Atlas A3 / Ascend910_93 (its tag says a3), "
        "but this host's NPUs are 910B3 (Atlas A2 / 910B)"), problem
    assert "verl_image_by_chip.910b: %s" % IMAGES["910b"] in problem


def test_a_first_generation_910_is_refused_with_the_reason_whatever_the_image():
    for stated in ("", "my/verl:1"):
        image, _why, problem = choose_image(stated, IMAGES, chip_family(parsed("001_info_910ProB-as-910B_8cards_v24.1.0_noproc.txt")))
        assert image is None and "first-generation Ascend 910 (npu-smi: 910B; soc 104" in problem
        assert "Can not support soc_version: 104" in problem
