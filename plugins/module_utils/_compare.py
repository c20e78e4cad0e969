# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Private to the verl.deploy collection: may change without notice.
#
# The mask comparison (playbooks/compare.yml): which masks to train, which the settings refuse and why, what a
# short training's log says (verl's own per-step metrics), the table, the winner, the report files, the state that
# lets an interrupted comparison resume, and the command line of the deploys it runs. Pure functions only.
from __future__ import annotations

import html
import json
import math
import re
import shlex
import statistics

from ansible_collections.verl.deploy.plugins.module_utils import _ckpts as ckpts
from ansible_collections.verl.deploy.plugins.module_utils import _features as features

BASELINE = "0" * features.MASK_LENGTH
# The shorthands of the masks argument: the baseline and each bit alone; every mask the settings accept.
EACH, ALLOWED = "each", "allowed"
STATE_VERSION = 1

# What is measured: keys verl 0.7.0 logs on every step (its console logger prints them as
# "step:N - key:value - ...", verl/utils/logger/aggregate_logger.py:26-32), with where verl computes them.
# timing_s/*: compute_timing_metrics (verl/trainer/ppo/metric_utils.py:261) of the timers marked in the fit loop
# ("step" verl/trainer/ppo/ray_trainer.py:1357, "gen" :1359, "update_actor" :1551; the recipe's own loop calls the
# same functions, recipe/dapo/dapo_ray_trainer.py:386-389); perf/throughput: compute_throughout_metrics, tokens per
# second per NPU (verl/trainer/ppo/metric_utils.py:301); perf/max_memory_*: the Megatron actor's update_actor
# (verl/workers/megatron_workers.py:743-744), the device's peak since the start, in GiB.
METRICS = (
    # key, label, unit, how the kept steps are summed up (a time or rate: median; a peak: the highest)
    ("timing_s/step", "step time", "s", "median"),
    ("timing_s/gen", "rollout (gen)", "s", "median"),
    ("timing_s/update_actor", "actor update", "s", "median"),
    ("perf/throughput", "throughput", "tokens/s/NPU", "median"),
    ("perf/max_memory_allocated_gb", "peak HBM allocated", "GiB", "max"),
    ("perf/max_memory_reserved_gb", "peak HBM reserved", "GiB", "max"),
)
STEP_TIME, THROUGHPUT, PEAK = "timing_s/step", "perf/throughput", "perf/max_memory_reserved_gb"

# A console line of verl's logger, also behind Ray's "(TaskRunner pid=N) " prefix.
_STEP_LINE = re.compile(r"(?:^|[\s)])step:(\d+) - (.*)$")
# numpy 2 prints its scalars as np.float64(1.5) (pprint.pformat in verl's logger).
_NUMPY = re.compile(r"^np\.[a-z0-9_]+\((.*)\)$")
# The lines that say why a training ended, most telling first: an NPU out of memory (torch_npu's "NPU out of
# memory. Tried to allocate ..."), then any Python error line (Ray's "RayTaskError(RuntimeError): ...").
_OOM = re.compile(r"out of memory|EL0004|Memory_Allocation_Failure", re.I)
_ERROR = re.compile(r"(Error|Exception)(\([A-Za-z]+\))?: |^\s*(RuntimeError|ValueError|AssertionError)\b|\bERROR\b")
# Where in a step it failed: the worker group method named in Ray's error, verl 0.7.0's names.
_PHASES = (("update_actor", "update_actor"), ("generate_sequences", "gen"), ("compute_ref_log_prob", "ref"),
           ("compute_log_prob", "old_log_prob"), ("update_critic", "update_critic"), ("save_checkpoint", "save_checkpoint"))


class CompareError(ValueError):
    """An argument of the comparison that cannot be used; the message names it, its value and the fix."""


# ---------------------------------------------------------------------------------------------------------------
# Which masks


