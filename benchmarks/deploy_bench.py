"""Benchmark: the deploy on the simulated cluster -- first deploy, unchanged re-run, restart, fail-fast.

    flock /tmp/verl-sim.lock .venv/bin/python benchmarks/deploy_bench.py [--nodes 1,2,4,8] [--runs first,rerun,restart]

For each cluster size: a fresh simulated cluster (tests/sim/simcluster.py, prefix verl-bench), the
simulated storage (tests/sim/prepare.yml), then playbooks/deploy.yml three times: the first deploy, the
unchanged re-run and the restart (verl_restart=true); then, on fresh nodes that hold the image already, the
first deploy without the pull ("preloaded"). Once: the fail-fast time of a bad setting (with
the cluster's inventory and with an inventory of hosts that do not answer) against the playbook's own
--syntax-check. Each run: wall time, time per play (stage), tasks per node, changed per node.

Prints figures and writes them as JSON (--json); asserts nothing. Takes the simulated cluster for
minutes: run it under the machine's simulated-cluster lock. Needs ./run.sh setup and the sim images
(simcluster.py build). --repo runs another checkout's playbooks (e.g. an export of main, for "before").
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "tests" / "sim"))

import simcluster  # noqa: E402  (needs the path above)

PREFIX = "verl-bench"
BAD_SETTING = ("verl_train_tp", "3")  # 8 NPUs per node are not a multiple of TP 3: a parallelism rule refuses it


def ansible_playbook(repo, playbook, inventory, extra, log, times, forks=None):
    """Run one playbook; returns (rc, wall seconds, the timing callback's data)."""
    argv = [str(Path(sys.executable).with_name("ansible-playbook")), "-i", str(inventory), str(repo / playbook)] + extra
    if forks:
        argv += ["--forks", str(forks)]
    # The timer beside what the checkout's ansible.cfg enables (an older checkout may have no preload), which also imports the
    # simulated nodes' connection before the forks, as the Molecule scenarios' configuration has it.
    callbacks = ["deploy_bench_timer"] + (["verl.deploy.preload"] if (repo / "plugins/callback/preload.py").exists() else [])
    env = dict(os.environ, ANSIBLE_CALLBACK_PLUGINS=str(HERE / "callback_plugins"), ANSIBLE_CALLBACKS_ENABLED=",".join(callbacks),
               VERL_DEPLOY_PRELOAD_MODULES="ansible_collections.verl_sim.cluster.plugins.connection.node",
               DEPLOY_BENCH_TIMES=str(times), ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
    if times.exists():
        times.unlink()
    busy_before, children_before = machine_busy_seconds(), controller_seconds()
    start = time.perf_counter()
    with open(log, "w", encoding="utf-8") as out:
        proc = subprocess.run(argv, cwd=repo, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, check=False)
    seconds = time.perf_counter() - start
    data = json.loads(times.read_text()) if times.exists() else {"plays": [], "hosts": {}, "changed": {}}
    # Where the CPU went: ansible-playbook and everything it ran on this machine (its forks, the docker
    # clients of its connections), and the rest of the machine's busy time (the simulated nodes' own work:
    # the pull, Ray, the trainer; and anything else running).
    controller = controller_seconds() - children_before
    data["cpu"] = {"controller": round(controller, 1), "other": round(max(0.0, machine_busy_seconds() - busy_before - controller), 1)}
    return proc.returncode, seconds, data


def machine_busy_seconds():
    """CPU seconds this machine's cores were busy since boot (/proc/stat: all but idle and iowait)."""
    with open("/proc/stat", encoding="ascii") as stat:
        fields = [int(value) for value in stat.readline().split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def controller_seconds():
    """CPU seconds of this process's finished children and their descendants (ansible-playbook and its forks)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def summary(name, nodes, rc, seconds, data, log):
    node_counts = {h: c for h, c in data["hosts"].items() if h != "localhost"}
    ran = [c["ran"] for c in node_counts.values()] or [0]
    return {
        "run": name, "nodes": nodes, "rc": rc, "seconds": round(seconds, 1),
        "tasks_per_node": {"min": min(ran), "max": max(ran), "median": statistics.median(ran)},
        "skipped_per_node": max([c["skipped"] for c in node_counts.values()] or [0]),
        "changed": sum(c["changed"] for c in node_counts.values()),
        "controller_tasks": data["hosts"].get("localhost", {}).get("ran", 0),
        "stages": [(play["name"], play["seconds"]) for play in data["plays"]],
        "slowest_tasks": data.get("slowest_tasks", []),
        "cpu": data.get("cpu", {}),
        "log": str(log),
    }


def show(item):
    tasks = item["tasks_per_node"]
    print("%-9s %2s node(s): %6.1f s  rc %d  changed %3d  tasks/node %s%s (skipped <= %d)  controller tasks %d" % (
        item["run"], item["nodes"], item["seconds"], item["rc"], item["changed"], tasks["max"],
        "" if tasks["min"] == tasks["max"] else " (min %d)" % tasks["min"], item["skipped_per_node"], item["controller_tasks"]))
    if item.get("cpu"):
        cpu, cores = item["cpu"], os.cpu_count()
        line = ("      CPU: controller (ansible-playbook and its forks) %.1f s, the rest of the machine (the nodes' own work) %.1f s;"
                " busy %.1f s of %.1f s on %d cores")
        print(line % (cpu["controller"], cpu["other"], cpu["controller"] + cpu["other"], item["seconds"] * cores, cores))
    for name, seconds in item["stages"]:
        print("      %6.1f s  %s" % (seconds or 0.0, name[:90]))
    if item["slowest_tasks"]:
        print("      slowest tasks: " + "; ".join("%s %.1f s" % (t["name"][:60], t["seconds"]) for t in item["slowest_tasks"][:6]))
    sys.stdout.flush()


def write_inventory(folder, repo, prefix):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "hosts.yml").write_text(simcluster.inventory(prefix))
    (folder / "group_vars").mkdir(exist_ok=True)
    shutil.copy(repo / "inventories" / "sim" / "group_vars" / "ray_cluster.yml", folder / "group_vars" / "ray_cluster.yml")
    return folder / "hosts.yml"


def cluster_runs(args, repo, work, nodes, results):
    simcluster.down(prefix=PREFIX, verbose=False)
    begin = time.perf_counter()
    data = simcluster.up(nodes=nodes, prefix=PREFIX, registry_port=0, verbose=False)
    print("cluster of %d node(s) up in %.1f s" % (nodes, time.perf_counter() - begin))
    inventory = write_inventory(work / ("n%d" % nodes), repo, PREFIX)
    times = work / "times.json"
    rc, seconds, _data = ansible_playbook(repo, "tests/sim/prepare.yml", inventory, [], work / ("n%d-prepare.log" % nodes), times,
                                          args.forks)
    print("simulated storage prepared in %.1f s (rc %d)" % (seconds, rc))
    base = ["-e", "mask=0000000", "-e", "verl_image=%s" % data["verl_image"], "-e", "verl_confirm=true"]
    runs = {"first": base, "rerun": base, "restart": base + ["-e", "verl_restart=true"]}
    for name in [r for r in ("first", "rerun", "restart") if r in args.runs]:
        log = work / ("n%d-%s.log" % (nodes, name))
        rc, seconds, data_run = ansible_playbook(repo, "playbooks/deploy.yml", inventory, runs[name], log, times, args.forks)
        item = summary(name, nodes, rc, seconds, data_run, log)
        results.append(item)
        show(item)
        if rc and name == "first":
            print("      the first deploy failed; the end of %s:\n%s" % (log, "\n".join(log.read_text().splitlines()[-25:])))
            break
    if "preloaded" in args.runs:
        preloaded_run(args, repo, work, nodes, results)
    return inventory


def preloaded_run(args, repo, work, nodes, results):
    """A first deploy onto fresh nodes that hold the image already (pre-loaded, as docs/scaling.md advises at scale):
    the deploy's own cost, without the registry's. The pull into every node happens before the clock starts."""
    simcluster.down(prefix=PREFIX, verbose=False)
    data = simcluster.up(nodes=nodes, prefix=PREFIX, registry_port=0, verbose=False)
    inventory = write_inventory(work / ("n%d-preloaded" % nodes), repo, PREFIX)
    times = work / "times.json"
    ansible_playbook(repo, "tests/sim/prepare.yml", inventory, [], work / ("n%d-preloaded-prepare.log" % nodes), times, args.forks)
    begin = time.perf_counter()
    pulls = [subprocess.Popen(["docker", "exec", simcluster.node_name(PREFIX, index), "docker", "pull", "-q", data["verl_image"]],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for index in range(1, nodes + 1)]
    codes = [pull.wait(timeout=1800) for pull in pulls]
    print("image pre-loaded into %d node(s) in %.1f s (exit codes %s; not counted)" % (nodes, time.perf_counter() - begin, codes))
    base = ["-e", "mask=0000000", "-e", "verl_image=%s" % data["verl_image"], "-e", "verl_confirm=true"]
    log = work / ("n%d-preloaded.log" % nodes)
    rc, seconds, data_run = ansible_playbook(repo, "playbooks/deploy.yml", inventory, base, log, times, args.forks)
    item = summary("preloaded", nodes, rc, seconds, data_run, log)
    results.append(item)
    show(item)


def failfast_runs(args, repo, work, inventory, results):
    """A bad setting, with a reachable cluster and with hosts that do not answer, vs --syntax-check."""
    times = work / "times.json"
    extra = ["-e", "mask=0000000", "-e", "verl_confirm=true", "-e", "%s=%s" % BAD_SETTING]
    unreachable = work / "unreachable"
    unreachable.mkdir(exist_ok=True)
    (unreachable / "hosts.yml").write_text(
        "ray_cluster:\n  vars:\n    ansible_connection: ssh\n    ansible_host: 127.0.0.1\n    ansible_port: 9\n"
        "    ansible_ssh_common_args: -o ConnectTimeout=5\n    verl_model_path: /m\n    verl_train_file: /d/t.parquet\n"
        "    verl_test_file: /d/v.parquet\n    verl_ckpts_dir: /c\n  children:\n    ray_head:\n      hosts:\n        gone1:\n"
        "    ray_workers:\n      hosts:\n        gone2:\n        gone3:\n        gone4:\n")
    cases = [("syntax", inventory, ["--syntax-check"]), ("bad-set", inventory, extra),
             ("bad-unr", unreachable / "hosts.yml", extra)]
    for name, inv, argv in cases:
        log = work / ("failfast-%s.log" % name)
        rc, seconds, data = ansible_playbook(repo, "playbooks/deploy.yml", inv, argv, log, times, args.forks)
        item = summary(name, "-", rc, seconds, data, log)
        text = log.read_text()
        item["names_variable"] = BAD_SETTING[0] in text
        item["hosts_contacted"] = sum(c["ran"] + c["failed"] for h, c in data["hosts"].items() if h != "localhost")
        results.append(item)
        show(item)
        if name != "syntax":
            print("      names %s: %s; node task results: %d" % (BAD_SETTING[0], item["names_variable"], item["hosts_contacted"]))


def ratios(results):
    first = {r["nodes"]: r["seconds"] for r in results if r["run"] == "first" and r["rc"] == 0}
    print("\nRatios (goals: first deploy 4 nodes <= 1.2x 1 node; unchanged re-run <= 0.2x the first deploy, 0 changed;"
          " bad setting <= 3x --syntax-check)")
    for nodes in sorted(first):
        if nodes != min(first):
            print("  first deploy %d nodes / %d node(s): %.2fx" % (nodes, min(first), first[nodes] / first[min(first)]))
    preloaded = {r["nodes"]: r["seconds"] for r in results if r["run"] == "preloaded" and r["rc"] == 0}
    for nodes in sorted(preloaded):
        if nodes != min(preloaded):
            print("  first deploy, image pre-loaded, %d nodes / %d node(s): %.2fx" % (
                nodes, min(preloaded), preloaded[nodes] / preloaded[min(preloaded)]))
    for r in results:
        if r["run"] == "rerun" and r["nodes"] in first:
            print("  re-run / first deploy, %d node(s): %.2fx, changed %d" % (r["nodes"], r["seconds"] / first[r["nodes"]], r["changed"]))
        if r["run"] == "restart" and r["nodes"] in first:
            print("  restart / first deploy, %d node(s): %.2fx" % (r["nodes"], r["seconds"] / first[r["nodes"]]))
    syntax = next((r["seconds"] for r in results if r["run"] == "syntax"), None)
    for r in results:
        if r["run"].startswith("bad-") and syntax:
            print("  %s / --syntax-check: %.2fx (%.1f s vs %.1f s)" % (r["run"], r["seconds"] / syntax, r["seconds"], syntax))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="1,2,4,8", help="cluster sizes, comma separated")
    parser.add_argument("--runs", default="first,rerun,restart,preloaded,failfast",
                        help="which runs (first, rerun, restart, preloaded: a first deploy onto nodes holding the image, failfast)")
    parser.add_argument("--repo", type=Path, default=REPO, help="the checkout whose playbooks run (default: this one)")
    parser.add_argument("--forks", type=int, default=None, help="ansible-playbook --forks (default: the checkout's ansible.cfg)")
    parser.add_argument("--work", type=Path, default=None, help="folder for logs and inventories (default: a new temporary one)")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    parser.add_argument("--keep", action="store_true", help="leave the last cluster up")
    args = parser.parse_args()
    args.runs = args.runs.split(",")
    repo = args.repo.resolve()
    work = args.work or Path(tempfile.mkdtemp(prefix="deploy_bench."))
    work.mkdir(parents=True, exist_ok=True)
    print("deploy benchmark: %s, logs in %s, %d CPU(s), %s" % (repo, work, os.cpu_count(), time.strftime("%Y-%m-%d %H:%M:%S")))
    results = []
    inventory = None
    try:
        for nodes in [int(n) for n in args.nodes.split(",") if n]:
            inventory = cluster_runs(args, repo, work, nodes, results)
        if "failfast" in args.runs:
            failfast_runs(args, repo, work, inventory or write_inventory(work / "n0", repo, PREFIX), results)
    finally:
        if not args.keep:
            simcluster.down(prefix=PREFIX, verbose=False)
    ratios(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
