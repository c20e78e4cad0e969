"""The container stage's check that the training's Python loads the NPU stack (roles/container/files/
npu_stack_check.sh), executed as the deploy runs it, against the simulated image's stand-ins: CANN's
set_env.sh scripts and torch_npu (tests/sim/stand_in_torch_npu.py)."""
from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.launch_helpers import ATB_LIBRARY, cann_stand_in

from ansible_collections.verl.deploy.plugins.module_utils._node_facts import call_digest
from ansible_collections.verl.deploy.plugins.module_utils._run_time import container_check
from ansible_collections.verl.deploy.plugins.module_utils._control_step import read_answer

REPO = Path(__file__).resolve().parent.parent
CHECK = (REPO / "roles/container/files/npu_stack_check.sh").read_text()
# The training's sourcing of CANN, which the container stage gives the check as VERL_CANN_PROGRAM (as start_verl.sh holds it).
CANN_ENV = (REPO / "roles/training/files/cann_env.sh").read_text()
STACK = (REPO / "roles/container/files/npu_stack.py").read_text()
FIXTURES = REPO / "tests" / "fixtures" / "npu-smi"


@pytest.fixture()
def container(tmp_path):
    """A python3 whose torch_npu is the stand-in, and a /dev with 8 NPUs."""
    site = tmp_path / "site" / "torch_npu"
    site.mkdir(parents=True)
    shutil.copy(REPO / "tests/sim/stand_in_torch_npu.py", site / "__init__.py")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(sys.executable)
    replay(bin_dir, "007_info_910B3_8cards_v24.1.rc2_procs_emptyname_mixed.txt", 0)
    dev = tmp_path / "dev"
    dev.mkdir()
    for name in ["davinci%d" % i for i in range(8)] + ["davinci_manager"]:
        (dev / name).touch()
    return {"PATH": "%s:/usr/bin:/bin" % bin_dir, "PYTHONPATH": str(tmp_path / "site"), "SIM_DEV_DIR": str(dev)}


def replay(bin_dir, capture, code):
    """npu-smi as the simulated nodes have it: it prints a real capture and exits with CODE."""
    smi = bin_dir / "npu-smi"
    smi.write_text("#!/bin/sh\ncat %s\nexit %d\n" % (FIXTURES / capture, code))
    smi.chmod(0o755)


LOOK = (REPO / "roles" / "training" / "files" / "look.sh").read_text()


def check(env, want, scripts):
    env = {"VERL_CANN_PROGRAM": CANN_ENV, "VERL_STACK_PROGRAM": STACK, **env}
    return subprocess.run(["bash", "-c", CHECK, "npu-stack-check", str(want), *scripts], env=env, capture_output=True, text=True,
                          timeout=60, check=False)


LAUNCH = {"container_name": "verl", "chip": {"name": "Ascend910B3"}, "npu_devices_csv": "4,5,6,7", "visible_devices_csv": "0,1,2,3"}


def said(proc):
    """The check's last sentence (its one document's said)."""
    read = read_answer(proc.stdout)
    assert read["read"], proc.stdout + proc.stderr
    return read["said"][-1]


def verdict(proc):
    """What the container stage says of a check that failed: image_stack's probe_failed on the registered result."""
    found = image_stack({"rc": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr}, "dapo", launch=LAUNCH)
    assert found["problems"] == [] and found["probe_failed"].startswith(said(proc)), found
    return found["probe_failed"]


def test_with_cann_sourced_torch_npu_loads_and_sees_the_npus(tmp_path, container):
    proc = check(container, 8, [str(tmp_path / "none/set_env.sh"), *cann_stand_in(tmp_path / "Ascend")])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert said(proc) == "torch_npu 2.7.1+verl-sim loads and sees 8 NPU(s) with ASCEND_RT_VISIBLE_DEVICES=(not set)"


def test_without_any_cann_script_or_environment_it_says_so(tmp_path, container):
    missing = [str(tmp_path / "a/set_env.sh"), str(tmp_path / "b/set_env.sh")]
    proc = check(container, 8, missing)
    assert proc.returncode == 3
    assert said(proc) == ("no CANN environment: none of %s %s exists in the container and neither ASCEND_HOME_PATH nor "
                          "ASCEND_TOOLKIT_HOME is set" % tuple(missing))
    assert "(rc 3). Fix: set verl_ascend_env_scripts to the image's CANN set_env.sh scripts (docker exec verl find" in verdict(proc)


def test_a_cann_environment_that_does_not_load_torch_npu_is_reported(tmp_path, container):
    """ASCEND_HOME_PATH set but the toolkit's libraries not on the path: the import fails, as it would for real."""
    proc = check(dict(container, ASCEND_HOME_PATH="/opt/elsewhere"), 8, [str(tmp_path / "none/set_env.sh")])
    assert proc.returncode == 4
    assert said(proc).startswith("python3 cannot load the NPU stack: `import torch_npu` failed: ImportError: libhccl.so")
    assert "(rc 4). Fix: use a verl image built for this host's chip (Ascend910B3; verl_image" in verdict(proc)


def test_fewer_npus_than_the_node_trains_on_is_reported(tmp_path, container):
    proc = check(container, 16, cann_stand_in(tmp_path / "Ascend"))
    assert proc.returncode == 5
    assert said(proc) == ("torch_npu 2.7.1+verl-sim sees 8 NPU(s) with ASCEND_RT_VISIBLE_DEVICES=(not set), fewer than the 16 "
                          "this node trains on")
    assert "(rc 5). Fix: check verl_npu_devices against npu-smi info and the devices of the container (docker inspect verl)" in verdict(proc)


def _four_of_eight(container):
    """The container of verl_npu_devices=4,5,6,7: only /dev/davinci4..7."""
    dev = Path(container["SIM_DEV_DIR"])
    for number in range(4):
        (dev / ("davinci%d" % number)).unlink()
    return container


