"""status.yml reports every node; stop.yml then stops training and Ray but keeps everything else.

Runs last (pytest takes the files in name order): stop changes the cluster."""
import re

from sim_scenario import hosts, in_verl, nodes, on_node, paused, playbook, recap, tail, training_pids


def test_status_reports_every_node():
    # A worker's control script as another release of verl-deploy left it (its text differs): named, with the fix.
    older = hosts("ray_workers")[-1]
    in_verl(older, "echo '# verl-deploy, an earlier release' >> /verl/verl_control.sh")
    try:
        proc = playbook("status.yml")
    finally:
        in_verl(older, "sed -i '$d' /verl/verl_control.sh")
    assert proc.returncode == 0, tail(proc)
    assert "verl_control.sh on %s was installed by another release of verl-deploy" % older in proc.output, tail(proc)
    assert "Fix: run deploy.yml to update it" in proc.output
    assert "dashboard http://" in proc.stdout
    assert "training: running (pid" in proc.output and "steps/min" in proc.output, tail(proc)
    assert "step:" in proc.stdout, tail(proc)
    for node in nodes():
        assert node in proc.stdout
    assert proc.output.count("ray: in the cluster of") == 3, tail(proc)
    # Every node's NPUs are held by the training's workers, and status says whose they are.
    assert proc.output.count("NPUs in use: 0-7 by the training (pids ") == 3, tail(proc)
    assert proc.output.count("verl: 0.7.0.dev") == 3, tail(proc)  # the image's verl, on every node
    assert {counts["changed"] for counts in recap(proc.stdout).values()} == {0}
    # One table, the head first, every node in Ray; the training's step N of M with its rate.
    rows = [line.strip(" -'\"").split() for line in proc.stdout.splitlines() if line.strip(" -'\"").split()[:1] in ([n] for n in nodes())]
    table = [row for row in rows if len(row) > 3 and row[1] in ("head", "worker")]
    assert [row[1] for row in table[:3]] == ["head", "worker", "worker"], tail(proc)
    assert all(row[2] == "running" and row[3] == "yes" for row in table[:3]), tail(proc)
    assert "training: running; step " in proc.output and " of " in proc.output, tail(proc)
    # Each node's NPU sampler (started with its Ray): its last samples, the training's workers busy on every node, none idle.
    assert "NPU use (each node's last samples, verl_npu_sample_seconds):" in proc.output, tail(proc)
    for node in nodes():
        # (proc.output joins the words with one space: the report's two-space indent is read in stdout.)
        assert re.search(r"  %s: AICore [1-9][\d.]* %% mean" % re.escape(node), proc.stdout), tail(proc)
    assert "NPUs IDLE on" not in proc.output, tail(proc)


def test_status_and_stop_name_a_node_that_does_not_answer_and_what_was_not_done_there():
    worker = hosts("ray_workers")[-1]
    with paused(worker):
        status = playbook("status.yml")
        stop = playbook("stop.yml")
    assert status.returncode != 0, tail(status)
    assert "%s (worker): the node did not answer" % worker in status.output, tail(status)
    assert "its container, Ray and NPUs were NOT REPORTED" in status.output and "training: running (pid" in status.output, tail(status)
    assert stop.returncode != 0, tail(stop)
    assert "%s (worker): the node did not answer" % worker in stop.output, tail(stop)
    assert "Ray on it, and the training's workers there, were NOT STOPPED" in stop.output, tail(stop)
    assert training_pids(hosts("ray_head")[0]) == [], "the nodes that answered are stopped"


def test_stop_stops_training_and_ray_but_keeps_containers_logs_and_checkpoints():
    proc = playbook("stop.yml")
    assert proc.returncode == 0, tail(proc)
    head = hosts("ray_head")[0]
    for node in nodes():
        assert training_pids(node) == []
        # Ray's own processes, not `ray status`: with Ray's folder moved (settings.yml, --temp-dir) a worker's `ray status`
        # finds no cluster even while its raylet runs.
        assert in_verl(node, "pgrep -x raylet || pgrep -x gcs_server", check=False).returncode != 0, "Ray still runs on %s" % node
        assert in_verl(node, "pgrep -f '[n]pu_sampler.py'", check=False).returncode != 0, "the NPU sampler still runs on %s" % node
        assert on_node(node, "docker", "inspect", "-f", "{{.State.Running}}", "verl").stdout.strip() == "true"
    assert in_verl(head, "ls /sim/logs/verl_qwen3_8b_*.log").stdout.strip()
    # The stand-in trainer writes this only on a clean exit: it got SIGTERM, not SIGKILL.
    stopped = in_verl(head, "cat /sim/ckpts/qwen3-8b-dapo/stand_in_stopped.json").stdout
    assert '"signal": "SIGTERM"' in stopped
    assert in_verl(head, "test -f /sim/ckpts/qwen3-8b-dapo/stand_in_started.json", check=False).returncode == 0
    again = playbook("stop.yml")
    assert again.returncode == 0 and {counts["changed"] for counts in recap(again.stdout).values()} == {0}, tail(again)
