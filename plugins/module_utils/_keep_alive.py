# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Private to the verl.deploy collection: may change without notice.
"""Keep-alive: whether a training that just ended with a failure is started again from its last checkpoint.

Decided on the head, by the training's supervisor (verl_control.sh supervise), the moment the trainer exits: no playbook
runs between the fault and the resumed training. The deploy installs this file and _failures.py beside the control
script; the supervisor runs `python3 -I -B _keep_alive.py decide ...`, which reads this attempt's training log and the
head's Ray logs and asks the head's Ray which nodes left, names the first failure from the failure table (_failures.SIGNATURES, the same table status reads),
decides with `decide` (pure) and appends the decision, one JSON line, to <state folder>/keep_alive.jsonl, which
training-state answers and status shows.
"""
from __future__ import annotations

import glob
import json
import os
import sys
import time

try:
    from ansible_collections.verl.deploy.plugins.module_utils._failures import events, first_failure
except ImportError:  # on a node: _failures.py is beside this file
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from _failures import events, first_failure  # pylint: disable=import-error

RECORDS = "keep_alive.jsonl"
# The wait before a restart doubles with each restart in the window, up to this.
MAX_WAIT = 1800
# What the supervisor reads of each file: its last KB, like status' scan.
READ_KB = 256


# A node that left the Ray cluster (its container or host restarted, its Ray was stopped): not a line of any log, but the
# NPUs the head's Ray lists alive when the training ended, fewer than it trains on. Transient: a worker whose container
# restarts joins again by itself (verl_control.sh come-back), and the restart waits for every NPU (start_verl.sh train).
NODE_LEFT = {"key": "node_left", "class": "a node left the Ray cluster", "transient": True, "node_fault": False,
             "only_followers": False, "node": "", "line": ""}


def ray_now(address, since, need, names=None):
    """(have, left, need) for decide: the NPUs of the nodes the head's GCS at `address` lists alive, the nodes that left
    during the attempt, by inventory name (names: Ray's node IP -> inventory name; else the IP), and the NPUs the training
    needs. Left: listed dead since `since` (a node that left and joined again is a new node; its old one is dead). None
    when Ray does not answer (no GCS, no ray module, a silent GCS: bounded by 10 s)."""
    if not address:
        return None
    try:
        from ray._raylet import GcsClient  # pylint: disable=import-outside-toplevel  # the image's Ray, only here
        from ray.core.generated import gcs_pb2  # pylint: disable=import-outside-toplevel

        nodes = list(GcsClient(address=address).get_all_node_info(timeout=10).values())
    except Exception:  # pylint: disable=broad-except  # whatever Ray raises, nothing is known of the nodes
        return None
    alive = sum(dict(node.resources_total).get("NPU", 0) for node in nodes if node.state == gcs_pb2.GcsNodeInfo.ALIVE)
    left = dict.fromkeys((names or {}).get(node.node_manager_address, node.node_manager_address) for node in nodes
                         if node.state == gcs_pb2.GcsNodeInfo.DEAD and node.end_time_ms / 1000.0 >= since)
    return int(alive), list(left), need


def node_names(text):
    """Ray's node IP -> inventory name, from verl_control.env's RAY_NAMES ("IP=NAME,IP=NAME")."""
    return dict(entry.split("=", 1) for entry in str(text or "").split(",") if "=" in entry)


def settled(look, first, seconds=30, every=5, sleep=time.sleep):
    """Ray's view once it has settled: a worker whose node went away fails the driver's call at once (ActorUnavailableError,
    a follower), before Ray's health check lists the node dead (5 failed checks 3 s apart); while only followers are known and every node
    still reads alive, look again every `every` s, for at most `seconds`."""
    npus = look()
    waited = 0
    while npus and npus[0] >= npus[2] and not npus[1] and (not first or first.get("only_followers")) and waited < seconds:
        sleep(every)
        waited += every
        npus = look()
    return npus


def decide(first, history, now, step, policy, npus=None):
    """(restart, why, wait, first): whether the training that failed with `first` (first_failure's 'first', or None) at
    `step` is started again, and the cause decided on. history: this training's earlier decisions (records); policy:
    {'max', 'window', 'wait'} (restarts allowed within window seconds, the first wait in seconds); npus: (have, left, need),
    the NPUs Ray lists alive, the names of the nodes it lists dead since the attempt began and the NPUs the training needs
    (fewer alive, or one dead: a node left, NODE_LEFT, whatever the logs say). Never: keep-alive off, no line of the table,
    a deterministic failure (a follower alone too: the cause is another node's, unread here), the same failure at the same
    step as a restart before (the retry repeated it), a node's own fault or a node that left Ray a second time in the
    window (that node is named, to be taken out), the bound reached."""
    allowed, window = int(policy.get("max") or 0), int(policy.get("window") or 0)
    if npus and (npus[0] < npus[2] or npus[1]):
        first = dict(NODE_LEFT, node=", ".join(npus[1]), left=list(npus[1]), line="%s left Ray during the attempt; %d of %d NPUs "
                     "in it when the training ended" % (", ".join(npus[1]) or "a node", npus[0], npus[2]))
    if allowed <= 0:
        return False, "keep-alive is off (verl_keep_alive=0)", 0, first
    if not first:
        return False, "no line of the failure table in this node's logs: the cause is unknown here, so it is not restarted", 0, first
    if first.get("only_followers"):
        return False, ("only a follower here (%s): the first failure is on another node (status.yml names it), so it is not "
                       "restarted" % first["class"]), 0, first
    if not first["transient"]:
        return False, "%s is deterministic: a restart repeats it" % first["class"], 0, first
    restarts = [record for record in history if record.get("decision") == "restart"]
    recent = [record for record in restarts if now - float(record.get("time") or 0) < window]
    # A node that fails twice in the window is taken for a faulty node: named, with the inventory change to make.
    take_out = "take that node out (remove it from the inventory's ray_head or ray_workers group, or fix it), then run deploy.yml"
    if first.get("node_fault") and any(record.get("node") == first["node"] and record.get("node_fault") for record in recent):
        return False, "%s on %s a second time within %d s: %s" % (first["class"], first["node"], window, take_out), 0, first
    again = [node for node in first.get("left") or [] if any(node in (record.get("left") or []) for record in recent)]
    if again:
        return False, "%s left the Ray cluster a second time within %d s: %s" % (", ".join(again), window, take_out), 0, first
    if any(record.get("key") == first["key"] and str(record.get("step")) == str(step) for record in restarts):
        return False, ("%s again at step %s, as before the last restart: it repeats, so it is taken as deterministic"
                       % (first["class"], step or "unknown")), 0, first
    if len(recent) >= allowed:
        return False, ("%d restart(s) within the last %d s already (verl_keep_alive=%d, verl_keep_alive_window=%d)"
                       % (len(recent), window, allowed, window)), 0, first
    wait = min(MAX_WAIT, int(policy.get("wait") or 0) * 2 ** len(recent))
    return True, "%s is transient: restart %d of %d within %d s" % (first["class"], len(recent) + 1, allowed, window), wait, first


