"""A checkpoint saved with another TP and verl_resume_mode=auto: the pre-check refuses it before anything changes
(plugins/module_utils/_resume.py), naming the checkpoint, what changed and the fixes, where verl would have loaded the
model and then failed in Megatron's checkpoint loader. The stand-in trainer saved the checkpoints of this scenario with
its TP (verl_train_tp=8, settings.yml) in verl's layout files (tests/sim/stand_in_main_dapo.py _save_checkpoint).

Runs after test_5_compare.py (pytest takes the files in name order), which gave the user's training back as it ran (its
launch record: TP 8 x PP 2, verl_resume_mode=auto), and changes nothing: that training runs on. The deploy here is what
that comparison's restart would have been had its own TP and PP reached it (issue 56)."""
import re

from sim_scenario import hosts, in_verl, playbook, tail, training_pids

CKPTS = "/sim/ckpts/qwen3-8b-dapo"


def test_a_checkpoint_saved_with_another_tp_is_refused_before_anything_changes():
    head = hosts("ray_head")[0]
    assert in_verl(head, "cat %s/latest_checkpointed_iteration.txt" % CKPTS).stdout.strip().isdigit()
    before = training_pids(head)
    # TP 4 x PP 4 fills the 16 NPUs, as the checkpoint's TP 8 x PP 2 did: the settings check passes, the layout differs.
    # verl_resume_mode=auto is the running training's own (its launch record); given here, the test does not depend on it.
    proc = playbook("deploy.yml", "-e", "verl_restart=true", "-e", "verl_resume_mode=auto", "-e", "verl_train_tp=4", "-e", "verl_train_pp=4")
    assert proc.returncode != 0, tail(proc)
    # The running training saves on (every verl_save_freq steps): the step is the one the pre-check read.
    found = re.search(r"verl_resume_mode=auto resumes from %s/global_step_(\d+) " % re.escape(CKPTS), proc.output)
    assert found, tail(proc)
    assert in_verl(head, "test -f %s/global_step_%s/actor/transformer_config.json" % (CKPTS, found.group(1)), check=False).returncode == 0
    assert "TP (tensor_model_parallel_size): 8 in the checkpoint, 4 now (verl_train_tp)" in proc.output, tail(proc)
    assert "restore the checkpoint's layout (-e verl_train_tp=8" in proc.output, tail(proc)
    assert training_pids(head) == before, "refused before any change: the running training is left alone"