def parse_masks(value, variable="masks"):
    """The masks to compare, in order, each once: [(mask, origin)], origin "given", EACH or ALLOWED.

    value: "0000000,1100000" (a list works too), with the shorthands `each` (the baseline, then each bit alone) and
    `allowed` (every mask; those the settings refuse are then left out, not listed). Raises CompareError naming every
    entry that is neither a mask nor a shorthand."""
    fix = ("Fix: give masks of seven 0s and 1s separated by commas, or %s (the baseline and each bit alone) or %s (every "
           "mask the settings accept), e.g. -e %s=0000000,1100000,1100100." % (EACH, ALLOWED, variable))
    if value is None or isinstance(value, bool) or (isinstance(value, (str, list, tuple)) and not value):
        raise CompareError("%s is not given: nothing to compare. %s" % (variable, fix))
    entries = value if isinstance(value, (list, tuple)) else (
        [value] if isinstance(value, int) else [part.strip() for part in str(value).split(",")])
    found, bad = [], []
    for entry in entries:
        word = str(entry).strip().lower() if isinstance(entry, str) else entry
        if word == EACH:
            found += [(BASELINE, EACH)] + [("0" * bit + "1" + "0" * (features.MASK_LENGTH - bit - 1), EACH)
                                           for bit in range(features.MASK_LENGTH)]
        elif word == ALLOWED:
            found += [(format(number, "07b"), ALLOWED) for number in range(2 ** features.MASK_LENGTH)]
        else:
            try:
                found.append((features.validate_mask(entry, variable), "given"))
            except features.MaskError:
                bad.append(repr(entry) if entry == "" or not isinstance(entry, str) else entry)
    if bad:
        raise CompareError("%s=%s: %s %s neither a mask nor a shorthand. %s" % (
            variable, value if isinstance(value, str) else ",".join(str(e) for e in entries), ", ".join(bad),
            "is" if len(bad) == 1 else "are", fix))
    seen, masks = set(), []
    for mask, origin in found:
        if mask not in seen:
            seen.add(mask)
            masks.append((mask, origin))
    return masks


def single_mask(value, variable="mask"):
    """[(mask, "given")] for the one mask the smoke launch trains; raises CompareError in the words of the mask's own
    check (the variable, the value and the fix), not those of the comparison's masks list."""
    try:
        return [(features.validate_mask(value, variable), "given")]
    except features.MaskError as error:
        raise CompareError(str(error)) from None


def features_on(mask):
    """The short names of the features a mask switches on ('none' for the baseline)."""
    return "+".join(f["short"] for f in features.FEATURES if mask[f["bit"]] == "1") or "none"


def split_refusals(problems_by_mask):
    """{mask: [problem texts]} -> (common, {mask: [its own problems]}): a problem every mask has is the settings',
    not a mask's (the comparison then stops before anything runs); the rest refuse their mask."""
    lists = list(problems_by_mask.values())
    common = [text for text in (lists[0] if lists else []) if all(text in other for other in lists[1:])]
    return common, {mask: [t for t in texts if t not in common] for mask, texts in problems_by_mask.items()}


def plan(masks, own_problems, measured):
    """What to do with each mask, in order: [{mask, origin, features, action, reasons}], action one of "run",
    "measured" (in the state already: resumed), "refused" (listed with the reasons; masks of `allowed` that are
    refused are left out)."""
    rows = []
    for mask, origin in masks:
        reasons = own_problems.get(mask) or []
        if reasons and origin == ALLOWED:
            continue
        action = "refused" if reasons else ("measured" if mask in measured else "run")
        rows.append({"mask": mask, "origin": origin, "features": features_on(mask), "action": action, "reasons": reasons})
    return rows


def _retried(record, retry_failed):
    return bool(retry_failed) and (record or {}).get("status") == "failed"


def to_run(rows, results, retry_failed=False):
    """The masks to train, in order: those the settings do not refuse and the state (an earlier run) does not hold;
    with retry_failed (verl_compare_retry_failed) also those it holds as failed. A mask the nodes' settings check refused
    stays refused."""
    return [row["mask"] for row in rows if row["action"] != "refused"
            and (row["mask"] not in results or _retried(results[row["mask"]], retry_failed))]


