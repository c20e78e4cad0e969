# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Private to the verl.deploy collection: may change without notice.
#
# What a training was started from, and what changed since. The deploy writes a launch record
# (launch.json, beside the scripts); verl_control.sh keeps the one the running training started
# from. A re-run compares the two and refuses to leave a training running under settings it no
# longer has (unless verl_restart=true), saying exactly what differs.
from __future__ import annotations

import hashlib
import json
import shlex
import time

from ansible_collections.verl.deploy.plugins.module_utils._control_step import failed, is_stalled, status_answer
from ansible_collections.verl.deploy.plugins.module_utils._failures import diagnose
from ansible_collections.verl.deploy.plugins.module_utils._features import FEATURES
from ansible_collections.verl.deploy.plugins.module_utils._inputs import ray_start_option
from ansible_collections.verl.deploy.plugins.module_utils._log_phases import last_phase
from ansible_collections.verl.deploy.plugins.module_utils._npu_telemetry import idle_nodes, node_use, use_lines
from ansible_collections.verl.deploy.plugins.module_utils._report import terminal_text

# Launch configuration keys that do not change what the training computes or how it runs: a change
# in them alone never needs a restart. Per-host facts and values derived from others are left out too.
NOT_IN_RECORD = frozenset((
    "host", "role", "training", "is_head", "master_addr_source", "npu_devices_csv", "visible_devices_csv", "container_npus_csv",
    "npu_devices_note", "image_probe", "world_size", "data_parallel_size", "experiment_name_source",
    "ray_wait_timeout", "ray_join_retries", "ray_join_delay", "ray_join_timeout", "ray_join_bound", "output_dir", "docker_timeout", "npu_smi_path", "npu_smi",
    "restart", "train_start_timeout", "npu_release_timeout", "deploy_lock_timeout", "host_stage_dir", "stop_containers", "status_log_lines",
    # An existing container is reused as it is (a new image or mount needs a new container), so these
    # say nothing about the training that runs in it.
    "image", "image_source", "image_by_chip", "chip", "container",
    # The launch configuration holds every setting under its name; these change nothing in a running
    # training (the confirmation, status output, container creation, the SwanLab install), or repeat
    # what is recorded already (the mask, the swanlab part).
    "confirm", "confirm_timeout", "status_stall_seconds", "npu_sample_seconds", "status_fail_on", "logs_dir", "logs_max_mb",
    "keep_alive", "keep_alive_window", "keep_alive_wait",
    "compare_steps", "compare_warmup", "compare_timeout", "compare_retry_failed", "compare_dir", "container_privileged", "container_extra_volumes",
    "swanlab_package", "swanlab_pip_args",
    # Which trackers' keys were given (never their values) and where the container keeps them: the trackers themselves are
    # recorded (loggers), and a key given or moved changes nothing the training computes.
    "tracker_keys", "tracker_keys_dir",
    "feature_mask", "swanlab_host", "swanlab_mode", "swanlab_workspace", "swanlab_log_dir", "swanlab_api_key_file",
))
_SHOWN = 120


def launch_record(config, run_training=""):
    """The launch record of a launch configuration: the settings that shape the training, the feature
    mask instead of its decoded table, and the SHA-256 of the rendered run_training.sh."""
    settings = {key: value for key, value in config.items() if key not in NOT_IN_RECORD and key != "features"}
    settings["mask"] = (config.get("features") or {}).get("mask")
    # The verl release the command is rendered for shapes the training; why it was chosen (which image said so) does not.
    if isinstance(settings.get("verl_profile"), dict):
        settings["verl_profile"] = settings["verl_profile"].get("profile")
    # A default experiment name and TensorBoard's folder below it follow the model, the algorithm, the mask and the layout,
    # which are recorded: the record keeps what the user gave (an empty name), and the folder's root.
    if config.get("experiment_name_source") == "default":
        settings["experiment_name"] = ""
    if isinstance(settings.get("tensorboard"), dict):
        settings["tensorboard"] = settings["tensorboard"].get("root")
    return {"settings": settings, "run_training_sha256": hashlib.sha256(run_training.encode("utf-8")).hexdigest()}


