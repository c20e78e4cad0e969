"""Smoke test of the simulated Ascend cluster itself (tests/sim/simcluster.py): real parts only.

One module-scoped cluster of 2 nodes (built if needed, brought up, and removed at the end):
each node's own Docker engine answers; npu-smi shows its capture's chips with the node's own
processes (a pinned capture is replayed byte for byte, and can be switched at run time); the Ascend
device and driver paths exist; the verl image is pulled from the cluster's registry by each node's
engine; a process in a container that opens an NPU shows on the node's npu-smi with its host pid;
Ray spans both nodes through Docker's DNS (16 NPU); and the stand-in trainer, started by the
rendered run_training.sh, composes the overrides against verl 0.7.0's schema, places a worker on
every NPU of both nodes (npu-smi lists them), exits 0 after its last step and 15 on SIGTERM (Ray's driver handler), fails
when a node's Ray goes, and a bad override or too few NPUs fail it.

Needs a running Docker engine (and debootstrap for the first build): see simcluster.py. Set
VERL_DEPLOY_SKIP_SIM=1 to skip on purpose. Timings go to tests/output/sim/smoke-timings.json.
Under pytest-xdist each worker gets its own cluster prefix; run with `--dist loadgroup` to keep
the whole module on one worker (pytestmark below).
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from ansible_collections.verl.deploy.plugins.module_utils._npu_smi import parse_info
from helpers.launch_helpers import launch_ok, render

sys.path.insert(0, str(Path(__file__).resolve().parent))
import simcluster  # noqa: E402  pylint: disable=wrong-import-position

# The simulated cluster's own Ray sizing (its inventory's verl_ray_start_args), as every deploy to it passes them.
SIM_RAY_START_ARGS = yaml.safe_load((simcluster.REPO / "inventories" / "sim" / "group_vars" / "ray_cluster.yml").read_text())["verl_ray_start_args"]

# Before three_nodes, on its worker (SCENARIO_GROUPS in tests/integration/test_molecule.py; tests/conftest.py orders them): docs/development.md.
pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("verl-sim-long")]

PREFIX = "verl-sim-smoke-%s" % os.environ.get("PYTEST_XDIST_WORKER", "main")
NODE1 = simcluster.node_name(PREFIX, 1)
NODE2 = simcluster.node_name(PREFIX, 2)
FIXTURE1 = "007_info_910B3_8cards_v24.1.rc2_procs_emptyname_mixed.txt"  # the default: Atlas A2
FIXTURE2 = "011_info_910B2_8cards_v24.1.0_procs_mindie.txt"  # its paste starts with a shell-prompt line
ERROR_FIXTURE = "019_error_dcmi_module_initialize_failed_-8005_container.txt"
FIXTURES = simcluster.FIXTURES
RAY_PORT = 6379
CANN = ("source /usr/local/Ascend/ascend-toolkit/set_env.sh && source /usr/local/Ascend/nnal/atb/set_env.sh "
        "&& export ASCEND_RT_VISIBLE_DEVICES=0,1,2,3,4,5,6,7")
TIMINGS = {}
WORK = "/tmp/sim-smoke"


def sh(argv, timeout=120, check=True, text=True):
    proc = subprocess.run([str(item) for item in argv], capture_output=True, text=text, timeout=timeout, check=False)
    if check and proc.returncode != 0:
        raise AssertionError("`%s` exited %d:\n%s\n%s" % (" ".join(map(str, argv)), proc.returncode, proc.stdout, proc.stderr))
    return proc


def on_node(node, *argv, **kwargs):
    return sh(["docker", "exec", node] + list(argv), **kwargs)


def in_verl(node, *argv, **kwargs):
    """A command in the verl container that the node's own engine runs."""
    return sh(["docker", "exec", node, "docker", "exec", "verl"] + list(argv), **kwargs)


