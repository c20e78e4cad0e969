"""verl_ckpts_dir as node_facts reads it (plugins/module_utils/_ckpts.py) and the pre-check's rules over it: real
folders laid out as verl v0.7.0 saves them, mountinfo lines as Linux prints them."""
from __future__ import annotations

import copy
import json
import os
import sys
from pathlib import Path

import pytest

from ansible_collections.verl.deploy.plugins.module_utils import _ckpts as ck
from ansible_collections.verl.deploy.plugins.module_utils import _model
from ansible_collections.verl.deploy.plugins.module_utils import _precheck as pc

MODELS = Path(__file__).resolve().parents[3] / "sim" / "models"  # the real config.json files of the simulated cluster
QWEN3_8B = json.loads((MODELS / "Qwen3-8B" / "config.json").read_text(encoding="utf-8"))
QWEN25_7B = json.loads((MODELS / "Qwen2.5-7B" / "config.json").read_text(encoding="utf-8"))
sys.path.insert(0, str(MODELS.parent))
import model_files  # noqa: E402  (the real config.json files of several families)
LAUNCH = {"ckpts_dir": "", "resume_mode": "auto", "is_head": True, "nnodes": 2, "train_steps": 4, "save_freq": 2, "extra_overrides": []}
# /proc/self/mountinfo of a node with the checkpoints on NFS and the root on ext4.
MOUNTINFO = (
    "22 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw\n"
    "95 22 0:53 /export/project /mnt/project rw,relatime shared:40 - nfs4 10.0.0.9:/export rw,vers=4.2\n"
    "96 95 0:54 / /mnt/project/scratch\\040space rw - tmpfs tmpfs rw,size=1024k\n")


def save(root, step, files=ck.COMPLETE_FILES + ck.MODEL_FILES, tracker=True):
    """A global_step_<step> folder with the given files of a save, and (tracker) the tracker file naming it."""
    folder = root / ("global_step_%d" % step)
    folder.mkdir(parents=True, exist_ok=True)
    for name in files:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text("x")
    if tracker:
        (root / ck.TRACKER).write_text(str(step))


def launch(path, **changes):
    return dict(copy.deepcopy(LAUNCH), ckpts_dir=str(path), **changes)


def test_the_space_rule_takes_the_model_reads_one_count(tmp_path):
    """Issue 28: one model, one size: the checkpoint space rule counts the model read's parameters (its weight files, else
    config.json), as the memory rule does; a MoE model's every expert is in the checkpoint."""
    read = dict(ck.read_ckpts_dir(str(tmp_path), mountinfo=MOUNTINFO, boot_id=""), free_bytes=150 * ck.GIB)
    moe = _model.parse_config(json.dumps(model_files.QWEN3_30B_A3B))
    checked = {"launch": launch(tmp_path), "facts": {"ckpts": read, "model": {"parameters": _model.parameter_count(moe)}}}
    text = pc.ckpts_no_space(checked)
    assert "(30.53e9 parameters" in text, text  # not the 3.3e9 it activates per token
    # The fix it names, applied: one checkpoint kept fits... not 150 GiB for 30.5e9 x 14 B = 398 GiB; a smaller save does.
    checked["launch"] = launch(tmp_path, extra_overrides=["actor_rollout_ref.actor.checkpoint.save_contents=[model]"])
    assert pc.ckpts_no_space(checked) == ""


def test_mountinfo_parsed_and_the_mount_of_a_path():
    mounts = ck.parse_mountinfo(MOUNTINFO)
    assert mounts[1] == {"dev": "0:53", "root": "/export/project", "mount_point": "/mnt/project", "options": "rw,relatime",
                         "fstype": "nfs4", "source": "10.0.0.9:/export", "super_options": "rw,vers=4.2"}
    assert ck.mount_of("/mnt/project/ckpts/qwen3", mounts)["fstype"] == "nfs4"
    assert ck.mount_of("/mnt/project/scratch space/x", mounts)["fstype"] == "tmpfs"
    assert ck.mount_of("/mnt/projectx", mounts)["fstype"] == "ext4"


def test_a_folder_that_does_not_exist_is_read_at_its_nearest_existing_parent(tmp_path):
    read = ck.read_ckpts_dir(str(tmp_path / "a" / "b"), mountinfo=MOUNTINFO, boot_id="boot")
    assert (read["exists"], read["existing"], read["missing"], read["writable"]) == (False, str(tmp_path), "a/b", True)
    assert not (tmp_path / "a").exists()  # nothing was created
    assert read["free_bytes"] > 0 and read["storage"]["boot_id"] == "boot"


