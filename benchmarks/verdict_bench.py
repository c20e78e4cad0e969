"""Benchmark: seconds until deploy.yml names each pre-launch failure of the model, the data sets and the checkpoint
folder, on a simulated 4-node cluster, and whether any node's containers changed meanwhile.

    .venv/bin/python benchmarks/verdict_bench.py [--nodes 4] [--keep] [--only WORDS]

A fresh simulated cluster (tests/sim/simcluster.py, prefix verl-verdict). Before each case the storage is prepared
again (tests/sim/prepare.yml: the real-format Qwen3-8B folder with a Qwen2.5-7B beside it, parquet files in verl's
format and a raw GSM8K one), then the case is set up on the nodes as a user would meet it and playbooks/deploy.yml
runs with verl_confirm=true. Prints per case the wall seconds until the deploy stopped, its exit code, whether the
output named the failure, and which nodes' containers changed (the goal: named within 60 s, no node changed).

Prints figures; asserts nothing. Takes the simulated cluster's lock (.cache/sim/tests.lock, as the integration
tests do) for its minutes. Needs ./run.sh setup and the sim images (simcluster.py build).
"""
from __future__ import annotations

import argparse
import fcntl
import re
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

PREFIX = "verl-verdict"
MODEL = "/sim/models/Qwen3-8B"
HALF = "/sim/ckpts/half-written"
EVERY = 0  # in a case's setup: run on every node
# (name, extra vars, setup {node number (1 = the head) or EVERY: shell}, the words the refusal must hold)
CASES = (
    ("Qwen2.5-7B with TP 8", ["-e", "verl_model_path=/sim/models/Qwen2.5-7B", "-e", "verl_train_tp=8", "-e", "verl_train_pp=1"],
     {}, "num_query_groups (4) must be a multiple of tensor_model_parallel_size (8)"),
    ("a shard missing on a worker", [], {2: "rm -f %s/model-00003-of-00005.safetensors" % MODEL},
     "are missing: model-00003-of-00005.safetensors"),
    ("a shard cut short on the head", [], {1: "truncate -s -4 %s/model-00005-of-00005.safetensors" % MODEL}, "truncated shard(s)"),
    ("budget beyond max_position_embeddings", ["-e", "verl_max_prompt_length=2048", "-e", "verl_max_response_length=40000",
                                               "-e", "verl_overlong_buffer_len=4096"], {}, "max_position_embeddings (40960"),
    ("vLLM's share cannot fit the optimizer", ["-e", "verl_gpu_memory_utilization=0.95"], {},
     "the second rollout fails with 'NPU out of memory'"),
    ("raw GSM8K data set", ["-e", "verl_train_file=/sim/data/gsm8k_raw.parquet"], {}, "has no column 'prompt'"),
    ("checkpoints on each node's own disk", ["-e", "verl_ckpts_dir=/sim/local-ckpts/run"], {},
     "is not the same storage on every node"),
    ("half-written newest checkpoint", ["-e", "verl_ckpts_dir=%s" % HALF],
     {1: "mkdir -p {0}/global_step_2/actor/dist_ckpt && echo shard > {0}/global_step_2/actor/dist_ckpt/__0_0.distcp && "
         "echo 2 > {0}/latest_checkpointed_iteration.txt".format(HALF)}, "is incomplete"),
    ("a full file system (1 MiB tmpfs, filled)", ["-e", "verl_ckpts_dir=/sim/full/ckpts"],
     {EVERY: "dd if=/dev/zero of=/sim/full/filler bs=64k count=16 2>/dev/null; true"}, "free on"),
)


def on_node(node, script):
    return subprocess.run(["docker", "exec", node, "sh", "-c", script], capture_output=True, text=True, timeout=120, check=False)


def containers(nodes):
    """Each node's inner containers with their state (what `docker ps -a` shows): a change means the deploy acted."""
    return {node: on_node(node, "docker ps -a --format '{{.Names}} {{.State}} {{.ID}}'").stdout for node in nodes}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--keep", action="store_true", help="leave the cluster up afterwards")
    parser.add_argument("--only", default="", help="run only the cases whose name holds these words")
    args = parser.parse_args()
    lock_path = REPO / ".cache" / "sim" / "tests.lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "w", encoding="utf-8") as lock, tempfile.TemporaryDirectory() as tmp:
        fcntl.flock(lock, fcntl.LOCK_EX)
        work = Path(tmp)
        simcluster.down(prefix=PREFIX, verbose=False)
        begin = time.perf_counter()
        data = simcluster.up(nodes=args.nodes, prefix=PREFIX, registry_port=0, verbose=False)
        nodes = [simcluster.node_name(PREFIX, index) for index in range(1, args.nodes + 1)]
        print("cluster of %d node(s) up in %.1f s" % (args.nodes, time.perf_counter() - begin))
        inventory = write_inventory(work / "inventory", REPO, PREFIX)
        times = work / "times.json"
        base = ["-e", "mask=0000000", "-e", "verl_image=%s" % data["verl_image"], "-e", "verl_confirm=true"]
        print("%-42s %8s %4s %-6s %s" % ("case", "seconds", "rc", "named", "containers changed"))
        try:
            for name, extra, setup, words in CASES:
                if args.only not in name:
                    continue
                ansible_playbook(REPO, "tests/sim/prepare.yml", inventory, [], work / "prepare.log", times)
                for number, script in setup.items():
                    for node in nodes if number == EVERY else [nodes[number - 1]]:
                        on_node(node, script)
                before = containers(nodes)
                log = work / (re.sub(r"\W+", "-", name) + ".log")
                rc, seconds, _data = ansible_playbook(REPO, "playbooks/deploy.yml", inventory, base + extra, log, times)
                text = " ".join(log.read_text(encoding="utf-8", errors="replace").split())
                changed = [node for node, listed in containers(nodes).items() if listed != before[node]]
                print("%-42s %8.1f %4d %-6s %s" % (name, seconds, rc, "yes" if words in text else "NO", ", ".join(changed) or "none"))
                sys.stdout.flush()
        finally:
            if not args.keep:
                simcluster.down(prefix=PREFIX, verbose=False)


if __name__ == "__main__":
    main()
