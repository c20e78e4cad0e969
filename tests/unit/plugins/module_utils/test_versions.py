"""The table of verl releases (plugins/module_utils/_versions.py) and its rules, on stack reports as the image check prints them."""
from __future__ import annotations

import base64
import json

import pytest

from ansible_collections.verl.deploy.plugins.module_utils import _versions as versions
from ansible_collections.verl.deploy.plugins.module_utils._control_step import read_answer

GOOD = {"modules": {"verl": {"version": "0.7.0"}, "torch": {"version": "2.7.1"}, "torch_npu": {"version": "2.7.1.post1"}, "transformers": {"version": "4.57.1"},
                    "vllm": {"version": "0.11.0"}, "vllm_ascend": {"version": "0.11.0rc1"}, "megatron.core": {"version": "0.12.1"},
                    "mindspeed.megatron_adaptor": {"version": None}},
        "forbidden": {}, "workdir": "/verl", "entry_file": True, "model": {"architecture": "Qwen3ForCausalLM", "supported": True},
        "atb": {"home": "/usr/local/Ascend/nnal/atb/latest/atb/cxx_abi_1"}, "first_op": {"device": 0, "ok": True},
        "engine": {"asked": versions.engine_probe("0.7.0"), "model_type": "qwen3", "config": {"ok": True},
                   "bridge": {"version": "0.15.1", "registered": True}}}
# What the real stack prints when it fails (vllm-ascend#152, Ascend/pytorch#99, vllm-ascend#4859).
NO_ATB = "OSError: libatb.so: cannot open shared object file: No such file or directory"
ATB_OTHER_RELEASE = ("OSError: /usr/local/Ascend/nnal/atb/latest/atb/cxx_abi_1/lib/libtbe_adapter.so: undefined symbol: "
                     "_ZN3Mki2DlC1ERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEEb")
OP_561103 = ("RuntimeError: zero_:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:26 NPU function error: call aclnnInplaceZero "
             "failed, error code is 561103")


@pytest.mark.parametrize("version, release, supported", [
    ("0.7.0", "0.7.0", True), ("0.7.0.dev", "0.7.0", True), ("0.7.0+ascend", "0.7.0", True), ("0.7.0rc1", "0.7.0", True),
    ("0.7.1", "0.7.1", True), ("0.9.0.dev", "0.9.0", True), ("0.6.1", "0.6.1", False), ("0.10.0.dev", "0.10.0", False),
    ("v0.7.0", "", False), ("", "", False), (None, "", False)])
def test_the_release_of_a_version_and_whether_it_is_supported(version, release, supported):
    assert versions.release_of(version) == release
    assert (versions.release_for(version) is not None) is supported


# The markers of each wheel as the files show them (verl 0.7.0/0.7.1/0.8.0/0.9.0/0.9.1 from PyPI), of the main commits
# that report 0.8.0.dev, and an image whose probe could not read every file.
V070 = {"main_ppo_v0": False, "megatron_workers": True, "legacy_worker_impl_disable": False, "legacy_reward_impl": False, "grad_offload": True}
V071 = dict(V070, legacy_reward_impl=True)
V080 = dict(V071, megatron_workers=False)
V090 = dict(V080, main_ppo_v0=True)
V091 = dict(V090, grad_offload=False)


@pytest.mark.parametrize("version, markers, profile", [
    ("0.7.0", V070, "0.7.0"), ("0.7.0.dev", V070, "0.7.0"), ("0.7.1", V071, "0.7.1"), ("0.8.0", V080, "0.8.0"),
    ("0.9.0", V090, "0.9.0"), ("0.9.1", V091, "0.9.1"), ("0.9.2", V091, "0.9.1"),
    # Tag v0.8.0 and main of March-May 2026 report 0.8.0.dev: the files say which schema.
    ("0.8.0.dev", V080, "0.8.0"), ("0.8.0.dev", V071, "0.7.1"),
    ("0.8.0.dev", dict(V071, legacy_worker_impl_disable=True), "0.8.0"),  # the Qwen3.5 image's commit 4045d67
    # A release branch that moved on, with the files of the next release: the files decide.
    ("0.7.1", V080, "0.8.0"),
    # Without (enough) markers the version string decides.
    ("0.7.1", None, "0.7.1"), ("0.8.0.dev", {}, "0.8.0"), ("0.9.1", {"main_ppo_v0": True}, "0.9.1"), ("0.9.0", {}, "0.9.0"),
    # Outside the table.
    ("0.6.1", V070, None), ("0.5.0.dev", None, None), ("0.10.0.dev", V091, None), ("", V091, None), (None, None, None)])
def test_the_profile_of_an_image_is_what_its_files_say(version, markers, profile):
    assert versions.profile_of(version, markers) == profile


