# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) verl-deploy maintainers
"""One node's error lines of a failed training (verl.deploy.failure_scan's, and verl.deploy.node_status's for status.yml):
Ray's session logs and CANN's plog read in the training container by a fixed reader script, the kernel's OOM kills and
npu-smi's health on the host, each bounded, nothing changed."""
from __future__ import annotations

import json
import re
import time

from ansible_collections.verl.deploy.plugins.module_utils._control_step import run_command
from ansible_collections.verl.deploy.plugins.module_utils._failures import PREFIX, SIGNATURES
from ansible_collections.verl.deploy.plugins.module_utils._npu_smi import NpuSmiError, bounded, checked_output, locate, parse_info

# The options of the scan (failure_scan's, node_status' scan_* ones), with their defaults.
DEFAULTS = {"ray_temp_dir": "/tmp/ray", "plog_dirs": [], "kernel": True, "npu_smi_path": None, "max_kb": 256,
            "max_lines": 200, "max_files": 100, "since": 0.0, "timeout": 20}

MATCH = "|".join("(?:%s)" % row["pattern"].pattern for row in SIGNATURES)
STAMPED = r"\d\d:\d\d:\d\d|^\[\s*\d+\.\d+\]"

# Runs in the container as `python3 - ARGS` (python3 is in every verl image). It prints ONE JSON document, every value
# a string (a file name or a line with any byte stays inside its field), and nothing else on stdout.
READER = r'''
import glob, json, os, re, sys, time
args = json.loads(sys.argv[1])
match, prefix, stamped = re.compile(args["match"]), re.compile(args["prefix"]), re.compile(args["stamped"])
limit, max_lines, max_files = int(args["max_kb"]) * 1024, int(args["max_lines"]), int(args["max_files"])
since = float(args["since"])
files, missing = [], []

def read(path):
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            handle.seek(max(0, size - limit))
            text = handle.read(limit).decode("utf-8", "replace")
            mtime = os.fstat(handle.fileno()).st_mtime
    except OSError as exc:
        missing.append({"path": path, "reason": str(exc)})
        return
    lines = text.splitlines()
    if size > limit:
        lines = lines[1:]
    kept, last = [], None
    for index, line in enumerate(lines):
        if match.search(prefix.sub("", line)):
            if last is not None and not stamped.search(line) and (not kept or kept[-1][0] != str(last)):
                kept.append([str(last), lines[last][:2000]])
            kept.append([str(index), line[:2000]])
        if stamped.search(line):
            last = index
    if kept:
        files.append({"path": path, "mtime": repr(mtime), "size": str(size), "lines": kept[-max_lines:]})

def written(path):
    try:
        return os.path.getmtime(path)
    except OSError:  # gone since it was listed
        return -1.0

def folder(root, patterns, depth):
    if not os.path.isdir(root):
        missing.append({"path": root, "reason": "no such folder"})
        return
    found = []
    for level in range(depth + 1):
        for pattern in patterns:
            found += [path for path in glob.glob(os.path.join(root, *(["*"] * level + [pattern]))) if os.path.isfile(path)]
    found = sorted((path for path in set(found) if written(path) >= since), key=written, reverse=True)
    for path in found[:max_files]:
        read(path)

folder(os.path.join(args["ray_temp_dir"], "session_latest", "logs"), ["*.err", "*.out"], 0)
plogs = args["plog_dirs"] or [os.environ.get("ASCEND_PROCESS_LOG_PATH") or os.path.join(os.environ.get("HOME") or "/root", "ascend", "log")]
for root in plogs:
    folder(root, ["*.log"], 3)
now = time.time()
clock = {"now": repr(now), "utc_offset": str(time.localtime(now).tm_gmtoff)}
sys.stdout.write(json.dumps({"clock": clock, "files": files, "missing": missing}))
'''


def reader_args(params):
    return json.dumps({"match": MATCH, "prefix": PREFIX.pattern, "stamped": STAMPED,
                       "ray_temp_dir": params["ray_temp_dir"], "plog_dirs": params["plog_dirs"],
                       "max_kb": str(params["max_kb"]), "max_lines": str(params["max_lines"]),
                       "max_files": str(params["max_files"]), "since": repr(float(params["since"]))})


