# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Private to the verl.deploy collection: may change without notice.
"""The first failure of a training, from the log lines of every node.

SIGNATURES is the one table of the failures verl on Ascend is known to end with: a row's pattern, its class, whether a
restart from the last checkpoint can get past it (transient) or repeats it (deterministic), whether it only follows
another error (a follower: what Ray's driver says of a dead worker, a TBE compiler whose parent died), the cause, the
fix and the public report the text was taken from (its real text is in the row's test). docs/troubleshooting.md's
failure section is generated from it (tools/settings_table.py).

The functions are pure: `events` turns one file's lines into timed events, `first_failure` orders every node's events
on the controller's clock and names the first one that is not a follower, `say` gives it in at most 3 lines and as
data. No Ansible imports: the same module is read by the controller and, as plain Python, on a node.
"""
from __future__ import annotations

import calendar
import os
import re
import time


def _row(key, cls, transient, follower, pattern, seen, cause, fix, source, node_fault=False):
    # node_fault: the fault is the node's own (its chip, its memory), not the collective's: keep-alive names a node whose
    # own fault comes twice as the one to take out.
    return {"key": key, "class": cls, "transient": transient, "follower": follower, "pattern": re.compile(pattern),
            "seen": seen, "cause": cause, "fix": fix, "source": source, "node_fault": node_fault}


