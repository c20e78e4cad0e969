"""Benchmark: seconds until status.yml names the first failure of a failed training, and the calls each node received.

    .venv/bin/python benchmarks/failure_bench.py [--nodes 4] [--repeat 3] [--cases a,b,c] [--keep] [--work DIR]

A fresh simulated cluster (tests/sim/simcluster.py, prefix verl-failbench), its storage (tests/sim/prepare.yml), then
playbooks/deploy.yml with a long training (verl_train_steps) and keep-alive off (verl_keep_alive=0: nothing starts the
training again behind the measurement). For each case the training fails as a real one does, with the real texts of the
public reports the failure table (plugins/module_utils/_failures.py) was taken from, then playbooks/status.yml runs
--repeat times (its median is the figure) and once more at -vvv, untimed, to count the calls:
  a  a worker fails first: its Ray worker log gets torch_npu's NPU out of memory (vllm-ascend#19), the head's training
     log only the driver's follower ActorDiedError (verl#2189), then the trainer is killed (SIGKILL);
  b  a head-side root cause: CANN's HCCL notify timeout EI0002 (vllm-ascend#1443, stamped now) in the head's Ray worker
     log, and in the training log as Ray's log monitor forwards it, followed there by about 50 follower lines (Ray's
     RayTaskError and ActorDiedError, verl#2189; TBE's orphaned compilers, vllm-ascend#19; the placement group a retry
     finds, Search-R1#44), then the trainer is killed;
  c  a healthy training: status must read healthy and exit 0.
Before each case after the first, deploy.yml with verl_restart=true starts a training again; each case waits for its
first step. Per case: the wall seconds of status.yml (each run and the median), its exit code, the first-failure lines
it printed (its at most 3 lines above the table), whether they name the expected node and error, the controller's CPU,
and the calls each node received: the `docker exec` calls into the node (the "<node> EXEC" lines of the simulated nodes'
docker connection at -vvv; with pipelining, one per module run), each given to the task whose banner precedes it.

Prints figures; asserts nothing. Takes the simulated cluster's lock (.cache/sim/tests.lock, as the integration tests
and verdict_bench.py do) for its minutes. Needs ./run.sh setup and the sim images (simcluster.py build); a checkout
whose .cache/sim is warm (its registry storage) starts the cluster without a push. --nodes must divide the simulated
inventory's batch of 48 (one data-parallel rank per node): 1, 2, 3, 4, 6 or 8; case a needs a worker (2 nodes or more).
"""
from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import re
import statistics
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

PREFIX = "verl-failbench"
CONTAINER = "verl"  # verl_container_name's default
WORKDIR = "/verl"  # verl_workdir's default: verl_control.sh and verl_control.env are there
TRAIN_STEPS = "10000"  # as three_nodes has it: the stand-in logs a step every 2 s, so hours, never finished here
# In the container, from the deployment's own verl_control.env: Ray's session logs (RAY_TEMP_DIR, else Ray's default, as
# verl_control.sh and failure_scan read them), the newest training log (LOG_DIR/LOG_PREFIX*.log, as verl_control.sh's
# latest_log) and the training's process pattern (TRAINING_PATTERN).
PRELUDE = ('cd %s && . ./verl_control.env && RAY_LOGS="${RAY_TEMP_DIR:-${RAY_TMPDIR:-/tmp}/ray}/session_latest/logs" && '
           'LOG="$(ls -t "${LOG_DIR}/${LOG_PREFIX}"*.log 2>/dev/null | head -n 1)" || '
           '{ echo "no deployment in %s (verl_control.env)" >&2; exit 1; }\n' % (WORKDIR, WORKDIR))