def wait_for(what, probe, timeout, interval=0.5):
    """Call probe() until it returns something truthy; fail naming `what` and the last value after `timeout` s."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError("%s: not within %s s. Last: %r" % (what, timeout, last))


def _matching(pattern, text):
    """`text` when the regular expression (multi-line) is found in it, else ""."""
    return text if re.search(pattern, text, re.MULTILINE) else ""


def _timed(name, started):
    TIMINGS[name] = round(time.monotonic() - started, 1)


@pytest.fixture(scope="module")
def cluster():
    # Its nodes to itself: another suite in this checkout on the same xdist worker would use the same prefix.
    lock_path = simcluster.REPO / ".cache" / "sim" / ("%s.lock" % PREFIX)
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield from _cluster()


def _cluster():
    if os.environ.get("VERL_DEPLOY_SKIP_SIM") == "1":
        pytest.skip("VERL_DEPLOY_SKIP_SIM=1: the simulated cluster is skipped on purpose")
    started = time.monotonic()
    try:
        simcluster.build()
        _timed("build", started)
        begin = time.monotonic()
        data = simcluster.up(nodes=2, fixtures=["node2=%s" % FIXTURE2], prefix=PREFIX, registry_port=0)
        _timed("up", begin)
    except simcluster.SimError as exc:
        with contextlib.suppress(simcluster.SimError):
            simcluster.down(PREFIX, verbose=False)
        pytest.fail("the simulated cluster could not be brought up: %s" % exc, pytrace=False)
    try:
        yield data
    finally:
        begin = time.monotonic()
        simcluster.down(PREFIX)
        _timed("down", begin)
        _timed("module", started)
        out = simcluster.REPO / "tests" / "output" / "sim"
        out.mkdir(parents=True, exist_ok=True)
        (out / "smoke-timings.json").write_text(json.dumps(TIMINGS, indent=2, sort_keys=True) + "\n")
        print("\nsimulated cluster timings (s): %s" % json.dumps(TIMINGS, sort_keys=True))


@pytest.fixture(scope="module")
def verl_containers(cluster):
    """Each node pulls the verl image from the registry with its own engine and runs it with host networking."""
    image = cluster["verl_image"]
    begin = time.monotonic()
    pulls = [subprocess.Popen(["docker", "exec", node, "docker", "pull", "-q", image], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for node in (NODE1, NODE2)]
    for node, pull in zip((NODE1, NODE2), pulls):
        output = pull.communicate(timeout=300)[0]
        assert pull.returncode == 0, "docker pull %s in %s failed:\n%s" % (image, node, output)
    _timed("pull (2 nodes in parallel)", begin)
    devices = [arg for number in range(8) for arg in ("--device", "/dev/davinci%d" % number)] + [
        "--device", "/dev/davinci_manager", "--device", "/dev/devmm_svm", "--device", "/dev/hisi_hdc"]
    for node in (NODE1, NODE2):
        on_node(node, "docker", "run", "-d", "--name", "verl", "--network", "host", "--shm-size", "1g", "--init", *devices, image)
        in_verl(node, "mkdir", "-p", WORK)
    return image


@pytest.fixture(scope="module")
def ray_cluster(verl_containers):
    """Ray head in node1's verl container, node2's joins it by the node's host name: 16 NPU in all."""
    begin = time.monotonic()
    # As start_verl.sh does: CANN's environment first (the workers inherit it from the raylet), logical device ids.
    common = "%s --resources='{\"NPU\": 8}' --disable-usage-stats" % " ".join(SIM_RAY_START_ARGS)
    in_verl(NODE1, "bash", "-c", "%s && ray start --head --port=%d %s" % (CANN, RAY_PORT, common), timeout=120)
    in_verl(NODE2, "bash", "-c", "%s && ray start --address=%s:%d %s" % (CANN, NODE1, RAY_PORT, common), timeout=120)

    def npus():
        proc = in_verl(NODE1, "ray", "status", check=False, timeout=60)
        return proc.stdout if "/16.0 NPU" in proc.stdout else ""

    status = wait_for("ray status showing 16.0 NPU", npus, timeout=90, interval=1)
    _timed("ray cluster formed", begin)
    return status


