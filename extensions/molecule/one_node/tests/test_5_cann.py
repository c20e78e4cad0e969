"""A CANN environment the image does not have: the container stage stops the deploy, naming the node, the
image, what failed and the fix, before the training is touched (even with verl_restart=true)."""
import os

from sim_scenario import hosts, in_verl, playbook, tail, training_pids


def test_missing_cann_scripts_stop_the_deploy_in_the_container_stage():
    head = hosts("ray_head")[0]
    before = training_pids(head)
    # verl_restart=true: a changed setting would otherwise stop the deploy at the drift check, before the container stage.
    proc = playbook("deploy.yml", "-e", '{"verl_ascend_env_scripts": ["/opt/nowhere/set_env.sh"], "verl_restart": true}')
    assert proc.returncode != 0, tail(proc)
    image = os.environ["VERL_SIM_VERL_LOCAL_IMAGE"]
    assert ("%s: in container verl (image %s), no CANN environment: none of /opt/nowhere/set_env.sh exists in the container and "
            "neither ASCEND_HOME_PATH nor ASCEND_TOOLKIT_HOME is set (rc 3). Fix: set verl_ascend_env_scripts" % (head, image)
            in proc.output), tail(proc)
    assert training_pids(head) == before, "the running training must be left alone: %s" % in_verl(
        head, "cat /sim/ckpts/qwen3-8b-dapo/stand_in_stopped.json", check=False).stdout
    # The same image's torch_npu loads once CANN's environment is sourced: what the check asks of it.
    assert in_verl(head, "source /usr/local/Ascend/ascend-toolkit/set_env.sh && python3 -c 'import torch_npu'").returncode == 0
