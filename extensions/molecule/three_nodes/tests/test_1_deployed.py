"""After converge (the deploy): the unchanged re-run first (it changes nothing, and stands for Molecule's idempotence run,
which this scenario leaves out), then what runs where."""
import json
import re
import time

from sim_scenario import hosts, in_verl, nodes, npu_processes, on_node, playbook, ray_view, recap, sh, tail, training_pids

# testinfra reaches each node with `docker exec` itself (its docker backend): through Ansible, the nodes' connection
# (verl_sim.cluster.node) would template a command's Go-template braces.
testinfra_hosts = ["docker://" + name for name in hosts("ray_head") + hosts("ray_workers")]


def test_an_unchanged_re_run_makes_three_calls_to_the_head_and_one_to_each_worker():
    """What an unchanged re-run of a running training costs each node, as the engine saw it (each module Ansible runs on a
    node is one exec into it): on each node the read, which also runs the container check as the last deploy kept it (the
    training holds the NPUs, so the container stage needs no call), and on the head the deploy's lock taken on its host
    before the container stage and the Ray look, which finds it held and releases it. Nothing else: no second read of the
    training, no connects to the head's ports, no unlock step."""
    head, pids = hosts("ray_head")[0], training_pids(hosts("ray_head")[0])
    began = time.time()
    proc = playbook("deploy.yml")
    assert proc.returncode == 0 and {counts["changed"] for counts in recap(proc.stdout).values()} == {0}, tail(proc)
    events = sh("docker", "events", "--since", "%.3f" % began, "--until", "%.3f" % time.time(), "--filter", "event=exec_start",
                "--format", "{{.Actor.Attributes.name}}").stdout.split()
    assert {node: events.count(node) for node in nodes()} == {node: 3 if node == head else 1 for node in nodes()}, events
    assert training_pids(head) == pids


def test_each_node_runs_the_verl_container_with_its_npus(host):
    assert host.docker("verl").is_running
    devices = host.check_output("docker inspect -f '{{range .HostConfig.Devices}}{{.PathOnHost}} {{end}}' verl").split()
    assert {"/dev/davinci%d" % index for index in range(8)} <= set(devices)
    assert host.run("docker exec verl npu-smi info").rc == 0


def test_ray_reports_three_nodes_and_24_npus():
    assert ray_view(hosts("ray_head")[0]) == {"nodes": 3, "npu": 24.0}


def test_ray_keeps_its_sessions_where_the_settings_moved_them_and_the_training_joined_that_ray():
    """settings.yml gives every ray start --temp-dir=/tmp/ray-verl: each node's Ray session is there (not in /tmp/ray), and
    the training, whose ray.init() has no address as verl's, runs in the head's Ray (its placement found 24 NPUs)."""
    for node in nodes():
        assert in_verl(node, "readlink /tmp/ray-verl/session_latest && test ! -e /tmp/ray/session_latest").returncode == 0, node
    started = json.loads(in_verl(hosts("ray_head")[0], "cat /sim/ckpts/qwen3-8b-dapo/stand_in_started.json").stdout)
    assert started["ray_nodes"] == 3 and started["available_npus"] == 24.0


def test_training_runs_on_the_head_only_and_was_not_restarted():
    head = hosts("ray_head")[0]
    pids = training_pids(head)
    assert len(pids) == 1
    started = json.loads(in_verl(head, "cat /sim/ckpts/qwen3-8b-dapo/stand_in_started.json").stdout)
    # The re-run left it alone: the process running is the one that first started.
    assert started["pid"] == int(pids[0])
    assert started["nnodes"] == 3 and started["n_gpus_per_node"] == 8 and started["cluster_npus"] == 24.0
    for worker in hosts("ray_workers"):
        assert training_pids(worker) == [], "training must run on the head only, but it runs on %s" % worker


def test_the_trainings_workers_hold_every_npu_of_every_node_and_npu_smi_shows_them():
    """As on real nodes: one worker per NPU on each node, and each node's npu-smi lists them by host pid."""
    head = hosts("ray_head")[0]
    started = json.loads(in_verl(head, "cat /sim/ckpts/qwen3-8b-dapo/stand_in_started.json").stdout)
    placed = sorted((worker["hostname"], worker["device"]) for worker in started["workers"])
    assert placed == sorted((node, device) for node in nodes() for device in range(8)), placed
    for node in nodes():
        table = npu_processes(node)
        assert sorted(table) == list(range(8)) and all(len(pids) == 1 for pids in table.values()), (node, table)
        # Host pids: each is a process of the node's verl container.
        container = on_node(node, "docker", "inspect", "-f", "{{.Id}}", "verl").stdout.strip()
        for pids in table.values():
            assert container in on_node(node, "cat", "/proc/%d/cgroup" % pids[0]).stdout


def test_the_training_log_grows():
    head = hosts("ray_head")[0]
    log = in_verl(head, "ls -t /sim/logs/verl_qwen3_8b_*.log | head -n 1").stdout.strip()
    assert re.search(r"step:\d+ - ", in_verl(head, "cat %s" % log).stdout)


def test_the_scripts_are_in_the_workdir_executable_and_root_owned(host):
    listing = host.check_output("docker exec verl stat -c '%a %U %n' /verl/start_verl.sh /verl/run_training.sh")
    assert [line.split()[:2] for line in listing.splitlines()] == [["755", "root"], ["755", "root"]]


def test_the_scripts_differ_between_nodes_only_where_they_must():
    scripts = {node: in_verl(node, "cat /verl/start_verl.sh").stdout for node in nodes()}
    head = hosts("ray_head")[0]
    assert 'ROLE="head"' in scripts[head]
    assert all('ROLE="worker"' in scripts[worker] for worker in hosts("ray_workers"))
    per_node = re.compile(r"ROLE=|for host verl-m3-node|start_verl.sh on verl-m3-node")
    assert len({"\n".join(line for line in text.splitlines() if not per_node.search(line)) for text in scripts.values()}) == 1
    # run_training.sh: only its header (which names the host) differs.
    assert len({in_verl(node, "cat /verl/run_training.sh").stdout.split("\n", 3)[3] for node in nodes()}) == 1
    # verl_control.sh: one file for every node (its values are verl_control.env's).
    assert len({in_verl(node, "cat /verl/verl_control.sh").stdout for node in nodes()}) == 1