# Writes its arguments as lines, @NOW@ replaced by the container's local time in CANN's format (2025-06-25-10:45:23), to
# Ray's session logs (first argument `ray:<file name>`, a new file) or to the end of the training log (`log`).
WRITE = r'''
NOW="$(date +%Y-%m-%d-%H:%M:%S)"
case "$1" in
    ray:*) [ -d "${RAY_LOGS}" ] || { echo "no Ray session logs at ${RAY_LOGS}" >&2; exit 1; }
           target="${RAY_LOGS}/${1#ray:}"; : > "${target}" ;;
    log) [ -n "${LOG}" ] || { echo "no training log in ${LOG_DIR}" >&2; exit 1; }
         target="${LOG}" ;;
esac
shift
for line in "$@"; do printf '%s\n' "${line//@NOW@/${NOW}}"; done >> "${target}"
'''
# The trainer stopped (SIGSTOP) before a line is added to its log, and tee given a second: tee writes the log at its own
# offset, so a step line written after the append would overwrite it.
PAUSE = r'''
pkill -STOP -f -- "${TRAINING_PATTERN}" || { echo "no training process to stop" >&2; exit 1; }
sleep 1
'''
KILL = r'''
pkill -KILL -f -- "${TRAINING_PATTERN}" || { echo "no training process to kill" >&2; exit 1; }
for _ in $(seq 60); do pgrep -f -- "${TRAINING_PATTERN}" >/dev/null || exit 0; sleep 1; done
echo "the training still runs 60 s after SIGKILL" >&2; exit 1
'''
FIRST_STEP = r'''
for _ in $(seq 120); do
    LOG="$(ls -t "${LOG_DIR}/${LOG_PREFIX}"*.log 2>/dev/null | head -n 1)"
    [ -n "${LOG}" ] && grep -q 'step:[0-9]' "${LOG}" && pgrep -f -- "${TRAINING_PATTERN}" >/dev/null && exit 0
    sleep 2
done
echo "no step logged within 240 s (newest log: ${LOG:-none})" >&2; exit 1
'''
# Ray names a worker's log worker-<worker id>-<job id>-<pid>.err (the id of a job, the pid made up).
WORKER_ERR = "worker-57a1c0ffee-01000000-4242.err"

# The real texts (tests/unit/plugins/module_utils/test_failures.py holds them with their reports, and
# extensions/molecule/three_nodes/tests/test_2_faults.py the worker-first case).
NPU_OOM = ("RuntimeError: NPU out of memory. Tried to allocate 22.00 MiB (NPU 0; 60.97 GiB total capacity; 10.24 GiB already "
           "allocated; 10.24 GiB current active; 19.52 MiB free; 10.65 GiB reserved in total by PyTorch)")
ACTOR_DIED = "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task."
# vllm-ascend#1443: torch_npu's wrapper line, then CANN's text (its dates replaced by the container's time now).
HCCL_NOTIFY = [
    "RuntimeError: npuSynchronizeDevice:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:479 NPU function error: "
    "AclrtSynchronizeDeviceWithTimeout, error code is 507048",
    "[ERROR] @NOW@ (PID:13075, Device:0, RankID:8) ERR00100 PTA call acl api failed",
    "[Error]: The execution of the internal task times out. ",
    "EI0002: [PID: 13075] @NOW@.586.187 The wait execution of the Notify register times out. Reason: The Notify register has "
    "not received the Notify record from remote rank: [unknown]. base information: [streamID:[1], taskID[8318285], "
    "tag[AllReduce_group_name_710], A",
]
# verl#2189 (the driver's RayTaskError and ActorDiedError), vllm-ascend#19 (the TBE compilers orphaned), Search-R1#44 (Ray's
# retry of the TaskRunner): what the head's log holds after the root cause, more lines than status shows of it.
FOLLOWERS = (
    ["ray.exceptions.RayTaskError(ActorDiedError): ray::TaskRunner.run() (pid=121540, ip=33.103.193.204, "
     "actor_id=fc6d13134659af4c1c7165ee01000000, repr=<main_ppo.TaskRunner object at 0x7edc6a269660>)",
     '  File "/verl/verl/trainer/main_ppo.py", line 190, in run',
     "    trainer.fit()",
     ACTOR_DIED,
     "        class_name: create_colocated_worker_cls.<locals>.WorkerDict",
     "        actor_id: 9afdd2e3ddd8a5f428b8254501000000"]
    + ["[ERROR] TBE Subprocess[task_distribute] raise error[], main process disappeared!"] * 40
    + ["ray.exceptions.RayTaskError(RaySystemError): ray::main_task() (pid=51548, ip=10.110.199.11)",
       "ray.exceptions.RaySystemError: System error: Failed to create placement group "
       "'d1c0110401ccaefbbf8fd4b69bfd01000000' because name 'global_poolverl_group_8:0' already exists."])