def plan_lines(rows, results, retry_failed=False):
    """The plan in words, a line per mask."""
    lines = []
    for row in rows:
        record = results.get(row["mask"])
        if row["action"] == "refused":
            what = "refused by the settings, not trained: " + "; ".join(row["reasons"])
        elif record is None:
            what = "to train"
        elif record.get("status") == "refused":
            what = "refused by the settings check on the nodes in the earlier run, not trained: " + "; ".join(record.get("reasons") or [])
        elif record.get("status") != "failed":
            what = "measured already (resumed: not trained again)"
        elif _retried(record, retry_failed):
            what = "failed in the earlier run (%s): trained again (verl_compare_retry_failed=true)" % _failed_phase(record)
        else:
            what = ("failed in the earlier run (%s): not trained again; -e verl_compare_retry_failed=true trains the failed "
                    "masks again and keeps those measured" % _failed_phase(record))
        lines.append("%s (%s): %s" % (row["mask"], row["features"], what))
    return lines


def _failed_phase(record):
    return "in %s" % ((record.get("failure") or {}).get("phase") or "an unknown phase")


def ckpts_not_shared(reads, folder, log_dir, nnodes):
    """The comparison's checkpoint folder (<verl_log_dir>/compare/ckpts, a folder per mask below it) must be one storage
    on every node, as verl_ckpts_dir must (the same rule: _ckpts.storages_apart): each mask's training writes Megatron's
    distributed checkpoint there from every node. reads: {host: _ckpts.read_ckpts_dir() of the folder}. '' or the
    refusal, naming the nodes and their storage and the fix, before any node is changed."""
    found = ckpts.storages_apart(reads, nnodes)
    if not found:
        return ""
    return ("The comparison's checkpoint folder %s (below verl_log_dir=%s) is not the same storage on every node (%s): each "
            "mask's training writes Megatron's distributed checkpoint there from the ranks of every node, so on separate "
            "disks it fails%s. Nothing was changed. Fix: give verl_log_dir a folder on one shared file system (NFS, CephFS, "
            "Lustre, GPFS, BeeGFS, GlusterFS, JuiceFS, obsfs...) mounted at the same path on every node, from the same "
            "source (e.g. beside verl_ckpts_dir), or mount one there, then run the comparison again." % (
                folder, log_dir, found["shown"], found["local"]))


# ---------------------------------------------------------------------------------------------------------------
# What a log says


def _number(text):
    text = text.strip()
    inner = _NUMPY.match(text)
    text = inner.group(1) if inner else text
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def parse_steps(text):
    """verl's per-step console lines of a training log: [{"step": N, key: value}], the last line of each step kept
    (a resumed log may repeat one), in step order. Keys without a number are left out."""
    steps = {}
    for line in (text or "").splitlines():
        found = _STEP_LINE.search(line)
        if not found:
            continue
        values = {"step": int(found.group(1))}
        for part in found.group(2).split(" - "):
            key, sep, value = part.partition(":")
            number = _number(value) if sep else None
            if number is not None:
                values[key.strip()] = number
        steps[values["step"]] = values
    return [steps[step] for step in sorted(steps)]


def failure(text, steps):
    """Why a training ended early: {"phase", "line", "oom"}; phase is the step's stage named in the error
    (update_actor, gen, ...), else where in the run it stopped (before step 1, after step N)."""
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    oom = [line for line in lines if _OOM.search(line)]
    errors = [line for line in lines if _ERROR.search(line)]
    line = (oom or errors or [""])[-1]
    where = " ".join(line for line in lines[-200:] if not _STEP_LINE.search(line))
    phase = next((name for marker, name in _PHASES if marker in where), None)
    if phase is None:
        phase = "after step %d" % steps[-1]["step"] if steps else "before step 1"
    return {"phase": phase, "line": line[:400], "oom": bool(oom)}


def summarize(steps, warmup):
    """The kept steps (the first `warmup` left out) summed up per metric: {key: {"value", "min", "max", "n"}};
    value is the median (the highest for a peak). With no step past the warm-up, the steps there are are used."""
    kept = [s for s in steps if s["step"] > warmup] or list(steps)
    summary = {}
    for key, _label, _unit, how in METRICS:
        values = [s[key] for s in kept if key in s]
        if values:
            summary[key] = {"value": statistics.median(values) if how == "median" else max(values),
                            "min": min(values), "max": max(values), "n": len(values)}
    return summary


