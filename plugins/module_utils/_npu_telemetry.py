# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) verl-deploy maintainers

# This module_utils is PRIVATE and should only be used by this collection. Breaking changes can occur any time.

"""What status.yml makes of the NPU samplers' lines (roles/training/files/npu_sampler.py writes them, one JSON line per
sample: time, node, every, processes, npus: [{id, hbm_used_mb, hbm_total_mb, aicore_pct, temp_c, health, power_w}], or
an error, or why its SwanLab charts went off): each node's use over its last samples, and a node whose NPUs idle while the others work.
Pure functions; status_report (_training_state.py) calls them with the records each node's status step answered (_control_step.status_answer reads them)."""

from __future__ import annotations

from ansible_collections.verl.deploy.plugins.module_utils._report import terminal_text

# A node idles while the others work when its mean AICore is at most this share of the other nodes' mean, and theirs is
# at least WORK_PCT (a rollout's decoding keeps AICore low: the captures of vLLM serving show 7 to 12 %).
IDLE_SHARE = 0.2
WORK_PCT = 5.0
# A node's samples are recent when the newest is at most this many intervals old (and at least STALE_FLOOR seconds).
STALE_INTERVALS = 3
STALE_FLOOR = 90


def _numbers(entries, key):
    return [entry[key] for entry in entries if isinstance(entry, dict) and isinstance(entry.get(key), (int, float))]


def node_use(records, clock):
    """One node's use from its last records (clock: the node's time when it answered, as a number, or None).

    Returns None without a record, else {time, age (s, None without a clock), every, recent (bool), samples (how many the
    figures are of), aicore_pct (the mean over its NPUs and samples), hbm_used_gb and hbm_total_gb (the newest sample),
    temp_max_c (over the samples), power_w (the newest sample's sum), unhealthy (the ids not OK in the newest), error (the
    newest record's, when it is one), swanlab (why the sampler's SwanLab charts went off, when a record says so)}."""
    if not records:
        return None
    newest = records[-1]
    samples = [record for record in records if isinstance(record.get("npus"), list)]
    every = newest.get("every") if isinstance(newest.get("every"), int) and newest.get("every") > 0 else 30
    age = int(clock) - newest["time"] if isinstance(clock, (int, float)) else None
    use = {"time": newest["time"], "age": age, "every": every, "samples": len(samples),
           "recent": age is not None and age <= max(STALE_INTERVALS * every, STALE_FLOOR),
           # A node's own words (npu-smi's error, its health words) pass the terminal's gate on their way to the stats.
           "error": terminal_text(newest["error"]) if isinstance(newest.get("error"), str) else None,
           "swanlab": next((terminal_text(record["swanlab"]) for record in records if isinstance(record.get("swanlab"), str)), None),
           "aicore_pct": None, "hbm_used_gb": None, "hbm_total_gb": None, "temp_max_c": None, "power_w": None, "unhealthy": []}
    if not samples:
        return use
    aicore = [value for record in samples for value in _numbers(record["npus"], "aicore_pct")]
    temps = [value for record in samples for value in _numbers(record["npus"], "temp_c")]
    last = samples[-1]["npus"]
    use.update({
        "aicore_pct": round(sum(aicore) / float(len(aicore)), 1) if aicore else None,
        "hbm_used_gb": round(sum(_numbers(last, "hbm_used_mb")) / 1024.0, 1) if _numbers(last, "hbm_total_mb") else None,
        "hbm_total_gb": round(sum(_numbers(last, "hbm_total_mb")) / 1024.0, 1) if _numbers(last, "hbm_total_mb") else None,
        "temp_max_c": max(temps) if temps else None,
        "power_w": round(sum(_numbers(last, "power_w")), 1) if _numbers(last, "power_w") else None,
        "unhealthy": [terminal_text("%s (%s)" % (entry.get("id"), entry.get("health"))) for entry in last
                      if isinstance(entry, dict) and entry.get("health") not in (None, "OK")],
    })
    return use


def idle_nodes(uses):
    """The nodes whose NPUs idle while the others work, from {node: node_use(...)}: only nodes with recent samples count,
    and only when at least two have them. Returns [(node, its AICore %, the others' mean AICore %)]."""
    busy = {node: use["aicore_pct"] for node, use in uses.items()
            if use and use["recent"] and use["samples"] and use["aicore_pct"] is not None}
    idle = []
    for node in sorted(busy):
        others = [value for name, value in busy.items() if name != node]
        if not others:
            continue
        mean = sum(others) / float(len(others))
        if mean >= WORK_PCT and busy[node] <= IDLE_SHARE * mean:
            idle.append((node, busy[node], round(mean, 1)))
    return idle


def _figure(value, unit):
    return "-" if value is None else "%s%s" % (("%d" % value) if float(value).is_integer() else value, unit)


def use_lines(uses, running):
    """status.yml's lines on the NPUs' use over time, from {node: node_use(...) or None} in the table's order; running: the
    training runs (only then is a node named as idle, or as unsampled while the others are)."""
    if not any(uses.values()):
        return []
    lines = ["NPU use (each node's last samples, verl_npu_sample_seconds):"]
    for node, use in uses.items():
        if not use:
            lines.append("  %s: no sample (its sampler has written none: it starts with Ray, and samples while the training "
                         "holds the NPUs)" % node)
            continue
        when = "%d s ago" % use["age"] if use["age"] is not None else "at an unknown time"
        if use["error"]:
            lines.append("  %s: the sampler's npu-smi failed %s: %s" % (node, when, use["error"]))
            continue
        lines.append("  %s: AICore %s mean, HBM %s/%s GB, max %s, %s; %d sample(s), newest %s%s" % (
            node, _figure(use["aicore_pct"], " %"), _figure(use["hbm_used_gb"], ""), _figure(use["hbm_total_gb"], ""),
            _figure(use["temp_max_c"], " C"), _figure(use["power_w"], " W"), use["samples"], when,
            "" if use["recent"] else " (not recent)") + (
            "; NOT OK: %s" % ", ".join(use["unhealthy"]) if use["unhealthy"] else "") + (
            "; SwanLab charts off: %s" % use["swanlab"] if use["swanlab"] else ""))
    if running:
        for node, aicore, mean in idle_nodes(uses):
            lines.append("NPUs IDLE on %s: AICore %s %% while the other nodes average %s %%: its workers wait on the others "
                         "(unbalanced work, or a slow link: check its HCCN links with hccn_tool, and its log lines)" % (
                             node, _figure(aicore, ""), _figure(mean, "")))
        recent = [node for node, use in uses.items() if use and use["recent"]]
        quiet = [node for node, use in uses.items() if not (use and use["recent"])]
        if recent and quiet:
            lines.append("NPUs not sampled recently on %s while the training runs (on %s they are): no process of the "
                         "training holds them, or the sampler there stopped (it starts with this node's Ray)" % (
                             ", ".join(quiet), ", ".join(recent)))
    return lines
