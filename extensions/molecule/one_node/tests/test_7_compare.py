"""playbooks/compare.yml on the simulated node: one command compares three masks, one of which the settings refuse; the
user's running training is stopped only with verl_restart=true and runs again afterwards, its checkpoints as they were;
the table, the JSON and the picture name the fastest mask that fits; a comparison interrupted before a mask resumes with it.

Runs after test_6 (pytest takes the files in name order). The layout TP 4 x PP 4 (16 NPUs) is the user's for this test,
given to the user's deploy and to the comparison alike (the comparison's deploys, and the one that starts the user's
training again, get the same extra vars): with the model's 36 layers, VPP cannot split them over PP 4 x 2, so the
settings check on the node refuses 1101101. Three steps per mask (the first left out as warm-up) keep it short."""
import json
import os
import time

from sim_scenario import hosts, in_verl, playbook, started_marker, tail, training_pids

# The node's container is verl 0.7.1's since test_6 (its image given as a user would, to every deploy here).
LAYOUT = ["-e", "verl_train_tp=4", "-e", "verl_train_pp=4", "-e", "verl_image=%s" % os.environ["VERL_SIM_EXTRA_LOCAL_IMAGES"]]
USER_CKPTS = "/sim/ckpts/qwen3-8b-dapo"
COMPARE_NODE = "/sim/logs/compare"
MASKS = "0000000,1101100,1101101"


def _listing(head):
    return set(in_verl(head, "ls -1 %s" % USER_CKPTS).stdout.split())


def _compare(out, *extra):
    return playbook("compare.yml", "-e", "masks=%s" % MASKS, "-e", "verl_compare_steps=3", "-e", "verl_compare_warmup=1",
                    "-e", "verl_compare_timeout=600", "-e", "verl_compare_dir=%s" % out, *LAYOUT, *extra)


def test_three_masks_compared_the_users_training_kept_and_an_interrupted_comparison_resumes(tmp_path):
    head = hosts("ray_head")[0]
    out = tmp_path / "compare"
    user = playbook("deploy.yml", "-e", "verl_restart=true", *LAYOUT)
    assert user.returncode == 0, tail(user)
    pids = training_pids(head)
    assert pids, "the user's training does not run"
    marker = started_marker(head, pids[0])
    before = _listing(head)

    # Not asked to stop it: refused before anything changed.
    refused = _compare(out)
    assert refused.returncode != 0, tail(refused)
    assert "and stops it only when asked" in refused.output and "-e verl_restart=true" in refused.output, tail(refused)
    assert training_pids(head) == pids

    proc = _compare(out, "-e", "verl_restart=true")
    assert proc.returncode == 0, tail(proc, 8000)
    report = json.loads((out / "compare.json").read_text())
    rows = {row["mask"]: row for row in report["rows"]}
    assert rows["0000000"]["status"] == "measured" and rows["1101100"]["status"] == "measured", report
    assert rows["1101101"]["status"] == "refused" and "With VPP (bit 6)" in " ".join(rows["1101101"]["reasons"]), report
    # The stand-in's model (recompute costs, padding and dynamic batches save more): the pipeline is what is proven.
    assert report["winner"] == "1101100" and report["verdict"].startswith("fastest that fits: 1101100"), report
    assert all(rows[m]["step_time"] and rows[m]["throughput"] and rows[m]["peak_hbm"] for m in ("0000000", "1101100"))
    assert "**fastest that fits: 1101100" in (out / "compare.md").read_text()
    page = (out / "compare.html").read_text()
    assert page.count("<svg") == 2 and "fastest that fits: 1101100" in page
    last = proc.stdout.rsplit("TASK [", 1)[-1]
    assert str(out / "compare.html") in last and str(out / "compare.json") in last, last

    # Each mask trained in its own folder, with the mask in its experiment name; the user's folder kept what it had.
    for mask in ("0000000", "1101100"):
        own = json.loads(in_verl(head, "cat %s/ckpts/m%s/stand_in_started.json" % (COMPARE_NODE, mask)).stdout)
        assert own["total_training_steps"] == 3 and "-m%s-" % mask in own["experiment_name"], own
    assert in_verl(head, "ls %s/ckpts/m1101101/stand_in_started.json" % COMPARE_NODE, check=False).returncode != 0
    assert before <= _listing(head)

    # The user's training runs again, from the user's settings and folder.
    deadline = time.monotonic() + 240
    while not training_pids(head):
        assert time.monotonic() < deadline, "the user's training was not started again"
        time.sleep(2)
    again = started_marker(head, training_pids(head)[0])
    assert again["experiment_name"] == marker["experiment_name"] and again["default_local_dir"] == USER_CKPTS, again
    assert again["total_training_steps"] == marker["total_training_steps"]

    # Interrupted before its last mask: the state lacks it, and a run again trains only that one.
    state = json.loads((out / "state.json").read_text())
    del state["results"]["1101100"]
    (out / "state.json").write_text(json.dumps(state))
    resumed = _compare(out, "-e", "verl_restart=true")
    assert resumed.returncode == 0, tail(resumed, 8000)
    assert "0000000 (none): measured already (resumed: not trained again)" in resumed.output, tail(resumed)
    assert "1101100 (RmvPad+DynBSZ+PfxCache+Recompute): to train" in resumed.output, tail(resumed)
    assert (out / "deploy-m0000000.log").stat().st_mtime < (out / "deploy-m1101100.log").stat().st_mtime  # not deployed again
    assert json.loads((out / "compare.json").read_text())["winner"] == "1101100"
    assert training_pids(head), "the user's training was not started again after the resumed comparison"
