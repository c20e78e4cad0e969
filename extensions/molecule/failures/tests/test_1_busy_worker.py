"""A worker whose NPUs are busy: the deploy stops in the pre-check, naming the node and the
processes, and nothing changes on any node."""
from sim_scenario import hosts, inner_containers, nodes, on_node, playbook, tail

BUSY = "011_info_910B2_8cards_v24.1.0_procs_mindie.txt"  # a capture with processes on every NPU


def test_busy_worker_stops_the_deploy_in_precheck():
    worker = hosts("ray_workers")[0]
    on_node(worker, "sh", "-c", "echo %s > /etc/sim-npu-smi/fixture" % BUSY)
    try:
        proc = playbook("deploy.yml")
    finally:
        on_node(worker, "rm", "-f", "/etc/sim-npu-smi/fixture")
    assert proc.returncode != 0, tail(proc)
    assert worker in proc.output and "already run processes" in proc.output, tail(proc)
    assert "412122" in proc.output, "the message names a PID that holds the NPUs"
    for node in nodes():
        assert inner_containers(node) == [], "%s changed although the pre-check failed" % node


def test_a_taken_hccl_port_on_a_worker_stops_the_deploy_in_precheck():
    """HCCL's listen range (60000-60031 by default) must be free where the training is to run."""
    worker = hosts("ray_workers")[-1]
    listener = ("import socket, time; s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); "
                "s.bind(('0.0.0.0', 60005)); s.listen(); time.sleep(600)")
    on_node(worker, "sh", "-c", "nohup python3 -c \"%s\" >/dev/null 2>&1 & echo $! > /tmp/hccl-listener.pid" % listener)
    try:
        proc = playbook("deploy.yml")
    finally:
        on_node(worker, "sh", "-c", "kill $(cat /tmp/hccl-listener.pid)", check=False)
    assert proc.returncode != 0, tail(proc)
    # The host's problems are listed once under its name (one line each), then the task fails with their count.
    assert "%s: 1 problem(s):" % worker in proc.output, tail(proc)
    assert "port(s) 60005 of HCCL's range 60000-60031 (HCCL_IF_BASE_PORT=60000) are in use on this host" in proc.output, tail(proc)
    for node in nodes():
        assert inner_containers(node) == [], "%s changed although the pre-check failed" % node