def test_a_version_newer_than_the_table_takes_the_profile_of_its_files_only_when_allowed():
    assert versions.is_newer("0.10.0.dev") and not versions.is_newer("0.9.9")
    assert versions.profile_of("0.10.0.dev", V091, allow_newer=True) == "0.9.1"
    assert versions.profile_of("0.10.0.dev", None, allow_newer=True) is None, "newer, and no files read: no profile"


@pytest.mark.parametrize("stated, image, profile", [
    ("0.9.1", "quay.io/ascend/verl:verl-8.3.rc1-910b-ubuntu22.04-py3.11-v0.7.0", "0.9.1"),
    ("", "quay.io/ascend/verl:verl-8.3.rc1-910b-ubuntu22.04-py3.11-v0.7.0", "0.7.0"),
    ("", "quay.io/ascend/verl:verl-8.5.0-a3-ubuntu22.04-py3.11-v0.7.1", "0.7.1"),
    ("", "quay.io/ascend/verl:v0.8.0-cann9.0.0-torch_npu2.9.0.post2-910b-ubuntu22.04-py3.11-vllm", "0.8.0"),
    ("", "quay.io/ascend/verl:latest-vllm-a3-ubuntu", "0.9.1"),
    ("", "registry.local:5000/verl:verl-8.5.2-910b-ubuntu22.04-py3.11-v0.7.1", "0.7.1"),  # a mirror: the tag names it
    ("", "registry.local/mine:latest", "0.7.0"), ("", "", "0.7.0"), ("", None, "0.7.0")])
def test_the_profile_rendered_for_is_stated_else_the_images_else_0_7_0(stated, image, profile):
    chosen, why = versions.choose_profile(stated, image)
    assert chosen == profile and why


def test_every_profile_has_its_release_images_or_says_why_not():
    for entry in versions.RELEASES:
        assert set(entry["images"]) in ({"910b", "a3"}, set()), entry["profile"]
        assert entry["images"] or entry["image_note"], entry["profile"]
        for image in entry["images"].values():
            assert versions.profile_of_image(image)[0] == entry["profile"]


@pytest.mark.parametrize("line, rendered", [
    ("actor_rollout_ref.nccl_timeout=3600", {"0.7.0", "0.7.1"}),
    ("actor_rollout_ref.actor.megatron.use_remove_padding=${USE_REMOVE_PADDING}", {"0.7.0", "0.7.1"}),
    ("actor_rollout_ref.model.use_remove_padding=${USE_REMOVE_PADDING}", set(versions.PROFILES)),
    ("actor_rollout_ref.actor.megatron.grad_offload=${GRAD_OFFLOAD}", {"0.7.0", "0.7.1", "0.8.0", "0.9.0"}),
    ("reward_model.overlong_buffer.enable=True", {"0.7.0"}),
    ("+reward_model.reward_kwargs.max_resp_len=${MAX_RESPONSE_LENGTH}", {"0.7.0"}),
    ("+reward.reward_kwargs.max_resp_len=${MAX_RESPONSE_LENGTH}", {"0.7.1", "0.8.0", "0.9.0", "0.9.1"}),
    ("actor_rollout_ref.actor.megatron.vanilla_mbridge=True", {"0.9.0", "0.9.1"}),
    ("data.train_files=${TRAIN_FILE}", set(versions.PROFILES))])
def test_each_line_is_rendered_for_the_profiles_of_its_entry(line, rendered):
    assert {profile for profile in versions.PROFILES if versions.rendered_for(line, profile)} == rendered


def test_entry_points_per_profile():
    assert versions.entry_point("dapo") == {"module": "recipe.dapo.main_dapo", "config": "dapo_megatron_trainer",
                                            "file": "recipe/dapo/main_dapo.py"}
    assert versions.entry_point("grpo")["file"] == "verl/trainer/main_ppo.py"
    for profile in versions.PROFILES[1:]:
        assert versions.entry_of("dapo", profile) == ("verl.trainer.main_ppo", "ppo_megatron_trainer")
    assert versions.all_entry_modules() == ["recipe.dapo.main_dapo", "verl.trainer.main_ppo"]


def test_max_num_seqs_is_the_releases_default():
    assert [versions.defaults(p)["actor_rollout_ref.rollout.max_num_seqs"] for p in versions.PROFILES] == [1024, 1024, 1024, 256, 256]


def test_an_unknown_profile_is_an_error():
    with pytest.raises(KeyError, match="0.6.1"):
        versions.release("0.6.1")


def test_a_good_stack_has_no_problem_and_says_its_versions():
    problems, notes = versions.check_stack(GOOD, "dapo")
    assert problems == [] and notes == [
        "verl 0.7.0; torch 2.7.1, torch_npu 2.7.1.post1, transformers 4.57.1, vllm 0.11.0, vllm_ascend 0.11.0rc1, megatron.core 0.12.1, "
        "mindspeed.megatron_adaptor ?",
        "the model's own path imports: transformers 4.57.1 reads its config (type `qwen3`), mbridge 0.15.1 builds it (verl 0.7.0's "
        "default actor_rollout_ref.actor.megatron.vanilla_mbridge: True).",
        "ATB op library loaded (ATB_HOME_PATH=/usr/local/Ascend/nnal/atb/latest/atb/cxx_abi_1).", "NPU 0 computes."]


