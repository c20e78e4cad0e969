"""The Ray stage's check that each node's container reaches the head's Ray port and verl's rank-0 node
(roles/ray/files/reach.py), executed as the deploy runs it (python3 -c, the image's, under timeout), on 127.0.0.1: rank 0's
listener, a node's connects, a port nobody listens on; and the head's judgement of their answers
(plugins/filter/reach_problems.py)."""
from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ansible_collections.verl.deploy.plugins.filter.reach_problems import reach_problems
from ansible_collections.verl.deploy.plugins.module_utils._control_step import read_answer, step_result
from ansible_collections.verl.deploy.plugins.module_utils._reach import listened

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "roles/ray/files/reach.py"


@pytest.fixture()
def env(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(sys.executable)
    return {"PATH": "%s:/usr/bin:/bin" % bin_dir}


def reach(env, *args, timeout=60):
    return subprocess.run(["timeout", "-k", "5", "120", "python3", "-c", SCRIPT.read_text(), *args], env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)


def stepped(host, proc):
    """A node's check as reach.yml keeps it from node_step's result."""
    return dict(step_result(None, {"rc": proc.returncode, "stdout": proc.stdout}), host=host, rc=proc.returncode, stderr=proc.stderr)


def closed_port():
    """A port of 127.0.0.1 nobody listens on: bound, never listened, then released."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_the_listener_returns_at_once_with_its_port_and_serves_the_workers_in_the_background(env):
    started = time.monotonic()
    proc = reach(env, "listen", "30", "2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert time.monotonic() - started < 10, "docker exec must not wait for the listener"
    listener = listened(read_answer(proc.stdout)["answer"])
    low, high = (int(part) for part in listener["range"].split("-"))
    assert low <= listener["port"] <= high, "a port as the kernel picks a free one"
    ray = socket.socket()
    ray.bind(("127.0.0.1", 0))
    ray.listen(1)
    ray_port = ray.getsockname()[1]
    try:
        worker = reach(env, "connect", "5", "ray=127.0.0.1:%d" % ray_port, "rendezvous=127.0.0.1:%d" % listener["port"])
    finally:
        ray.close()
    assert worker.returncode == 0, worker.stdout + worker.stderr
    assert read_answer(worker.stdout) == {"said": [], "read": True, "answer": {
        "ray": "127.0.0.1:%d ok" % ray_port, "rendezvous": "127.0.0.1:%d ok" % listener["port"]}}
    assert reach_problems([stepped("worker-1", worker)], "head", read_answer(proc.stdout)["answer"]) == []
    # The second connection was the last the listener waits for: it is gone.
    reach(env, "connect", "5", "rendezvous=127.0.0.1:%d" % listener["port"])
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        again = reach(env, "connect", "5", "rendezvous=127.0.0.1:%d" % listener["port"])
        if "refused" in again.stdout:
            break
        time.sleep(0.2)
    assert "failed: Connection refused" in again.stdout, again.stdout


def test_a_port_that_does_not_answer_names_the_worker_the_port_and_the_fix(env):
    port = closed_port()
    worker = reach(env, "connect", "5", "rendezvous=127.0.0.1:%d" % port)
    assert worker.returncode == 0 and read_answer(worker.stdout)["answer"] == {
        "rendezvous": "127.0.0.1:%d failed: Connection refused" % port}, worker.stdout
    problems = reach_problems([stepped("worker-1", worker)], "worker-2", {"port": str(port), "range": "32768-60999"})
    assert problems == [
        "worker-1: from its container, 127.0.0.1:%d did not answer (rendezvous; a free port worker-2 listened on as verl's "
        "rendezvous (torch.distributed's TCPStore, MASTER_ADDR:MASTER_PORT) picks one from the range 32768-60999; worker-2 "
        "is verl's rank 0, the first node by address as text): failed: Connection refused. Fix: allow TCP from worker-1 to "
        "127.0.0.1 on the ephemeral ports 32768-60999 (firewall, security group, or a container network other than the "
        "host's), then run deploy.yml again; without it the training would wait 30 minutes at its rendezvous." % port]


def test_a_wrong_call_is_refused(env):
    proc = reach(env, "connect", "5", "rendezvous=41234")
    assert proc.returncode == 2 and read_answer(proc.stdout)["said"][0].startswith("usage: reach listen"), proc.stdout


def test_a_worker_that_does_not_see_the_heads_marker_is_not_on_its_storage_and_the_fix_clears_it(env, tmp_path):
    """The storage proof: the head writes its file in verl_ckpts_dir; a worker whose folder at that path is another storage
    (here another folder, as a second NFS server's export of the same path or a bind mount would be) does not see it and is
    named with the fix; the same storage there (the fix) is no problem. A head that cannot write is named too."""
    shared, other = tmp_path / "shared" / "ckpts", tmp_path / "other" / "ckpts"
    other.mkdir(parents=True)
    marker = shared / ".verl-deploy-storage-0123456789ab"
    head = reach(env, "mark", str(marker))
    assert head.returncode == 0 and read_answer(head.stdout)["answer"] == {"marker": str(marker)} and marker.is_file()
    proof = {"path": str(marker), "written": True, "said": ""}
    apart = reach(env, "connect", "5", "marker=%s" % (other / marker.name))
    assert read_answer(apart.stdout)["answer"] == {"marker": "%s missing" % (other / marker.name)}, apart.stdout
    problems = reach_problems([stepped("worker-1", apart)], "head", {"port": "1", "range": ""}, dict(proof, path=str(other / marker.name)))
    assert problems == [
        "worker-1: verl_ckpts_dir %s is not the head's storage: the file the head wrote there (%s) is not seen from this "
        "node's container, so a checkpoint would be saved in parts on different storages and not resumed. Fix: mount the one "
        "shared storage at %s on every node (the same NFS export, Lustre or GPFS file system or GlusterFS volume, not a local "
        "folder or another server's export of the same path), then run deploy.yml again." % (other, other / marker.name, other)]
    fixed = reach(env, "connect", "5", "marker=%s" % marker)
    assert read_answer(fixed.stdout)["answer"] == {"marker": "%s seen" % marker}
    assert reach_problems([stepped("worker-1", fixed)], "head", {"port": "1", "range": ""}, proof) == []
    (tmp_path / "a-file").write_text("")  # a folder that cannot be made, also for root
    refused = reach(env, "mark", str(tmp_path / "a-file" / "ckpts" / marker.name))
    said = read_answer(refused.stdout)["said"]
    assert refused.returncode == 1 and said[0].startswith("cannot write "), refused.stdout
    [problem] = reach_problems([], "head", None, {"path": str(marker), "written": False, "said": " ".join(said)})
    assert problem.startswith("the head could not write a marker in verl_ckpts_dir (%s): cannot write " % marker), problem