# verl_control.sh is a plain file, the same on every node; what tells one deployment's node from another is this file
# beside it, verl_control.env, which the script sources (shell assignments, each value quoted).
CONTROL_VALUES = "verl_control.env"


def control_values(config, lock_folder="", ray_names=None):
    """The text of verl_control.env for a host's launch configuration: its name and Ray role, the cluster's shape, Ray's
    temporary folder, and the one definition of the training process (pgrep -f pattern), its logs, its checkpoints and
    the deploy's lock.
    lock_folder: where the lock lives when it is not the deployment's own state folder (a comparison's deploys log
    below <verl_log_dir>/compare and keep the deployment's lock); ray_names: {inventory name: the IP its Ray node has}."""
    values = (
        ("HOST", config["host"]), ("ROLE", config["role"]), ("NPU_PER_NODE", config["npu_per_node"]), ("NNODES", config["nnodes"]),
        ("RAY_PORT", config["ray_port"]), ("DASHBOARD_PORT", config["dashboard_port"]),
        ("TRAINING_PATTERN", config["training"]["pattern"]), ("LOG_DIR", config["log_dir"]),
        ("LOG_PREFIX", config["training"]["log_prefix"]), ("CKPTS_DIR", config["ckpts_dir"]), ("LOCK_FOLDER", lock_folder or ""),
        # Ray's temporary folder when verl_ray_start_args move it (empty: Ray's default), where its session_latest is.
        ("RAY_TEMP_DIR", ray_start_option(config.get("ray_start_args"), "--temp-dir") or ""),
        # Keep-alive's bound (_keep_alive.decide), read again by the supervisor at each failure.
        ("KEEP_ALIVE", config.get("keep_alive", 0)), ("KEEP_ALIVE_WINDOW", config.get("keep_alive_window", 0)),
        ("KEEP_ALIVE_WAIT", config.get("keep_alive_wait", 0)),
        # Which inventory host each Ray node is (IP=NAME,...): keep-alive names a node that left Ray by it.
        ("RAY_NAMES", ",".join("%s=%s" % (ip, name) for name, ip in sorted((ray_names or {}).items()) if ip)),
        # The NPU sampler's (npu_sampler.py reads them before each sample): its interval (0: off), the npu-smi the container
        # has (empty: searched), and TensorBoard's folder when it is one of the run's loggers.
        ("NPU_SAMPLE_SECONDS", config.get("npu_sample_seconds", 0)), ("NPU_SMI", config.get("npu_smi") or ""),
        ("TENSORBOARD_DIR", (config.get("tensorboard") or {}).get("dir", "")),
        # ... and SwanLab's project and the training's experiment when SwanLab records (a run per node beside the training's).
        ("NPU_SWANLAB_PROJECT", config.get("project_name", "") if _swanlab_records(config) else ""),
        ("NPU_SWANLAB_EXPERIMENT", config.get("experiment_name", "") if _swanlab_records(config) else ""),
    )
    head = "# %s: verl_control.sh's values for %s (Ray %s), written by verl.deploy; do not edit (deploy again).\n" % (
        CONTROL_VALUES, config["host"], config["role"])
    return head + "".join("%s=%s\n" % (name, shlex.quote(str(value))) for name, value in values)


def _swanlab_records(config):
    return bool(config.get("swanlab_enabled")) and (config.get("swanlab") or {}).get("mode") != "disabled"


