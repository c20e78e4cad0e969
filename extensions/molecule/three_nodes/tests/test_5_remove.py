"""remove.yml, last (after test_4: training and Ray stopped, a worker's container stopped): every node's container is
removed, Ray and the training with it; the checkpoints, the training log, the datasets and the image stay, and each node
says what it kept. A second run finds nothing to remove and changes nothing. The scenario's settings confirm it
(verl_confirm: true), as they confirm its deploys.
"""
import os

from sim_scenario import hosts, nodes, on_node, playbook, recap, tail

HEAD = hosts("ray_head")[0]


def test_remove_takes_the_containers_and_keeps_checkpoints_logs_datasets_and_the_image():
    proc = playbook("remove.yml")
    assert proc.returncode == 0, tail(proc)
    for node in nodes():
        assert on_node(node, "docker", "inspect", "verl", check=False).returncode != 0, "the container is still on %s" % node
        assert "%s: container verl removed, with Ray and the training in it (stopped first); kept on the host:" % node in proc.output, tail(proc)
        # The image stays: a later deploy needs no pull.
        assert on_node(node, "docker", "image", "inspect", os.environ["VERL_SIM_VERL_IMAGE"], check=False).returncode == 0, node
    assert "/sim/ckpts" in proc.output and "/sim/logs" in proc.output, tail(proc)
    # Nothing on the host deleted: the checkpoint folder (the stand-in trainer's records in it), the training log, the data.
    assert on_node(HEAD, "test", "-f", "/sim/ckpts/qwen3-8b-dapo/stand_in_started.json", check=False).returncode == 0
    assert on_node(HEAD, "bash", "-c", "ls /sim/logs/verl_qwen3_8b_*.log").stdout.strip()
    assert on_node(HEAD, "bash", "-c", "ls /sim/data/*.parquet").stdout.strip()
    again = playbook("remove.yml")
    assert again.returncode == 0 and {counts["changed"] for counts in recap(again.stdout).values()} == {0}, tail(again)
    assert "%s: no container verl, nothing to remove" % HEAD in again.output, tail(again)