def measure(mask, log_text, warmup, wanted, outcome, message=""):
    """One mask's record for the state and the report.

    outcome: how the run ended, "finished" (the training ended by itself), "crashed", "timeout" (still training at the
    bound, stopped), "deploy-failed" (the deploy stopped before the training; message is its last words).
    status: "measured" when every wanted step was logged and the run ended by itself, else "failed" with the failure."""
    steps = parse_steps(log_text)
    record = {"mask": mask, "features": features_on(mask), "outcome": outcome, "steps": len(steps), "wanted": int(wanted),
              "warmup": int(warmup), "metrics": summarize(steps, warmup)}
    done = bool(steps) and steps[-1]["step"] >= int(wanted)
    if outcome == "finished" and done and STEP_TIME in record["metrics"]:
        record["status"] = "measured"
        return record
    record["status"] = "failed"
    if outcome == "deploy-failed" and re.match(r"The settings of \S+ need fixing", message or ""):
        # The settings check on the nodes (deploy.yml's stage 2, with what they showed: the model's layers) refused it.
        record.update(status="refused", reasons=[message.strip()[:600]])
        return record
    if outcome == "deploy-failed":
        record["failure"] = {"phase": "deploy", "line": (message or "the deploy failed").strip()[:400], "oom": False}
    else:
        record["failure"] = failure(log_text, steps)
        if outcome == "timeout":
            record["failure"]["phase"] = "timeout (%s)" % record["failure"]["phase"]
        elif outcome == "finished" and not record["failure"]["line"]:
            record["failure"]["line"] = "the training ended after %d of %d step(s) without an error line" % (len(steps), int(wanted))
    return record


def record_line(record):
    """One mask's outcome in words."""
    head = "%s (%s): " % (record["mask"], record["features"])
    if record["status"] == "measured":
        found = record["metrics"]
        return head + "measured, median step time %s s, throughput %s tokens/s/NPU, peak HBM reserved %s GiB" % (
            _fmt(_value(record, STEP_TIME)), _fmt(_value(record, THROUGHPUT), 1), _fmt((found.get(PEAK) or {}).get("value")))
    if record["status"] == "refused":
        return head + "refused by the settings check on the nodes, not trained: " + "; ".join(record.get("reasons") or [])
    fail = record.get("failure") or {}
    return head + "failed in %s: %s" % (fail.get("phase"), fail.get("line") or "no error line")


# ---------------------------------------------------------------------------------------------------------------
# The state (resume)


def load_state(text, fingerprint):
    """What an earlier run of the same comparison left: {"results": {mask: record}, "user_training": whether the
    user's own training ran before it ("running", "not running"; None when not known), "user_read": the head's read of it
    then (its launch record and steps: what restore_plan() starts it again from), "lock": the cluster's lock identity
    that run held (token, holder, host, pid; None when not kept), "note"}. A state of other settings (another fingerprint)
    or one that cannot be read starts over, saying why; the lock is read from it all the same (it is the cluster's, not the
    settings'), so that a run of other settings after an interrupted one also takes that lock back and gives back the training
    it stopped."""
    empty = {"results": {}, "user_training": None, "user_read": None, "lock": None, "note": ""}
    if not (text or "").strip():
        return empty
    try:
        state = json.loads(text)
        results = state["results"]
        if not isinstance(results, dict) or state.get("version") != STATE_VERSION:
            raise ValueError("not this version's state")
    except (ValueError, KeyError, TypeError):
        return dict(empty, note="The state file cannot be read; the comparison starts over.")
    # The lock and the user's training are the cluster's, not the settings': a run of other settings keeps them.
    cluster = {"lock": state.get("lock") if isinstance(state.get("lock"), dict) else None,
               "user_training": state.get("user_training"), "user_read": state.get("user_read")}
    if state.get("fingerprint") != fingerprint:
        return dict(empty, note="The state file holds a comparison of other settings; this one starts over.", **cluster)
    return dict(cluster, results={mask: record for mask, record in results.items() if isinstance(record, dict)}, note="")


