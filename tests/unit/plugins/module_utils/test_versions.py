"""The table of verl releases (plugins/module_utils/_versions.py) and its rules, on stack reports as the image check prints them."""
from __future__ import annotations

import pytest

from ansible_collections.verl.deploy.plugins.module_utils import _versions as versions

GOOD = {"modules": {"verl": {"version": "0.7.0"}, "torch": {"version": "2.7.1"}, "torch_npu": {"version": "2.7.1.post1"}, "transformers": {"version": "4.57.1"},
                    "vllm": {"version": "0.11.0"}, "vllm_ascend": {"version": "0.11.0rc1"}, "megatron.core": {"version": "0.12.1"},
                    "mindspeed.megatron_adaptor": {"version": None}, "mbridge": {"version": "0.15.1"}},
        "forbidden": {}, "workdir": "/verl", "entry_file": True, "model": {"architecture": "Qwen3ForCausalLM", "supported": True},
        "atb": {"home": "/usr/local/Ascend/nnal/atb/latest/atb/cxx_abi_1"}, "first_op": {"device": 0, "ok": True}}
# What the real stack prints when it fails (vllm-ascend#152, Ascend/pytorch#99, vllm-ascend#4859).
NO_ATB = "OSError: libatb.so: cannot open shared object file: No such file or directory"
ATB_OTHER_RELEASE = ("OSError: /usr/local/Ascend/nnal/atb/latest/atb/cxx_abi_1/lib/libtbe_adapter.so: undefined symbol: "
                     "_ZN3Mki2DlC1ERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEEb")
OP_561103 = ("RuntimeError: zero_:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:26 NPU function error: call aclnnInplaceZero "
             "failed, error code is 561103")


@pytest.mark.parametrize("version, release, supported", [
    ("0.7.0", "0.7.0", True), ("0.7.0.dev", "0.7.0", True), ("0.7.0+ascend", "0.7.0", True), ("0.7.0rc1", "0.7.0", True),
    ("0.7.1", "0.7.1", False), ("0.9.0.dev", "0.9.0", False), ("v0.7.0", "", False), ("", "", False), (None, "", False)])
def test_the_release_of_a_version_and_whether_it_is_supported(version, release, supported):
    assert versions.release_of(version) == release
    assert (versions.release_for(version) is not None) is supported


def test_entry_points_are_where_verl_0_7_0_has_them():
    assert versions.entry_point("dapo") == {"module": "recipe.dapo.main_dapo", "config": "dapo_megatron_trainer",
                                            "file": "recipe/dapo/main_dapo.py"}
    assert versions.entry_point("grpo")["file"] == "verl/trainer/main_ppo.py"


def test_a_good_stack_has_no_problem_and_says_its_versions():
    problems, notes = versions.check_stack(GOOD, "dapo")
    assert problems == [] and notes == [
        "verl 0.7.0; torch 2.7.1, torch_npu 2.7.1.post1, transformers 4.57.1, vllm 0.11.0, vllm_ascend 0.11.0rc1, megatron.core 0.12.1, "
        "mindspeed.megatron_adaptor ?, mbridge 0.15.1",
        "ATB op library loaded (ATB_HOME_PATH=/usr/local/Ascend/nnal/atb/latest/atb/cxx_abi_1).", "NPU 0 computes."]


@pytest.mark.parametrize("change, words", [
    ({"modules": dict(GOOD["modules"], verl={"error": "ModuleNotFoundError: No module named 'verl'"})}, "verl does not import"),
    ({"modules": dict(GOOD["modules"], verl={"version": "0.8.1"})}, "the image has verl 0.8.1, but this collection renders"),
    ({"modules": dict(GOOD["modules"], mbridge={"error": "ModuleNotFoundError: No module named 'mbridge'"})}, "mbridge does not import"),
    ({"forbidden": {"transformer_engine": "2.8.0"}}, "the image has transformer_engine 2.8.0, which is for CUDA"),
    ({"entry_file": False}, "has no recipe/dapo/main_dapo.py, the DAPO entry point"),
    ({"model": {"architecture": "Qwen9ForCausalLM", "supported": False}}, "does not know the model's architecture Qwen9ForCausalLM"),
    ({"atb": {"home": None, "error": NO_ATB}}, "ATB_HOME_PATH=(not set)): %s. vLLM-Ascend loads it at its start. Fix: source NNAL's" % NO_ATB),
    ({"atb": dict(GOOD["atb"], error=ATB_OTHER_RELEASE)}, "undefined symbol: _ZN3Mki2Dl"),
    ({"atb": dict(GOOD["atb"], error=ATB_OTHER_RELEASE)}, "Fix: use an image whose NNAL (nnal/atb) is of the same CANN release"),
    ({"first_op": {"device": 0, "error": OP_561103}}, "the first operation on NPU 0 (set_device, then a small tensor operation) failed "
                                                      "with torch_npu 2.7.1.post1: %s." % OP_561103),
    ({"first_op": {"device": 0, "error": OP_561103}}, "Fix: use a verl image whose CANN this driver supports"),
])
def test_each_problem_names_the_package_and_the_fix(change, words):
    problems, _notes = versions.check_stack(dict(GOOD, **change), "dapo")
    assert len(problems) == 1 and words in problems[0] and "Fix:" in problems[0], problems


