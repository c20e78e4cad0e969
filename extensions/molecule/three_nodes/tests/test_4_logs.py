"""logs.yml on the stopped cluster (after test_3: training and Ray stopped, containers kept): one archive with
one folder per node, each file bounded, the key nowhere; a worker's container stopped and another worker
that does not answer (its node paused) do not keep it from collecting the rest.

Runs last (pytest takes the files in name order); it plants a key file, a leaked key, a CANN plog and a
driver log the way a real node would have them, and changes nothing else.
"""
import json
import re
import tarfile
from pathlib import Path

from sim_scenario import hosts, in_verl, nodes, on_node, paused, playbook, tail

HEAD = hosts("ray_head")[0]
WORKERS = hosts("ray_workers")
KEY = "sk-three-nodes-logs-0123456789abcdef"
MAX_MB = 1


def archive_of(proc):
    """The archive logs.yml named, and its members {path under the run folder: bytes}."""
    match = re.search(r"node\(s\): (\S+\.tar\.gz)", proc.output)
    assert match, tail(proc)
    path = Path(match.group(1))
    run = path.name[:-len(".tar.gz")]
    with tarfile.open(path) as tar:
        return path, {member.name[len(run) + 1:]: tar.extractfile(member).read() for member in tar if member.isfile()}


def test_logs_collects_every_node_bounded_and_without_the_key(tmp_path):
    # The key where a cloud-mode deploy keeps it, and leaked into a Ray log; a CANN plog larger than the bound.
    in_verl(HEAD, "mkdir -p -m 0700 /root/.swanlab && printf %s " + KEY + " > /root/.swanlab/verl_deploy_api_key")
    # Ray's logs in its temporary folder, which this scenario moves (settings.yml, --temp-dir).
    in_verl(HEAD, "echo 'runtime env SWANLAB_API_KEY=%s' >> /tmp/ray-verl/session_latest/logs/leaked.log" % KEY)
    in_verl(HEAD, "mkdir -p /root/ascend/log/debug/plog && head -c 3000000 /dev/zero | tr '\\0' 'p' > /root/ascend/log/debug/plog/plog-1.log"
            " && echo 'EJ0001 the last plog line' >> /root/ascend/log/debug/plog/plog-1.log")
    on_node(HEAD, "bash", "-c", "mkdir -p /var/log/npu/slog && echo 'driver ok' > /var/log/npu/slog/host.log")
    on_node(WORKERS[0], "docker", "stop", "verl")  # docker cp reads a stopped container
    proc = playbook("logs.yml", "-e", "verl_logs_dir=%s" % tmp_path, "-e", "verl_logs_max_mb=%d" % MAX_MB, "-vvv")
    assert proc.returncode == 0, tail(proc)
    assert KEY not in proc.stdout + proc.stderr
    assert "logs of 3 of 3 node(s)" in proc.output, tail(proc)
    path, packed = archive_of(proc)
    assert path.parent == tmp_path and len(list(tmp_path.glob("*.tar.gz"))) == 1
    assert {name.split("/")[0] for name in packed} == set(nodes()) | {"collection.json", "first-failure.txt"}
    for node in nodes():
        mine = {name.split("/", 1)[1] for name in packed if name.startswith(node + "/")}
        assert {"MANIFEST.json", "npu-smi-info.txt", "container-inspect.json", "scripts/start_verl.sh", "scripts/run_training.sh",
                "scripts/verl_control.env", "scripts/verl_control.sh", "scripts/launch.json"} <= mine, (node, sorted(mine))
        assert any(name.startswith("ray/") for name in mine), (node, sorted(mine))
        assert b"NPU" in packed[node + "/npu-smi-info.txt"]
    head = {name.split("/", 1)[1]: data for name, data in packed.items() if name.startswith(HEAD + "/")}
    assert any(re.fullmatch(r"training/verl_qwen3_8b_.*\.log", name) for name in head), sorted(head)
    assert {"training/start_verl.out", "deploy-state/launch.json", "deploy-state/stopped_at", "host-npu-log/slog/host.log"} <= set(head)
    # Every start's own output: the crashed ones' too (the faults started the training several times).
    assert {"training/start_verl.out.1", "training/start_verl.out.2"} <= set(head), sorted(head)
    # Some trainings of the fault tests died before their first step (their worker group lost a node), as verl's do.
    assert any(b"step:" in data for name, data in head.items() if name.startswith("training/verl_qwen3_8b_"))
    # The effective settings: the launch record the training started from, never the key.
    assert json.loads(head["deploy-state/launch.json"])["settings"]["container_name"] == "verl"
    plog = head["cann-plog/debug/plog/plog-1.log"]
    assert len(plog) <= MAX_MB * 1024 * 1024 + 300 and plog.endswith(b"EJ0001 the last plog line\n")
    assert plog.startswith(b"[verl.deploy log_bundle: the first ")
    assert head["ray/leaked.log"] == b"runtime env SWANLAB_API_KEY=<redacted>\n"
    assert not any("api_key" in name for name in packed)
    assert all(KEY.encode() not in data for data in packed.values())
    assert all(len(data) <= MAX_MB * 1024 * 1024 + 300 for data in packed.values())
    collection = json.loads(packed["collection.json"])
    assert collection["nodes"][WORKERS[0]]["container"] == "exited"
    assert {node["state"] for node in collection["nodes"].values()} == {"collected"}


def test_logs_reports_a_node_that_does_not_answer_and_collects_the_others(tmp_path):
    with paused(WORKERS[1]):
        proc = playbook("logs.yml", "-e", "verl_logs_dir=%s" % tmp_path)
    assert proc.returncode == 0, tail(proc)
    assert "logs of 2 of 3 node(s)" in proc.output and "%s: NOT COLLECTED: the node did not answer" % WORKERS[1] in proc.output, tail(proc)
    _path, packed = archive_of(proc)
    assert {name.split("/")[0] for name in packed} == {HEAD, WORKERS[0], "collection.json", "first-failure.txt"}
    assert json.loads(packed["collection.json"])["nodes"][WORKERS[1]]["state"] == "unreachable"