def save_state(results, fingerprint, user_training=None, lock=None, user_read=None):
    """The state file's text: every mask measured (or failed) so far, whether the user's training ran before and the head's
    read of it (user_read: launch, first_step, last_step), and the cluster's lock identity this run holds (`lock`,
    deploy_lock()'s: its token, holder, host and pid are kept)."""
    kept = {key: (lock or {}).get(key) for key in ("token", "holder", "host", "pid")} if lock else None
    read = {key: user_read.get(key) for key in ("launch", "first_step", "last_step")} if isinstance(user_read, dict) else None
    return json.dumps({"version": STATE_VERSION, "fingerprint": fingerprint, "results": results, "user_training": user_training,
                       "user_read": read, "lock": kept}, indent=1, sort_keys=True) + "\n"


def fingerprint(settings):
    """What makes two comparisons the same: the settings (without the mask and the comparison's own), as text."""
    kept = {k: v for k, v in sorted((settings or {}).items())
            if k not in ("mask", "verl_feature_mask", "verl_swanlab_api_key", "verl_restart", "verl_confirm")
            and not k.startswith("verl_compare_")}
    return json.dumps(kept, sort_keys=True, default=str)


# ---------------------------------------------------------------------------------------------------------------
# The report


def _value(record, key):
    return ((record.get("metrics") or {}).get(key) or {}).get("value")


def report(rows, results, baseline=None):
    """The table and the winner: {"rows": [...], "baseline", "winner", "verdict"}.

    rows: the plan; results: {mask: record}. The baseline is `baseline`, else 0000000 when measured, else the first
    measured mask. The winner: the fastest median step time among the masks that were measured (ran their steps
    without failing: "fits")."""
    table = []
    for row in rows:
        record = results.get(row["mask"]) or {}
        status = "refused" if row["action"] == "refused" else record.get("status", "not run")
        table.append({"mask": row["mask"], "features": row["features"], "status": status,
                      "reasons": row["reasons"] or record.get("reasons") or [],
                      "step_time": _value(record, STEP_TIME), "throughput": _value(record, THROUGHPUT),
                      "peak_hbm": _value(record, PEAK), "allocated": _value(record, "perf/max_memory_allocated_gb"),
                      "gen": _value(record, "timing_s/gen"), "update_actor": _value(record, "timing_s/update_actor"),
                      "spread": _spread(record), "failure": record.get("failure"), "steps": record.get("steps"),
                      "wanted": record.get("wanted")})
    measured = [r for r in table if r["status"] == "measured" and r["step_time"]]
    base = next((r for r in measured if r["mask"] == (baseline or BASELINE)), measured[0] if measured else None)
    for row in table:
        row["vs_baseline"] = round(base["step_time"] / row["step_time"], 2) if base and row in measured else None
    winner = min(measured, key=lambda r: (r["step_time"], r["mask"])) if measured else None
    if winner:
        verdict = "fastest that fits: %s (%s), %.2fx of %s" % (winner["mask"], winner["features"], winner["vs_baseline"], base["mask"])
    else:
        verdict = "no mask was measured: none fits, or none ran (see the table)"
    return {"rows": table, "baseline": base["mask"] if base else None, "winner": winner["mask"] if winner else None,
            "verdict": verdict}


def _spread(record):
    found = (record.get("metrics") or {}).get(STEP_TIME)
    return [found["min"], found["max"]] if found else None


def _fmt(value, digits=2):
    return "-" if value is None else ("%.*f" % (digits, value))


def _note(row):
    if row["status"] == "refused":
        return "refused: " + "; ".join(row["reasons"])
    if row["status"] == "failed":
        fail = row["failure"] or {}
        said = "failed in %s: %s" % (fail.get("phase"), fail.get("line") or "no error line")
        return said + (" (its output: deploy-m%s.log)" % row["mask"] if fail.get("phase") == "deploy" else "")
    if row["status"] == "not run":
        return "not run yet (run again to resume)"
    return "%s of %s steps; step time %s-%s s" % (row["steps"], row["wanted"], *(_fmt(v) for v in row["spread"]))


