"""Benchmark: how soon deploy.yml refuses a bad setting, against `ansible-playbook --syntax-check`.

    .venv/bin/python benchmarks/failfast_bench.py [--hosts 4,32,128] [--repeat 5]

Every inventory host is 127.0.0.1 on a closed port over ssh: a host that were contacted would fail as
unreachable, so the figures are those of a refusal that contacts no host. Prints the median of each and
the ratio (the goal: at most 3x the syntax check); asserts nothing. Run it after ./run.sh setup.
"""
from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
PLAYBOOK = str(Path(sys.executable).with_name("ansible-playbook"))
PATHS = {"verl_model_path": "/models/Qwen3-8B", "verl_train_file": "/data/train.parquet", "verl_test_file": "/data/test.parquet",
         "verl_ckpts_dir": "/ckpt"}


def closed_port():
    """A port on 127.0.0.1 that nothing listens on (bound and released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def inventory(count, port):
    group_vars = dict(PATHS, ansible_connection="ssh", ansible_host="127.0.0.1", ansible_port=port)
    return {"ray_cluster": {"vars": group_vars, "children": {
        "ray_head": {"hosts": {"head": None}},
        "ray_workers": {"hosts": {"w%03d" % i: None for i in range(count - 1)}},
    }}}


def median_seconds(cmd, repeat):
    samples, last = [], None
    env = dict(os.environ, ANSIBLE_NOCOLOR="1")
    for _sample in range(repeat):
        start = time.perf_counter()
        last = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=False)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples), last


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", default="4,32,128", help="inventory sizes, comma-separated")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    port = closed_port()
    with tempfile.TemporaryDirectory() as tmp:
        for count in (int(n) for n in args.hosts.split(",")):
            hosts = Path(tmp) / ("hosts-%d.yml" % count)
            hosts.write_text(yaml.safe_dump(inventory(count, port)))
            syntax, _proc = median_seconds([PLAYBOOK, "--syntax-check", "playbooks/deploy.yml", "-i", str(hosts)], args.repeat)
            cmd = [PLAYBOOK, "playbooks/deploy.yml", "-i", str(hosts), "-e", "verl_train_tp=3", "-e", "verl_confirm=true"]
            seconds, proc = median_seconds(cmd, args.repeat)
            contacted = "UNREACHABLE" in proc.stdout + proc.stderr
            named = "verl_train_tp x verl_train_pp = 3 x 2" in proc.stdout
            figures = (count, syntax, seconds, seconds / syntax, proc.returncode, named, contacted, args.repeat)
            print("%4d hosts: --syntax-check %.2f s; a bad verl_train_tp refused in %.2f s = %.1fx (exit %d, variable named: %s, "
                  "a host contacted: %s; medians of %d)" % figures)


if __name__ == "__main__":
    main()