def keep_alive_summary(training):
    """(lines, stats) of keep-alive's restarts of this training: how many, the last one's cause, step and where it
    resumed, the nodes that left Ray (how often), and, when it gave up, why."""
    records = training.get("keep_alive") or []
    restarts = [record for record in records if record.get("decision") == "restart"]
    left = {}
    for record in records:
        for node in record.get("left") or []:
            left[node] = left.get(node, 0) + 1
    if not records:
        return [], {"restarts": 0, "records": [], "left": {}}
    lines = []
    if restarts:
        last = restarts[-1]
        lines.append("keep-alive: %d restart(s); the last at %s: %s at step %s (%s), resumed from %s%s" % (
            len(restarts), _when(last.get("time")), last.get("class") or "a failure", last.get("step") or "unknown",
            last.get("node") or "?", "step %s" % last["resume_from"] if last.get("resume_from") else "its start's own checkpoint",
            "; left Ray: %s" % ", ".join("%s (%dx)" % item for item in left.items()) if left else ""))
    if records[-1].get("decision") != "restart":
        lines.append("keep-alive: not restarted after exit code %s: %s" % (records[-1].get("exit_code") or "?", records[-1].get("why")))
    return lines, {"restarts": len(restarts), "records": records[-5:], "left": left}


def _show(value):
    text = json.dumps(value, sort_keys=True) if not isinstance(value, str) else value
    return text if len(text) <= _SHOWN else text[:_SHOWN - 3] + "..."


def _mask_change(old, new):
    if not (isinstance(old, str) and isinstance(new, str) and len(old) == len(new) == len(FEATURES)):
        return "mask %s -> %s" % (_show(old), _show(new))
    turned = ["%s %s" % (feature["name"], "on" if new[feature["bit"]] == "1" else "off")
              for feature in FEATURES if old[feature["bit"]] != new[feature["bit"]]]
    return "mask %s -> %s: %s" % (old, new, ", ".join(turned))


def launch_drift(started, now):
    """What differs between the record a training started from and the one this run renders, one
    line per difference ("mask 0000000 -> 1000000: Remove Padding on", "train_tp 4 -> 2"); [] if none.

    A training with no record (started by hand, or by an older verl.deploy) cannot be compared: that
    is a difference too.
    """
    if not isinstance(started, dict) or "settings" not in started:
        return ["the running training has no launch record (it was not started by this version of verl.deploy), so its settings are unknown"]
    old, new = started.get("settings") or {}, now.get("settings") or {}
    changes = []
    for key in sorted(set(old) | set(new)):
        if old.get(key) == new.get(key):
            continue
        if key == "mask":
            changes.insert(0, _mask_change(old.get(key), new.get(key)))
        else:
            changes.append("%s %s -> %s" % (key, _show(old.get(key, "(unset)")), _show(new.get(key, "(unset)"))))
    if not changes and started.get("run_training_sha256") != now.get("run_training_sha256"):
        changes.append("run_training.sh differs from the one the training started from, with the same settings "
                       "(another version of verl.deploy rendered it)")
    return changes


def _number(text, default=0):
    try:
        return int(str(text).strip())
    except (TypeError, ValueError):
        return default


def _started_setting(record, name, default):
    """The setting `name` the last training ran with (its launch record, launch.json's one JSON line), else default.

    A deploy with new settings (verl_restart=true) renders another save_freq than the training it replaces saved with:
    only the old one says whether that training passed a save step; and only the old ckpts_dir is where it saved."""
    try:
        started = json.loads(record) if isinstance(record, str) and record.strip() else record
        return started["settings"][name] if name in started["settings"] else default
    except (ValueError, TypeError, KeyError):
        return default