def markdown(result, title):
    """The report as Markdown: the verdict, the table, the refused and failed masks with their reasons."""
    lines = ["# %s" % title, "", "**%s**" % result["verdict"], "",
             "| mask | features on | median step time (s) | gen (s) | update_actor (s) | throughput (tokens/s/NPU) "
             "| peak HBM reserved (GiB) | vs %s | notes |" % (result["baseline"] or "baseline"),
             "|---|---|---|---|---|---|---|---|---|"]
    for row in result["rows"]:
        lines.append("| %s%s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            row["mask"], " (winner)" if row["mask"] == result["winner"] else "", row["features"], _fmt(row["step_time"]),
            _fmt(row["gen"]), _fmt(row["update_actor"]), _fmt(row["throughput"], 1), _fmt(row["peak_hbm"]),
            "-" if row["vs_baseline"] is None else "%.2fx" % row["vs_baseline"], _note(row).replace("|", "/")))
    lines += ["", "Medians of the steps after the warm-up; peak HBM is the highest of them (verl's perf/max_memory_reserved_gb). "
              "vs: the baseline's step time divided by the mask's (above 1: faster)."]
    return "\n".join(lines) + "\n"


def to_json(result, title, extra=None):
    return json.dumps(dict(extra or {}, title=title, **result), indent=1, sort_keys=True) + "\n"


def _bars(rows, key, label, unit, color, width=640):
    """One horizontal bar chart as inline SVG: a bar per mask with a value."""
    shown = [r for r in rows if r[key] is not None]
    top = max([r[key] for r in shown] or [1.0]) or 1.0
    height = 30 + 24 * max(len(rows), 1)
    parts = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" role="img" aria-label="%s">' % (width, height, html.escape(label)),
             '<text x="4" y="16" font-size="13" font-weight="bold">%s (%s)</text>' % (html.escape(label), html.escape(unit))]
    for index, row in enumerate(rows):
        y = 28 + 24 * index
        parts.append('<text x="4" y="%d" font-size="12" font-family="monospace">%s</text>' % (y + 14, row["mask"]))
        if row[key] is None:
            parts.append('<text x="80" y="%d" font-size="12" fill="#888">%s</text>' % (y + 14, html.escape(row["status"])))
            continue
        length = max(1, int((width - 170) * row[key] / top))
        parts.append('<rect x="80" y="%d" width="%d" height="18" fill="%s"/>' % (y, length, color))
        parts.append('<text x="%d" y="%d" font-size="12">%s</text>' % (84 + length, y + 14, _fmt(row[key])))
    return "\n".join(parts + ["</svg>"])


def to_html(result, title):
    """A self-contained page (no script, no network): the verdict, step time and peak HBM per mask, the table."""
    table = markdown(result, title).splitlines()[4:]
    cells = "".join("<tr>%s</tr>" % "".join("<td>%s</td>" % html.escape(c.strip()) for c in line.strip("|").split("|"))
                    for line in table if line.startswith("|") and not line.startswith("|---"))
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>%s</title></head>\n<body style=\"font-family:sans-serif\">\n"
            "<h1>%s</h1>\n<p><b>%s</b></p>\n%s\n%s\n<table border=\"1\" cellpadding=\"4\" style=\"border-collapse:collapse\">%s</table>\n"
            "</body></html>\n") % (html.escape(title), html.escape(title), html.escape(result["verdict"]),
                                   _bars(result["rows"], "step_time", "median step time", "s", "#4a7ebb"),
                                   _bars(result["rows"], "peak_hbm", "peak HBM reserved", "GiB", "#c0504d"), cells)


# ---------------------------------------------------------------------------------------------------------------
# The deploys it runs


# The command-line options a deploy started by the comparison gets from the comparison's own command line.
_PASSED = (("remote_user", "--user"), ("private_key_file", "--private-key"), ("become_method", "--become-method"),
           ("become_user", "--become-user"), ("become_password_file", "--become-password-file"),
           ("connection_password_file", "--connection-password-file"), ("timeout", "--timeout"),
           ("ssh_common_args", "--ssh-common-args"), ("ssh_extra_args", "--ssh-extra-args"), ("forks", "--forks"),
           ("subset", "--limit"))


