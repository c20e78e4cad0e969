"""Benchmark: how long the checks and the rendering take, per host and for whole inventories.

    .venv/bin/python benchmarks/render_bench.py [--hosts 1,8,32]

Prints figures; asserts nothing. Run it after ./run.sh setup.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO / "tests"), str(REPO / ".collections")]

from helpers import launch_helpers  # noqa: E402  (needs the paths above)
from ansible_collections.verl.deploy.plugins.module_utils._npu_smi import NpuSmiError, parse_info  # noqa: E402


def timed(fn, repeat):
    samples = []
    for _sample in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def parser_figures():
    texts = [p.read_text() for p in sorted((REPO / "tests/fixtures/npu-smi").glob("*_info_*.txt"))]

    def parse_all():
        for text in texts:
            try:
                parse_info(text)
            except NpuSmiError:
                pass

    seconds = timed(parse_all, 20)
    print("npu-smi parser: %d tables in %.2f ms (%.3f ms a table)" % (len(texts), seconds * 1e3, seconds * 1e3 / len(texts)))


def helper_figures():
    config = launch_helpers.launch_ok(verl_feature_mask="1111111")
    build = timed(lambda: launch_helpers.launch(verl_feature_mask="1111111"), 50)
    render = timed(lambda: (launch_helpers.render(config, "start_verl.sh"), launch_helpers.render(config, "run_training.sh")), 20)
    print("checks of one host (launch_config logic): %.2f ms" % (build * 1e3))
    print("rendering both templates of one host (Ansible's engine): %.1f ms" % (render * 1e3))


def playbook_figures(host_counts):
    for count in host_counts:
        with tempfile.TemporaryDirectory() as tmp:
            workers = {"w%03d" % i: {"ansible_host": "10.0.%d.%d" % (i // 250, i % 250 + 2)} for i in range(count - 1)}
            inventory = Path(tmp) / "hosts.yml"
            inventory.write_text(yaml.safe_dump({"ray_cluster": {
                "children": {"ray_head": {"hosts": {"head": {"ansible_host": "10.0.0.1"}}}, "ray_workers": {"hosts": workers}},
                # A batch that splits over the data-parallel ranks of any cluster size.
                "vars": {"ansible_connection": "local", "verl_train_batch_size": 32 * count, "verl_ppo_micro_batch_size_per_gpu": 1},
            }}))
            cmd = [str(Path(sys.executable).with_name("ansible-playbook")), "playbooks/render.yml", "-i", str(inventory),
                   "-e", "verl_model_path=/m", "-e", "verl_train_file=/d/t.parquet", "-e", "verl_test_file=/d/v.parquet",
                   "-e", "verl_ckpts_dir=/c", "-e", "verl_output_dir=%s/out" % tmp, "-f", "10"]
            start = time.perf_counter()
            proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, check=False)
            seconds = time.perf_counter() - start
            status = "ok" if proc.returncode == 0 else "FAILED rc=%d" % proc.returncode
            print("render.yml, %3d host(s): %.1f s wall (%.2f s a host) %s" % (count, seconds, seconds / count, status))
            if proc.returncode:
                print(proc.stdout[-1500:])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", default="1,8,32", help="inventory sizes for render.yml (comma separated)")
    args = parser.parse_args()
    parser_figures()
    helper_figures()
    playbook_figures([int(n) for n in args.hosts.split(",") if n])


if __name__ == "__main__":
    main()
