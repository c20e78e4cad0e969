"""A restart with new settings before the training's first save (test_4's training saves every 1,000 steps and has
logged far fewer): it has rightly no checkpoint, so the deploy must not take the empty folder for lost storage; it
restarts the training with the new settings, on the JuiceFS-like checkpoint folder, and the new one runs."""
import re

from sim_scenario import hosts, in_verl, playbook, started_marker, tail, training_pids

from test_4_npu_subset_and_foreign_holder import CKPTS, STARTED, SUBSET

HEAD = hosts("ray_head")[0]


def test_a_restart_with_new_settings_before_the_first_save_starts_the_new_training():
    log = in_verl(HEAD, "cat /sim/logs/verl_*.log 2>/dev/null | grep -o '^step:[0-9]*' | tail -1 || true").stdout
    assert re.match(r"step:\d+", log), "test_4's training logged no step: %r" % log
    assert in_verl(HEAD, "ls -d %s/global_step_* 2>/dev/null || true" % CKPTS).stdout.strip() == "", "it saved already"
    before = training_pids(HEAD)
    proc = playbook("deploy.yml", *SUBSET, "-e", "mask=1000000", "-e", "verl_restart=true", timeout=900)
    assert proc.returncode == 0, tail(proc)
    assert "has no checkpoint" not in proc.output, tail(proc)
    after = training_pids(HEAD)
    assert len(after) == 1 and after != before, (before, after)
    started = started_marker(HEAD, after[0], STARTED)
    assert "actor_rollout_ref.model.use_remove_padding=True" in started["argv"], started["argv"]