CASES = {
    "a": "a worker fails first (NPU out of memory), the head's log only a follower",
    "b": "a head-side root cause (HCCL EI0002), then many follower lines",
    "c": "a healthy training",
}


def in_verl(node, script, *args, timeout=300):
    """A bash script in the node's training container, after PRELUDE; its arguments are $1... (never quoted into it)."""
    argv = ["docker", "exec", node, "docker", "exec", CONTAINER, "bash", "-c", PRELUDE + script, "failure_bench"] + list(args)
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)


def step(what, proc):
    """Says a setup step that failed (with the container's words); returns whether it worked."""
    if proc.returncode != 0:
        print("      setup FAILED: %s (exit %d): %s" % (what, proc.returncode, (proc.stderr or proc.stdout).strip()[-600:]))
    return proc.returncode == 0


def break_training(case, head, worker):
    """Makes the training fail as case `case` does; returns (expected node, expected class, files to remove afterwards)
    or None when a step failed. Case c breaks nothing."""
    if case == "a":
        ok = (step("the worker's Ray worker log", in_verl(worker, WRITE, "ray:" + WORKER_ERR, "Traceback (most recent call last):",
                                                          NPU_OOM))
              and step("the trainer paused", in_verl(head, PAUSE))
              and step("the head's follower", in_verl(head, WRITE, "log", ACTOR_DIED))
              and step("the trainer killed", in_verl(head, KILL)))
        return (worker, "NPU out of memory", [(worker, WORKER_ERR)]) if ok else None
    if case == "b":
        forwarded = ["(WorkerDict pid=4242) " + line for line in HCCL_NOTIFY]
        ok = (step("the head's Ray worker log", in_verl(head, WRITE, "ray:" + WORKER_ERR, *HCCL_NOTIFY))
              and step("the trainer paused", in_verl(head, PAUSE))
              and step("the head's training log", in_verl(head, WRITE, "log", *(forwarded + FOLLOWERS)))
              and step("the trainer killed", in_verl(head, KILL)))
        return (head, "HCCL collective timeout", [(head, WORKER_ERR)]) if ok else None
    return (None, None, [])


def first_failure_lines(text):
    """status's at most 3 lines of the first failure (first failure / only followers found, cause, fix), as printed."""
    lines = [line.strip().strip('",').strip() for line in text.splitlines()]
    for index, line in enumerate(lines):
        if "first failure: " in line or "only followers found, the first: " in line:
            found = [line]
            for label in ("cause (", "fix: "):
                if index + len(found) < len(lines) and label in lines[index + len(found)]:
                    found.append(lines[index + len(found)])
            return found
    return []


def calls_per_node(text, nodes):
    """{node: [task name of each docker exec into it]} from a -vvv run with the default stdout callback: the simulated
    nodes' connection (community.docker.docker) prints '<node> EXEC [...]' (and PUT, FETCH) for each call, after the
    banner of the task that made it."""
    calls = {node: [] for node in nodes}
    task = "?"
    for line in text.splitlines():
        banner = re.match(r"^(?:TASK|RUNNING HANDLER) \[(.*)\] \*+$", line)
        if banner:
            task = banner.group(1)
            continue
        call = re.match(r"^<([^>\s]+)> (?:EXEC|PUT|FETCH) ", line)
        if call and call.group(1) in calls:
            calls[call.group(1)].append(task)
    return calls


