# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Private to the verl.deploy collection: may change without notice.
#
# The smoke launch (playbooks/smoke.yml; docs/operations.md, "Before a long run"): the user's settings train one step
# and save it, then a restart resumes from that save and trains a second step, both into a checkpoint folder of their own.
# What the two short trainings proved, phase by phase, and where they stopped: decided here from what they logged and saved.

from __future__ import annotations

import re

from ansible_collections.verl.deploy.plugins.module_utils import _compare as compare

# In the order a training reaches them: the model loads and the workers start (load), step 1's rollout (rollout), its
# log-prob passes and the actor's update (update), the checkpoint at the end of step 1 (save), a new training that loads
# it and trains step 2 (resume).
PHASES = ("load", "rollout", "update", "save", "resume")
SAVE_STEPS, RESUME_STEPS = 1, 2
# verl's words when it resumes (verl/trainer/ppo/ray_trainer.py, RayPPOTrainer._load_checkpoint, v0.7.0 to 0.9.x):
# print(f"Load from checkpoint folder: {global_step_folder}").
_LOADED = re.compile(r"Load from checkpoint folder: \S*global_step_(\d+)")
# The step of the fit loop a worker-group error names (_compare's names) -> the smoke launch's phase.
_PHASE_OF = {"gen": "rollout", "old_log_prob": "update", "ref": "update", "update_actor": "update", "update_critic": "update",
             "save_checkpoint": "save", "before step 1": "load"}


def saved_steps(listing):
    """The checkpoints a listing of the folder holds ({"steps": [N of each global_step_N], "tracker": the step of
    latest_checkpointed_iteration.txt or None}); the listing is `ls -1` of the folder, then a line tracker=<its text>."""
    steps, tracker = set(), None
    for line in (listing or "").splitlines():
        line = line.strip()
        found = re.fullmatch(r"global_step_(\d+)", line)
        if found:
            steps.add(int(found.group(1)))
        elif line.startswith("tracker="):
            text = line[len("tracker="):].strip()
            tracker = int(text) if text.isdigit() else None
    return {"steps": sorted(steps), "tracker": tracker}


def record(run, log_text, outcome, seconds, listing, message=""):
    """One of the two trainings: {"run", "outcome", "seconds", "steps" (logged), "loaded" (the step it resumed from, None),
    "saved" (saved_steps), "failure" ({"phase", "line"}: why it ended early, for an outcome that is not finished)}.
    outcome: as the comparison's (finished, crashed, timeout, deploy-failed)."""
    steps = compare.parse_steps(log_text)
    loaded = [int(step) for step in _LOADED.findall(log_text or "")]
    entry = {"run": run, "outcome": outcome, "seconds": int(seconds or 0), "steps": [s["step"] for s in steps],
             "loaded": loaded[-1] if loaded else None, "saved": saved_steps(listing), "failure": None}
    if outcome == "deploy-failed":
        entry["failure"] = {"phase": "deploy", "line": (message or "the deploy failed").strip()[:400]}
    elif outcome != "finished":
        found = compare.failure(log_text, steps)
        phase = found["phase"]
        phase = _PHASE_OF.get(phase, "update" if phase.startswith("after step") else phase)
        entry["failure"] = {"phase": phase if outcome != "timeout" else "%s (no end within verl_compare_timeout)" % phase,
                            "line": found["line"] or "the training %s without an error line" % (
                                "was stopped at the bound" if outcome == "timeout" else "ended")}
    return entry


def _failed(phase, line, run):
    return {"phase": phase, "line": line, "run": run}


def verdict(save, resume=None):
    """What the two trainings proved: {"ok", "proved": [phases], "failed": {"phase", "line", "run"} or None, "seconds"}.
    save, resume: record()s; resume is None when it was not run (the save run failed)."""
    proved = []
    seconds = save["seconds"] + (resume["seconds"] if resume else 0)
    if save["failure"] and save["failure"]["phase"] == "deploy":
        return {"ok": False, "proved": [], "failed": _failed("deploy", save["failure"]["line"], "save"), "seconds": seconds}
    if SAVE_STEPS not in save["steps"]:
        failure = save["failure"] or {"phase": "load", "line": "the training ended before it logged step 1"}
        phase = failure["phase"].split(" ")[0]
        proved = list(PHASES[:PHASES.index(phase)]) if phase in PHASES else []
        return {"ok": False, "proved": proved, "failed": _failed(failure["phase"], failure["line"], "save"), "seconds": seconds}
    proved = ["load", "rollout", "update"]
    saved = save["saved"]
    if save["outcome"] != "finished":
        # Step 1 was logged and the training did not end by itself: its save (or what follows it) failed. A folder an
        # earlier smoke launch left may hold a global_step_1: only a run that ended proves its own.
        return {"ok": False, "proved": proved, "failed": _failed("save", save["failure"]["line"], "save"), "seconds": seconds}
    if SAVE_STEPS not in saved["steps"] or saved["tracker"] != SAVE_STEPS:
        line = (save["failure"] or {}).get("line") or (
            "step 1 was logged, but %s (latest_checkpointed_iteration.txt: %s)" % (
                "no global_step_1 folder was written" if SAVE_STEPS not in saved["steps"] else "global_step_1 was not finished",
                saved["tracker"] if saved["tracker"] is not None else "none"))
        return {"ok": False, "proved": proved, "failed": _failed("save", line, "save"), "seconds": seconds}
    proved.append("save")
    if resume is None:
        return {"ok": False, "proved": proved, "failed": _failed("resume", "the resume run did not run", "resume"), "seconds": seconds}
    if resume["failure"] and resume["failure"]["phase"] == "deploy":
        return {"ok": False, "proved": proved, "failed": _failed("resume", resume["failure"]["line"], "resume"), "seconds": seconds}
    if resume["loaded"] != SAVE_STEPS or RESUME_STEPS not in resume["steps"] or SAVE_STEPS in resume["steps"] or resume["failure"]:
        if resume["loaded"] != SAVE_STEPS:
            line = ("the restart did not load global_step_1 (no \"Load from checkpoint folder: .../global_step_1\" in its log%s)"
                    % ("; it loaded global_step_%d" % resume["loaded"] if resume["loaded"] is not None else ""))
        elif SAVE_STEPS in resume["steps"]:
            line = "the restart loaded global_step_1 but trained step 1 again"
        else:
            line = (resume["failure"] or {}).get("line") or "the restart loaded global_step_1 but did not log step 2"
        return {"ok": False, "proved": proved, "failed": _failed("resume", line, "resume"), "seconds": seconds}
    proved.append("resume")
    return {"ok": True, "proved": proved, "failed": None, "seconds": seconds}


def lines(result, save, resume, mask, folder):
    """The verdict in words, for the run's last lines."""
    runs = "; ".join("%s run %d s (steps logged: %s)" % (entry["run"], entry["seconds"], ",".join(map(str, entry["steps"])) or "none")
                     for entry in (save, resume) if entry)
    if result["ok"]:
        head = ("Smoke launch of mask %s passed in %d s: load, rollout, update, save (global_step_1 in %s) and resume "
                "(a restart loaded it and trained step 2) are proven." % (mask, result["seconds"], folder))
    else:
        failed = result["failed"]
        head = ("Smoke launch of mask %s FAILED in %s (the %s run): %s. Proven before it: %s." % (
            mask, failed["phase"], failed["run"], failed["line"], ", ".join(result["proved"]) or "nothing"))
    return [head, runs]