RESTART = "then deploy.yml -e verl_restart=true (it resumes from the last checkpoint)"
# Tried in order: the first row whose pattern is found in a line names it. Specific rows come before the general ones
# whose text they contain (numpy's EC0010 before the import row, Ray's wrapper and the worker's exit before the dead actor).
SIGNATURES = (
    _row("hccl_notify_timeout", "HCCL collective timeout", True, False,
         r"\bEI0002\b|The wait execution of the Notify register times out",
         "EI0002: ... The wait execution of the Notify register times out. Reason: The Notify register has not "
         "received the Notify record from remote rank",
         "a collective waited HCCL_EXEC_TIMEOUT (default 1800 s) for another rank: this rank waited, the rank that "
         "failed is usually another one, with an earlier error (named instead when a node's logs hold it)",
         "look for an earlier error on the other nodes (logs.yml); without one: a slow or hung rank, the NPUs' links "
         "(hccn_tool -i <id> -link -g); " + RESTART,
         "vllm-ascend#1443"),
    _row("hccl_socket_timeout", "HCCL connection timeout", True, False,
         r"\bEI0006\b|Getting socket times out|wait socket establish timeout",
         "EI0006: ... Getting socket times out. Reason: Remote Rank did not send the data in time",
         "HCCL could not connect to a rank within HCCL_CONNECT_TIMEOUT (default 120 s): that rank had not started, "
         "had died, or its NPU network (the device IPs) is not reachable",
         "look for an earlier error on the other nodes; check the NPUs' network on every node (hccn_tool -i <id> "
         "-ip -g, -link -g), or raise HCCL_CONNECT_TIMEOUT in verl_extra_env; " + RESTART,
         "vllm-ascend#486, vllm-ascend#1955"),
    _row("c10d_store_timeout", "rendezvous timeout", True, False,
         r"\[c10d\] The client socket has timed out after \d+ms while trying to connect to",
         "[c10d] The client socket has timed out after 1800000ms while trying to connect to (10.123.x.x, 38321)",
         "a worker could not reach torch.distributed's store (MASTER_ADDR:MASTER_PORT) on the rank-0 node: a "
         "firewall, another address than the node's, or rank 0 died first",
         "open the port range between the nodes and check verl_node_ip on every node; " + RESTART,
         "verl#849"),
    _row("npu_lost", "NPU lost", True, False,
         r"lost heartbeat|heartbeat lost|Device_Absent/Abnormal|\bEL0001\b",
         "Device_Absent/Abnormal(EL0001): Device not found or invalid. ... Device[1] lost heartbeat.",
         "an NPU stopped answering its driver (heartbeat lost): a chip or driver fault",
         "read the chip's health on that node (npu-smi info -t health -i <id>); when it is not OK, reset the chip "
         "(npu-smi set -t reset -i <id> -c 0) or reboot the node; " + RESTART,
         "vllm-ascend#8186, vllm-ascend#11171", node_fault=True),
    # failure_scan's own line for npu-smi's Health column (npu_health_lines in plugins/modules/failure_scan.py): a chip whose
    # health is not OK, or an npu-smi that cannot read the NPUs (a dcmi error), on the node it ran on.
    _row("npu_health", "NPU health not OK (npu-smi)", True, False,
         r"^NPU \d+ \([^)]*\) Health: (?!OK\b)\S+$|\bdcmi\b.*\bret is -?\d+",
         "NPU 3 (910B3) Health: Alarm",
         "npu-smi reads a chip's health other than OK (Warning, Alarm, Critical: a fault its driver recorded, such as a lost "
         "heartbeat, an ECC error or overheating), or cannot read the NPUs at all (a dcmi error: the driver is not loaded or hung)",
         "read the chip's faults on that node (npu-smi info -t health -i <id>); when its health stays not OK, reset the chip "
         "(npu-smi set -t reset -i <id> -c 0) or reboot the node, or leave the node out of the inventory; " + RESTART,
         "vllm-ascend#11171, vllm-ascend#2698", node_fault=True),
    _row("host_oom_kernel", "host out of memory (kernel OOM killer)", True, False,
         r"Out of memory: Killed process \d+|Memory cgroup out of memory: Killed process \d+",
         "Out of memory: Killed process 16832 (ray::_shuffle_m) total-vm:33905928kB, anon-rss:6481792kB",
         "the node's memory ran out and the kernel killed a worker (SIGKILL: it leaves no traceback; Ray's driver "
         "then says 'connection error code 2')",
         "free host memory on that node, fewer NPUs per node, or Offload off (docs/memory.md, Host memory); " + RESTART,
         "ray#23450", node_fault=True),
    _row("host_oom_ray", "host out of memory (Ray's memory monitor)", True, False,
         r"Task was killed due to the node running low on memory|killed due to memory pressure \(OOM\)",
         "ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory. ... which exceeds "
         "the memory usage threshold of 0.95",
         "the node's memory passed Ray's threshold (0.95) and Ray killed its newest worker",
         "free host memory on that node, fewer NPUs per node, or Offload off (docs/memory.md, Host memory); " + RESTART,
         "verl#2950, EasyR1#185", node_fault=True),
    _row("npu_oom", "NPU out of memory", False, False,
         r"NPU out of memory",
         "RuntimeError: NPU out of memory. Tried to allocate 22.00 MiB (NPU 0; 60.97 GiB total capacity; ...)",
         "the NPU's memory (HBM) ran out: the rollout's share with the actor's state, or the update's activations",
         "lower verl_gpu_memory_utilization or the micro batch sizes, or turn on Recompute/Offload (docs/memory.md); "
         "a restart alone fails again at the same step",
         "vllm-ascend#19, vllm-ascend#1127"),
    _row("numpy2_tbe", "numpy 2 in CANN's TBE", False, False,
         r"\bEC0010\b|`np\.\w+` was removed in the NumPy 2\.0 release",
         "EC0010: ... Failed to import Python module [AttributeError: `np.float_` was removed in the NumPy 2.0 "
         "release. Use `np.float64` instead..]",
         "CANN's TBE op compiler imports numpy names numpy 2 removed (np.float_): the image has numpy>=2",
         "install numpy<2 in the image (pip install 'numpy<2'), as CANN requires; a restart alone fails again",
         "opendatalab/MinerU#2258, vllm-ascend#1875"),
    _row("hydra_config", "settings (Hydra) error", False, False,
         r"Could not override '|Key '[^']+' is not in struct|hydra\.errors\.\w+|omegaconf\.errors\.\w+",
         "hydra.errors.ConfigCompositionException: Could not override 'actor_rollout_ref.actor.fsdp_config."
         "grad_offload'. To append to your config use +...",
         "verl's configuration refused a key: an override of verl_extra_overrides that this verl does not have, or "
         "a key renamed between verl versions",
         "correct or remove the key it names in verl_extra_overrides (a new key takes a leading +); "
         "a restart alone fails again",
         "verl#1080"),
    # Before the general import row: the weight bridge and the model's type have fixes of their own (_versions.engine_problems).
    _row("weight_bridge", "weight bridge missing or without the model", False, False,
         r"No module named 'megatron\.bridge'|No module named 'mbridge'|Unregistered model type: |"
         r"(?:Megatron-Bridge|mbridge) package not found",
         "ModuleNotFoundError: No module named 'megatron.bridge'",
         "the weight bridge verl's Megatron worker builds the model with is not in the image (Megatron-Bridge when "
         "actor_rollout_ref.actor.megatron.vanilla_mbridge is False, else mbridge), or does not register the model's type",
         "deploy again: the container check names the bridge and the model's type before Ray; remove vanilla_mbridge=False "
         "from verl_extra_overrides, or use verl's image made for the model; a restart alone fails again",
         "verl#6931, verl#6083"),
    _row("model_type_unknown", "model type unknown to transformers", False, False,
         r"has model type `[^`]+` but Transformers does not recognize this architecture",
         "ValueError: The checkpoint you are trying to load has model type `qwen3_5` but Transformers does not recognize "
         "this architecture.",
         "the image's transformers is older than the model (its config.json's model_type came with a later release)",
         "use an image whose transformers knows the model's type (verl's image made for the model); the container check "
         "names it before Ray; a restart alone fails again",
         "vllm#36217"),
    _row("import_error", "import or missing symbol", False, False,
         r"^(?:ImportError|ModuleNotFoundError): |^OSError: .*undefined symbol",
         "ModuleNotFoundError: No module named 'vllm_ascend.distributed'",
         "a module of the engine (vLLM, vllm-ascend, torch_npu, Megatron) is missing or was built against other "
         "versions: the image's packages do not fit together, or a path shadows one (a folder named vllm)",
         "use an image whose verl, vLLM, vllm-ascend, torch_npu and CANN are one released set (docs/versions.md); "
         "a restart alone fails again",
         "vllm-ascend#1209, vllm-ascend#5497, vllm#21226"),
    _row("tbe_subprocess_gone", "TBE compiler orphaned", False, True,
         r"TBE Subprocess\[task_distribute\] raise error\[\], main process disappeared",
         "[ERROR] TBE Subprocess[task_distribute] raise error[], main process disappeared!",
         "CANN's TBE compiler processes lost their parent: the worker died first (an error above, or a kill)",
         "find the worker's own error (the first failure named above, else its node's dmesg and Ray logs)",
         "vllm-ascend#19"),
    _row("placement_group_exists", "Ray retry after a crash", False, True,
         r"Failed to create placement group '[^']*' because name '[^']*' already exists",
         "ray.exceptions.RaySystemError: System error: Failed to create placement group '...' because name "
         "'global_poolverl_group_8:0' already exists.",
         "Ray retried verl's TaskRunner after it crashed, and the retry found the first run's placement group: the "
         "first error is the crash before it, on a worker",
         "find the crash before it (the first failure named above, else every node's Ray worker logs)",
         "verl#439, Search-R1#44"),
    _row("ray_task_error", "Ray task error (wrapper)", False, True,
         r"RayTaskError(?:\([\w.]+\))?: ray::",
         "ray.exceptions.RayTaskError(ActorDiedError): ray::TaskRunner.run() (pid=121540, ip=33.103.193.204, ...)",
         "Ray's wrapper around a remote task's exception: the cause is the error inside it",
         "read the error it wraps (the first failure named above)",
         "verl#2189"),
    _row("worker_killed", "Ray worker killed", False, True,
         r"Worker unexpectedly exits with a connection error code 2|"
         r"A worker died or was killed while executing a task by an unexpected system error",
         "Worker exit type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection error code "
         "2. End of file.",
         "the driver lost a worker process without an error of its own: SIGKILL (the kernel's OOM killer most "
         "often), ray stop --force, or a crash (SIGSEGV)",
         "read that worker's node: its kernel log (dmesg: 'Out of memory: Killed process') and Ray's raylet.out",
         "verl#472, verl#4921"),
    _row("actor_died", "Ray actor died", False, True,
         r"\b(?:ActorDiedError|RayActorError|ActorUnavailableError)\b|The actor died unexpectedly before finishing this task",
         "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.",
         "the driver's view of a worker that died: the cause is that worker's own error, on its node",
         "find that worker's error (the first failure named above, else its node's Ray worker logs)",
         "verl#2189"),
    _row("python_error", "Python exception", False, False,
         r"^(?:[A-Za-z_][\w]*\.)*[A-Z]\w*(?:Error|Exception)(?:\([\w.]+\))?: ",
         "json.decoder.JSONDecodeError: Extra data: line 731 column 1 (char 60338)",
         "an exception this table does not know: the line names it (a data, reward or code error)",
         "fix what the line names (its traceback is in that node's log); a restart alone usually fails again",
         "vllm-ascend#19"),
)
GENERIC = "python_error"

