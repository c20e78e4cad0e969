"""The NPUs' own network on a multi-node run (after test_5, the training runs on NPUs 4-7): a worker whose NPU 5
link is down (hccn_tool) stops the deploy in the pre-check, naming the node, the NPU and the command, and the
training is left alone."""
from sim_scenario import hosts, on_node, playbook, tail, training_pids

from test_4_npu_subset_and_foreign_holder import SUBSET

HEAD = hosts("ray_head")[0]


def test_an_npu_link_down_on_a_worker_is_refused_before_any_change():
    worker = hosts("ray_workers")[0]
    pid = training_pids(HEAD)
    on_node(worker, "sh", "-c", "echo '5 link DOWN' > /etc/sim-npu-smi/hccn")
    try:
        proc = playbook("deploy.yml", *SUBSET)
    finally:
        on_node(worker, "rm", "-f", "/etc/sim-npu-smi/hccn")
    assert proc.returncode != 0, tail(proc)
    # The host's problems are listed once under its name (one line each), then the task fails with their count.
    assert "%s: 1 problem(s):" % worker in proc.output, tail(proc)
    assert "the NPUs' own network is not up: NPU 5 link DOWN (hccn_tool -i 5 -link -g)" in proc.output, tail(proc)
    assert training_pids(HEAD) == pid