def fresh_start_refusal(look, launch, node):
    """Why this deploy must not start the training from scratch, or "" (never a silent fresh start).

    look: what node_facts read on the head's host (_ckpts.read_last_training: the state folder's last_step "TIME N",
    ckpts_seen, ckpts_fs, launch: the record the last training started from; verl_ckpts_dir's checkpoints, fs_now,
    mountpoint, exists).
    launch: the launch configuration (resume_mode, save_freq, ckpts_dir). With resume_mode auto, a training that reached
    its first save step (by the save_freq it ran with, not this deploy's) or whose start saw checkpoints must find a
    checkpoint again: none means verl_ckpts_dir's storage is not what it was (not mounted, or another file system).
    A restart into another verl_ckpts_dir than the one the last training saved in is a new run there, as the user asked
    (the confirmation shows the change): never refused.
    """
    found = dict(look or {})
    if launch.get("resume_mode") != "auto" or _number(found.get("checkpoints"), -1) != 0:
        return ""
    last = str(found.get("last_step") or "").split()
    reached = _number(last[-1]) if last else 0
    if str(_started_setting(found.get("launch"), "ckpts_dir", launch.get("ckpts_dir")) or "").rstrip("/") != str(launch.get("ckpts_dir") or "").rstrip("/"):
        return ""  # a restart into another folder than the last training saved in: a new run there, as asked
    save_freq = _number(_started_setting(found.get("launch"), "save_freq", launch.get("save_freq")), -1)
    saved = save_freq > 0 and reached >= save_freq
    if not saved and not found.get("ckpts_seen"):
        return ""
    before, now = found.get("ckpts_fs") or "", found.get("fs_now") or ""
    where = ""
    if found.get("exists") == "no":
        where = " (the folder does not exist there)"
    elif before and now and before != now:
        where = " (it is on another file system than when the training started: device %s, then %s%s)" % (
            now, before, ", an empty mountpoint" if found.get("mountpoint") == "yes" else "")
    return ("%s (head): the last training reached step %d, but verl_ckpts_dir has no checkpoint: is its storage mounted on %s? "
            "%s holds no global_step_<N> folder%s. Nothing was started or changed. Fix: mount the storage that holds the "
            "checkpoints at %s on %s and run again. To start over, give verl_resume_mode=disable." % (
                node, reached, node, launch.get("ckpts_dir"), where, launch.get("ckpts_dir"), node))


# status.yml's verdict: which states of the training (and of the nodes while it runs) make the run fail, so that a
# scheduled status job, cron or a monitoring check can raise an alarm (verl_status_fail_on; all of them by default).
FAIL_ON = ("crashed", "stalled", "orphaned", "out-of-ray")
_NO_TAILS = status_answer({})[1]


def _step(text):
    """(time, step) of a "TIME N" state line, or None."""
    parts = str(text or "").split()
    return (_number(parts[0], None), _number(parts[-1], None)) if len(parts) == 2 else None