@pytest.mark.parametrize("change, words", [
    ({"modules": dict(GOOD["modules"], verl={"error": "ModuleNotFoundError: No module named 'verl'"})}, "verl does not import"),
    ({"modules": dict(GOOD["modules"], verl={"version": "0.6.1"})}, "the image has verl 0.6.1, but this collection renders"),
    ({"engine": dict(GOOD["engine"], bridge={"error": "ModuleNotFoundError: No module named 'mbridge'"})},
     "(type `qwen3`) with (verl 0.7.0's default actor_rollout_ref.actor.megatron.vanilla_mbridge: True), does not import: "
     "ModuleNotFoundError: No module named 'mbridge'"),
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
    assert len(versions.check_stack(stack, "grpo")[1]) == 4, "versions, the model's path, ATB, the first operation: no warning"


def test_the_docs_table_is_the_table():
    page = (versions.__file__.rsplit("/plugins/", 1)[0] + "/docs/ascend-images.md")
    with open(page, encoding="utf-8") as handle:
        rows = {line.split("|")[1].strip(): line for line in handle if line.startswith("| 0.")}
    for release in versions.RELEASES:
        row = rows[release["profile"]]
        cells = [cell.strip() for cell in row.strip().strip("|").split("|")]
        assert cells[:3] == [release["profile"], "`%s`" % versions.entry_point("dapo", release)["file"],
                             "`%s`" % versions.entry_point("grpo", release)["file"]]
        assert cells[3] == "; ".join(", ".join("%s %s" % (name.replace("cann", "CANN"), combo[name])
                                               for name in ("cann", "torch_npu", "vllm", "vllm_ascend", "megatron.core"))
                                     for combo in release["known_good"])


# --------------------------------------------------------------------------- the image's own profile (container stage)

def _image(version, **markers):
    """A stack= answer of an image whose verl reports `version` and whose files are `markers` (the probe's shape)."""
    return {"modules": {"verl": {"version": version}}, "entry_file": True, "workdir": "/verl", "markers": markers}


# The markers the probe reads in each simulated image (tests/sim: each release's wheel), as npu_stack_check.sh finds them.
IMAGE_MARKERS = {
    "0.7.0": dict(main_ppo_v0=False, megatron_workers=True, legacy_worker_impl_disable=False, legacy_reward_impl=False, grad_offload=True),
    "0.7.1": dict(main_ppo_v0=False, megatron_workers=True, legacy_worker_impl_disable=False, legacy_reward_impl=True, grad_offload=True),
    "0.8.0": dict(main_ppo_v0=False, megatron_workers=False, legacy_worker_impl_disable=False, legacy_reward_impl=True, grad_offload=True),
    "0.9.1": dict(main_ppo_v0=True, megatron_workers=False, legacy_worker_impl_disable=False, legacy_reward_impl=True, grad_offload=False),
}


@pytest.mark.parametrize("version, profile", [("0.7.0.dev", "0.7.0"), ("0.7.1", "0.7.1"), ("0.8.0", "0.8.0"), ("0.9.1", "0.9.1")])
def test_the_image_that_is_the_rendered_profile_passes(version, profile):
    problems, _notes = versions.check_stack(_image(version, **IMAGE_MARKERS[profile]), "grpo", {"profile": profile, "why": "set by verl_version"})
    assert problems == []


def test_an_image_of_another_release_is_refused_naming_both_profiles_and_the_fix():
    stack = _image("0.9.1", **IMAGE_MARKERS["0.9.1"])
    rendered = {"profile": "0.7.0", "why": "verl 0.7.0, the default: the image registry:5000/x names no release; set verl_version to its release"}
    problems, _notes = versions.check_stack(stack, "grpo", rendered)
    assert len(problems) == 1
    assert "the image's verl 0.9.1 is profile 0.9.1" in problems[0]
    assert "main_ppo_v0 yes" in problems[0] and "grad_offload no" in problems[0]
    assert "rendered for verl profile 0.7.0 (verl 0.7.0, the default" in problems[0]
    assert "Fix: set verl_version=0.9.1" in problems[0]
    # The fix applied: rendered for 0.9.1, the image passes.
    assert versions.check_stack(stack, "grpo", {"profile": "0.9.1", "why": "set by verl_version"})[0] == []


def test_a_dev_commit_is_placed_by_its_files_not_its_version_string():
    # Tag v0.8.0 and main of March-May 2026 report 0.8.0.dev; one with the legacy workers still there is 0.7.1's schema.
    stack = _image("0.8.0.dev", **IMAGE_MARKERS["0.7.1"])
    problems, _notes = versions.check_stack(stack, "grpo", {"profile": "0.8.0", "why": "set by verl_version"})
    assert "is profile 0.7.1" in problems[0] and "Fix: set verl_version=0.7.1" in problems[0]


def test_a_newer_verl_is_refused_unless_the_user_opts_in():
    stack = _image("0.10.0.dev", **IMAGE_MARKERS["0.9.1"])
    problems, _notes = versions.check_stack(stack, "grpo", {"profile": "0.9.1", "why": "set by verl_version"})
    assert len(problems) == 1
    assert "verl 0.10.0.dev, newer than every release" in problems[0]
    assert "Fix: use an image of one of these releases" in problems[0] and "verl_allow_untested_version=true" in problems[0]
    problems, notes = versions.check_stack(stack, "grpo", {"profile": "0.9.1", "why": "set by verl_version"}, allow_newer=True)
    assert problems == []
    assert any("verl 0.10.0.dev is newer than every release" in note and "profile 0.9.1" in note for note in notes)


def test_the_probe_reads_each_marker_of_the_table():
    assert set(versions.MARKER_PROBES) == set(versions.MARKERS)


def test_docs_versions_md_is_generated_from_the_table():
    import settings_table  # tools/, on pytest's pythonpath

    assert settings_table.VERSIONS_FILE.read_text() == settings_table.versions_text(), (
        "docs/versions.md is not what the release table gives. Fix: .venv/bin/python tools/settings_table.py --write")


def test_the_default_images_are_the_default_profiles():
    import yaml

    with open(versions.__file__.rsplit("/plugins/", 1)[0] + "/roles/verl/meta/argument_specs.yml", encoding="utf-8") as handle:
        spec = yaml.safe_load(handle)
    options = spec["argument_specs"]["main"]["options"]
    assert options["verl_image_by_chip"]["default"] == versions.SUPPORTED["images"]


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
    problems, _notes = versions.check_stack(dict(GOOD, first_op={"device": 0, "error": error}), "dapo", image=image, chip=chip)
    assert len(problems) == 1, problems
    if blamed == "image":
        assert "verl builds its images per chip" in problems[0] and "driver" not in problems[0].split("Fix:")[1], problems[0]
        assert "Fix: leave verl_image empty to take verl_image_by_chip.a3, or set verl_image to verl's image for Atlas A3" in problems[0]
        # The fix applied (the A3 image on an A3 host): the same failure is not the image's any more.
        fixed, _notes = versions.check_stack(dict(GOOD, first_op={"device": 0, "error": OP_561103}), "dapo", image=A3_IMAGE, chip=chip)
        assert "verl builds its images per chip" not in fixed[0]
    else:
        assert "means the image's CANN does not fit the host's driver and firmware" in problems[0]


# --------------------------------------------------------------------------- the image's verl checks the command

def _answer(rc, *lines):
    """install_files.sh's answer as node_step returns it read: its one document's answer, the output's last lines in base64."""
    tail = base64.b64encode("".join(line + "\n" for line in lines).encode()).decode()
    return read_answer(json.dumps({"said": ["installed /verl/x.sh"], "answer": {"command_check_rc": str(rc), "command_check_tail": tail}}))["answer"]


# Hydra's own output (hydra/_internal/utils.py run_and_report, without HYDRA_FULL_ERROR) as verl 0.9.1's schema answers a
# line of 0.9.0's, and as PRIME-RL/TTRL issue #24 shows it for a key verl's config does not have.
GRAD_OFFLOAD = ("Could not override 'actor_rollout_ref.actor.megatron.grad_offload'.",
                "To append to your config use +actor_rollout_ref.actor.megatron.grad_offload=False",
                "Key 'grad_offload' is not in struct",
                "    full_key: actor_rollout_ref.actor.megatron.grad_offload",
                "    object_type=dict",
                "",
                "Set the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.")
N_VOTE = ("Could not override 'actor_rollout_ref.rollout.n_vote'.",
          "To append to your config use +actor_rollout_ref.rollout.n_vote=64",
          "Key 'n_vote' is not in struct",
          "    full_key: actor_rollout_ref.rollout.n_vote",
          "    object_type=dict")
# The first verl import of verl-recipe's dapo/main_dapo.py at a commit of 2026-06-16 on, in a 0.7.1/0.8.x image.
RECIPE = ("Traceback (most recent call last):",
          '  File "/usr/lib/python3.11/runpy.py", line 198, in _run_module_as_main',
          '  File "/verl/recipe/dapo/main_dapo.py", line 28, in <module>',
          "    from verl.trainer.main_ppo_v0 import TaskRunner",
          "ModuleNotFoundError: No module named 'verl.trainer.main_ppo_v0'")
MISSING_MODULE = ("/usr/bin/python3: No module named recipe.dapo.main_dapo",)


@pytest.mark.parametrize("answer, extra, words", [
    (_answer(1, *GRAD_OFFLOAD), [], ["the image's verl 0.9.1 refuses the training command rendered for verl profile 0.9.0", "exit code 1",
                                     "Could not override 'actor_rollout_ref.actor.megatron.grad_offload'. / Key 'grad_offload' is not in struct",
                                     "Fix: the line is rendered for profile 0.9.0", "set verl_version"]),
    (_answer(1, *N_VOTE), ["actor_rollout_ref.rollout.n_vote=64"], [
        "Could not override 'actor_rollout_ref.rollout.n_vote'", "Key 'n_vote' is not in struct",
        "Fix: correct or remove actor_rollout_ref.rollout.n_vote=64 in verl_extra_overrides"]),
    (_answer(1, *RECIPE), [], ["ModuleNotFoundError: No module named 'verl.trainer.main_ppo_v0'",
                               "does not import from the image's verl checkout in /verl"]),
    (_answer(1, *MISSING_MODULE), [], ["/usr/bin/python3: No module named recipe.dapo.main_dapo", "set verl_workdir"]),
    (_answer(2, "something else entirely"), [], ["something else entirely", "run_training.sh --cfg-job"]),
])
def test_a_command_the_images_verl_refuses_is_refused_with_hydras_own_line(answer, extra, words):
    verdict = versions.command_check(answer, "0.9.0", "verl.trainer.main_ppo", "/verl", extra, "0.9.1", 60)
    assert verdict["checked"] and verdict["note"] is None
    for word in words:
        assert word in verdict["problem"], (word, verdict["problem"])
    assert "HYDRA_FULL_ERROR" not in verdict["problem"] and "Traceback" not in verdict["problem"]


def test_a_command_that_composes_or_an_answer_without_a_check_is_no_problem():
    composed = versions.command_check(_answer(0, "trainer:", "  device: npu"), "0.7.0", "recipe.dapo.main_dapo", version="0.7.0")
    assert composed["checked"] and composed["problem"] is None and "composed the training command" in composed["note"]
    assert versions.command_check(read_answer('{"said": ["installed /verl/run_training.sh"], "answer": {"changed": "true"}}')["answer"], "0.7.0",
                                  "recipe.dapo.main_dapo") == {"checked": False, "problem": None, "note": None}
    # An older script's lines are no answer: a Hydra line of the output cannot forge command_check_rc=0.
    older = read_answer("command_check_rc=0\ncommand_check: trainer:")["answer"]
    assert versions.command_check(older, "0.7.0", "recipe.dapo.main_dapo")["checked"] is False
    assert versions.command_check({}, "0.7.0", "recipe.dapo.main_dapo")["checked"] is False
    # The output's bytes stay in the tail: a line break, U+2028 or a record separator before a fake answer forges nothing.
    forged = versions.command_check(_answer(1, "Key 'x' is not in struct\u2028\x1ecommand_check_rc=0", '"}, "changed": "false'), "0.7.0", "m")
    assert forged["checked"] and "exit code 1" in forged["problem"] and "command_check_rc=0" in forged["problem"]


def test_a_check_that_did_not_finish_in_time_is_a_note_not_a_refusal():
    verdict = versions.command_check(_answer(124), "0.8.0", "verl.trainer.main_ppo", seconds=60)
    assert verdict["problem"] is None and "within 60 s; not checked" in verdict["note"]


# --------------------------------------------------------------------------- known-broken combinations (BROKEN)

# verl#4815 (Qwen3-8B on NPU, Megatron + vLLM, mbridge and VPP on): the last line of its traceback.
VPP_MBRIDGE_ERROR = "IndexError: too many indices for tensor of dimension 3"
USE_MBRIDGE_OFF = "actor_rollout_ref.actor.megatron.use_mbridge=False"


def _decoded(mask):
    from ansible_collections.verl.deploy.plugins.module_utils._features import decode_mask
    return decode_mask(mask)


def test_every_known_broken_entry_names_its_report_and_error():
    for entry in versions.BROKEN:
        assert entry["report"].startswith("verl#") and entry["error"] and entry["bits"]
        out = entry["way_out"]
        assert not out or (set(out["profiles"]) <= set(versions.PROFILES) and "=" in out["line"] and out["models"])


@pytest.mark.parametrize("profile, architecture, extra, verdict", [
    # 0.7.x: the documented way out (use_mbridge=False) is rendered, for the models verl converts itself.
    ("0.7.0", "Qwen3ForCausalLM", [], "rendered"),
    ("0.7.1", "DeepseekV3ForCausalLM", [], "rendered"),
    ("0.7.0", None, [], "rendered"),  # the model not read yet: the node's check judges it
    ("0.7.0", "Qwen3ForCausalLM", [USE_MBRIDGE_OFF], "given"),  # the user's own line is the way out
    # No way out: another model kind, the engine workers forced, the user's use_mbridge=True, 0.8.0 on (verl#6658).
    ("0.7.0", "Qwen3_5ForConditionalGeneration", [], "Model Type: Qwen3_5ForConditionalGeneration not supported"),
    ("0.7.0", "Qwen3ForCausalLM", ["trainer.use_legacy_worker_impl=disable"], "use_legacy_worker_impl=disable"),
    ("0.7.1", "Qwen3ForCausalLM", ["actor_rollout_ref.actor.megatron.use_mbridge=True"], "use_mbridge=True, against"),
    ("0.8.0", "Qwen3ForCausalLM", [], "use_mbridge must be True"),
    ("0.9.1", "Qwen3ForCausalLM", [], "verl#6658"),
])
def test_vpp_with_mbridge_is_rendered_its_way_out_or_refused_with_a_mask_that_works(profile, architecture, extra, verdict):
    decoded = _decoded("1010011")
    problems = versions.known_broken(decoded, profile, architecture, extra)
    lines = versions.features_for(decoded, profile, extra)["lines"]
    if verdict in ("rendered", "given"):
        assert problems == []
        assert (USE_MBRIDGE_OFF in lines) is (verdict == "rendered")
        return
    assert len(problems) == 1 and verdict in problems[0], problems
    assert "verl#4815" in problems[0] and VPP_MBRIDGE_ERROR in problems[0]
    if profile not in ("0.7.0", "0.7.1"):
        assert USE_MBRIDGE_OFF not in lines
    # The fix: the mask it names (bit 6 off) is not a known-broken combination, with every other bit kept.
    fix = problems[0].split("Fix: ", 1)[1]
    assert "verl_feature_mask=1010010 " in fix
    assert versions.known_broken(_decoded("1010010"), profile, architecture, extra) == []
    assert "use_mbridge" not in " ".join(versions.features_for(_decoded("1010010"), profile, extra)["lines"])


def test_a_mask_without_vpp_renders_no_way_out_line():
    for profile in versions.PROFILES:
        assert "use_mbridge" not in " ".join(versions.features_for(_decoded("1111110"), profile)["lines"])


def test_a_model_verl_does_not_convert_itself_is_not_sent_to_0_7_for_vpp():
    """From 0.8.0 the refusal names 0.7.x as another way out only for a model 0.7.x builds without mbridge."""
    assert "or verl_version 0.7.0 / 0.7.1" in versions.known_broken(_decoded("0000001"), "0.8.0", "Qwen3ForCausalLM")[0]
    other = versions.known_broken(_decoded("0000001"), "0.8.0", "Qwen3_5MoeForConditionalGeneration")[0]
    assert "verl_version 0.7" not in other and "Fix: verl_feature_mask=0000000" in other


# --------------------------------------------------------------------------- the model's own engine path

VANILLA = "actor_rollout_ref.actor.megatron.vanilla_mbridge"


@pytest.mark.parametrize("profile, lines, extra, package, set_by", [
    # engine/megatron.yaml's default: True up to 0.8.0, False from 0.9.0 (where run_training.sh renders True, NPU_LINES)
    ("0.7.0", (), (), "mbridge", "default"),
    ("0.8.0", (), (), "mbridge", "default"),
    ("0.9.0", (), (), "mbridge", "rendered"),
    ("0.9.1", (), (), "mbridge", "rendered"),
    ("0.8.0", (), (VANILLA + "=False",), "megatron.bridge", "extra_overrides"),
    ("0.9.1", (), ("++" + VANILLA + "=False",), "megatron.bridge", "extra_overrides"),
    # use_mbridge=False: only 0.7.x's legacy worker builds without a bridge (VPP's way out)
    ("0.7.1", (versions.USE_MBRIDGE + "=False",), (), None, "rendered"),
    ("0.7.0", (), (versions.USE_MBRIDGE + "=False", "trainer.use_legacy_worker_impl=disable"), "mbridge", "default"),
])
def test_the_weight_bridge_is_the_releases_and_the_lines(profile, lines, extra, package, set_by):
    found = versions.weight_bridge(profile, lines, extra)
    assert (found["package"], found["set_by"]) == (package, set_by), found


def test_the_vanilla_mbridge_default_is_each_releases_engine_yaml():
    assert [versions.release(p)["vanilla_mbridge"] for p in versions.PROFILES] == [True, True, True, False, False]


def test_the_probe_asks_for_remote_code_only_when_the_user_does():
    assert versions.engine_probe("0.7.0")["trust_remote_code"] is False
    assert versions.engine_probe("0.7.0", extra_overrides=["actor_rollout_ref.model.trust_remote_code=True"])["trust_remote_code"] is True


def _engine(**found):
    return dict({"asked": versions.engine_probe("0.7.0"), "model_type": "qwen3", "config": {"ok": True}, "bridge": {"version": "0.15.1",
                                                                                                                    "registered": True}}, **found)


# The texts the training prints at the actor's start, from their public reports.
UNKNOWN_TYPE = ("ValueError: The checkpoint you are trying to load has model type `qwen3_5` but Transformers does not recognize this "
                "architecture. This could be because of an issue with the checkpoint, or because your version of Transformers is out "
                "of date.")  # vllm#36217
NO_MEGATRON_BRIDGE = "ModuleNotFoundError: No module named 'megatron.bridge'"  # verl#6931
CORE_TOO_OLD = ("ImportError: cannot import name 'get_tensor_model_parallel_group_if_none' from 'megatron.core.utils' "
                "(/root/miniconda3/envs/verl_pt27_25rc3/lib/python3.10/site-packages/megatron/core/utils.py)")  # mbridge#50


@pytest.mark.parametrize("found, words", [
    ({"model_type": "qwen3_5", "config": {"error": UNKNOWN_TYPE, "cause": "KeyError: 'qwen3_5'"}},
     ["transformers 4.57.1 cannot read the model's config.json (model type `qwen3_5`): " + UNKNOWN_TYPE.rstrip("."),
      "(KeyError: 'qwen3_5')", "Fix: use an image whose transformers knows model type `qwen3_5`"]),
    ({"asked": versions.engine_probe("0.8.0", extra_overrides=[VANILLA + "=False"]), "bridge": {"error": NO_MEGATRON_BRIDGE}},
     ["Megatron-Bridge (megatron.bridge), the weight bridge verl 0.8.0 builds this model (type `qwen3`) with (verl_extra_overrides "
      "sets %s=False), does not import: %s" % (VANILLA, NO_MEGATRON_BRIDGE), "(verl#6931)", "Fix: remove %s=False" % VANILLA]),
    # transformers' refusal of a folder with its own code (AutoConfig without trust_remote_code=True)
    ({"model_type": "internlm2", "config": {"error": "ValueError: The repository for /models/internlm2 contains custom code which must "
                                                     "be executed to correctly load the model. ... Please pass the argument "
                                                     "`trust_remote_code=True` to allow custom code to be run."}},
     ["Fix: the model folder brings its own code: add actor_rollout_ref.model.trust_remote_code=True to verl_extra_overrides"]),
    ({"bridge": {"error": CORE_TOO_OLD}},
     ["does not import: " + CORE_TOO_OLD[:90], "needs a newer Megatron core than the image's megatron.core 0.12.1", "(mbridge#50)",
      "Fix: use verl's own image of this release"]),
    ({"model_type": "qwen3_5", "bridge": {"version": "0.15.1", "registered": False, "supported": ["qwen2", "qwen3"]}},
     ["has no bridge for model type `qwen3_5`: verl would stop when the actor starts with \"ValueError: Unregistered model type: "
      "qwen3_5, now only support dict_keys(['qwen2', 'qwen3'])\"", "Fix: use an image whose mbridge and Megatron core build `qwen3_5`"]),
])
def test_each_engine_path_problem_quotes_the_error_and_names_the_fix(found, words):
    problems, notes = versions.engine_problems(_engine(**found), GOOD["modules"])
    assert len(problems) == 1 and notes == [] and all(word in problems[0] for word in words), problems


def test_without_a_bridge_in_use_only_the_config_is_read():
    engine = _engine(asked=versions.engine_probe("0.7.0", [versions.USE_MBRIDGE + "=False"]), bridge={})
    assert versions.engine_problems(engine, GOOD["modules"]) == ([], [])
    assert versions.engine_problems(None, GOOD["modules"]) == ([], [])


# --------------------------------------------------------------------------- Ray and Python the same in every container

@pytest.mark.parametrize("mine, head, refused", [
    ({"version": "2.60.0", "python": "3.11.7"}, {"version": "2.60.0", "python": "3.11.7"}, False),  # the fix: one image
    # ray#50511: the same Ray, another Python patch release: Ray refuses the join all the same
    ({"version": "2.39.0", "python": "3.10.15"}, {"version": "2.39.0", "python": "3.10.14"}, True),
    ({"version": "2.42.0", "python": "3.11.7"}, {"version": "2.12.0", "python": "3.11.7"}, True),
    ({"version": None, "python": "3.11.7"}, {"version": "2.60.0", "python": "3.11.7"}, False),  # no Ray: verl's import says so
    ({"version": "2.60.0", "python": "3.11.7"}, None, False),  # the head's check did not run
])
def test_a_worker_whose_ray_or_python_is_not_the_heads_is_refused_with_rays_own_words(mine, head, refused):
    said = versions.ray_skew(mine, head, "node1")
    assert bool(said) is refused, said
    if refused:
        assert ("its Ray %s with Python %s is not the head node1's Ray %s with Python %s" % (
            mine["version"], mine["python"], head["version"], head["python"])) in said
        assert ("RuntimeError: Version mismatch: The cluster was started with: Ray: %s Python: %s This process on node ... was "
                "started with: Ray: %s Python: %s\" (ray#50511). Fix: run one image on every node" % (
                    head["version"], head["python"], mine["version"], mine["python"])) in said


# --------------------------------------------------------------------------- the host's driver and firmware against the image's CANN

V070_IMAGE = versions.RELEASES[0]["images"]["910b"]  # ...verl-8.3.rc1-910b-...-v0.7.0: CANN 8.3.RC1
V080_IMAGE = versions.BY_PROFILE["0.8.0"]["images"]["910b"]  # ...-cann9.0.0-...: CANN 9.0.0
LATEST = versions.BY_PROFILE["0.9.1"]["images"]["910b"]  # latest-vllm-910b-ubuntu: the table's CANN 9.1.0


def hdk(driver, firmware_hdk=None, firmware="7.7.0.6.236"):
    return {"driver": driver, "firmware": firmware, "firmware_hdk": firmware_hdk or driver}


@pytest.mark.parametrize("older, newer", [("24.1.rc2", "24.1.rc3"), ("24.1.rc3", "24.1.0"), ("24.1.0", "24.1.0.3"),
                                          ("25.0", "25.0.rc1.1"), ("25.0.rc1.1", "25.2.0"), ("25.2.2", "26.0.RC1"),
                                          ("26.0.RC1", "26.0.rc3"), ("24.1.rc3.b999", "25.0")])
def test_hdk_versions_sort_as_releases(older, newer):
    assert versions.hdk_key(older) < versions.hdk_key(newer)


@pytest.mark.parametrize("image, cann", [(V070_IMAGE, "8.3.RC1"), (V080_IMAGE, "9.0.0"), (LATEST, "9.1.0"),
                                         ("quay.io/ascend/verl:verl-8.5.2-a3-ubuntu22.04-py3.11-qwen3-5", "8.5.2"),
                                         ("registry:5000/verl/verl-sim:0123456789ab", None), ("", None)])
def test_the_cann_an_image_names(image, cann):
    assert versions.image_cann(image)[0] == cann


def test_a_driver_older_than_the_images_cann_supports_is_refused_naming_node_versions_and_the_upgrade():
    problem, note = versions.driver_fit(hdk("24.1.0", firmware="7.5.0.1.129"), V080_IMAGE, "node2")
    assert note == ""
    for said in ("node2's driver 24.1.0 and firmware 7.5.0.1.129 (HDK 24.1.0) are older than 25.0", "CANN 9.0.0", V080_IMAGE,
                 "to 26.0.RC1", "Fix: upgrade"):
        assert said in problem
    # The fix: the HDK CANN 9.0.0 is released with (driver and firmware) ...
    assert versions.driver_fit(hdk("26.0.RC1"), V080_IMAGE, "node2") == ("", "")
    # ... or an image of an older CANN: verl 0.7.0's (8.3.RC1), whose notes name no oldest HDK: only a note.
    problem, note = versions.driver_fit(hdk("24.1.0"), V070_IMAGE, "node2")
    assert problem == "" and "older than 25.3.RC1" in note


def test_an_old_firmware_alone_is_refused():
    problem, _note = versions.driver_fit(hdk("25.5.0", firmware_hdk="24.1.rc3", firmware="7.5.0.1.129"), LATEST, "node1")
    assert "node1's firmware 7.5.0.1.129 (HDK 24.1.rc3) is older than 25.2" in problem and "driver" not in problem.split(" is older")[0]


def test_a_compatible_but_older_driver_is_a_note_citing_the_report_the_upgrade_fixed():
    """vllm-ascend#15411: CANN 9.1.0 on driver 25.2.2 (compatible by Huawei's table) failed ("ERROR: External init callback must
    run in same thread as registerClient" when the profiler stopped) until firmware and driver 26.1.1."""
    problem, note = versions.driver_fit(hdk("25.2.2"), LATEST, "node1")
    assert problem == "" and "vllm-ascend#15411" in note and "to 26.0.RC1" in note
    assert versions.driver_fit(hdk("26.1.1"), LATEST, "node1") == ("", "")


@pytest.mark.parametrize("found, image", [(hdk(None, firmware=None), V080_IMAGE), ({}, V080_IMAGE), (hdk("not a version"), V080_IMAGE),
                                          (hdk("23.0.0"), "registry:5000/verl/verl-sim:0123456789ab"),
                                          (hdk("23.0.0"), "quay.io/ascend/verl:verl-8.0.rc3-910b-ubuntu22.04-py3.10-v0.5.0")])
def test_an_unknown_version_or_cann_refuses_nothing(found, image):
    assert versions.driver_fit(found, image) == ("", "")