# What Ray, torch and vLLM put before a line's own text; stripped before the table is tried.
PREFIX = re.compile(r"^(?:\s*(?:\(\w+(?: pid=\d+)?(?:, ip=[\d.:a-fA-F]+)?\)|\[rank\d+\]:|\[Stage-\d+\]|"
                    r"(?:INFO|WARNING|ERROR|DEBUG|CRITICAL) \d\d-\d\d [\d:]+ (?:\[)?[\w.]+:\d+\]?\]|"
                    r"\[\d{4}-\d\d-\d\d [\d:,.]+ [IWEF] \d+ \d+\](?: \(\w+\))? [\w.]+:\d+:)\s*)+")
REPEATED = re.compile(r"\s*\[repeated \d+x across cluster\].*$")
IP = re.compile(r"\(\w+ pid=\d+, ip=([\d.]+)\)")


def body(line):
    """The line's own text: without Ray's, torch's and vLLM's prefixes, nor Ray's '[repeated Nx ...]' tail."""
    return REPEATED.sub("", PREFIX.sub("", str(line).rstrip("\r\n"))).strip()


def classify(line):
    """The first row of SIGNATURES whose pattern the line holds, or None."""
    text = body(line)
    for row in SIGNATURES:
        if row["pattern"].search(text):
            return row
    return None