def _tail(path, since):
    """The last READ_KB KB of a file changed since `since`, as lines, and its mtime; ([], None) otherwise."""
    try:
        mtime = os.path.getmtime(path)
        if since and mtime < since:
            return [], None
        with open(path, "rb") as handle:
            handle.seek(max(0, os.path.getsize(path) - READ_KB * 1024))
            return handle.read().decode("utf-8", "replace").splitlines(), mtime
    except OSError:
        return [], None


def first_here(host, log, ray_dir, since):
    """The first failure this node's files hold since the attempt began: the training log, then Ray's session logs."""
    found, offset = [], time.localtime().tm_gmtoff  # the logs' local times, on this node's clock
    logs = os.path.join(ray_dir, "session_latest", "logs")
    for path in [log] + sorted(glob.glob(os.path.join(logs, "*.err")) + glob.glob(os.path.join(logs, "raylet.out")))[-100:]:
        lines, mtime = _tail(path, since) if path else ([], None)
        found += events(host, os.path.basename(path), lines, mtime, offset)
    return first_failure({host: found}, since=since - 5 if since else None)["first"]


def _records(state_dir):
    try:
        with open(os.path.join(state_dir, RECORDS), encoding="utf-8") as handle:
            return [json.loads(line) for line in handle if line.strip().startswith("{")]
    except (OSError, ValueError):
        return []


def _read(path):
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().strip()
    except OSError:
        return ""


def main(argv, env):
    """decide STATE_DIR LOG RAY_DIR CKPTS_DIR HOST CODE: the decision, appended to STATE_DIR/keep_alive.jsonl and printed."""
    if argv[1:2] != ["decide"] or len(argv) != 8:
        sys.stderr.write("usage: _keep_alive.py decide STATE_DIR LOG RAY_DIR CKPTS_DIR HOST CODE\n")
        return 2
    state_dir, log, ray_dir, ckpts_dir, host, code = argv[2:8]
    now = time.time()
    since = float(_read(os.path.join(state_dir, "attempt_at")) or _read(os.path.join(state_dir, "started_at")) or 0)
    first = first_here(host, log, ray_dir, since)
    step = (_read(os.path.join(state_dir, "last_step")).split(" ") + [""])[1]
    policy = {"max": env.get("KEEP_ALIVE", "0"), "window": env.get("KEEP_ALIVE_WINDOW", "0"),
              "wait": env.get("KEEP_ALIVE_WAIT", "0")}
    need = int(env.get("KEEP_ALIVE_NPUS") or 0)
    names = node_names(env.get("RAY_NAMES"))
    # Off (verl_keep_alive=0) nothing is started again: Ray's view is read once, not waited on to settle (status and the
    # deploy wait for this decision).
    seconds = 30 if policy["max"].strip() not in ("", "0") else 0
    npus = settled(lambda: ray_now(env.get("KEEP_ALIVE_GCS"), since, need, names), first, seconds)
    restart, why, wait, first = decide(first, _records(state_dir), now, step, policy, npus)
    # Where it resumes from: the checkpoint verl's tracker names when this training saved one, else where it began.
    tracker = os.path.join(ckpts_dir, "latest_checkpointed_iteration.txt")
    saved = os.path.exists(tracker) and os.path.getmtime(tracker) >= float(_read(os.path.join(state_dir, "started_at")) or 0)
    record = {"time": now, "decision": "restart" if restart else "give-up", "why": why, "wait": wait, "exit_code": code,
              "step": step, "resume_from": _read(tracker) if saved else "", "node": (first or {}).get("node", ""),
              "key": (first or {}).get("key", ""), "class": (first or {}).get("class", ""),
              "line": (first or {}).get("line", "")[:300], "node_fault": bool((first or {}).get("node_fault")),
              "left": (first or {}).get("left") or []}
    with open(os.path.join(state_dir, RECORDS), "a", encoding="utf-8") as handle:
        handle.write(json.dumps(record, sort_keys=True) + "\n")
    sys.stdout.write("%s %d %s\n" % (record["decision"], wait, "auto" if saved else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv, os.environ))
