"""Benchmark: seconds until deploy.yml names a broken model or a layout that cannot fit, on the simulated cluster.

    .venv/bin/python benchmarks/model_verdict_bench.py [--nodes 4] [--keep]

A fresh simulated cluster (tests/sim/simcluster.py, prefix verl-bench-model) with its storage (tests/sim/prepare.yml:
the real-format Qwen3-8B folder and a Qwen2.5-7B beside it), then one deploy per case, each set up as a user would
meet it: a Qwen2.5-7B with TP 8, a shard missing on one worker, a shard cut short on the head, a prompt + response
budget beyond the model's positions, a vLLM share that cannot fit the optimizer beside it from the second step on.
For each: the wall seconds until the deploy stopped, whether its message names the case, and whether any node got a
training container (the goal: none, within 60 s). The storage is prepared again after each case.

Prints figures; asserts nothing. Takes the simulated cluster's lock (.cache/sim/tests.lock, as the integration tests
do) for its minutes. Needs ./run.sh setup and the sim images (simcluster.py build).
"""
from __future__ import annotations

import argparse
import fcntl
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "tests" / "sim"))
sys.path.insert(0, str(HERE))

import simcluster  # noqa: E402  (needs the path above)
from deploy_bench import ansible_playbook, write_inventory  # noqa: E402

PREFIX = "verl-bench-model"
MODEL = "/sim/models/Qwen3-8B"
# (name, extra vars, a command run in node N's shell before the deploy (N, argv) or None, words the refusal holds)
CASES = (
    ("Qwen2.5-7B with TP 8", ["-e", "verl_model_path=/sim/models/Qwen2.5-7B", "-e", "verl_train_tp=8", "-e", "verl_train_pp=1"],
     None, "num_query_groups (4) must be a multiple of tensor_model_parallel_size (8)"),
    ("a shard missing on a worker", [], (2, ["rm", "-f", MODEL + "/model-00003-of-00005.safetensors"]),
     "are missing: model-00003-of-00005.safetensors"),
    ("a shard cut short on the head", [], (1, ["truncate", "-s", "-4", MODEL + "/model-00005-of-00005.safetensors"]),
     "truncated shard(s)"),
    ("budget beyond max_position_embeddings", ["-e", "verl_max_prompt_length=2048", "-e", "verl_max_response_length=40000",
                                               "-e", "verl_overlong_buffer_len=4096"], None, "max_position_embeddings (40960"),
    ("vLLM's share cannot fit the optimizer", ["-e", "verl_gpu_memory_utilization=0.95"], None,
     "the second rollout fails with 'NPU out of memory'"),
)


def containers_created(nodes):
    """How many nodes have a container other than the simulated node's own (the training's would be one)."""
    count = 0
    for index in range(1, nodes + 1):
        proc = subprocess.run(["docker", "exec", simcluster.node_name(PREFIX, index), "docker", "ps", "-aq"], capture_output=True,
                              text=True, timeout=60, check=False)
        count += bool(proc.stdout.strip())
    return count


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--keep", action="store_true", help="leave the cluster up afterwards")
    args = parser.parse_args()
    lock_path = REPO / ".cache" / "sim" / "tests.lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "w", encoding="utf-8") as lock, tempfile.TemporaryDirectory() as tmp:
        fcntl.flock(lock, fcntl.LOCK_EX)
        work = Path(tmp)
        simcluster.down(prefix=PREFIX, verbose=False)
        begin = time.perf_counter()
        data = simcluster.up(nodes=args.nodes, prefix=PREFIX, registry_port=0, verbose=False)
        print("cluster of %d node(s) up in %.1f s" % (args.nodes, time.perf_counter() - begin))
        inventory = write_inventory(work / "inventory", REPO, PREFIX)
        times = work / "times.json"
        base = ["-e", "mask=0000000", "-e", "verl_image=%s" % data["verl_image"], "-e", "verl_confirm=true"]
        try:
            for name, extra, damage, words in CASES:
                ansible_playbook(REPO, "tests/sim/prepare.yml", inventory, [], work / "prepare.log", times)
                if damage:
                    subprocess.run(["docker", "exec", simcluster.node_name(PREFIX, damage[0])] + damage[1], timeout=60, check=True)
                log = work / "case.log"
                rc, seconds, _data = ansible_playbook(REPO, "playbooks/deploy.yml", inventory, base + extra, log, times)
                named = words in log.read_text()
                print("%-40s %6.1f s to the verdict (exit %d, named: %s, nodes with a container: %d)" % (
                    name, seconds, rc, named, containers_created(args.nodes)))
                sys.stdout.flush()
        finally:
            if not args.keep:
                simcluster.down(prefix=PREFIX, verbose=False)


if __name__ == "__main__":
    main()