# The time formats found in these logs; each gives (year or None, month, day, hour, minute, second, fraction).
STAMPS = (
    # CANN (plog, EIxxxx texts, torch_npu's [ERROR] lines): 2025-07-23-03:49:57.177.194 or 2025-06-25-10:45:23
    re.compile(r"(?P<Y>\d{4})-(?P<m>\d\d)-(?P<d>\d\d)-(?P<H>\d\d):(?P<M>\d\d):(?P<S>\d\d)(?:\.(?P<f>\d{3})(?:\.(?P<u>\d{3}))?)?"),
    # Ray's C++ logs and Python logging: [2025-03-04 19:28:30,014 E ...], 2024-05-01 12:34:56,789, ISO
    re.compile(r"(?P<Y>\d{4})-(?P<m>\d\d)-(?P<d>\d\d)[ T](?P<H>\d\d):(?P<M>\d\d):(?P<S>\d\d)(?:[,.](?P<f>\d+))?"),
    # glog (I0501 12:34:56.789012) and torch's c10 logging, whose month has no leading zero ([W416 15:12:21.131066630)
    re.compile(r"(?:^|[\[\s:])[IWEF](?P<m>\d\d?)(?P<d>\d\d) (?P<H>\d\d):(?P<M>\d\d):(?P<S>\d\d)\.(?P<f>\d+)"),
    # vLLM: INFO 03-06 01:17:37 file.py:139]
    re.compile(r"\b(?:INFO|WARNING|ERROR|DEBUG|CRITICAL) (?P<m>\d\d)-(?P<d>\d\d) (?P<H>\d\d):(?P<M>\d\d):(?P<S>\d\d)\b"),
)
KERNEL = re.compile(r"^\[\s*(\d+\.\d+)\]")


def stamp(line, utc_offset=0, year=None, boot=None):
    """The epoch seconds a log line names (its local time read with the node's UTC offset), or None. A format without
    the year takes `year` (default: this year); the kernel's '[ seconds]' needs the node's `boot` time."""
    text = str(line)
    match = KERNEL.match(text)
    if match:
        return boot + float(match.group(1)) if boot is not None else None
    for pattern in STAMPS:
        match = pattern.search(text)
        if not match:
            continue
        part = match.groupdict()
        fraction = float("0." + part["f"]) if part.get("f") else 0.0
        try:
            when = calendar.timegm((int(part.get("Y") or year or time.gmtime().tm_year), int(part["m"]), int(part["d"]),
                                    int(part["H"]), int(part["M"]), int(part["S"]), 0, 0, 0))
        except (ValueError, OverflowError):
            continue
        return when - utc_offset + fraction
    return None