def test_a_first_operation_skipped_beside_the_running_training_is_said_not_refused():
    problems, notes = versions.check_stack(dict(GOOD, first_op={"device": 0, "skipped": "pid(s) 42 of this container hold its NPUs"}), "dapo")
    assert problems == []
    assert notes[-1] == "NPU 0 not touched: pid(s) 42 of this container hold its NPUs (the deploy's training runs there)."


def test_the_8_2_rc1_stack_is_known_good_too():
    stack = dict(GOOD, modules=dict(GOOD["modules"], torch_npu={"version": "2.5.1"}, vllm={"version": "0.9.1"},
                                    vllm_ascend={"version": "0.9.1"}))
    assert len(versions.check_stack(stack, "grpo")[1]) == 3, "versions, ATB, the first operation: no warning"


def test_the_docs_table_is_the_table():
    page = (versions.__file__.rsplit("/plugins/", 1)[0] + "/docs/ascend-images.md")
    with open(page, encoding="utf-8") as handle:
        rows = [line for line in handle if line.startswith("| %s " % versions.SUPPORTED["series"])]
    assert len(rows) == len(versions.RELEASES)
    for release, row in zip(versions.RELEASES, rows):
        cells = [cell.strip() for cell in row.strip().strip("|").split("|")]
        assert cells[:3] == [release["series"], "`%s`" % versions.entry_point("dapo", release)["file"],
                             "`%s`" % versions.entry_point("grpo", release)["file"]]
        assert cells[3] == "; ".join(", ".join("%s %s" % (name.replace("cann", "CANN"), combo[name])
                                               for name in ("cann", "torch_npu", "vllm", "vllm_ascend", "megatron.core"))
                                     for combo in release["known_good"])


A2_IMAGE = "quay.io/ascend/verl:verl-8.3.rc1-910b-ubuntu22.04-py3.11-v0.7.0"
A3_IMAGE = "quay.io/ascend/verl:verl-8.3.rc1-a3-ubuntu22.04-py3.11-v0.7.0"
A3 = {"family": "a3", "name": "Ascend910"}
# CANN's op package on a device of another SoC (vllm-project/vllm-ascend#2725).
WRONG_SOC_ERROR = ("[ERROR] the socversion Ascend910B1 of bin package does not match the current device socverison Ascend310P3. "
                   "Please modify default socversion in run.sh or execute run.sh with socversion parameter.")


@pytest.mark.parametrize("image, chip, error, blamed", [
    (A2_IMAGE, A3, OP_561103, "image"),                        # the tag names another chip: the image, whatever the code
    (A3_IMAGE, A3, OP_561103, "driver"),                       # the image fits the chip: the driver/CANN pairing
    ("my/verl:custom", A3, OP_561103, "driver"),               # a tag that names no chip says nothing
    ("my/verl:custom", A3, WRONG_SOC_ERROR, "image"),          # CANN's own wrong-SoC words
    (A2_IMAGE, {}, OP_561103, "driver"),                       # no chip read
])
def test_a_first_operation_failure_blames_the_image_built_for_another_chip(image, chip, error, blamed):
    """Issue 28: the first-NPU-operation failure always blamed the driver/CANN pairing, also in an image built for another chip."""
    problems, _notes = versions.check_stack(dict(GOOD, first_op={"device": 0, "error": error}), "dapo", image, chip)
    assert len(problems) == 1, problems
    if blamed == "image":
        assert "verl builds its images per chip" in problems[0] and "driver" not in problems[0].split("Fix:")[1], problems[0]
        assert "Fix: leave verl_image empty to take verl_image_by_chip.a3, or set verl_image to verl's image for Atlas A3" in problems[0]
        # The fix applied (the A3 image on an A3 host): the same failure is not the image's any more.
        fixed, _notes = versions.check_stack(dict(GOOD, first_op={"device": 0, "error": OP_561103}), "dapo", A3_IMAGE, chip)
        assert "verl builds its images per chip" not in fixed[0]
    else:
        assert "means the image's CANN does not fit the host's driver and firmware" in problems[0]
