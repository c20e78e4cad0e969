#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) verl-deploy maintainers

from __future__ import annotations

DOCUMENTATION = r"""
---
module: failure_scan
short_description: Read a node's error lines of a failed training - Ray's session logs, CANN's plog, the kernel's OOM kills, the NPUs' health
version_added: 0.1.0
description:
  - One bounded, read-only look at a node for the failure diagnosis of C(status.yml). In the training container (C(docker exec
    CONTAINER python3 -) with a fixed reader script, as Ray's temp folder is inside the container) it reads Ray's session logs
    (C(<ray_temp_dir>/session_latest/logs/*.err), C(*.out), the raylet's among them) and CANN's plog (E(ASCEND_PROCESS_LOG_PATH)
    when set in the container, else C(~/ascend/log)); on the host, the kernel's log (C(dmesg)) where the user may read it, and
    the Health column of C(npu-smi info) (a chip whose health is not OK, or an npu-smi that fails with a dcmi error, is a line
    of the failure table; a healthy node adds none).
  - Of each file only its last O(max_kb) KB are read, and only the lines of the failure table
    (C(plugins/module_utils/_failures.py)) are returned, each with the stamped line before it (for its time), at most
    O(max_lines) per file, the newest O(max_files) files of each folder.
  - The container's clock (C(now), its UTC offset) and the host's boot time come back with the lines, for the controller to
    order the nodes' lines on its own clock.
  - What cannot be read (no container, no folder, C(dmesg) refused by C(kernel.dmesg_restrict), no npu-smi) is in RV(missing), never
    a failure.
options:
  container:
    description: The training container.
    type: str
    required: true
  docker:
    description: The docker client; searched on E(PATH) when not given.
    type: path
  ray_temp_dir:
    description: Ray's temp folder in the container (C(ray start --temp-dir)).
    type: str
    default: /tmp/ray
  plog_dirs:
    description: CANN's log folders in the container; empty - E(ASCEND_PROCESS_LOG_PATH) of the container, else C(~/ascend/log).
    type: list
    elements: str
    default: []
  kernel:
    description: Read the host's kernel log with C(dmesg).
    type: bool
    default: true
  npu_smi_path:
    description: The host's npu-smi, whose C(npu-smi info) gives each chip's health; searched on E(PATH) and in C(/usr/local/sbin)
      when not given. The empty string reads no health.
    type: str
  max_kb:
    description: At most this many KB (the end) of each file are read.
    type: int
    default: 256
  max_lines:
    description: At most this many matching lines (the last) are returned per file.
    type: int
    default: 200
  max_files:
    description: At most this many files (the newest) are read per folder (with O(max_kb), a bound of about 25 MB read per folder, a few seconds).
    type: int
    default: 100
  since:
    description:
      - Epoch seconds (the container's clock) of the training's start; files not written since are left out (an earlier
        run's, as Ray keeps one session folder for every job of the cluster).
    type: float
    default: 0
  timeout:
    description: Seconds the container's read may take.
    type: int
    default: 20
extends_documentation_fragment:
  - verl.deploy.attributes.read_only
notes:
  - Nothing is changed on the host or in the container.
author:
  - verl-deploy maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Read this node's error lines
  verl.deploy.failure_scan:
    container: verl
  register: __day2_failure_scan
"""

RETURN = r"""
clock:
  description: The container's clock when read (C(now), epoch seconds), its C(utc_offset) (seconds) and the host's C(boot) time.
  returned: always (C(boot) only when the container did not answer)
  type: dict
  sample: {now: 1733550000.25, utc_offset: 28800, boot: 1733000000.0}
files:
  description: Per file read, its C(path), C(mtime), C(size) and C(lines) - [index, text] pairs of the matching lines and the stamped lines before them.
  returned: always
  type: list
  elements: dict
missing:
  description: What could not be read and why.
  returned: always
  type: list
  elements: dict
"""
import json
import re
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.verl.deploy.plugins.module_utils._control_step import argument_problem, run_command
from ansible_collections.verl.deploy.plugins.module_utils._failures import PREFIX, SIGNATURES
from ansible_collections.verl.deploy.plugins.module_utils._npu_smi import NpuSmiError, bounded, checked_output, locate, parse_info

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


def main():
    module = AnsibleModule(
        argument_spec=dict(
            container=dict(type="str", required=True),
            docker=dict(type="path"),
            ray_temp_dir=dict(type="str", default="/tmp/ray"),
            plog_dirs=dict(type="list", elements="str", default=[]),
            kernel=dict(type="bool", default=True),
            npu_smi_path=dict(type="str"),
            max_kb=dict(type="int", default=256),
            max_lines=dict(type="int", default=200),
            max_files=dict(type="int", default=100),
            since=dict(type="float", default=0),
            timeout=dict(type="int", default=20),
        ),
        supports_check_mode=True,
    )
    params = module.params
    problem = argument_problem({"container": params["container"]})
    if problem:
        module.fail_json(msg=problem)
    result = {"changed": False, "clock": {}, "files": [], "missing": []}
    docker = params["docker"] or module.get_bin_path("docker")
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
    if params["npu_smi_path"] != "":
        npu_smi, why = locate(module, params["npu_smi_path"], "verl_npu_smi_path")
        rc, out, err = bounded(module, params["timeout"])([npu_smi, "info"]) if npu_smi else (127, "", why)
        found, miss = npu_health_lines(rc, out, err, time.time()) if npu_smi else (None, {"path": "npu-smi info", "reason": why})
        result["files"] += [found] if found else []
        result["missing"] += [miss] if miss else []
    result["clock"]["boot"] = boot_time()
    module.exit_json(**result)


if __name__ == "__main__":
    main()