def events(node, file, lines, mtime=None, utc_offset=0, boot=None, ip_nodes=None):
    """The matching lines of one file as events {node, clock, file, index, time, line, row}, in the file's order (time:
    on the clock of `clock`, the node read). `lines` are
    strings or (index, string) pairs (a reader that kept only the matching lines and the stamped lines before them).
    A line without a time of its own takes the nearest stamped line's before it, else after it, else the file's
    mtime. A worker's line forwarded to the driver ('(WorkerDict pid=N, ip=A)') is that worker's node's when
    `ip_nodes` maps A to a node."""
    year = time.gmtime(mtime).tm_year if mtime else None
    numbered = [(item[0], str(item[1])) if isinstance(item, (list, tuple)) else (index, str(item))
                for index, item in enumerate(lines or [])]
    stamps = [stamp(text, utc_offset, year, boot) for _index, text in numbered]
    found, last = [], None
    for position, (index, text) in enumerate(numbered):
        last = stamps[position] if stamps[position] is not None else last
        row = classify(text)
        if row is None:
            continue
        when = last
        if when is None:
            when = next((value for value in stamps[position:] if value is not None), mtime)
        where = IP.search(text)
        owner = (ip_nodes or {}).get(where.group(1), node) if where else node
        found.append({"node": owner, "clock": node, "file": file, "index": index, "time": when, "line": body(text)[:400],
                      "row": row})
    return found


def _order(event, offsets, nodes):
    when = event["time"]
    return (when - float(offsets.get(event.get("clock", event["node"]), 0) or 0) if when is not None else float("inf"),
            nodes.index(event["node"]) if event["node"] in nodes else len(nodes), event["file"], event["index"])


def _beside(first, event):
    """Whether `event` is part of the same report as `first`: the same node within 5 s after it, or, untimed, the
    next 10 lines of its file."""
    if event["node"] != first["node"]:
        return False
    if first["time"] is not None and event["time"] is not None:
        return 0 <= event["time"] - first["time"] <= 5
    return event["file"] == first["file"] and 0 < event["index"] - first["index"] <= 10


def first_failure(events_by_node, offsets=None, since=None):
    """The first failure of every node's events, on the controller's clock (`offsets`: seconds each node's clock is
    ahead of the controller's). Followers are passed over while any other error is found; the general Python row
    gives way to a specific one beside it (torch_npu's wrapper line and its CANN text). Lines timed before `since`
    (the training's start, on the controller's clock) belong to an earlier run and are left out. Returns
    {'healthy', 'first', 'followers', 'evidence'}: 'first' is None when no line matched."""
    offsets = offsets or {}
    nodes = list(events_by_node or {})
    every = sorted((event for node in nodes for event in events_by_node[node] or []),
                   key=lambda event: _order(event, offsets, nodes))
    evidence = [dict(event, time=_order(event, offsets, nodes)[0]) for event in every]
    for event in evidence:
        event["time"] = None if event["time"] == float("inf") else event["time"]
    evidence = [event for event in evidence if since is None or event["time"] is None or event["time"] >= since]
    causes = [event for event in evidence if not event["row"]["follower"]]
    first = causes[0] if causes else (evidence[0] if evidence else None)
    if first is not None and first["row"]["key"] == GENERIC:
        first = next((event for event in causes if event["row"]["key"] != GENERIC and _beside(first, event)), first)
    if first is None:
        return {"healthy": True, "first": None, "followers": 0, "evidence": []}
    row = first["row"]
    return {"healthy": False,
            "first": {"node": first["node"], "file": first["file"], "time": first["time"], "line": first["line"],
                      "key": row["key"], "class": row["class"], "cause": row["cause"], "fix": row["fix"],
                      "transient": row["transient"], "source": row["source"], "only_followers": not causes,
                      "node_fault": row["node_fault"]},
            "followers": sum(1 for event in evidence if event["row"]["follower"]),
            "evidence": [{"node": event["node"], "file": event["file"], "time": event["time"], "line": event["line"],
                          "key": event["row"]["key"], "follower": event["row"]["follower"]} for event in evidence]}


def _utc(seconds):
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(seconds)) if seconds is not None else "time unknown"