@contextlib.contextmanager
def environment(**values):
    before = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def measure(case, args, work, inventory, nodes, head, worker):
    """One case: break the training, time status.yml --repeat times, count its calls once at -vvv; prints the figures."""
    print("\n(%s) %s" % (case, CASES[case]))
    broken = break_training(case, head, worker)
    if broken is None:
        return None
    node, error, planted = broken
    times = work / "times.json"
    runs = []
    try:
        for index in range(args.repeat):
            log = work / ("case-%s-status-%d.log" % (case, index + 1))
            rc, seconds, data = ansible_playbook(REPO, "playbooks/status.yml", inventory, [], log, times)
            runs.append({"rc": rc, "seconds": seconds, "cpu": data.get("cpu", {}).get("controller"), "log": log,
                         "lines": first_failure_lines(log.read_text(encoding="utf-8", errors="replace")),
                         "tasks": {host: counts["ran"] for host, counts in data["hosts"].items() if host in nodes}})
        counted = work / ("case-%s-status-vvv.log" % case)
        with environment(ANSIBLE_STDOUT_CALLBACK="default"):
            _rc, counted_seconds, _data = ansible_playbook(REPO, "playbooks/status.yml", inventory, ["-vvv"], counted, times)
        calls = calls_per_node(counted.read_text(encoding="utf-8", errors="replace"), nodes)
    finally:
        for where, name in planted:
            in_verl(where, 'rm -f "${RAY_LOGS}/$1"', name)
    first = runs[0]
    if node is None:
        named = first["rc"] == 0 and not first["lines"]
        expected = "healthy: exit 0, no first failure"
    else:
        named = bool(first["lines"]) and ("first failure: %s at " % node) in first["lines"][0] and error in first["lines"][0]
        expected = "%s, %s" % (node, error)
    median = statistics.median(run["seconds"] for run in runs)
    print("    status.yml: %.1f s median of %d (%s), exit code(s) %s, controller CPU %s s" % (
        median, len(runs), ", ".join("%.1f" % run["seconds"] for run in runs), sorted({run["rc"] for run in runs}),
        ", ".join("%.1f" % run["cpu"] for run in runs if run["cpu"] is not None) or "-"))
    print("    expected: %s -> %s" % (expected, "NAMED" if named else "NOT NAMED"))
    for line in first["lines"] or ["(no first-failure line printed)"]:
        print("      | %s" % line[:300])
    if any(run["lines"] != first["lines"] for run in runs[1:]):
        print("    the runs printed different first failures: see %s" % ", ".join(str(run["log"]) for run in runs))
    print("    calls per node (docker exec, counted at -vvv in a run of %.1f s, not timed): %s" % (
        counted_seconds, ", ".join("%s %d" % (name, len(calls[name])) for name in nodes)))
    for name in nodes:
        tally = {}
        for task in calls[name]:
            tally[task] = tally.get(task, 0) + 1
        print("      %s: %s" % (name, "; ".join("%s%s" % (task[:70], " x%d" % count if count > 1 else "")
                                                for task, count in tally.items()) or "none"))
    print("    task results per node (the timer callback): %s" % ", ".join("%s %d" % (name, first["tasks"].get(name, 0)) for name in nodes))
    print("    logs: %s" % first["log"])
    sys.stdout.flush()
    return {"case": case, "seconds": median, "rc": first["rc"], "named": named,
            "calls": max(len(found) for found in calls.values()) if calls else 0}