def _duration(seconds):
    seconds = int(seconds)
    if seconds >= 3600:
        return "%d h %02d min" % (seconds // 3600, seconds % 3600 // 60)
    return "%d min %02d s" % (seconds // 60, seconds % 60) if seconds >= 60 else "%d s" % seconds


def training_progress(training):
    """Step N of M, the rate and the time left, from the training's state lines (first_step, last_step: "TIME N") and
    its launch record (settings.train_steps). Missing parts are None; `text` says what is known."""
    last, first = _step(training.get("last_step")), _step(training.get("first_step"))
    settings = (training.get("launch") or {}).get("settings") or {}
    total = _number(settings.get("train_steps"), None) or None
    step = last[1] if last else None
    rate = None
    if last and first and last[0] > first[0] and last[1] > first[1]:
        rate = (last[1] - first[1]) / float(last[0] - first[0])
    left = (total - step) / rate if rate and total and step is not None and total >= step else None
    if step is None:
        text = "no step logged yet" + (" (of %s)" % total if total else "")
    else:
        text = "step %s" % step + (" of %s (%.1f%%)" % (total, 100.0 * step / total) if total and step <= total else
                                   ", past its total of %s (started again after it had reached it)" % total if total else "")
        text += ", %.1f steps/min" % (rate * 60) if rate else ""
        text += ", about %s left" % _duration(left) if left is not None and training.get("state") == "running" else ""
    return {"step": step, "total_steps": total, "steps_per_min": round(rate * 60, 2) if rate else None,
            "seconds_left": int(left) if left is not None else None, "text": text}


def _hbm(npu):
    chips = [chip for card in (npu or {}).get("npus") or [] for chip in card.get("chips") or []]
    used = [chip.get("hbm_used_mb") for chip in chips if chip.get("hbm_total_mb")]
    total = sum(chip.get("hbm_total_mb") or 0 for chip in chips)
    aicore = [chip.get("aicore_pct") for chip in chips if chip.get("aicore_pct") is not None]
    return ("%.0f/%.0f GB" % (sum(u or 0 for u in used) / 1024.0, total / 1024.0) if total else "-",
            "%d%%" % round(sum(aicore) / float(len(aicore))) if aicore else "-")


def _when(seconds):
    """A time the node wrote, in seconds since the epoch: `date +%s`'s whole seconds or Python's time.time() (keep-alive's
    records), as the controller's local time."""
    try:
        seconds = float(str(seconds).strip())
    except ValueError:
        return "an unknown time"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(seconds)) if 0 <= seconds < 1e11 else "an unknown time"


def _ray_sentences(facts):
    if facts.get("in_ray") == "unknown":
        return ["ray: cannot tell: %s" % facts.get("address_problem")]
    where, listed = "%s:%s" % (facts.get("master_ip"), facts.get("ray_port")), facts.get("listed")
    raylet = "runs" if facts.get("raylet") == "running" else "absent"
    head = facts.get("role") == "head"
    if facts.get("in_ray") == "yes":
        said = ["ray: in the cluster of %s as %s with %s NPU" % (where, facts.get("current_ip"), facts.get("npus"))]
    elif head and not listed:
        said = ["ray: the head's Ray does not answer at %s (raylet here: %s). Fix: run deploy.yml again." % (where, raylet)]
    else:
        said = ["ray: NOT in the cluster of %s (the head lists: %s; raylet here: %s). Fix: run deploy.yml again." % (
            where, listed or "nothing", raylet)]
    if head:
        said.append("ray: nodes alive with their NPUs: %s; dashboard http://%s:%s" % (
            listed or "none", facts.get("master_ip"), facts.get("dashboard_port")))
    return said


def _training_sentences(result, stall_seconds):
    facts, tails, training = result["facts"], result["tails"], result["training"]
    state, pid, now = training["state"], training["pid"], _number(facts.get("now"))
    last = _step(training["last_step"])
    progress = "no step logged yet"
    if last:
        rate = training_progress(training)["steps_per_min"]
        progress = "step %s logged at %s (%d s ago)%s" % (last[1], _when(last[0]), now - last[0], ", %s steps/min" % round(rate, 1) if rate else "")
    started = _when(training["started_at"])
    if is_stalled(training, stall_seconds):
        said = ["training: STALLED: runs (pid %s) but logged no step for %s s (more than %d s, verl_status_stall_seconds); %s. The log's "
                "last lines below show the phase it stopped in (status.yml names it with its likely cause); then restart with "
                "deploy.yml -e verl_restart=true." % (pid, training["quiet_for"], stall_seconds, progress)]
    elif state == "running":
        said = ["training: running (pid %s) since %s; %s" % (pid, started, progress)]
    elif state == "orphaned":
        said = ["training: its Ray cluster was restarted under it (pid %s); it cannot go on. Fix: run deploy.yml again (it is started "
                "again and resumes from its checkpoints)." % pid]
    elif state == "crashed":
        said = ["training: CRASHED (exit code %s) after %s; %s. Fix: read the log below, then run deploy.yml again (it resumes from its "
                "checkpoints)." % (training["exit_code"] or "unknown: the container or node restarted under it", started, progress)]
    elif state == "restarting":
        last = (training["keep_alive"] or [{}])[-1]
        said = ["training: RESTARTING (keep-alive): %s at step %s: %s; %s" % (
            last.get("class") or "a failure", last.get("step") or "unknown", last.get("why") or "",
            "starts again at %s" % _when(training["restart_at"]) if training["restart_at"] else "starting again now")]
    elif state == "finished":
        said = ["training: finished (exit code 0); %s" % progress]
    elif state == "stopped":
        said = ["training: stopped at %s (stop.yml); %s" % (_when(training["stopped_at"]), progress)]
    else:
        said = ["training: not started on this node by verl.deploy"]
    said += keep_alive_summary(training)[0]
    # What the training was started with (its launch record): the algorithm and where it resumed from.
    settings = (training["launch"] or {}).get("settings") or {}
    if settings.get("algorithm"):
        said.append("algorithm: %s (resume mode %s)" % (str(settings["algorithm"]).upper(), settings.get("resume_mode") or "unknown"))
    # Each start's own output (start_verl.sh: Ray's wait, the training's first lines); the previous starts' are kept.
    if facts.get("start_out"):
        previous = " (the previous start's: %s)" % facts["start_out_previous"] if facts.get("start_out_previous") else ""
        said.append("start output: %s%s" % (facts["start_out"], previous))
        said += tails["start_output"] if state == "crashed" else []
    if training["log"]:
        said += ["log: %s (last %s lines)" % (training["log"], facts.get("log_lines"))] + tails["log"]
    else:
        said.append("log: none yet in %s" % facts.get("log_dir"))
    return said


def node_status(result, container, container_line, npus_in_use, control, stall_seconds=1800):
    """What status.yml shows of one node: its container, the NPUs in use, then what `verl_control.sh status` found, said
    (the ray line, the image's verl and, on the head, the training's state, its start output and its log's last lines),
    or why it found nothing: no control script in the container (not deployed), one of another release (no document: named
    with the fix), or the step's own error. result: the status step's result, read by verl.deploy.node_step (its facts,
    tails, training and other_release; skipped while the container is down)."""
    lines = ["container %s: %s" % (container, container_line), "NPUs in use: %s" % npus_in_use]
    if result.get("rc") == 127:
        return lines + ["not deployed: no %s in the container (run deploy.yml)" % control]
    if result.get("rc") != 0:
        return lines + [line for line in [(result.get("stderr") or "").strip()] if line]
    if result.get("other_release"):
        return lines + ["%s answers as another release of verl-deploy did: nothing it said is read. Fix: run deploy.yml to "
                        "update it (a running training is left alone)." % control]
    facts = result.get("facts") or {}
    if "role" not in facts:
        return lines + list(result.get("said") or [])
    lines += _ray_sentences(facts)
    lines.append("verl: %s" % (facts.get("verl") or "unknown (no verl/version/version in %s)" % facts.get("workdir")))
    return lines + (_training_sentences(result, stall_seconds) if facts["role"] == "head" else [])


def status_report(nodes, head, stall_seconds, fail_on=FAIL_ON, control_sha256=""):
    """The status of a deployment, for people (a table, one row per node, the head first, and the training's line) and
    for alarms (the state, the alarms, failed).

    nodes: per node {name, answered (bool), container (its state as shown), container_runs (bool), status (the status step's
    result, read by verl.deploy.node_step: its facts, tails, training, other_release), npu (what verl.deploy.npu_info
    returned, or None), npus_in_use (the line verl.deploy.npu_usage made)}. The head's holds the training.
    A running training that logged no step for more than stall_seconds is stalled; while a training runs (or stalls),
    a node whose container runs no Ray member of the head's cluster is out of Ray. Nodes that did not answer are shown,
    and status.yml fails on them anyway (roles/day2/tasks/unanswered.yml).
    control_sha256: the SHA-256 of this collection's verl_control.sh; a node whose script answers another one (or none: a
    release before the script said which it is) was installed by another release of verl-deploy, and is named with the fix.
    """
    ordered = sorted(nodes, key=lambda node: node["name"] != head)
    by_name = {node["name"]: node for node in ordered}
    head_node = by_name.get(head) or {}
    statuses = {node["name"]: node.get("status") or {} for node in ordered}
    answers = {name: (status.get("facts") or {}, status.get("tails") or _NO_TAILS) for name, status in statuses.items()}
    head_tails = answers[head][1] if head in answers else _NO_TAILS
    training = (statuses.get(head) or {}).get("training") if head_node.get("container_runs") else None
    training = training or {"state": "unknown"}
    state = "stalled" if is_stalled(training, stall_seconds) else training["state"]
    # Which phase of verl's loop logged last, and NaN losses or zero rewards in its last steps (the log's tail in the answer).
    phase = last_phase(head_tails["log"]) if state != "unknown" else last_phase([])
    no_progress = {"step": None, "total_steps": None, "steps_per_min": None, "seconds_left": None, "text": ""}
    progress = training_progress(training) if state != "unknown" else no_progress
    alarms = []
    if state == "crashed":
        alarms.append(("crashed", "the training CRASHED (exit code %s)" % (training.get("exit_code") or
                                                                           "unknown: the container or node restarted under it")))
    elif state == "stalled":
        alarms.append(("stalled", "the training is STALLED: no step for %s s (more than verl_status_stall_seconds=%d)%s" % (
            training.get("quiet_for"), stall_seconds,
            "; %s. Likely: %s" % (phase["text"], phase["cause"]) if phase["phase"] else "")))
    elif state == "orphaned":
        alarms.append(("orphaned", "the training's Ray cluster was restarted under it"))
    failure_lines, failure = (_first_failure(ordered, answers, head, head_tails["log"], training) if failed(training, stall_seconds)
                              else ([], {"failed": False}))
    rows, facts = [], {}
    for node in ordered:
        name = node["name"]
        in_ray = answers[name][0].get("in_ray") or ("no" if node.get("answered") else "?")
        hbm, aicore = _hbm(node.get("npu"))
        if not node.get("answered"):
            row = {"container": "DID NOT ANSWER", "ray": "?", "npus_in_use": "?", "hbm": "?", "aicore": "?"}
        else:
            row = {"container": node.get("container") or "?", "ray": in_ray if node.get("container_runs") else "no",
                   "npus_in_use": node.get("npus_in_use") or "-", "hbm": hbm, "aicore": aicore}
            if state in ("running", "stalled") and row["ray"] != "yes":
                alarms.append(("out-of-ray", "%s is NOT in the head's Ray cluster while the training runs" % name))
        row["role"] = "head" if name == head else "worker"
        facts[name] = row
        rows.append([name, row["role"], row["container"], row["ray"], row["npus_in_use"], row["hbm"], row["aicore"]])
    header = ["node", "role", "container", "in Ray", "NPUs in use", "HBM", "AICore"]
    widths = [max(len(str(row[i])) for row in [header] + rows) for i in range(len(header))]
    table = ["  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip() for row in [header] + rows]
    failing = [text for kind, text in alarms if kind in (fail_on or ())]
    said = "training: %s%s" % (state.upper() if state in FAIL_ON else state, "; " + progress["text"] if progress["text"] else "")
    keep_alive_lines, keep_alive = keep_alive_summary(training)
    lines = failure_lines + table + [said] + keep_alive_lines
    if phase["phase"] and state != "stalled":
        lines.append("training log: %s" % phase["text"] + (". Likely: %s" % phase["cause"] if state == "crashed" else ""))
    # The NPUs over time, from each node's sampler (its last lines, in the status step's answer), and a node idle among working ones.
    uses = {node["name"]: node_use(answers[node["name"]][1]["npu_samples"], _number(answers[node["name"]][0].get("clock"), None))
            for node in ordered if node.get("answered")}
    lines += use_lines(uses, state in ("running", "stalled"))
    lines += ["ALARM: %s" % text for text in failing]
    lines += ["not an alarm (verl_status_fail_on leaves it out): %s" % text for kind, text in alarms if kind not in (fail_on or ())]
    other = [node["name"] for node in ordered if control_sha256 and node.get("answered") and node.get("container_runs")
             and (answers[node["name"]][0] or statuses[node["name"]].get("other_release"))
             and answers[node["name"]][0].get("control") != control_sha256]
    if other:
        lines.append("verl_control.sh on %s was installed by another release of verl-deploy: this report reads it as this release's "
                     "and may read it wrongly. Fix: run deploy.yml to update it (a running training is left alone)." % ", ".join(other))
    # What AWX keeps and scripts read passes the terminal's gate too (a log line's escape sequences shown escaped).
    return {"state": state, "progress": progress, "phase": phase, "alarms": [terminal_text(alarm[1]) for alarm in alarms],
            "failed": bool(failing), "failing": [terminal_text(text) for text in failing], "fail_on": list(fail_on or ()),
            "nodes": facts, "other_control": other, "failure": failure, "keep_alive": keep_alive,
            "npu": {"nodes": uses, "idle": [node for node, _aicore, _mean in idle_nodes(uses)] if state in ("running", "stalled") else []},
            "lines": [terminal_text(line) for line in lines]}


def first_failure_report(looks, head, head_status, node_ips=None):
    """The deploy's verify, on a training that did not start as expected: its first failure as status.yml names it
    (_first_failure). looks: {node: {failure_scan, clock_offset}} (roles/day2/tasks/failure_scan.yml's look, None where none
    was made); head_status: the head's status step, read by verl.deploy.node_step (its log's tail, else its start's output,
    and the training's start); node_ips: {node: its address}. -> {lines (at most 3), stats (with every matching line as evidence)}."""
    facts, tails = head_status.get("facts") or {}, head_status.get("tails") or _NO_TAILS
    ordered = [dict(look or {}, name=name) for name, look in (looks or {}).items()]
    ips = dict((node_ips or {}), **({head: facts["current_ip"]} if facts.get("current_ip") else {}))
    lines, stats = _first_failure(ordered, {}, head, tails["log"] or tails["start_output"], head_status.get("training") or {}, ips)
    return {"lines": lines, "stats": stats}


def _first_failure(ordered, answers, head, head_log, training, node_ips=None):
    """The first failure across the nodes (_failures.diagnose): the head's log tail, each node's scan (failure_scan's result,
    with clock_offset: its clock minus the controller's), the nodes by their IPs (each answer's, and node_ips {node: IP}), and
    the training's start on the controller's clock (its lines and files before it are an earlier run's)."""
    scans = {node["name"]: node["failure_scan"] for node in ordered if isinstance(node.get("failure_scan"), dict)
             and "files" in node["failure_scan"]}
    offsets = {}
    for node in ordered:
        try:
            offsets[node["name"]] = float(node["clock_offset"])
        except (KeyError, TypeError, ValueError):
            continue
    ip_nodes = {ip: name for name, ip in (node_ips or {}).items() if ip}
    ip_nodes.update({facts.get("current_ip"): name for name, (facts, _tails) in answers.items() if facts.get("current_ip")})
    started = _number(training.get("started_at"), None)
    since = started - offsets.get(head, 0) if started else None
    lines, stats = diagnose(head_log, scans, offsets, head, ip_nodes, since)
    # The node's own words (its line, its file's name, the evidence) pass the terminal's gate on their way to the stats.
    gated = {key: terminal_text(value) if isinstance(value, str) else value for key, value in stats.items()}
    if "evidence" in stats:
        gated["evidence"] = [terminal_text(line) for line in stats["evidence"]]
    return lines, gated