def test_the_logical_ids_start_verl_exports_are_accepted(tmp_path, container):
    proc = check(dict(_four_of_eight(container), ASCEND_RT_VISIBLE_DEVICES="0,1,2,3"), 4, cann_stand_in(tmp_path / "Ascend"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert said(proc).endswith("sees 4 NPU(s) with ASCEND_RT_VISIBLE_DEVICES=0,1,2,3")


@pytest.mark.parametrize("visible, reason", [
    ("4,5,6,7", "set ASCEND_RT_VISIBLE_DEVICES:4,5,6,7 error, input data rang[0-4)"),
    ("0,2,1,3", "it must be configured in ascending order"),
])
def test_host_ids_or_an_unsorted_list_are_refused_with_the_runtimes_words(tmp_path, container, visible, reason):
    """What users of other tools hit at the first NPU call (EE1001), here in the container stage, before Ray."""
    proc = check(dict(_four_of_eight(container), ASCEND_RT_VISIBLE_DEVICES=visible), 4, cann_stand_in(tmp_path / "Ascend"))
    assert proc.returncode == 8, proc.stdout + proc.stderr
    last = said(proc)
    assert last.startswith("torch_npu 2.7.1+verl-sim refuses ASCEND_RT_VISIBLE_DEVICES=%s (what start_verl.sh exports)" % visible)
    assert "EE1001" in last and reason in last
    assert "(rc 8). Fix: the container's devices are not those of verl_npu_devices (4,5,6,7, seen in the container as 0,1,2,3)" in verdict(proc)


def test_an_npu_smi_that_fails_in_the_container_is_reported_first(tmp_path, container):
    """The -8005 a container without the devices (or with its NPUs held elsewhere) gets, before CANN is looked at."""
    replay(Path(container["PATH"].split(":")[0]), "019_error_dcmi_module_initialize_failed_-8005_container.txt", 1)
    proc = check(container, 8, cann_stand_in(tmp_path / "Ascend"))
    assert proc.returncode == 6, proc.stdout + proc.stderr
    line = said(proc)
    assert line.startswith("npu-smi info failed in the container: ") and "-8005" in line, line
    assert "(rc 6). Fix: check the driver mounts and devices of the container (docker inspect verl); -8005/-8020" in verdict(proc)


def test_a_check_that_could_not_run_is_named_with_what_docker_said():
    found = image_stack({"failed": True, "msg": "Error response from daemon: container abc is not running"}, "dapo", launch=LAUNCH)
    assert found["probe_failed"] == ("the check did not run: Error response from daemon: container abc is not running. Fix: look at "
                                     "the container (docker ps -a, docker logs verl), then deploy again.")
    assert image_stack({"rc": 0, "stdout": '{"said": [], "answer": {"look": ""}}'}, "dapo")["probe_failed"] == ""  # judged by its stack


def test_an_image_without_python3_is_reported(tmp_path, container):
    bin_dir = Path(container["PATH"].split(":")[0])
    (bin_dir / "python3").unlink()
    for tool in ("bash", "cat", "tail", "tr"):  # a PATH with the shell's tools and npu-smi, no python3
        (bin_dir / tool).symlink_to(shutil.which(tool))
    proc = check(dict(container, PATH=str(bin_dir)), 8, cann_stand_in(tmp_path / "Ascend"))
    assert (proc.returncode, said(proc)) == (7, "the image has no python3"), proc.stdout + proc.stderr
    assert verdict(proc) == ("the image has no python3 (rc 7). Fix: use a verl image with the training's python3 (verl_image, or empty "
                             "for verl's image of the chip).")


def test_its_look_at_verl_workdir_is_what_the_launch_scripts_stage_would_see(tmp_path, container):
    """The container stage's check also looks at the launch files in verl_workdir; the launch-scripts stage uses those
    lines instead of its own look; both run the one look (roles/training/files/look.sh), given the same files."""
    workdir = tmp_path / "verl"
    workdir.mkdir()
    for name, mode in [("start_verl.sh", 0o755), ("verl_control.sh", 0o700), ("verl_control.env", 0o644), ("launch.json", 0o644)]:
        (workdir / name).write_text("content of %s\n" % name)
        (workdir / name).chmod(mode)
    (workdir / "setup.py").write_text("not a launch file\n")
    proc = check(dict(container, VERL_LOOK_DIR=str(workdir), VERL_LOOK_PROGRAM=LOOK), 8, cann_stand_in(tmp_path / "Ascend"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    looked = read_answer(proc.stdout)["answer"]["look"].split(",")
    own = subprocess.run(["sh", "-c", LOOK, "look", str(workdir), "start_verl.sh", "run_training.sh",
                          "verl_control.env", "verl_control.sh", "launch.json"], capture_output=True, text=True, check=True)
    assert sorted(looked) == sorted(own.stdout.splitlines()) and len(looked) == 4, (looked, own.stdout)
    assert said(proc) == "torch_npu 2.7.1+verl-sim loads and sees 8 NPU(s) with ASCEND_RT_VISIBLE_DEVICES=(not set)"


def test_without_a_workdir_to_look_at_it_only_checks(tmp_path, container):
    proc = check(dict(container, VERL_LOOK_DIR=str(tmp_path / "absent"), VERL_LOOK_PROGRAM=LOOK), 8, cann_stand_in(tmp_path / "Ascend"))
    assert proc.returncode == 0 and read_answer(proc.stdout)["answer"]["look"] == "", proc.stdout


@pytest.mark.parametrize("running, answered, judged", [(True, "running", True), (False, "none", False)])
def test_its_look_says_whether_the_raylet_and_the_sampler_run(tmp_path, container, running, answered, judged):
    """The Ray stage leaves a worker the head lists alive without a call of its own when this look saw its raylet running;
    the launch-scripts stage starts the NPU sampler only where the raylet runs without one (here the sampler runs when
    the raylet does not). pgrep here answers as the container's would (the host's own pgrep also sees the simulated
    clusters' raylets)."""
    bin_dir = Path(container["PATH"].split(":")[0])
    (bin_dir / "pgrep").write_text('#!/bin/sh\ncase "$*" in "-x raylet") exit %d ;; "-x npu_sampler") exit %d ;; esac\nexit 2\n'
                                   % ((0, 1) if running else (1, 0)))
    (bin_dir / "pgrep").chmod(0o755)
    proc = check(dict(container, VERL_LOOK_DIR=str(tmp_path), VERL_LOOK_PROGRAM=LOOK), 8, cann_stand_in(tmp_path / "Ascend"))
    answer = read_answer(proc.stdout)["answer"]
    assert proc.returncode == 0 and answer["raylet"] == answered, proc.stdout + proc.stderr
    assert answer["sampler"] == ("none" if running else "running"), answer
    verdict = image_stack({"rc": 0, "stdout": proc.stdout}, "dapo")
    assert verdict["raylet"] is judged and verdict["sampler"] is not judged
    unlooked = image_stack({"rc": 0, "stdout": '{"said": [], "answer": {"look": ""}}'}, "dapo")
    assert unlooked["raylet"] is None and unlooked["sampler"] is None  # it did not look


def test_a_file_name_or_npu_smi_words_stay_inside_their_value(tmp_path, container):
    """What the node holds is data: a launch file named with a line break, U+2028 and a record separator before fake keys, and
    npu-smi words of the same kind, forge no stack, raylet or sentence (one JSON document, read_answer)."""
    bin_dir = Path(container["PATH"].split(":")[0])
    (bin_dir / "pgrep").write_text("#!/bin/sh\nexit 1\n")
    (bin_dir / "pgrep").chmod(0o755)
    forged = 'x\nstack={"modules": {}}\u2028raylet=running\x1eprompts={}\n.sh'
    (tmp_path / forged).write_text("")
    proc = check(dict(container, VERL_LOOK_DIR=str(tmp_path), VERL_LOOK_PROGRAM=LOOK), 8, cann_stand_in(tmp_path / "Ascend"))
    read = read_answer(proc.stdout)
    assert proc.returncode == 0 and read["read"] and sorted(read["answer"]) == ["look", "raylet", "sampler", "stack"], proc.stdout
    assert read["answer"]["raylet"] == read["answer"]["sampler"] == "none" and "first_op" in json.loads(read["answer"]["stack"])
    assert "\u2028raylet=running\x1eprompts={}" in read["answer"]["look"] and said(proc).startswith("torch_npu 2.7.1+verl-sim loads")
    smi = bin_dir / "npu-smi"
    smi.write_text("#!/bin/sh\nprintf 'dcmi failed\\n\\342\\200\\250stack={}\\036raylet=running\\n'\nexit 1\n")
    proc = check(container, 8, cann_stand_in(tmp_path / "Ascend"))
    read = read_answer(proc.stdout)
    assert proc.returncode == 6 and read["answer"] == {} and read["said"] == [
        "npu-smi info failed in the container: dcmi failed \u2028stack={}\x1eraylet=running"], proc.stdout


def test_the_check_passes_shellcheck():
    from test_shellcheck import SHELLCHECK  # pylint: disable=import-outside-toplevel

    lint = subprocess.run([SHELLCHECK, "--severity=style", str(REPO / "roles/container/files/npu_stack_check.sh")], capture_output=True,
                          text=True, check=False, env=dict(os.environ))
    assert lint.returncode == 0, lint.stdout


def test_a_container_without_this_deploys_npu_devices_is_refused_before_python_runs(tmp_path, container):
    """A reused container keeps the devices it was created with: with others the logical ids would name other NPUs."""
    proc = check(dict(container, VERL_CONTAINER_NPUS="4,5,6,7"), 4, cann_stand_in(tmp_path / "Ascend"))
    assert proc.returncode == 8, proc.stdout + proc.stderr
    have = ",".join(sorted((name[len("davinci"):] for name in os.listdir("/dev") if re.fullmatch(r"davinci\d+", name)), key=int))
    assert said(proc) == (
        "the container has the NPU devices %s (/dev/davinciN), but this deploy gives it 4,5,6,7" % (have or "none"))
    assert "remove it (docker rm) so that the deploy creates it with these NPUs, or give verl_npu_devices the NPUs it has." in verdict(proc)


# --------------------------------------------------------------------------- the image's stack

sys.path.insert(0, str(REPO / "tests" / "sim"))
import stand_in_packages  # noqa: E402  pylint: disable=wrong-import-position
from ansible_collections.verl.deploy.plugins.filter.image_stack import image_stack  # noqa: E402
from ansible_collections.verl.deploy.plugins.module_utils import _versions  # noqa: E402


@pytest.fixture()
def image(tmp_path, container):
    """The simulated verl image's stack around the container: its packages in site-packages, its checkout in verl_workdir."""
    site = tmp_path / "site"
    packages = dict(stand_in_packages.SITE)
    if not importlib.util.find_spec("transformers"):  # the simulated image has the real one
        packages["transformers/__init__.py"] = stand_in_packages.TRANSFORMERS_STAND_IN
    for name, text in packages.items():
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        (site / name).write_text(text)
    workdir = tmp_path / "verl"
    for name, text in {"verl/__init__.py": stand_in_packages.VERL_INIT, "verl/version/version": stand_in_packages.VERL_VERSION + "\n",
                       "verl/trainer/__init__.py": "", "verl/trainer/main_ppo.py": "", "recipe/__init__.py": "",
                       "recipe/dapo/__init__.py": "", "recipe/dapo/main_dapo.py": "",
                       # The files that say verl 0.7.0 (the release table's MARKER_PROBES), as in its wheel.
                       "verl/workers/megatron_workers.py": "", "verl/trainer/config/ppo_trainer.yaml": "  use_legacy_worker_impl: auto\n",
                       "verl/trainer/config/engine/megatron.yaml": "grad_offload: False\n"}.items():
        (workdir / name).parent.mkdir(parents=True, exist_ok=True)
        (workdir / name).write_text(text)
    model = tmp_path / "Qwen3-8B"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3"}))
    env = dict(container, VERL_LOOK_DIR=str(workdir), VERL_PROBE_MODULES=" ".join(_versions.MODULES),
               VERL_PROBE_ENGINE=json.dumps(_versions.engine_probe("0.7.0")),
               VERL_PROBE_FORBIDDEN=" ".join(_versions.FORBIDDEN), VERL_ENTRY_FILE=_versions.entry_point("dapo")["file"],
               VERL_MODEL_PATH=str(model),
               VERL_PROBE_MARKERS=json.dumps({name: list(probe) for name, probe in _versions.MARKER_PROBES.items()}))
    return {"env": env, "site": site, "workdir": workdir, "model": model, "scripts": cann_stand_in(tmp_path / "Ascend")}


def judged(image, algorithm="dapo", profile="0.7.0", allow_newer=False, engine=None):
    """The container stage's verdict on the image, for run_training.sh rendered for `profile` (the default release); engine:
    the model's own path to import (_versions.engine_probe; the default release's when not given)."""
    env = dict(image["env"], VERL_ENTRY_FILE=_versions.entry_point(algorithm, profile)["file"])
    if engine is not None:
        env["VERL_PROBE_ENGINE"] = json.dumps(engine)
    proc = check(env, 8, image["scripts"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return image_stack(proc.stdout, algorithm, {"profile": profile, "why": "set by verl_version"}, allow_newer)


def _as_verl_091(image, version="0.9.1"):
    """The image's verl made 0.9.1's (or a newer one's, with 0.9.1's files): its version and the files that say so."""
    (image["workdir"] / "verl" / "version" / "version").write_text(version + "\n")
    (image["workdir"] / "verl" / "workers" / "megatron_workers.py").unlink()
    (image["workdir"] / "verl" / "trainer" / "main_ppo_v0.py").write_text("")
    (image["workdir"] / "verl" / "trainer" / "config" / "engine" / "megatron.yaml").write_text("param_offload: False\n")


def test_verls_own_image_passes_and_its_versions_are_said(image):
    verdict = judged(image)
    assert verdict["problems"] == [] and verdict["verl"] == "0.7.0.dev", "the deploy's summary shows the image's verl"
    assert verdict["notes"] == [
        "verl 0.7.0.dev; torch 2.7.1, torch_npu 2.7.1+verl-sim, transformers 4.57.1, vllm 0.11.0, vllm_ascend 0.11.0rc1, "
        "megatron.core 0.12.1, mindspeed.megatron_adaptor ?",
        "the model's own path imports: transformers 4.57.1 reads its config (type `qwen3`), mbridge 0.15.1 builds it (verl 0.7.0's "
        "default actor_rollout_ref.actor.megatron.vanilla_mbridge: True).",
        "ATB op library loaded (ATB_HOME_PATH=%s/Ascend/nnal/atb/latest/atb/cxx_abi_1)." % image["site"].parent,
        "NPU 0 computes."]


def test_it_says_the_containers_ray_and_python_which_every_node_must_share(image):
    """Ray joins a node only with the head's Ray and Python X.Y.Z (ray#50511): the container stage compares them (ray_skew)."""
    proc = check(dict(image["env"], VERL_ENTRY_FILE=_versions.entry_point("dapo")["file"]), 8, image["scripts"])
    ray = image_stack(proc.stdout, "dapo")["ray"]
    assert ray["python"] == ".".join(map(str, sys.version_info[:3]))
    assert ray["version"] == (importlib.metadata.version("ray") if importlib.util.find_spec("ray") else None)


def test_another_verl_release_is_refused_naming_both_profiles_and_the_fix(image):
    _as_verl_091(image)
    problems = judged(image)["problems"]
    assert problems == ["the image's verl 0.9.1 is profile 0.9.1 (its files: grad_offload no, legacy_reward_impl no, "
                        "legacy_worker_impl_disable no, main_ppo_v0 yes, megatron_workers no), but run_training.sh is rendered "
                        "for verl profile 0.7.0 (set by verl_version): its entry point and Hydra keys would not be the ones this "
                        "verl reads. Fix: set verl_version=0.9.1 (or use an image of verl 0.7.0)."]
    assert judged(image, "grpo", "0.9.1")["problems"] == [], "the fix applied"


def test_a_verl_newer_than_the_table_runs_only_when_the_user_opts_in(image):
    _as_verl_091(image, "0.10.0.dev")
    problems = judged(image, "grpo", "0.9.1")["problems"]
    assert len(problems) == 1 and "the image has verl 0.10.0.dev, newer than every release" in problems[0], problems
    verdict = judged(image, "grpo", "0.9.1", allow_newer=True)
    assert verdict["problems"] == [] and "verl 0.10.0.dev is newer than every release" in verdict["notes"][0]


def test_an_empty_recipe_folder_is_refused_before_the_training_fails_on_it(image):
    shutil.rmtree(image["workdir"] / "recipe")
    (image["workdir"] / "recipe").mkdir()
    problems = judged(image)["problems"]
    assert len(problems) == 1 and "has no recipe/dapo/main_dapo.py, the DAPO entry point" in problems[0], problems
    assert "No module named 'recipe.dapo'" in problems[0]
    assert judged(image, "grpo")["problems"] == [], "GRPO's entry point is in verl/trainer"


def test_a_missing_package_fails_the_packages_that_need_it(image):
    shutil.rmtree(image["site"] / "vllm")
    problems = judged(image)["problems"]
    assert [problem.split(":")[0] for problem in problems] == ["vllm does not import", "vllm_ascend does not import"], problems
    assert "ModuleNotFoundError: No module named 'vllm'" in problems[1]


def test_a_cuda_transformer_engine_is_refused_and_breaks_mindspeed_as_it_does(image):
    (image["site"] / "transformer_engine").mkdir()
    (image["site"] / "transformer_engine" / "__init__.py").write_text(stand_in_packages.TRANSFORMER_ENGINE)
    problems = judged(image)["problems"]
    assert problems[0].startswith("mindspeed.megatron_adaptor does not import: CalledProcessError"), problems
    assert problems[1].startswith("the image has transformer_engine (installed), which is for CUDA: on Ascend it breaks MindSpeed's import.")
    assert "pip uninstall -y transformer-engine" in problems[1]


def test_a_model_the_images_vllm_does_not_know_is_refused(image):
    (image["model"] / "config.json").write_text(json.dumps({"architectures": ["Glm4MoeForCausalLM"], "model_type": "glm4_moe"}))
    problems = judged(image)["problems"]
    assert problems == ["the image's vLLM 0.11.0 does not know the model's architecture Glm4MoeForCausalLM: vLLM would stop with "
                        "\"Model architectures ['Glm4MoeForCausalLM'] are not supported\". Fix: use a verl image whose vLLM supports it, "
                        "or a model of an architecture it knows."]


# Qwen3-8B-FP8's quantization_config (its config.json on Hugging Face: fine-grained FP8, 128 x 128 blocks).
FP8 = {"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": [128, 128]}


def test_a_checkpoint_quantized_with_a_method_the_npu_does_not_run_is_refused_and_the_unquantized_one_passes(image):
    """vLLM checks the checkpoint's quantization method against the platform when the rollout starts: "fp8 quantization is
    currently not supported in npu" (vllm-ascend's own FP8-on-NPU notes, .agents/skills/vllm-ascend-model-adapter/references/
    fp8-on-npu-lessons.md). The image check imports it with vllm-ascend's platform, before Ray."""
    config = json.loads((image["model"] / "config.json").read_text())
    (image["model"] / "config.json").write_text(json.dumps(dict(config, quantization_config=FP8)))
    problems = judged(image)["problems"]
    assert len(problems) == 1 and problems[0].startswith("the model's checkpoint is quantized with `fp8`")
    assert "ValueError: fp8 quantization is currently not supported in npu" in problems[0] and "Fix: use the model's unquantized" in problems[0]
    # A method vLLM does not know at all is named with vLLM's own words.
    (image["model"] / "config.json").write_text(json.dumps(dict(config, quantization_config={"quant_method": "not_a_method"})))
    assert "Unknown quantization method: not_a_method" in judged(image)["problems"][0]
    # Its fix: the unquantized checkpoint; the NPU's own method passes as well.
    (image["model"] / "config.json").write_text(json.dumps(config))
    assert judged(image)["problems"] == []
    (image["model"] / "config.json").write_text(json.dumps(dict(config, quantization_config={"quant_method": "ascend"})))
    assert judged(image)["problems"] == []


def _write(site, files):
    for name, text in files.items():
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        (site / name).write_text(text)


BRIDGE_OFF = "actor_rollout_ref.actor.megatron.vanilla_mbridge=False"


def test_megatron_bridge_missing_where_the_settings_choose_it_is_refused_before_ray_and_its_fix_passes(image):
    """verl#6931: "ModuleNotFoundError: No module named 'megatron.bridge'" at the actor's start (NPU, verl 0.8.0.dev, Qwen3.5),
    an image without Megatron-Bridge (verl#6083); here before Ray, with the line that chose it."""
    problems = judged(image, engine=_versions.engine_probe("0.7.0", extra_overrides=[BRIDGE_OFF]))["problems"]
    assert problems == [
        "Megatron-Bridge (megatron.bridge), the weight bridge verl 0.7.0 builds this model (type `qwen3`) with (verl_extra_overrides "
        "sets actor_rollout_ref.actor.megatron.vanilla_mbridge=False), does not import: ModuleNotFoundError: No module named "
        "'megatron.bridge': verl imports it when the actor starts, after Ray (verl#6931). Fix: remove "
        "actor_rollout_ref.actor.megatron.vanilla_mbridge=False from verl_extra_overrides (verl then builds with mbridge, which "
        "verl's images have), or use an image with Megatron-Bridge (verl's image for the model; verl#6083: pip3 install "
        "megatron-bridge --no-deps)."]
    assert judged(image, engine=_versions.engine_probe("0.7.0"))["problems"] == [], "the fix applied: the line removed"


def test_an_architecture_megatron_bridge_has_no_bridge_for_is_refused_with_its_words_and_the_fix_passes(image):
    """With Megatron-Bridge chosen (vanilla_mbridge=False; 0.9's default where nothing renders True), verl's worker calls
    AutoBridge.from_hf_pretrained, whose own check stops an architecture it has no bridge for: "ValueError: ✗ Model architecture
    'MixtralForCausalLM' is not yet supported" (Megatron-Bridge's auto_bridge.py _validate_config). Here before Ray."""
    _write(image["site"], stand_in_packages.MEGATRON_BRIDGE)
    (image["model"] / "config.json").write_text(json.dumps({"architectures": ["MixtralForCausalLM"], "model_type": "mixtral"}))
    chosen = _versions.engine_probe("0.9.1", extra_overrides=[BRIDGE_OFF])
    assert chosen["package"] == "megatron.bridge"
    problems = [text for text in judged(image, engine=chosen)["problems"] if "Megatron-Bridge" in text]
    assert problems == [
        "Megatron-Bridge (megatron.bridge), the weight bridge verl 0.9.1 builds this model (type `mixtral`) with (verl_extra_overrides "
        "sets actor_rollout_ref.actor.megatron.vanilla_mbridge=False) has no bridge for the model's architecture `MixtralForCausalLM` "
        "(type `mixtral`): verl would stop when the actor starts with \"ValueError: ✗ Model architecture 'MixtralForCausalLM' is "
        "not yet supported\" (Megatron-Bridge's AutoBridge; it knows DeepseekV3ForCausalLM, LlamaForCausalLM, Qwen2ForCausalLM, "
        "Qwen3ForCausalLM, Qwen3MoeForCausalLM). Fix: remove actor_rollout_ref.actor.megatron.vanilla_mbridge=False from "
        "verl_extra_overrides (verl then builds with mbridge), or use an image whose Megatron-Bridge has a bridge for "
        "`MixtralForCausalLM` (verl's image made for the model)."]
    # The fix: the line removed, verl 0.9.1 renders vanilla_mbridge=True and builds with mbridge, which registers mixtral.
    fixed = _versions.engine_probe("0.9.1")
    assert fixed["package"] == "mbridge"
    assert not [text for text in judged(image, engine=fixed)["problems"] if "bridge" in text.lower()]
    # An architecture it has a bridge for passes with Megatron-Bridge itself.
    (image["model"] / "config.json").write_text(json.dumps({"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3"}))
    assert judged(image, engine=chosen)["problems"] == []


def test_an_image_built_without_the_model_bridge_is_refused_naming_it_and_its_fix_passes(image):
    """The simulated image built without mbridge (tests/sim/simcluster.py build --without mbridge): verl's vanilla_mbridge path
    (verl/models/mcore/mbridge.py) would print "mbridge package not found" and raise at the actor's start."""
    shutil.rmtree(image["site"] / "mbridge")
    problems = judged(image)["problems"]
    assert problems == [
        "mbridge, the weight bridge verl 0.7.0 builds this model (type `qwen3`) with (verl 0.7.0's default "
        "actor_rollout_ref.actor.megatron.vanilla_mbridge: True), does not import: ModuleNotFoundError: No module named 'mbridge': "
        "verl imports it when the actor starts, after Ray. Fix: use verl's own Ascend image of this release (it installs mbridge), "
        "or install mbridge in the image (pip install mbridge)."]
    _write(image["site"], stand_in_packages.MBRIDGE)
    assert judged(image)["problems"] == [], "the fix applied: verl's image, with mbridge"


def test_without_mbridge_in_use_a_missing_mbridge_is_no_refusal(image):
    """use_mbridge=False (0.7.x's legacy worker, VPP's documented way out): verl's own converters, no bridge imported."""
    shutil.rmtree(image["site"] / "mbridge")
    engine = _versions.engine_probe("0.7.0", ["actor_rollout_ref.actor.megatron.use_mbridge=False"])
    assert engine["package"] is None and judged(image, engine=engine)["problems"] == []


def test_an_mbridge_whose_model_module_needs_a_newer_megatron_core_is_refused_with_its_import_error(image):
    """mbridge#50: mbridge 0.15.1 on megatron-core 0.12.1 (MindSpeed, Ascend) fails at the actor's start with "ImportError:
    cannot import name 'get_tensor_model_parallel_group_if_none' from 'megatron.core.utils'" in mbridge/models/qwen3_vl/utils.py:
    mbridge imports every model module, so any model fails."""
    _write(image["site"], stand_in_packages.MBRIDGE_QWEN3_VL_CORE_0_13)
    problems = judged(image)["problems"]
    assert len(problems) == 1 and problems[0].startswith(
        "mbridge, the weight bridge verl 0.7.0 builds this model (type `qwen3`) with (verl 0.7.0's default "
        "actor_rollout_ref.actor.megatron.vanilla_mbridge: True), does not import: ImportError: cannot import name "
        "'get_tensor_model_parallel_group_if_none' from 'megatron.core.utils'"), problems
    assert ("one of mbridge's model modules needs a newer Megatron core than the image's megatron.core 0.12.1, and mbridge imports "
            "every model module (mbridge#50). Fix: use verl's own image of this release") in problems[0]
    _write(image["site"], {"mbridge/models/__init__.py": stand_in_packages.MBRIDGE["mbridge/models/__init__.py"]})
    assert judged(image)["problems"] == [], "the fix applied: the mbridge release made for core 0.12.1"


def test_a_model_type_the_images_transformers_and_mbridge_do_not_know_is_refused_and_the_models_image_passes(image):
    """Qwen3.5 on verl 0.7.x's stack: transformers 4.57.1 raises "The checkpoint you are trying to load has model type `qwen3_5` but
    Transformers does not recognize this architecture" (vllm#36217; the KeyError: 'qwen3_5' under it, LlamaFactory#10219), and
    mbridge's Qwen3.5 module (mbridge#83) needs Megatron core 0.16, so mbridge does not register the type."""
    architecture = "Qwen3_5ForConditionalGeneration"
    (image["model"] / "config.json").write_text(json.dumps({"architectures": [architecture], "model_type": "qwen3_5"}))
    _write(image["site"], stand_in_packages.MBRIDGE_QWEN3_5)
    problems = judged(image)["problems"]
    assert len(problems) == 3, problems
    assert problems[0].startswith("the image's vLLM 0.11.0 does not know the model's architecture %s" % architecture)
    assert problems[1].startswith(
        "transformers 4.57.1 cannot read the model's config.json (model type `qwen3_5`): ValueError: The checkpoint you are trying "
        "to load has model type `qwen3_5` but Transformers does not recognize this architecture."), problems[1]
    assert "(KeyError: 'qwen3_5'). verl reads it with AutoConfig when the actor and the rollout start, after Ray. Fix: use an image" in problems[1]
    assert problems[2].startswith(
        "mbridge, the weight bridge verl 0.7.0 builds this model (type `qwen3_5`) with (verl 0.7.0's default "
        "actor_rollout_ref.actor.megatron.vanilla_mbridge: True) has no bridge for model type `qwen3_5`; its module "
        "mbridge.models.qwen3_5.qwen3_5_vl_bridge, which registers it, does not import: ModuleNotFoundError: No module named "
        "'megatron.core.models.gpt.experimental_attention_variant_module_specs' (the image's megatron.core 0.12.1 is not the one "
        "it is made for): verl would stop when the actor starts with \"ValueError: Unregistered model type: qwen3_5, now only "
        "support dict_keys(["), problems[2]
    # The fix: the model's own image (its transformers, Megatron core and vLLM know Qwen3.5).
    _write(image["site"], stand_in_packages.MEGATRON_CORE_0_16_SPECS)
    _write(image["site"], {"transformers/__init__.py": stand_in_packages.TRANSFORMERS_STAND_IN.replace('"qwen3_moe")', '"qwen3_moe", "qwen3_5")'),
                           "vllm/__init__.py": stand_in_packages.SITE["vllm/__init__.py"].replace('"Qwen3MoeForCausalLM")',
                                                                                                  '"Qwen3MoeForCausalLM", "%s")' % architecture)})
    assert judged(image)["problems"] == [], "the fix applied: an image whose transformers, mbridge and Megatron core build Qwen3.5"


def test_an_architecture_the_ascend_plugin_registers_is_known_as_vllm_knows_it_at_its_start(image):
    """vLLM loads its general plugins (vllm-ascend's register_model) in every process before it looks a model up: an
    architecture only the plugin registers is not refused."""
    (image["model"] / "config.json").write_text(json.dumps({"architectures": ["AscendOnlyForCausalLM"], "model_type": "qwen3"}))
    assert judged(image)["problems"][0].startswith("the image's vLLM 0.11.0 does not know the model's architecture AscendOnlyForCausalLM")
    _write(image["site"], {"vllm_ascend/__init__.py": stand_in_packages.SITE["vllm_ascend/__init__.py"].replace(
        "_REGISTERED = ()", "_REGISTERED = ('AscendOnlyForCausalLM',)")})
    assert judged(image)["problems"] == []


def test_companions_outside_the_known_combinations_are_a_note_not_a_refusal(image):
    (image["site"] / "vllm" / "__init__.py").write_text(stand_in_packages.SITE["vllm/__init__.py"].replace('"0.11.0"', '"0.10.2"'))
    verdict = judged(image)
    assert verdict["problems"] == []
    assert verdict["notes"][1].startswith("these versions are not a combination known to work with verl 0.7.0 on Ascend"), verdict


def test_an_output_without_the_stack_line_is_a_problem():
    assert image_stack("torch_npu 2.7.1 loads", "dapo")["problems"][0].startswith("the container check answered no stack")
    # An older check's lines are no answer, whatever they say.
    assert image_stack('stack={"modules": {}}\n', "dapo")["problems"][0].startswith("the container check answered no stack")


def test_without_nnals_environment_the_atb_library_does_not_load_as_vllm_ascend_reports(image):
    """vllm-ascend#152: "libatb.so: cannot open shared object file" when nnal/atb/set_env.sh was not sourced."""
    scripts = [script for script in image["scripts"] if "/nnal/" not in script]
    proc = check(image["env"], 8, scripts)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    problems = image_stack(proc.stdout, "dapo")["problems"]
    assert problems == ["torch_npu 2.7.1+verl-sim cannot load CANN's ATB op library (ATB_HOME_PATH=(not set)): OSError: libatb.so: "
                        "cannot open shared object file: No such file or directory. vLLM-Ascend loads it at its start. Fix: source "
                        "NNAL's environment (nnal/atb/set_env.sh in verl_ascend_env_scripts), or use an image with CANN's NNAL "
                        "package installed (verl's Ascend images have it)."]


def test_an_atb_library_of_another_release_fails_with_the_undefined_symbol_users_report(image):
    """Ascend/pytorch#99: `import torch_npu` works, the ATB op plugin's load fails on libtbe_adapter.so."""
    library = image["site"].parent / "Ascend" / ATB_LIBRARY
    library.write_text(library.read_text().replace("version=8.3.RC1", "version=8.2.RC1"))
    problems = judged(image)["problems"]
    assert len(problems) == 1, problems
    assert problems[0].startswith("torch_npu 2.7.1+verl-sim cannot load CANN's ATB op library (ATB_HOME_PATH=")
    assert ("cxx_abi_1/lib/libtbe_adapter.so: undefined symbol: _ZN3Mki2DlC1ERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEEb"
            in problems[0])
    assert "Fix: use an image whose NNAL (nnal/atb) is of the same CANN release as its toolkit" in problems[0]


def test_a_driver_that_does_not_fit_cann_fails_the_first_operation_and_is_named(image):
    """vllm-ascend#4859: everything imports, the first aclnn operator fails with 561103."""
    problems = judged(dict(image, env=dict(image["env"], SIM_NPU_FIRST_OP_ERROR="561103")))["problems"]
    assert len(problems) == 1, problems
    assert problems[0].startswith(
        "the first operation on NPU 0 (set_device, then a small tensor operation) failed with torch_npu 2.7.1+verl-sim: RuntimeError: "
        "zero_:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:26 NPU function error: call aclnnInplaceZero failed, error code is "
        "561103.")
    assert "Fix: use a verl image whose CANN this driver supports" in problems[0]


def test_the_first_operation_is_skipped_while_the_deploys_training_holds_the_npus(image):
    """The training in this container holds its NPUs: the check must not open a context beside it."""
    holder = subprocess.Popen([sys.executable, "-c", "import os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR); "
                               "print('held', flush=True); time.sleep(60)", os.path.join(image["env"]["SIM_DEV_DIR"], "davinci0")],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        verdict = judged(dict(image, env=dict(image["env"], SIM_NPU_FIRST_OP_ERROR="561103")))
    finally:
        holder.kill()
        holder.wait()
    assert verdict["problems"] == []
    assert "NPU 0 not touched: pid(s) %d of this container hold its NPUs (the deploy's training runs there)." % holder.pid in verdict["notes"]


def _holding(device):
    """A process of this 'container' that holds an NPU open, as the deploy's training does."""
    holder = subprocess.Popen([sys.executable, "-c", "import os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR); "
                               "print('held', flush=True); time.sleep(60)", device], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    return holder


def test_the_check_keeps_its_call_and_the_pre_checks_run_of_it_stands_for_it_only_beside_the_training(image):
    """The container stage gives the check its own call on stdin (VERL_CHECK_RECORD); the next pre-check runs that call
    (node_facts: the record's argv and env, with VERL_CHECK_NO_NPU_OP), which touches no NPU. Its run stands for the stage's
    only for the same call and while the training holds the NPUs, and is then judged as the stage's own run would be."""
    env = dict(image["env"], VERL_CANN_PROGRAM=CANN_ENV, VERL_STACK_PROGRAM=STACK, SIM_NPU_FIRST_OP_ERROR="561103")  # an NPU operation would fail
    argv = ["bash", "-c", CHECK, "npu-stack-check", "8", *image["scripts"]]
    call = container_check(argv, env, {}, True, image["workdir"])
    record = Path(call["record_path"])
    staged = subprocess.run(call["argv"], env=dict(call["env"], VERL_CHECK_RECORD=str(record)), input=call["record"] + "\n",
                            capture_output=True, text=True, timeout=60, check=False)
    assert staged.returncode == 0 and "failed with torch_npu" in image_stack(staged.stdout, "dapo")["problems"][0], staged.stdout
    kept = json.loads(record.read_text())
    assert kept == {"argv": call["argv"], "env": call["env"]}

    def pre_check():
        proc = subprocess.run(kept["argv"], env=dict(kept["env"], VERL_CHECK_NO_NPU_OP="1"), capture_output=True, text=True,
                              timeout=60, check=False)
        return {"rc": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr, "record": call_digest(kept)}

    free = pre_check()
    assert image_stack(free, "dapo")["problems"] == [], free["stdout"]  # no NPU operation ran
    assert container_check(argv, env, free, True, image["workdir"])["reuse"] is False  # the NPUs were free: the stage runs its NPU operation
    holder = _holding(os.path.join(env["SIM_DEV_DIR"], "davinci0"))
    try:
        held = pre_check()
        stage = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, check=False)
    finally:
        holder.kill()
        holder.wait()
    assert container_check(argv, env, held, True, image["workdir"]) == dict(call, reuse=True, result=held)
    assert image_stack(held, "dapo") == image_stack({"rc": stage.returncode, "stdout": stage.stdout}, "dapo")
    assert container_check(argv, env, held, False, image["workdir"])["reuse"] is False  # the stage created or started the container
    assert container_check(argv, dict(env, VERL_ENTRY_FILE="recipe/other.py"), held, True, image["workdir"])["reuse"] is False  # another call


def test_without_the_sourcing_of_cann_given_it_stops_naming_it(tmp_path, container):
    """The container stage gives the check the training's sourcing of CANN; a caller that forgets it learns why."""
    proc = check(dict(container, VERL_CANN_PROGRAM=""), 8, cann_stand_in(tmp_path / "Ascend"))
    assert proc.returncode != 0 and "VERL_CANN_PROGRAM" in proc.stderr, proc.stdout + proc.stderr


# --------------------------------------------------------------------------- the prompts longer than max_prompt_length (head)

PROMPTS = (REPO / "roles/container/files/prompt_lengths.py").read_text()
PARQUET = REPO / "tests" / "fixtures" / "parquet"
SIM_MODEL = REPO / "tests" / "sim" / "models" / "Qwen3-8B"


def _program():
    import importlib.util  # pylint: disable=import-outside-toplevel
    spec = importlib.util.spec_from_file_location("prompt_lengths", REPO / "roles/container/files/prompt_lengths.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def count(tmp_path, container, files, limit=1024, **env):
    """The check on the head, as the container stage runs it there: the count's answer judged by the deploy's filter."""
    from ansible_collections.verl.deploy.plugins.filter.prompt_lengths import prompt_lengths  # pylint: disable=import-outside-toplevel
    env = dict(container, VERL_PROMPT_FILES=json.dumps([str(path) for path in files]), VERL_PROMPT_PROGRAM=PROMPTS,
               VERL_MODEL_PATH=str(SIM_MODEL), VERL_MAX_PROMPT_LENGTH=str(limit), VERL_PROMPT_CACHE=str(tmp_path / "kept"), **env)
    proc = check(env, 8, cann_stand_in(tmp_path / "Ascend"))
    launch = {"is_head": True, "train_file": str(files[0]), "test_file": str(files[-1]), "max_prompt_length": limit,
              "train_batch_size": 4, "extra_overrides": []}
    return proc, prompt_lengths(proc.stdout, launch)


def test_a_file_the_count_cannot_read_is_reported_and_the_check_passes(tmp_path, container):
    """This Python has no pyarrow (like the simulated image): the count says so for each file, the stage goes on."""
    if importlib.util.find_spec("pyarrow"):
        pytest.skip("this Python has pyarrow")
    proc, verdict = count(tmp_path, container, [PARQUET / "verl.parquet", PARQUET / "verl_8_rows.parquet"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert verdict["problems"] == []
    assert verdict["warnings"][0].startswith("The prompts of %s (verl_train_file) were not counted: ModuleNotFoundError: No module "
                                             "named 'pyarrow'." % (PARQUET / "verl.parquet"))


def test_an_unchanged_rerun_reads_the_kept_lengths_and_refuses_over_long_prompts(tmp_path, container):
    """The kept lengths of a first count (keyed by the file's and the tokenizer's sizes and mtimes): no pyarrow, no tokenizer."""
    train = PARQUET / "verl.parquet"
    key = _program().cache_key(str(train), str(SIM_MODEL), "prompt")
    (tmp_path / "kept").mkdir()
    kept = {"lengths": [162] * 250 + [1100] * 5 + [2106], "failed": 0, "first_error": None, "done": 256, "total": 256}
    (tmp_path / "kept" / (key + ".json")).write_text(json.dumps(kept))
    proc, verdict = count(tmp_path, container, [train])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert verdict["problems"] == [
        "6 of 256 prompts in %s (verl_train_file) are longer than max_prompt_length 1024 tokens (the longest 2106, with the chat "
        "template): verl 0.7.0 does not cut them (data.truncation is not applied by its agent loop) and the training stops at the "
        "first rollout whose batch holds one, with 'RuntimeError: Sizes of tensors must match except in dimension 0. Expected size "
        "1024 but got size 2106'. Fix: raise verl_max_prompt_length to at least 2106 (prompt + response must still fit the model), "
        "or let verl drop them when it loads the file (data.filter_overlong_prompts=True in verl_extra_overrides), or filter the "
        "data." % train]
    # Another length needs no new count; a changed file does (its mtime is in the key).
    assert count(tmp_path, container, [train], limit=4096)[1]["notes"] == [
        "%s: 256 prompts, the longest 2106 tokens (max_prompt_length 4096)." % train]
    moved = tmp_path / "verl.parquet"
    moved.write_bytes(train.read_bytes())
    assert _program().cache_key(str(moved), str(SIM_MODEL), "prompt") != key


def test_the_count_measures_as_verl_does(tmp_path, container):
    """With the real pyarrow and transformers (a verl image has both): each length is
    len(tokenizer.apply_chat_template(messages, add_generation_prompt=True)), verl's doc2len."""
    pq = pytest.importorskip("pyarrow.parquet")  # a verl image's, from `datasets`
    transformers = pytest.importorskip("transformers")
    train = PARQUET / "verl.parquet"
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(SIM_MODEL))
    verl = sorted(len(tokenizer.apply_chat_template(row, add_generation_prompt=True))
                  for row in pq.read_table(train).column("prompt").to_pylist())
    # The "container's" python3 is this one: give it the packages this test imported.
    site = os.pathsep.join(sorted({str(Path(sys.modules[name].__file__).parents[1]) for name in ("pyarrow", "transformers")}))
    proc, verdict = count(tmp_path, dict(container, PYTHONPATH=container["PYTHONPATH"] + os.pathsep + site), [train], limit=verl[-1] - 1)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    over = len([length for length in verl if length > verl[-1] - 1])
    assert verdict["problems"][0].startswith("%d of %d prompts in %s" % (over, len(verl), train))
    assert "(the longest %d, with the chat template)" % verl[-1] in verdict["problems"][0]