def cli_problems(cliargs):
    """What of the comparison's own command line a deploy it starts cannot be given: passwords asked on a terminal."""
    asked = [flag for key, flag in (("ask_pass", "--ask-pass"), ("become_ask_pass", "--ask-become-pass"),
                                    ("ask_vault_pass", "--ask-vault-pass")) if (cliargs or {}).get(key)]
    if not asked:
        return []
    return ["%s: compare.yml runs deploy.yml once per mask and cannot ask again. Fix: give the password in a file "
            "(--connection-password-file, --become-password-file, --vault-password-file) or use an SSH key or agent." % ", ".join(asked)]


def deploy_argv(cliargs, python, playbook, inventories, extra_files):
    """The command of one deploy: the same Python's ansible-playbook, the comparison's inventories, its options and
    extra vars as given (in order), then `extra_files` (-e @file: the comparison's settings, which win)."""
    cliargs = cliargs or {}
    argv = [python, "-m", "ansible.cli.playbook"]
    for source in cliargs.get("inventory") or inventories or ():
        argv += ["-i", str(source)]
    for key, flag in _PASSED:
        value = cliargs.get(key)
        if value not in (None, "", (), []) and not (key == "forks" and value == 5):
            argv += [flag, str(value)]
    if cliargs.get("become"):
        argv.append("--become")
    for vault in cliargs.get("vault_password_files") or ():
        argv += ["--vault-password-file", str(vault)]
    for vault_id in cliargs.get("vault_ids") or ():
        argv += ["--vault-id", str(vault_id)]
    for extra in cliargs.get("extra_vars") or ():
        argv += ["-e", str(extra)]
    for path in extra_files:
        argv += ["-e", "@" + str(path)]
    return argv + [str(playbook)]


# Settings a node has of its own: the head's launch record holds the head's values only.
_PER_NODE = ("verl_node_ip", "verl_socket_ifname", "verl_npu_devices")


def _step_number(line):
    parts = str(line or "").split()
    return int(parts[-1]) if len(parts) == 2 and parts[-1].isdigit() else None


def saved_since_start(read, save_freq):
    """Whether the training read (training-state: first_step, last_step "TIME N") passed a save step since its start."""
    first, last = _step_number((read or {}).get("first_step")), _step_number((read or {}).get("last_step"))
    try:
        every = int(save_freq)
    except (TypeError, ValueError):
        return False
    return every > 0 and first is not None and last is not None and last // every * every >= first


def restore_plan(read, table, given=""):
    """What the deploy that starts the user's training again gets as its -e file, given last so that it wins over this
    run's extra vars: the settings that training ran with, from its launch record (read: the head's training-state answer
    before the comparison: launch, first_step, last_step; table: the settings table, _launch_config.table()).
    {"settings": {verl_name: value}, "problem": why it cannot be started as it ran, or ""}.

    Every setting of the record by its name in the table (the mask as verl_feature_mask, SwanLab's part as its settings), but:
    - a node's own settings (its IP, interface, NPUs) only when the training ran on one node: the record is the head's;
      on several nodes a restore whose extra vars (given: this run's -e texts) set one for every node is refused;
    - a training that saved a checkpoint since its start resumes from its latest (resume_mode auto): started as it began
      (disable, or resume_path from where it began) it would train its steps again over its own checkpoints."""
    record = (read or {}).get("launch")
    ran = record.get("settings") if isinstance(record, dict) else None
    if not isinstance(ran, dict):
        return {"settings": {}, "problem": "it has no launch record (it was started by hand or by an earlier release of verl-deploy), "
                                           "so the settings it ran with are unknown"}
    swanlab = ran.get("swanlab") if isinstance(ran.get("swanlab"), dict) else {}
    one_node = str(ran.get("nnodes", 1)) == "1"
    settings = {}
    for name, entry in table.items():
        key = entry.get("output") or name[len("verl_"):]
        if entry.get("secret") or (name in _PER_NODE and not one_node):
            continue
        if key in ran:
            settings[name] = ran[key]
        elif name.startswith("verl_swanlab_") and name[len("verl_swanlab_"):] in swanlab:
            settings[name] = swanlab[name[len("verl_swanlab_"):]]
    if ran.get("mask") is not None:
        settings["verl_feature_mask"] = ran["mask"]
    if settings.get("verl_resume_mode") != "auto" and saved_since_start(read, ran.get("save_freq")):
        settings.update(verl_resume_mode="auto", verl_resume_from_path="")
    forced = [name for name in _PER_NODE if not one_node and name in str(given or "")]
    problem = ("this run's extra vars set %s for every node, and its launch record holds only the head's value, not each node's" %
               ", ".join(forced)) if forced else ""
    return {"settings": settings, "problem": problem}