def deploy(work, inventory, extra, name):
    log = work / ("deploy-%s.log" % name)
    rc, seconds, _data = ansible_playbook(REPO, "playbooks/deploy.yml", inventory, extra, log, work / "times.json")
    print("deploy.yml (%s): %.1f s, exit code %d, log %s" % (name, seconds, rc, log))
    if rc:
        print("      the end of %s:\n%s" % (log, "\n".join(log.read_text(encoding="utf-8", errors="replace").splitlines()[-25:])))
    sys.stdout.flush()
    return rc == 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=4, help="cluster size (a divisor of 48: 1, 2, 3, 4, 6, 8)")
    parser.add_argument("--repeat", type=int, default=3, help="timed status.yml runs per case (the median is the figure)")
    parser.add_argument("--cases", default="a,b,c", help="which cases, in this order (a, b, c)")
    parser.add_argument("--work", type=Path, default=None, help="folder for logs and the inventory (default: a new temporary one)")
    parser.add_argument("--keep", action="store_true", help="leave the cluster up afterwards")
    args = parser.parse_args()
    cases = [case for case in args.cases.split(",") if case]
    unknown = [case for case in cases if case not in CASES]
    if unknown or args.repeat < 1:
        parser.error("--cases takes a, b, c (not %s); --repeat at least 1" % ", ".join(unknown))
    if args.nodes < 2 and "a" in cases:
        print("case a needs a worker node: left out with --nodes %d" % args.nodes)
        cases.remove("a")
    work = args.work or Path(tempfile.mkdtemp(prefix="failure_bench."))
    work.mkdir(parents=True, exist_ok=True)
    # The short report's own log files (plugins/callback/report.py) beside the benchmark's, not in the home folder.
    os.environ["VERL_DEPLOY_LOG_DIR"] = str(work / "report-logs")
    print("failure benchmark: %s, %d node(s), logs in %s, %d CPU(s), %s" % (
        REPO, args.nodes, work, os.cpu_count(), time.strftime("%Y-%m-%d %H:%M:%S")))
    lock_path = REPO / ".cache" / "sim" / "tests.lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    results = []
    with open(lock_path, "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            simcluster.down(prefix=PREFIX, verbose=False)
            begin = time.perf_counter()
            data = simcluster.up(nodes=args.nodes, prefix=PREFIX, registry_port=0, verbose=False)
            nodes = [simcluster.node_name(PREFIX, index) for index in range(1, args.nodes + 1)]
            print("cluster of %d node(s) up in %.1f s" % (args.nodes, time.perf_counter() - begin))
            inventory = write_inventory(work / "inventory", REPO, PREFIX)
            rc, seconds, _data = ansible_playbook(REPO, "tests/sim/prepare.yml", inventory, [], work / "prepare.log", work / "times.json")
            print("simulated storage prepared in %.1f s (exit code %d)" % (seconds, rc))
            base = ["-e", "mask=0000000", "-e", "verl_image=%s" % data["verl_image"], "-e", "verl_confirm=true",
                    "-e", "verl_train_steps=%s" % TRAIN_STEPS, "-e", "verl_keep_alive=0"]
            head, worker = nodes[0], (nodes[1] if len(nodes) > 1 else None)
            for index, case in enumerate(cases):
                name = "restart-%s" % case if index else "first"
                if not deploy(work, inventory, base + (["-e", "verl_restart=true"] if index else []), name):
                    break
                if not step("the training's first step", in_verl(head, FIRST_STEP)):
                    break
                result = measure(case, args, work, inventory, nodes, head, worker)
                if result:
                    results.append(result)
        finally:
            if not args.keep:
                simcluster.down(prefix=PREFIX, verbose=False)
    print("\nGoal (issue 57): the verdict within 30 s on 4 nodes, one call per node.")
    for result in results:
        print("  (%s) %5.1f s  exit code %d  %s  at most %d call(s) on a node" % (
            result["case"], result["seconds"], result["rc"], "named " if result["named"] else "NOT named", result["calls"]))


if __name__ == "__main__":
    main()