def say(verdict):
    """(at most 3 lines for status, the same as data for its stats). A healthy verdict says nothing."""
    first = (verdict or {}).get("first")
    if not first:
        return [], {"failed": False}
    nodes = sorted({event["node"] for event in verdict["evidence"]})
    kind = ("transient: a restart from the last checkpoint can get past it" if first["transient"]
            else "deterministic: a restart repeats it")
    lead = "only followers found, the first" if first["only_followers"] else "first failure"
    lines = ["%s: %s at %s, %s: %s" % (lead, first["node"], _utc(first["time"]), first["class"], first["line"][:200]),
             "cause (%s): %s" % (kind, first["cause"]),
             "fix: %s. %d matching line(s) on %s (%d follower(s)) in the log file"
             % (first["fix"], len(verdict["evidence"]), ", ".join(nodes), verdict["followers"])]
    stats = {"failed": True, "node": first["node"], "time": first["time"], "file": first["file"],
             "line": first["line"], "class": first["class"], "signature": first["key"], "cause": first["cause"],
             "fix": first["fix"], "transient": first["transient"], "source": first["source"],
             "only_followers": first["only_followers"], "followers": verdict["followers"], "nodes": nodes}
    return lines, stats


def evidence_lines(verdict):
    """Every matching line in time order, for the log file and the logs bundle: 'UTC time  node  file: line'."""
    return ["%s  %s  %s: %s%s" % (_utc(event["time"]), event["node"], event["file"], event["line"],
                                  "  (follower)" if event["follower"] else "") for event in (verdict or {}).get("evidence", [])]


def diagnose(head_lines, nodes=None, offsets=None, head="head", ip_nodes=None, since=None):
    """status's one call: the head's training log tail (lines) and, when read, each node's files
    ({node: {'clock': {'utc_offset', 'boot'}, 'files': [{'path', 'mtime', 'lines'}]}}, failure_scan's answer), each
    node's clock offset to the controller's, the node of each IP, the training's start -> (at most 3 lines, stats; the stats of
    a failure hold every matching line in time order as evidence)."""
    clock = ((nodes or {}).get(head) or {}).get("clock") or {}
    found = {head: events(head, "training log", head_lines, None, clock.get("utc_offset", 0), None, ip_nodes)}
    for node, answer in (nodes or {}).items():
        clock = answer.get("clock") or {}
        for item in answer.get("files") or []:
            found.setdefault(node, []).extend(events(node, item["path"], item.get("lines"), item.get("mtime"),
                                                     clock.get("utc_offset", 0), clock.get("boot"), ip_nodes))
    verdict = first_failure(found, offsets, since)
    lines, stats = say(verdict)
    return lines, dict(stats, evidence=evidence_lines(verdict)) if stats["failed"] else stats


# What logs.yml's bundle holds of a node that the diagnosis reads (roles/day2/vars/main.yml: _day2_logs_sources): the
# training's logs and starts' output, Ray's session logs, CANN's plog and the host's NPU log (not the scripts, the deploy's
# state or the commands' output).
BUNDLE_SOURCES = ("training", "ray", "cann-plog", "host-npu-log")


def diagnose_bundle(folder, head, max_kb=256):
    """logs.yml's collection (<folder>/<node>/<source>/...): the first failure of every node's collected logs, each file's
    last max_kb KB read, the nodes' clocks taken as the controller's (the bundle measures none), the lines and files
    before the head's training started (its deploy-state/started_at, less ten minutes) left out as an earlier run's.
    The text of first-failure.txt: the three lines (or that none was found), then every matching line in time order."""
    found = {}
    for node in sorted(os.listdir(folder)):
        for source in BUNDLE_SOURCES:
            root = os.path.join(folder, node, source)
            for path in sorted(os.path.join(where, name) for where, _dirs, names in os.walk(root) for name in names):
                try:
                    with open(path, "rb") as handle:
                        handle.seek(max(0, os.path.getsize(path) - max_kb * 1024))
                        lines = handle.read().decode("utf-8", "replace").splitlines()
                    mtime = os.path.getmtime(path)
                except OSError:
                    continue
                found.setdefault(node, []).extend(events(node, os.path.relpath(path, os.path.join(folder, node)), lines, mtime))
    try:
        with open(os.path.join(folder, head, "deploy-state", "started_at"), encoding="utf-8") as handle:
            since = float(handle.read().strip()) - 600
    except (OSError, ValueError):
        since = None
    verdict = first_failure(found, None, since)
    lines, _stats = say(verdict)
    return "\n".join((lines or ["no line of the failure table (docs/troubleshooting.md) in the collected logs"]) + [""]
                     + evidence_lines(verdict)) + "\n"