# --------------------------------------------------------------------------- the nodes

def test_each_node_runs_its_own_docker_engine(cluster):
    subnets = set()
    for node in (NODE1, NODE2):
        proc = on_node(node, "docker", "info", "--format", "{{.Driver}} {{.ServerVersion}}")
        assert proc.stdout.startswith("overlay2 "), proc.stdout
        bridge = on_node(node, "docker", "network", "inspect", "bridge", "--format", "{{range .IPAM.Config}}{{.Subnet}}{{end}}")
        subnets.add(bridge.stdout.strip())
        assert on_node(node, "hostname").stdout.strip() == node
    assert subnets == {"10.96.1.0/24", "10.96.2.0/24"}


def test_ansible_reaches_a_node_pipelined_and_a_paused_node_is_unreachable(cluster, tmp_path):
    """The cluster's inventory reaches a node through verl_sim.cluster.node: a module is one `docker exec` (pipelined, as
    real nodes' SSH is in ansible.cfg), and a paused node is UNREACHABLE, as a hung host is over SSH."""
    (tmp_path / "hosts.yml").write_text(simcluster.inventory(PREFIX))
    argv = [Path(sys.executable).with_name("ansible"), NODE2, "-i", tmp_path / "hosts.yml", "-m", "ansible.builtin.ping", "-vvv"]
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_CALLBACK_RESULT_FORMAT="json")
    pong = subprocess.run([str(item) for item in argv], cwd=simcluster.REPO, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert pong.returncode == 0 and '"ping": "pong"' in pong.stdout, pong.stdout[-3000:] + pong.stderr[-3000:]
    assert len(re.findall(r"<%s> EXEC \[" % NODE2, pong.stdout)) == 1, pong.stdout[-3000:]
    with simcluster.paused(NODE2):
        hung = subprocess.run([str(item) for item in argv], cwd=simcluster.REPO, env=env, capture_output=True, text=True, timeout=120,
                              check=False)
    assert hung.returncode == 4 and "UNREACHABLE!" in hung.stdout, hung.stdout[-3000:] + hung.stderr[-3000:]
    assert "%s does not answer: Error response from daemon: Container" % NODE2 in hung.stdout, hung.stdout[-3000:]


def test_up_again_with_the_same_arguments_changes_nothing(cluster):
    before = {node["name"]: sh(["docker", "inspect", "--format", "{{.Id}} {{.State.StartedAt}}", node["name"]]).stdout
              for node in cluster["nodes"]}
    again = simcluster.up(nodes=2, fixtures=["node2=%s" % FIXTURE2], prefix=PREFIX, registry_port=0, verbose=False)
    after = {node["name"]: sh(["docker", "inspect", "--format", "{{.Id}} {{.State.StartedAt}}", node["name"]]).stdout
             for node in again["nodes"]}
    assert before == after
    assert [node["name"] for node in again["nodes"]] == [NODE1, NODE2]
    assert again["verl_image"] == cluster["verl_image"]
    assert re.fullmatch(r"registry:5000/verl/verl-sim:[0-9a-f]{12}-v0\.7\.0", again["verl_image"])


def _capture(name):
    """The capture as npu-smi prints it: without a pasted prompt line."""
    first, rest = (FIXTURES / name).read_bytes().split(b"\n", 1)
    return rest if first.startswith(b"[root@") else first + b"\n" + rest


def _chips_of(text):
    """The header and card rows of an npu-smi table (what the live table keeps of its capture)."""
    lines = text.splitlines()
    return lines[:6] + [line for line in lines if re.match(r"^\| \d+ +910B\d", line)]


def test_npu_smi_shows_the_captures_chips_and_the_nodes_own_processes(cluster):
    for node, fixture in ((NODE1, FIXTURE1), (NODE2, FIXTURE2)):
        shown = on_node(node, "npu-smi", "info").stdout
        assert _chips_of(shown) == _chips_of(_capture(fixture).decode()) and len(_chips_of(shown)) == 14, shown
        # The captures' processes (MindIE workers on 011) ran on the machines they were taken on, not on this node:
        # every chip shows as idle.
        assert "mindie" not in shown and shown.count("No running processes found in NPU") == 8, shown
        assert parse_info(shown)["processes"] == []
        assert max(npu["chips"][0]["hbm_used_mb"] for npu in parse_info(shown)["npus"]) <= 3412, shown
    # The same command through the other path the collection may use.
    assert on_node(NODE1, "/usr/local/sbin/npu-smi", "info", text=False).stdout == on_node(NODE1, "npu-smi", "info", text=False).stdout


def test_a_pinned_capture_is_replayed_byte_for_byte(cluster):
    try:
        on_node(NODE1, "sh", "-c", "echo %s > /etc/sim-npu-smi/fixture" % FIXTURE2)
        assert on_node(NODE1, "npu-smi", "info", text=False).stdout == _capture(FIXTURE2)
    finally:
        on_node(NODE1, "rm", "-f", "/etc/sim-npu-smi/fixture")


def test_npu_smi_board_info(cluster):
    board = on_node(NODE1, "npu-smi", "info", "-t", "board", "-i", "3").stdout
    assert re.search(r"^\s*NPU ID\s+: 3$", board, re.MULTILINE), board
    assert "Product Name                   : IT21HMDC_Bin5" in board
    missing = on_node(NODE1, "npu-smi", "info", "-t", "board", "-i", "9", check=False)
    assert missing.returncode == 1 and "no NPU with id 9" in missing.stderr


def test_npu_smi_capture_can_be_switched_at_run_time(cluster):
    try:
        on_node(NODE1, "sh", "-c", "echo %s > /etc/sim-npu-smi/fixture" % ERROR_FIXTURE)
        failed = on_node(NODE1, "npu-smi", "info", check=False)
        assert failed.returncode != 0
        assert "dcmi module initialize failed. ret is -8005" in failed.stdout + failed.stderr
        assert "ret is -8005" in on_node(NODE1, "npu-smi", "info", "-t", "board", "-i", "0", check=False).stdout
        assert on_node(NODE2, "npu-smi", "info", check=False).returncode == 0  # the other node is untouched
    finally:
        on_node(NODE1, "rm", "-f", "/etc/sim-npu-smi/fixture")
    assert _chips_of(on_node(NODE1, "npu-smi", "info").stdout) == _chips_of(_capture(FIXTURE1).decode())
    log = on_node(NODE1, "cat", "/var/log/sim-npu-smi.log").stdout
    assert "fixture=%s rc=1" % ERROR_FIXTURE in log and "fixture=%s (live) rc=0" % FIXTURE1 in log


def test_ascend_device_and_driver_paths_exist(cluster):
    checks = ["test -c /dev/davinci%d" % index for index in range(8)] + [
        "test ! -e /dev/davinci8",
        "test -c /dev/davinci_manager", "test -c /dev/devmm_svm", "test -c /dev/hisi_hdc",
        "test -d /usr/local/Ascend/driver/lib64", "test -x /usr/local/Ascend/driver/tools/hccn_tool",
        "test -d /usr/local/dcmi", "test -s /etc/ascend_install.info",
        # The firmware's version.info as its installer writes it: the board capture's firmware, the driver's HDK release.
        "grep -qx Version=7.8.0.6.201 /usr/local/Ascend/firmware/version.info",
        "test -x /usr/local/bin/npu-smi", "test -x /usr/local/sbin/npu-smi",
        # A training server's memory, not this machine's (simcluster.NODE_MEMORY_KB, bind-mounted over /proc/meminfo).
        "grep -Eq '^MemAvailable: +%d kB$' /proc/meminfo" % simcluster.NODE_MEMORY_KB,
    ]
    # The driver's version is the one its capture's npu-smi prints (007: 24.1.rc2, 011: 24.1.0).
    for node, version in ((NODE1, "24.1.rc2"), (NODE2, "24.1.0")):
        proc = on_node(node, "sh", "-c", " && ".join(checks + ["grep -qx Version=%s /usr/local/Ascend/driver/version.info" % version]),
                       check=False)
        assert proc.returncode == 0, "%s: one of %s failed" % (node, checks)


# --------------------------------------------------------------------------- the verl image, Ray, the trainer

def test_nodes_pull_and_run_the_verl_image(verl_containers):
    for node in (NODE1, NODE2):
        assert on_node(node, "docker", "image", "inspect", verl_containers).returncode == 0
        versions = in_verl(node, "python3", "-c", "import ray, hydra; print(ray.__version__, hydra.__version__)").stdout.split()
        assert versions == [simcluster.RAY_VERSION, "1.3.2"]
        env = in_verl(node, "bash", "-c", "source /usr/local/Ascend/ascend-toolkit/set_env.sh && "
                                          "source /usr/local/Ascend/nnal/atb/set_env.sh && echo $ASCEND_TOOLKIT_HOME $VERL_SIM_ATB && "
                                          "python3 -c 'import torch_npu; print(torch_npu.__version__)'")
        assert env.stdout.split() == ["/usr/local/Ascend/ascend-toolkit/latest", "sourced", "2.7.1+verl-sim"]
        # Without CANN's environment the stand-in torch_npu does not load, as the real one does not.
        assert in_verl(node, "python3", "-c", "import torch_npu", check=False).returncode != 0
        # host networking: the container sees the node's own host name and address
        assert in_verl(node, "hostname").stdout.strip() == node


def test_a_container_with_the_ascend_mounts_sees_the_npus(verl_containers):
    """What an Ascend container gets (devices, driver folder, npu-smi) works in the node's own engine."""
    mounts = ["--device", "/dev/davinci0", "--device", "/dev/davinci_manager", "--device", "/dev/devmm_svm",
              "--device", "/dev/hisi_hdc", "-v", "/usr/local/Ascend/driver:/usr/local/Ascend/driver:ro",
              "-v", "/usr/local/sbin/npu-smi:/usr/local/sbin/npu-smi:ro", "-v", "/usr/local/dcmi:/usr/local/dcmi:ro",
              "-v", "/etc/ascend_install.info:/etc/ascend_install.info:ro"]
    command = ["docker", "run", "--rm"] + mounts + [verl_containers, "bash", "-c", "test -c /dev/davinci0 && npu-smi info"]
    assert _chips_of(on_node(NODE1, *command).stdout) == _chips_of(_capture(FIXTURE1).decode())
    try:
        on_node(NODE1, "sh", "-c", "echo %s > /etc/sim-npu-smi/fixture" % ERROR_FIXTURE)
        failed = on_node(NODE1, *command, check=False)
        assert failed.returncode != 0 and "ret is -8005" in failed.stdout
    finally:
        on_node(NODE1, "rm", "-f", "/etc/sim-npu-smi/fixture")


def test_ray_spans_both_nodes(ray_cluster):
    assert "0.0/16.0 NPU" in ray_cluster
    active = ray_cluster.split("Active:", 1)[1].split("Pending:", 1)[0]
    assert len(re.findall(r"^\s*1 node_[0-9a-f]+", active, re.MULTILINE)) == 2, ray_cluster


def _copy_in(node, local, name):
    """Host file -> node -> the node's verl container (docker cp through the node, as the collection would)."""
    on_node(node, "mkdir", "-p", WORK)
    sh(["docker", "cp", str(local), "%s:%s/%s" % (node, WORK, name)])
    on_node(node, "docker", "cp", "%s/%s" % (WORK, name), "verl:%s/%s" % (WORK, name))


def _script(tmp_path, name, **settings):
    path = tmp_path / name
    path.write_text(render(launch_ok(**settings), "run_training.sh"))
    _copy_in(NODE1, path, name)
    return "%s/%s" % (WORK, name)


def _npu_processes(node):
    """{npu id: [pid, ...]} of the node's npu-smi process table, read by the collection's own parser."""
    facts = parse_info(on_node(node, "npu-smi", "info").stdout)
    table = {}
    for process in facts["processes"]:
        table.setdefault(process["npu_id"], []).append(process["pid"])
    return table


def _exit_code(rc_file):
    """The trainer's exit code, once its wrapper wrote it ('' before)."""
    return in_verl(NODE1, "cat", rc_file, check=False).stdout.strip()


def _start_trainer(script, name):
    out, rc = "%s/%s.out" % (WORK, name), "%s/%s.rc" % (WORK, name)
    in_verl(NODE1, "bash", "-c", "nohup bash -c 'bash %s > %s 2>&1; echo $? > %s' >/dev/null 2>&1 &" % (script, out, rc))
    return out, rc


def test_stand_in_trainer_holds_every_npu_and_stops_cleanly_on_sigterm(ray_cluster, tmp_path):
    ckpts = "%s/ckpt-ok" % WORK
    script = _script(tmp_path, "run_training_ok.sh", nnodes=2, verl_train_steps=1000, verl_ckpts_dir=ckpts,
                     verl_log_dir="%s/logs" % WORK, verl_experiment_name="sim-smoke", verl_loggers=["tensorboard"])
    begin = time.monotonic()
    out, rc = _start_trainer(script, "ok")
    marker = "%s/stand_in_started.json" % ckpts
    pid = None
    try:
        text = wait_for("the stand-in's marker %s" % marker,
                        lambda: in_verl(NODE1, "cat", marker, check=False).stdout, timeout=180)
        started = json.loads(text)
        pid = started["pid"]
        TIMINGS["trainer started"] = round(time.monotonic() - begin, 1)
        assert started["nnodes"] == 2 and started["n_gpus_per_node"] == 8
        assert started["cluster_npus"] == 16.0 and started["ray_nodes"] == 2
        assert started["logger"] == ["console", "tensorboard"] and started["experiment_name"] == "sim-smoke"
        # TensorBoard's folder from the job's runtime environment, as verl's TaskRunner gets it.
        assert started["tensorboard"].startswith("%s/logs/tensorboard/verl_hlm/sim-smoke/events.out.tfevents." % WORK)
        assert started["device"] == "npu" and started["cwd"] == "/verl"
        assert started["argv"][:2] == ["--config-path=config", "--config-name=dapo_megatron_trainer"]
        # One worker per NPU on each node, each with the one id Ray handed it, bound to its own device.
        placed = sorted((worker["hostname"], worker["device"], worker["visible_devices"]) for worker in started["workers"])
        assert placed == sorted((node, device, str(device)) for node in (NODE1, NODE2) for device in range(8)), placed
        # Every node's npu-smi lists the training's workers, by the pids the host sees.
        for node in (NODE1, NODE2):
            table = _npu_processes(node)
            assert sorted(table) == list(range(8)) and all(len(pids) == 1 for pids in table.values()), (node, table)
        log = wait_for("step:3 in the trainer output", lambda: _matching(r"^step:3 - ", in_verl(NODE1, "cat", out, check=False).stdout),
                       timeout=60)
        assert re.search(r"^step:1 - .*training/global_step:1", log, re.MULTILINE), log
        # While it runs, the trainer holds every NPU (verl's resource pool), so a second start is refused.
        reserved = in_verl(NODE1, "ray", "status", check=False).stdout
        assert "16.0 reserved in placement groups" in reserved, reserved
        assert in_verl(NODE1, "test", "-e", rc, check=False).returncode != 0, "the trainer ended before SIGTERM"
        TIMINGS["memory"] = sh(["docker", "stats", "--no-stream", "--format", "{{.Name}} {{.MemUsage}}", NODE1, NODE2,
                                "%s-registry" % PREFIX]).stdout.splitlines()
        for node in (NODE1, NODE2):
            TIMINGS["memory inside %s" % node] = on_node(node, "docker", "stats", "--no-stream", "--format", "{{.Name}} {{.MemUsage}}",
                                                         check=False).stdout.splitlines()
    finally:
        if pid is not None:
            in_verl(NODE1, "kill", "-TERM", str(pid), check=False)

    def exit_status():
        return in_verl(NODE1, "cat", rc, check=False).stdout.strip()

    code = wait_for("the trainer's exit status after SIGTERM", exit_status, timeout=60)
    log = in_verl(NODE1, "cat", out).stdout
    assert code == "15", log  # ray.init()'s SIGTERM handler in the driver: sys.exit(signum)
    assert re.search(r"got SIGTERM after ([3-9]|[1-9]\d+) step\(s\)", log), log
    stopped = json.loads(in_verl(NODE1, "cat", "%s/stand_in_stopped.json" % ckpts).stdout)
    assert stopped["signal"] == "SIGTERM" and stopped["steps"] >= 3 and stopped["finished"] is False
    released = wait_for("the NPUs released", lambda: _matching(r"^ 0\.0/16\.0 NPU$", in_verl(NODE1, "ray", "status", check=False).stdout),
                        timeout=30)
    assert "reserved" not in released
    wait_for("the workers gone from npu-smi", lambda: not _npu_processes(NODE1) and not _npu_processes(NODE2), timeout=30)
    # The log, named after the model folder, beside TensorBoard's folder.
    assert [name for name in in_verl(NODE1, "ls", "%s/logs" % WORK).stdout.split() if name.startswith("verl_")][0].startswith(
        "verl_qwen3_8b_sim-smoke_")


def test_stand_in_trainer_exits_0_after_its_last_step_as_verl_does(ray_cluster, tmp_path):
    """verl's fit loop (ray_trainer.py): its last step is saved whatever save_freq says (3 steps, save_freq 2: global_step_2
    and global_step_3), and a training started again once it reached its total resumes from that save and trains, saves and
    logs one step more (the loop starts at the resumed step + 1), then ends as it did."""
    ckpts = "%s/ckpt-done" % WORK
    script = _script(tmp_path, "run_training_done.sh", nnodes=2, verl_train_steps=3, verl_save_freq=2, verl_ckpts_dir=ckpts,
                     verl_log_dir="%s/logs" % WORK)
    for run, steps in (("done", [1, 2, 3]), ("done-again", [4])):
        out, rc = _start_trainer(script, run)
        code = wait_for("the trainer's own exit after its last step (%s)" % run, lambda rc=rc: _exit_code(rc), timeout=180)
        log = in_verl(NODE1, "cat", out).stdout
        assert code == "0", log
        assert [int(step) for step in re.findall(r"^step:(\d+) - ", log, re.MULTILINE)] == steps, log
        assert "Final validation metrics" in log, log
        stopped = json.loads(in_verl(NODE1, "cat", "%s/stand_in_stopped.json" % ckpts).stdout)
        assert stopped["finished"] is True and stopped["signal"] is None and stopped["steps"] == steps[-1]
        assert in_verl(NODE1, "cat", "%s/latest_checkpointed_iteration.txt" % ckpts).stdout.strip() == str(steps[-1])
    assert "Load from checkpoint folder: %s/global_step_3" % ckpts in log, log
    saved = in_verl(NODE1, "ls", ckpts).stdout.split()
    assert [name for name in sorted(saved) if name.startswith("global_step_")] == ["global_step_2", "global_step_3", "global_step_4"]


def test_stand_in_trainer_fails_on_a_bad_override(ray_cluster, tmp_path):
    ckpts = "%s/ckpt-bad" % WORK
    script = _script(tmp_path, "run_training_bad.sh", nnodes=2, verl_ckpts_dir=ckpts, verl_log_dir="%s/logs" % WORK,
                     verl_extra_overrides=["actor_rollout_ref.actor.megatron.param_ofload=True"])
    proc = in_verl(NODE1, "bash", script, check=False, timeout=120)
    assert proc.returncode != 0
    assert "Could not override 'actor_rollout_ref.actor.megatron.param_ofload'" in proc.stdout + proc.stderr, proc.stdout
    assert in_verl(NODE1, "test", "-e", "%s/stand_in_started.json" % ckpts, check=False).returncode != 0


def test_stand_in_trainer_fails_when_ray_has_too_few_npus(ray_cluster, tmp_path):
    script = _script(tmp_path, "run_training_3nodes.sh", nnodes=3, verl_train_batch_size=48, verl_ckpts_dir="%s/ckpt-3" % WORK,
                     verl_log_dir="%s/logs" % WORK)
    proc = in_verl(NODE1, "bash", script, check=False, timeout=120)
    assert proc.returncode != 0
    assert re.search(r"Total available GPUs [0-9.]+ is less than total desired GPUs 24", proc.stdout + proc.stderr), proc.stdout


def test_a_container_process_that_opens_an_npu_shows_on_the_nodes_npu_smi(verl_containers):
    """The host's npu-smi lists a process of any container by its host pid: the pre-check's view of a foreign holder."""
    hold = ("%s && unset ASCEND_RT_VISIBLE_DEVICES && exec python3 -c 'import time, torch_npu; torch_npu.npu.set_device(0); "
            "torch_npu.npu._sim_hold_memory(1000); time.sleep(300)'" % CANN.split(" && export", maxsplit=1)[0])
    container = on_node(NODE1, "docker", "run", "-d", "--device", "/dev/davinci3", verl_containers, "bash", "-c", hold).stdout.strip()
    try:
        table = wait_for("npu-smi listing the holder of NPU 3", lambda: _npu_processes(NODE1).get(3), timeout=60)
        host_pid = int(on_node(NODE1, "docker", "inspect", "-f", "{{.State.Pid}}", container).stdout)
        assert table == [host_pid]
        facts = parse_info(on_node(NODE1, "npu-smi", "info").stdout)
        assert [p["memory_mb"] for p in facts["processes"] if p["npu_id"] == 3] == [141 + 1000]
        assert {npu["npu_id"]: npu["chips"][0]["hbm_used_mb"] for npu in facts["npus"]}[3] >= 1141
    finally:
        on_node(NODE1, "docker", "rm", "-f", container, check=False)


def test_stand_in_trainer_fails_when_a_nodes_ray_goes(ray_cluster, tmp_path):
    """verl's worker group dies with a lost node: the training exits non-zero with Ray's error (last: node2's Ray is stopped)."""
    ckpts = "%s/ckpt-lost" % WORK
    script = _script(tmp_path, "run_training_lost.sh", nnodes=2, verl_train_steps=1000, verl_ckpts_dir=ckpts,
                     verl_log_dir="%s/logs" % WORK)
    out, rc = _start_trainer(script, "lost")
    wait_for("the stand-in's marker", lambda: in_verl(NODE1, "cat", "%s/stand_in_started.json" % ckpts, check=False).stdout, timeout=180)
    in_verl(NODE2, "ray", "stop", "--force", check=False, timeout=120)
    code = wait_for("the trainer's exit after node2's Ray stopped", lambda: _exit_code(rc), timeout=120)
    log = in_verl(NODE1, "cat", out).stdout
    assert code not in ("", "0"), log
    assert re.search(r"Ray(Actor|Task)Error|ActorDiedError|ActorUnavailableError", log), log[-3000:]
