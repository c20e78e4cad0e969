"""Benchmark: seconds until the deploy names a bad data set or checkpoint folder, on the simulated 4-node cluster.

    flock /tmp/verl-sim.lock .venv/bin/python benchmarks/verdict_bench.py [--nodes 4]

A fresh simulated cluster (tests/sim/simcluster.py, prefix verl-verdict) with its storage (tests/sim/prepare.yml);
then, for each case, the failure is set up on the nodes and playbooks/deploy.yml runs with verl_confirm=true. Prints
per case the wall seconds until the deploy stopped, its exit code, whether the output named the failure, and
whether any container was created or changed on a node (the goal: named before any container, within 60 s).
Asserts nothing. Needs ./run.sh setup and the sim images (simcluster.py build).
"""
from __future__ import annotations

import argparse
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
HALF = "/sim/ckpts/half-written"
# (name, shell run on the head before, shell run on every node before, extra vars, the words the refusal must hold)
CASES = (
    ("raw GSM8K data set", "", "", ["-e", "verl_train_file=/sim/data/gsm8k_raw.parquet"], "has no column 'prompt'"),
    ("checkpoints on each node's own disk", "", "", ["-e", "verl_ckpts_dir=/sim/local-ckpts/run"],
     "is not the same storage on every node"),
    ("half-written newest checkpoint", "mkdir -p %s/global_step_2/actor/dist_ckpt && echo shard > %s/global_step_2/actor/dist_ckpt/"
     "__0_0.distcp && echo 2 > %s/latest_checkpointed_iteration.txt" % (HALF, HALF, HALF), "", ["-e", "verl_ckpts_dir=%s" % HALF],
     "is incomplete"),
    ("a full file system (1 MiB tmpfs, filled)", "", "dd if=/dev/zero of=/sim/full/filler bs=64k count=16 2>/dev/null; true",
     ["-e", "verl_ckpts_dir=/sim/full/ckpts"], "free on"),
)


def on_node(node, script):
    return subprocess.run(["docker", "exec", node, "sh", "-c", script], capture_output=True, text=True, timeout=120, check=False)


def containers(nodes):
    """Each node's inner containers with their state (what `docker ps -a` shows): a change means the deploy acted."""
    return {node: on_node(node, "docker ps -a --format '{{.Names}} {{.State}} {{.ID}}'").stdout for node in nodes}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--keep", action="store_true", help="leave the cluster up")
    args = parser.parse_args()
    simcluster.down(prefix=PREFIX, verbose=False)
    begin = time.perf_counter()
    data = simcluster.up(nodes=args.nodes, prefix=PREFIX, registry_port=0, verbose=False)
    nodes = [simcluster.node_name(PREFIX, index) for index in range(1, args.nodes + 1)]
    print("cluster of %d node(s) up in %.1f s" % (args.nodes, time.perf_counter() - begin))
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        inventory = write_inventory(work / "inventory", REPO, PREFIX)
        times = work / "times.json"
        rc, seconds, _data = ansible_playbook(REPO, "tests/sim/prepare.yml", inventory, [], work / "prepare.log", times)
        print("simulated storage prepared in %.1f s (rc %d)" % (seconds, rc))
        base = ["-e", "mask=0000000", "-e", "verl_image=%s" % data["verl_image"], "-e", "verl_confirm=true"]
        print("%-42s %8s %4s %-6s %s" % ("case", "seconds", "rc", "named", "containers changed"))
        for name, head_script, node_script, extra, words in CASES:
            if head_script:
                on_node(nodes[0], head_script)
            for node in nodes if node_script else []:
                on_node(node, node_script)
            before = containers(nodes)
            log = work / (re.sub(r"\W+", "-", name) + ".log")
            rc, seconds, _data = ansible_playbook(REPO, "playbooks/deploy.yml", inventory, base + extra, log, times)
            text = " ".join(log.read_text(encoding="utf-8", errors="replace").split())
            changed = [node for node, listed in containers(nodes).items() if listed != before[node]]
            print("%-42s %8.1f %4d %-6s %s" % (name, seconds, rc, "yes" if words in text else "NO", ", ".join(changed) or "none"))
            sys.stdout.flush()
    if not args.keep:
        simcluster.down(prefix=PREFIX, verbose=False)


if __name__ == "__main__":
    main()
