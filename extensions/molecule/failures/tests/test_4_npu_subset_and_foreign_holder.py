"""The Ascend device rules, on nodes that follow them: every node trains on its NPUs 4-7 only (the runtime in
the container numbers them 0-3, and Ray hands those on to the workers), and a process of another container
that holds one of them is refused by name, the training left alone. Runs after test_3 (name order), whose
containers were created with NPUs 0-7.

A setup real clusters have, which must deploy: the checkpoint folder on a JuiceFS-like FUSE file system (on every
node a FUSE mount, bindfs with JuiceFS's file system type, of the one shared folder: the same storage on every node
by its source, not by inode).
A privileged exporter container on a node (as npu-exporter runs on real clusters), which sees every NPU and opens
none, is named in a warning and holds nothing. (The nodes' engine runs it through tests/sim/node/sim_runc.sh: this
machine cannot grant CAP_SYS_RESOURCE, so runc refuses every privileged container here without it.)"""
import re

from sim_scenario import hosts, in_verl, nodes, npu_processes, on_node, playbook, ray_view, sh, started_marker, tail, training_pids

HEAD = hosts("ray_head")[0]
JUICEFS = "/sim/juicefs"
CKPTS = JUICEFS + "/qwen3-8b-dapo"
# 3 nodes x 4 NPUs: TP 4 x PP 3 is one data-parallel rank, a multiple of the NPUs per node.
SUBSET = ["-e", "verl_npu_devices=4,5,6,7", "-e", "verl_train_tp=4", "-e", "verl_train_pp=3", "-e", "verl_gen_tp=4",
          "-e", "verl_train_steps=100000", "-e", "verl_ckpts_dir=%s" % CKPTS]
STARTED = CKPTS + "/stand_in_started.json"


def mount_juicefs_like(node):
    """/sim/juicefs on `node`: a FUSE mount of the shared /sim/ckpts with JuiceFS's file system type (mountinfo:
    `fuse.juicefs /sim/ckpts`; bindfs names the source by its folder, where JuiceFS shows `JuiceFS:<volume>`), one
    storage on every node as a JuiceFS volume is."""
    on_node(node, "sh", "-c", "mountpoint -q {0} || {{ mkdir -p {0} && bindfs -o subtype=juicefs /sim/ckpts {0}; }}".format(JUICEFS))


def test_a_container_created_with_other_npus_is_refused_before_ray():
    for node in nodes():
        mount_juicefs_like(node)
    proc = playbook("deploy.yml", *SUBSET)
    assert proc.returncode != 0, tail(proc)
    assert "the container has the NPU devices 0,1,2,3,4,5,6,7 (/dev/davinciN), but this deploy gives it 4,5,6,7" in proc.output, tail(proc)
    assert "docker rm" in proc.output, tail(proc)
    assert training_pids(HEAD) == []


def test_every_node_trains_on_npus_4_to_7():
    for node in nodes():
        on_node(node, "docker", "rm", "-f", "verl")  # as the refusal says: the deploy creates it with these NPUs
    proc = playbook("deploy.yml", *SUBSET)
    assert proc.returncode == 0, tail(proc)
    assert "JuiceFS (fuse.juicefs /sim/ckpts on %s), one storage on every node" % JUICEFS in proc.output, tail(proc)
    assert ray_view(HEAD) == {"nodes": 3, "npu": 12.0}, tail(proc)
    assert "export ASCEND_RT_VISIBLE_DEVICES=0,1,2,3" in in_verl(HEAD, "cat /verl/start_verl.sh").stdout
    started = started_marker(HEAD, training_pids(HEAD)[0], STARTED)
    placed = sorted((worker["hostname"], worker["device"]) for worker in started["workers"])
    assert placed == sorted((node, device) for node in nodes() for device in (4, 5, 6, 7)), placed
    assert {worker["visible_devices"] for worker in started["workers"]} == {"0", "1", "2", "3"}
    for node in nodes():
        assert sorted(npu_processes(node)) == [4, 5, 6, 7], node


def test_a_process_of_another_container_on_one_of_them_is_refused_by_name():
    worker = hosts("ray_workers")[0]
    pid = training_pids(HEAD)
    image = on_node(worker, "docker", "inspect", "-f", "{{.Config.Image}}", "verl").stdout.strip()
    hold = ("source /usr/local/Ascend/ascend-toolkit/set_env.sh && exec python3 -c "
            "'import time, torch_npu; torch_npu.npu.set_device(0); time.sleep(900)'")
    intruder = on_node(worker, "docker", "run", "-d", "--name", "intruder", "--device", "/dev/davinci5", image,
                       "bash", "-c", hold).stdout.strip()
    try:
        for _second in range(30):
            if len(npu_processes(worker).get(5, [])) == 2:
                break
            sh("sleep", "1")
        holder = on_node(worker, "docker", "inspect", "-f", "{{.State.Pid}}", "intruder").stdout.strip()
        proc = playbook("deploy.yml", *SUBSET)
    finally:
        on_node(worker, "docker", "rm", "-f", "intruder", check=False)
    assert proc.returncode != 0, tail(proc)
    # The pre-check names each problem once under the host ("<host>: N problem(s):"), in at most two lines; its whole
    # text is in the output too (the log file's part).
    assert ("NPU(s) 5 already run processes of something other than this deployment's container verl: pid %s (python3, "
            "container intruder %s)" % (holder, intruder[:12])) in proc.output, tail(proc)
    assert re.search(r"%s: \d+ problem\(s\):" % re.escape(worker), proc.output), tail(proc)
    assert training_pids(HEAD) == pid, "the refusal must leave the training alone"


def test_a_privileged_exporter_that_opens_no_npu_is_named_and_the_deploy_goes_on():
    worker = hosts("ray_workers")[-1]
    pid = training_pids(HEAD)
    image = on_node(worker, "docker", "inspect", "-f", "{{.Config.Image}}", "verl").stdout.strip()
    on_node(worker, "docker", "run", "-d", "--name", "npu-exporter", "--privileged", image, "sleep", "900")
    try:
        assert on_node(worker, "docker", "inspect", "-f", "{{.HostConfig.Privileged}}", "npu-exporter").stdout.strip() == "true"
        proc = playbook("deploy.yml", *SUBSET)
    finally:
        on_node(worker, "docker", "rm", "-f", "npu-exporter", check=False)
    assert proc.returncode == 0, tail(proc)
    assert ("privileged container(s) npu-exporter run here: they see every NPU but none of their processes has a /dev/davinci "
            "device open, so they hold none") in proc.output, tail(proc)
    assert training_pids(HEAD) == pid, "an unchanged re-run leaves the training alone"