def test_the_checkpoints_are_read(tmp_path):
    save(tmp_path, 2)
    save(tmp_path, 4)
    save(tmp_path, 6, files=("actor/dist_ckpt/__0_0.distcp",), tracker=False)
    read = ck.read_ckpts_dir(str(tmp_path), mountinfo=MOUNTINFO, boot_id="")
    assert read["steps"] == [2, 4, 6] and ck.tracked_step(read["tracker"]) == 4
    assert read["step_files"] == {"2": list(ck.COMPLETE_FILES + ck.MODEL_FILES), "4": list(ck.COMPLETE_FILES + ck.MODEL_FILES),
                                  "6": []}


def test_a_read_only_file_system_and_a_folder_not_writable_are_refused(tmp_path):
    read = ck.read_ckpts_dir(str(tmp_path), mountinfo=MOUNTINFO, boot_id="")
    assert ck.not_writable(read, launch(tmp_path)) == ""
    text = ck.not_writable(dict(read, readonly=True), launch(tmp_path))
    assert text.startswith("verl_ckpts_dir=%s is on a read-only file system" % tmp_path) and "Fix: mount it read-write" in text
    text = ck.not_writable(dict(read, writable=False, exists=False, existing="/mnt", path="/mnt/c"), launch(tmp_path))
    assert "/mnt/c (it does not exist; its nearest existing folder /mnt) is not writable for the deploy user" in text


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere")
def test_a_folder_the_user_may_not_write_reads_as_not_writable(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    read = ck.read_ckpts_dir(str(locked / "ckpts"), mountinfo=MOUNTINFO, boot_id="")
    assert read["writable"] is False and "is not writable" in ck.not_writable(read, launch(locked / "ckpts"))


def _storage(**changes):
    base = {"fstype": "nfs4", "source": "10.0.0.9:/export", "root": "/export/project", "mount_point": "/mnt/project",
            "dev": "0:53", "ino": 1234, "fsid": 0, "existing": "/mnt/project/ckpts", "missing": "", "boot_id": "b1"}
    return {"read": True, "storage": dict(base, **changes)}


@pytest.mark.parametrize("worker, shared", [
    ({}, True),
    # NFS: each client numbers the device itself, and runs its own kernel: still one storage.
    ({"dev": "0:61", "boot_id": "b2"}, True),
    # Another export of the server; the same export with the server written otherwise is the same storage.
    ({"source": "10.0.0.9:/export2"}, False),
    ({"source": "nfs01:/export"}, True),
    ({"ino": 99}, False),
    # A local disk on each node: the same device numbers and even inode on two machines, but two kernels.
    ({"fstype": "ext4", "boot_id": "b2"}, False),
])
def test_one_storage_on_every_node(worker, shared):
    head = _storage(**({"fstype": worker["fstype"]} if "fstype" in worker else {}))
    text = ck.not_shared({"head": head, "worker1": _storage(**worker)}, LAUNCH)
    assert (text == "") is shared, text
    if not shared:
        assert "is not the same storage on every node (head: " in text
        assert '"Parent directory .../global_step_<N> does not exist"' in text and "is not a distributed checkpoint" in text
        assert "Fix: mount one shared file system (NFS, CephFS, Lustre, GPFS, BeeGFS, GlusterFS, JuiceFS, obsfs...) at the same path" in text


def test_the_simulated_nodes_share_a_local_folder_on_one_kernel():
    """Containers on one host (the simulated cluster) bind-mount one folder: same kernel, device and inode."""
    local = {"fstype": "ext4", "source": "/dev/sda1", "boot_id": "b1"}
    assert ck.not_shared({"head": _storage(**local), "w": _storage(**local)}, LAUNCH) == ""
    assert ck.not_shared({"head": _storage(**local), "w": _storage(**dict(local, fsid=7))}, LAUNCH) != ""


def test_one_node_needs_no_shared_storage():
    assert ck.not_shared({"head": _storage(), "w": _storage(ino=9)}, dict(LAUNCH, nnodes=1)) == ""


@pytest.mark.parametrize("steps, freq, overrides, resumed, expected", [
    (4, 2, [], 0, 2),
    (5, 2, [], 0, 3),  # 2, 4 and the last step
    (4, -1, [], 0, 0),
    (10, 2, ["trainer.max_actor_ckpt_to_keep=2"], 0, 2),
    (10, 2, [], 6, 2),  # resumed at 6: 8 and 10
])
def test_the_saves_ahead(steps, freq, overrides, resumed, expected):
    assert ck.saves_ahead(dict(LAUNCH, train_steps=steps, save_freq=freq, extra_overrides=overrides), resumed) == expected


@pytest.mark.parametrize("overrides, per_param", [
    ([], 14),
    (["actor_rollout_ref.actor.checkpoint.save_contents=[model]"], 2),
    (["actor_rollout_ref.actor.checkpoint.save_contents=['model','optimizer','extra','hf_model']"], 14),
])
def test_the_size_of_one_checkpoint(overrides, per_param):
    assert ck.checkpoint_bytes(1000, ck.save_contents(dict(LAUNCH, extra_overrides=overrides))) == 1000 * per_param


def test_too_little_free_space_is_refused_with_the_numbers(tmp_path):
    read = dict(ck.read_ckpts_dir(str(tmp_path), mountinfo=MOUNTINFO, boot_id=""), free_bytes=150 * ck.GIB)
    params = _model.parameter_count(_model.parse_config(json.dumps(QWEN3_8B)))
    # Two saves of 8.19e9 x 14 B = 106.8 GiB each.
    text = ck.no_space(read, launch(tmp_path), params)
    assert text.startswith("verl_ckpts_dir=%s has 150.0 GiB free" % tmp_path), text
    assert "writes 2 checkpoint(s) of 106.8 GiB each (8.19e9 parameters" in text and ": 213.6 GiB." in text
    assert '"No space left on device"' in text and "trainer.max_actor_ckpt_to_keep=<N>" in text
    assert ck.no_space(read, launch(tmp_path, extra_overrides=["trainer.max_actor_ckpt_to_keep=1"]), params) == ""
    assert ck.no_space(read, launch(tmp_path), None) == ""  # the size unknown: the model checks say why


def test_a_tiny_full_file_system_is_refused(tmp_path):
    read = dict(ck.read_ckpts_dir(str(tmp_path), mountinfo=MOUNTINFO, boot_id=""), free_bytes=0)
    assert "has 0.0 GiB free" in ck.no_space(read, launch(tmp_path), 1000)


def test_a_complete_newest_checkpoint_resumes(tmp_path):
    save(tmp_path, 2)
    read = ck.read_ckpts_dir(str(tmp_path), mountinfo=MOUNTINFO, boot_id="")
    assert ck.resume_broken(read, launch(tmp_path)) == "" and ck.newer_than_tracked(read, launch(tmp_path)) == ""


def test_a_half_written_checkpoint_is_refused_naming_the_previous_complete_one(tmp_path):
    save(tmp_path, 2)
    save(tmp_path, 4, files=("actor/dist_ckpt/__0_0.distcp", "actor/huggingface/config.json"))
    read = ck.read_ckpts_dir(str(tmp_path), mountinfo=MOUNTINFO, boot_id="")
    text = ck.resume_broken(read, launch(tmp_path))
    assert text.startswith("%s/global_step_4, the checkpoint latest_checkpointed_iteration.txt names, is incomplete: "
                           "actor/dist_ckpt/metadata.json, data.pt are missing" % tmp_path), text
    assert "verl_resume_mode=resume_path verl_resume_from_path=%s/global_step_2" % tmp_path in text
    assert "or start from step 0 with verl_resume_mode=disable (no checkpoint is deleted)" in text
    assert ck.resume_broken(read, launch(tmp_path, resume_mode="disable")) == ""
    assert ck.resume_broken(read, launch(tmp_path, is_head=False)) == ""


def test_a_tracker_naming_a_missing_folder_is_a_silent_fresh_start(tmp_path):
    save(tmp_path, 2)
    (tmp_path / ck.TRACKER).write_text("4")
    text = ck.resume_broken(ck.read_ckpts_dir(str(tmp_path), mountinfo=MOUNTINFO, boot_id=""), launch(tmp_path))
    assert "latest_checkpointed_iteration.txt names step 4, but %s/global_step_4 does not exist" % tmp_path in text
    assert '"Checkpoint does not exist"' in text


def test_checkpoints_without_a_tracker_are_a_silent_fresh_start(tmp_path):
    save(tmp_path, 2, tracker=False)
    text = ck.resume_broken(ck.read_ckpts_dir(str(tmp_path), mountinfo=MOUNTINFO, boot_id=""), launch(tmp_path))
    assert "holds global_step_2 but no readable latest_checkpointed_iteration.txt (it is missing)" in text
    assert '"Checkpoint tracker file does not exist"' in text


def test_a_newer_interrupted_save_is_a_warning(tmp_path):
    save(tmp_path, 2)
    save(tmp_path, 4, files=(), tracker=False)
    read = ck.read_ckpts_dir(str(tmp_path), mountinfo=MOUNTINFO, boot_id="")
    assert ck.resume_broken(read, launch(tmp_path)) == ""
    assert "global_step_4 is newer than the step latest_checkpointed_iteration.txt names (2)" in ck.newer_than_tracked(read, launch(tmp_path))


def test_the_precheck_report_runs_the_checkpoint_rules_on_the_head_only_for_sharing(tmp_path):
    save(tmp_path, 2, files=("data.pt",))
    read = ck.read_ckpts_dir(str(tmp_path), mountinfo=MOUNTINFO, boot_id="b1")
    other = dict(read, storage=dict(read["storage"], boot_id="b2"))
    checked = {"launch": launch(tmp_path), "facts": {"ckpts": read}, "ckpts_nodes": {"h": read, "w": other}}
    problems = [pc.ckpts_not_writable(checked), pc.ckpts_not_shared(checked), pc.ckpts_resume_broken(checked)]
    assert problems[0] == "" and "not the same storage" in problems[1] and "is incomplete" in problems[2]
    worker = dict(checked, launch=launch(tmp_path, is_head=False))
    assert pc.ckpts_not_shared(worker) == "" and pc.ckpts_resume_broken(worker) == ""
    # A read of another path than the settings check gave judges nothing.
    assert pc.ckpts_resume_broken(dict(checked, launch=launch(tmp_path / "x"))) == ""


def test_the_simulated_trainers_save_is_what_the_rule_calls_complete(tmp_path):
    """tests/sim/stand_in_main_dapo.py saves in verl's layout and order: its save resumes, and the same folder cut
    before its metadata.json (an interrupted save) is refused."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "tests" / "sim"))
    try:
        import stand_in_main_dapo
    finally:
        sys.path.pop(0)
    from tests.unit.plugins.module_utils.test_resume import stand_in_config

    stand_in_main_dapo._save_checkpoint(str(tmp_path), 2, stand_in_config(tmp_path))
    read = ck.read_ckpts_dir(str(tmp_path), mountinfo=MOUNTINFO, boot_id="")
    assert ck.tracked_step(read["tracker"]) == 2 and ck.resume_broken(read, launch(tmp_path)) == ""
    (tmp_path / "global_step_2" / "actor" / "dist_ckpt" / "metadata.json").unlink()
    read = ck.read_ckpts_dir(str(tmp_path), mountinfo=MOUNTINFO, boot_id="")
    assert "actor/dist_ckpt/metadata.json is missing" in ck.resume_broken(read, launch(tmp_path))


def test_a_file_where_the_folder_should_be_is_refused(tmp_path):
    (tmp_path / "ckpts").write_text("x")
    read = ck.read_ckpts_dir(str(tmp_path / "ckpts"))
    assert ck.not_writable(read, launch(tmp_path / "ckpts")) == (
        "verl_ckpts_dir=%s could not be read on this host (it exists and is not a folder). Fix: give an absolute path on "
        "storage every node mounts." % (tmp_path / "ckpts"))


# The head's look at the last training (node_facts' state_dir), which the drift check's fresh-start rule reads.
@pytest.mark.parametrize("layout, expected", [
    ({}, {"exists": "no", "checkpoints": 0}),
    ({"ckpts": []}, {"exists": "yes", "checkpoints": 0, "mountpoint": "no"}),
    ({"ckpts": ["global_step_2", "global_step_4", "notes"]}, {"exists": "yes", "checkpoints": 2}),
    # verl's tracker file alone (its folders gone) still says checkpoints were written there.
    ({"ckpts": [ck.TRACKER]}, {"exists": "yes", "checkpoints": 1}),
])
def test_the_last_training_and_the_checkpoint_folder_as_the_fresh_start_rule_reads_them(tmp_path, layout, expected):
    from ansible_collections.verl.deploy.plugins.module_utils._training_state import fresh_start_refusal
    state, ckpts = tmp_path / ".verl-deploy", tmp_path / "ckpts"
    state.mkdir()
    (state / "last_step").write_text("1700000000 716\n")
    (state / "ckpts_fs").write_text("%d\n" % os.stat(tmp_path).st_dev)
    (state / "launch.json").write_text(json.dumps({"settings": {"save_freq": 2, "ckpts_dir": str(ckpts)}}) + "\n")
    if "ckpts" in layout:
        ckpts.mkdir()
        for name in layout["ckpts"]:
            (ckpts / name).mkdir() if name.startswith("global_step_") else (ckpts / name).write_text("4")
    look = ck.read_last_training(str(state), str(ckpts))
    assert {key: look[key] for key in expected} == expected, look
    assert (look["last_step"], look["ckpts_seen"], look["launch"].startswith("{")) == ("1700000000 716", "", True)
    if look["exists"] == "yes":
        assert look["fs_now"] == str(os.stat(ckpts).st_dev)
    refused = fresh_start_refusal(look, {"resume_mode": "auto", "save_freq": 2, "ckpts_dir": str(ckpts)}, "node1")
    assert bool(refused) == (look["checkpoints"] == 0), refused


def test_no_state_folder_reads_as_no_training():
    look = ck.read_last_training("/nonexistent/.verl-deploy", "")
    assert look == {"last_step": "", "ckpts_seen": "", "ckpts_fs": "", "launch": "", "exists": "no", "checkpoints": 0}