def parse_answer(text):
    """The reader's JSON document with its numbers as numbers; ValueError when it is not one."""
    answer = json.loads(text)
    clock = {key: float(value) for key, value in answer["clock"].items()}
    files = [{"path": item["path"], "mtime": float(item["mtime"]), "size": int(item["size"]),
              "lines": [[int(index), line] for index, line in item["lines"]]} for item in answer["files"]]
    return {"clock": clock, "files": files, "missing": list(answer["missing"])}


def kernel_lines(rc, out, err, max_lines):
    """(the file entry of dmesg's matching lines or None, the missing entry or None)."""
    if rc != 0:
        reason = (err or "").strip().splitlines()[-1:] or ["exit code %d" % rc]
        return None, {"path": "dmesg", "reason": "%s (kernel.dmesg_restrict: run with become to read it)" % reason[0]}
    pattern = re.compile(MATCH)
    kept = [[index, line] for index, line in enumerate(out.splitlines()) if pattern.search(line)]
    return ({"path": "dmesg", "mtime": None, "size": len(out), "lines": kept[-max_lines:]} if kept else None), None


def npu_health_lines(rc, out, err, now):
    """(the file entry of npu-smi info's NPUs whose health is not OK, or of its dcmi error, or None; the missing entry or None).
    Its lines are the failure table's npu_health row's, timed `now` (npu-smi reads the health now): they come after every
    log line of the failure, so they are the first failure only when no log names one."""
    try:
        facts = parse_info(checked_output(["npu-smi", "info"], rc, out, err))
    except NpuSmiError as exc:
        if exc.code is None:
            return None, {"path": "npu-smi info", "reason": exc.msg}
        said = [line.strip() for line in (out + "\n" + err).splitlines() if "dcmi" in line and "ret is" in line][:1]
        lines = [[0, said[0] if said else exc.msg]]
    else:
        lines = [[index, "NPU %s (%s) Health: %s" % (npu["npu_id"], npu["name"], npu["health"])]
                 for index, npu in enumerate(facts["npus"]) if npu["health"] != "OK"]
    return ({"path": "npu-smi info", "mtime": now, "size": len(out), "lines": lines} if lines else None), None


def boot_time():
    try:
        with open("/proc/uptime") as handle:
            return time.time() - float(handle.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def scan(module, params, docker, npu_smi_info=None):
    """The scan of one node: {clock, files, missing}. params: DEFAULTS' keys and the container; docker: the client, or None
    when the host has none; npu_smi_info: (npu-smi, rc, stdout, stderr) of an `npu-smi info` already run, else it is run here
    (params["npu_smi_path"] "" reads no health)."""
    result = {"clock": {}, "files": [], "missing": []}
    if not docker:
        result["missing"].append({"path": params["container"], "reason": "no docker client on the host"})
    else:
        # The collection's one way to run in a container (node_step's), the reader on stdin, bounded: a hung docker
        # daemon must not hold status.yml.
        done = run_command(["python3", "-", reader_args(params)], params["container"], docker, stdin=READER,
                           timeout=params["timeout"])
        if done.get("failed") or done["rc"] != 0:
            reason = done.get("msg") or ((done["stderr"].strip().splitlines() or ["exit code %d" % done["rc"]])[-1])
            result["missing"].append({"path": params["container"], "reason": reason})
        else:
            try:
                result.update(parse_answer(done["stdout"]))
            except (ValueError, KeyError, TypeError) as exc:
                result["missing"].append({"path": params["container"], "reason": "not the reader's answer: %s" % exc})
    if params["kernel"]:
        dmesg = module.get_bin_path("dmesg")
        rc, out, err = module.run_command([dmesg]) if dmesg else (127, "", "dmesg: not found")
        found, miss = kernel_lines(rc, out, err, params["max_lines"])
        result["files"] += [found] if found else []
        result["missing"] += [miss] if miss else []
    if npu_smi_info is None and params["npu_smi_path"] != "":
        npu_smi, why = locate(module, params["npu_smi_path"], "verl_npu_smi_path")
        npu_smi_info = (npu_smi,) + (bounded(module, params["timeout"])([npu_smi, "info"]) if npu_smi else (127, "", why))
    if npu_smi_info is not None:
        npu_smi, rc, out, err = npu_smi_info
        found, miss = npu_health_lines(rc, out, err, time.time()) if npu_smi else (None, {"path": "npu-smi info", "reason": err})
        result["files"] += [found] if found else []
        result["missing"] += [miss] if miss else []
    result["clock"]["boot"] = boot_time()
    return result