def restore_failed(plan, said_as, deploy, command, cwd, folder):
    """The line that says first that the user's training was not started again: why (restore_plan's problem, or its
    deploy's last words), and the command that starts it (shown_command's, run in cwd)."""
    plan, deploy = plan or {}, deploy or {}
    if plan.get("problem") and not plan.get("settings"):
        why, start = plan["problem"], "run your own deploy.yml with the settings it ran with and -e verl_restart=true"
    elif plan.get("problem"):
        why, start = plan["problem"], "in %s, %s, without those extra vars" % (cwd, command)
    else:
        why = "the deploy that starts it failed: %s (its output: %s/deploy-user.log)" % (last_words(deploy.get("stdout") or ""), folder)
        start = "in %s, once that is fixed: %s" % (cwd, command)
    return "The training that ran before %s was NOT started again: %s. Start it: %s" % (said_as, why.rstrip("."), start)


def shown_command(argv, secrets=(), forms=()):
    """A deploy's command line to show: each -e value that names a secret setting (secrets) or holds a secret's value in
    any of its forms (_secrets.key_forms: a key given through another variable) is left out, said where it was."""
    shown, previous = [], ""
    for arg in (str(item) for item in argv):
        named = [name for name in secrets if name in arg] if previous == "-e" and not arg.startswith("@") else []
        held = previous == "-e" and any(form in arg for form in forms)
        shown.append("'<your -e with %s>'" % (", ".join(named) or "a secret") if named or held else shlex.quote(arg))
        previous = arg
    return " ".join(shown)


def rescued(result, task, timeout, limit=600):
    """Why a short training's run failed, for its record (compare_mask.yml's and smoke_run.yml's rescue): the deploy past
    verl_compare_timeout (the task's timeout; Ansible's result carries timedout.period), or the step that failed, with its
    own message."""
    result = result if isinstance(result, dict) else {}
    if isinstance(result.get("timedout"), dict) and result["timedout"].get("period"):
        return ("the deploy did not end within verl_compare_timeout=%d s. Fix: raise verl_compare_timeout (a first deploy "
                "pulls the image and loads the model), or run deploy.yml alone to see where it waits" % int(timeout))
    message = " ".join(str(result.get("msg") or "no message").split())
    return ("%s failed: %s" % (task or "a step of its run", message))[:limit]


def last_words(output, limit=600):
    """The words that say why a deploy stopped: Ansible's last error ("[ERROR]: Task failed: ..." from 2.19, the report's
    "FAILED on HOST: ...", else the msg of the last failed task); when it says its problems were "named above", the first of them, from the message
    printed before it."""
    lines = (output or "").splitlines()
    words, at = "", len(lines)
    for index in range(len(lines) - 1, -1, -1):
        line = lines[index].strip()
        # Ansible's default output, or the short report (verl.deploy.report, ansible.cfg's): "FAILED on HOST: ...".
        found = (re.match(r"(?:\[ERROR\]|FAILED on [^:\s]+): (?:Task failed: )?(?:Action failed: )?(.*)", line)
                 or re.search(r'"msg":\s*"(.*?)"', line))
        if found:
            words, at = found.group(1), index
            break
        if line.startswith("fatal:") or "FAILED!" in line:
            follow = [re.match(r"msg: ['\"]?(.*?)['\"]?$", l.strip()) for l in lines[index + 1:index + 12]]
            words, at = next((f.group(1) for f in follow if f), line), index
            break
    if not words:
        return next((line.strip() for line in reversed(lines) if line.strip()), "no output")[:limit]
    if "named above" in words:
        block = []
        for line in reversed(lines[max(0, at - 80):at]):
            text = line.strip()
            if text.startswith("msg:"):
                break
            if text.startswith(("TASK [", "ok:", "fatal:", "[ERROR]", "Origin:")):
                block = []
                continue
            if text:
                block.insert(0, text)
        words += " " + " ".join(block[:3])
    return words[:limit]
