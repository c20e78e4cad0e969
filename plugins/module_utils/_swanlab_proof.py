# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Private to the verl.deploy collection: may change without notice.
"""The SwanLab stage's proof that the server accepts a run: what it asks the Ray head's container, and the verdict.

A login proves the key and the route to the server, not that the server lets this user start a run in the training's
workspace and project, nor that it speaks the SDK's protocol for runs. verl's training calls swanlab.init only after the
model loaded, hours later on a large model; so after the login, the head's container makes that call itself
(roles/swanlab/files/swanlab_check_run.py: swanlab.login, swanlab.init with the training's project, workspace and mode,
swanlab.finish) for a run named EXPERIMENT, and answers one document whose proof is JSON.

Where the SDK's words come from (swanlab 0.10.3, read in its source and seen against the stand-in server,
tests/sim/stand_in_swanlab_server.py): a refused request raises swanlab.exceptions.ApiError, "API Request Failed:
[<code>] <message> | Trace ID: <id> | <METHOD> <url>", and swanlab.init wraps it as "RuntimeError: Failed to start run:
<that>". Older SDKs (0.5, 0.6) word it "swanlab api error, status code: 404, reason: Not Found" or "swanlab api error
('Trace id: ...', 'POST <url>', '404 Not Found')" (SwanHubX/self-hosted#13, #85: an SDK newer or older than the server).
No Ansible imports.
"""
from __future__ import annotations

import json
import posixpath
import re


# The run the proof creates, named so that people who see it in their project know where it came from.
EXPERIMENT = "verl-deploy-check"
DESCRIPTION = ("Created and finished by verl-deploy's SwanLab stage to prove that this server accepts the training's runs "
               "in this project; safe to delete.")
# Beside the key file, 0600: what was proven last (host, workspace, project, mode, SDK version; never the key).
RECORD_NAME = "verl_deploy_run_check.json"

RESULTS = ("accepted", "skipped", "refused", "unfinished")


def record_path(api_key_file):
    return posixpath.join(posixpath.dirname(api_key_file or "/root/.swanlab/x"), RECORD_NAME)


def skip_reason(launch):
    """Why this host makes no proof (a sentence), or "" when it makes one: SwanLab on in a login mode, on the Ray head.

    The server's answer to a run depends on the key, the server, the workspace and the project, the same from every
    node; each node's own login already proves that it reaches the server. So one run, from the head, not one per node."""
    swanlab = launch.get("swanlab") or {}
    if not launch.get("swanlab_enabled") or not swanlab:
        return "SwanLab is off."
    if not swanlab.get("needs_key"):
        return ("SwanLab mode %s needs no server: no login and no run is proven; the training writes its runs under %s."
                % (swanlab.get("mode"), swanlab.get("log_dir")))
    if not launch.get("is_head"):
        return "The run is proven once, from the Ray head's container."
    return ""


def request(launch, key_changed):
    """What swanlab_check_run.py is given (JSON, no key), or "" when this host makes no proof.

    key_changed: the key file was (re)written in this run (a new container, or another key). Only then, or when the
    record differs (another server, workspace, project, mode or SDK), is a new run created: an unchanged re-run creates
    none."""
    if skip_reason(launch):
        return ""
    swanlab = launch["swanlab"]
    return json.dumps({
        "host": swanlab.get("host") or "",
        "workspace": swanlab.get("workspace") or "",
        "project": launch.get("project_name") or "",
        "mode": swanlab.get("mode") or "cloud",
        "experiment": EXPERIMENT,
        "description": DESCRIPTION,
        "record": record_path(swanlab.get("api_key_file")),
        "force": bool(key_changed),
    }, sort_keys=True)


def proof_of(answer):
    """The answer's proof as a dict, or None when there is none or it is not one."""
    try:
        found = json.loads(dict(answer or {}).get("proof") or "null")
    except ValueError:
        return None
    return found if isinstance(found, dict) and found.get("result") in RESULTS else None


# What the SDK's words say was refused. Each (pattern, kind); the first that matches wins.
KINDS = (
    (re.compile(r"ImportError|No module named .?swanlab"), "no_sdk"),
    (re.compile(r"\[Forbidden\]|\[403\]|-> 403|\b403 Forbidden|status code: 403|no permission|没有权限", re.IGNORECASE),
     "forbidden"),
    (re.compile(r"\[Unauthorized\]|\[401\]|-> 401|\b401 |status code: 401|AuthenticationError|API key", re.IGNORECASE), "unauthorized"),
    (re.compile(r"\[404\]|\[NotFound\]|-> 404|404 Not Found|status code: 404|upgrade swanlab-server|Not Found", re.IGNORECASE), "protocol"),
    (re.compile(r"too many 5\d\d error responses|\[5\d\d\]|-> 5\d\d|\b5\d\d Internal|status code: 5\d\d"), "server_error"),
    (re.compile(r"ConnectionError|Max retries exceeded|timed out|Connection refused|NewConnectionError|RetryError",
                re.IGNORECASE), "unreachable"),
)


def kind_of(error):
    """The kind of a refusal, from the SDK's words: no_sdk, forbidden, unauthorized, protocol, server_error, unreachable or
    other."""
    return next((kind for pattern, kind in KINDS if pattern.search(str(error or ""))), "other")


def fix_for(kind, launch, sdk):
    swanlab = launch.get("swanlab") or {}
    workspace = swanlab.get("workspace") or "?"
    container = launch.get("container_name") or "verl"
    retry = " Then run deploy.yml again (--tags verl_swanlab proves it alone)."
    fixes = {
        "forbidden": ("give verl_swanlab_workspace a workspace the key's user may create projects and runs in (its own user "
                      "name, or an organisation where it is a member with write rights), or ask the server's administrator "
                      "to grant it in %s." % workspace),
        "unauthorized": ("the server took the key at the login but not the session for the run: give a key of this server "
                         "(not of another SwanLab) that is not revoked, and check that verl_swanlab_host is the server the "
                         "login went to."),
        "protocol": ("the server does not know the request swanlab %s makes for a run: its release and the SDK's do not match. "
                     "Pin verl_swanlab_package to the SDK your server's release supports (its release notes name it) and "
                     "install it in the container (an installed SDK is kept: docker exec %s python3 -m pip install "
                     "'swanlab==<version>'), or upgrade the server." % (sdk or "?", container)),
        "unreachable": ("the head's container did not get an answer for the run's requests: check verl_swanlab_host "
                        "(%s) and the route from the head to it." % (swanlab.get("host") or "?")),
        "server_error": ("the server failed on the run's request: read its log (the swanlab-server container of a "
                         "self-hosted server) for the request named above; an SDK the server's release does not support is a "
                         "known cause: pin verl_swanlab_package to the SDK your server supports."),
        "no_sdk": "install swanlab in the container (verl_swanlab_package, verl_swanlab_pip_args).",
        "other": ("read the server's log for the request named above; an SDK that does not fit the server's release is the "
                  "usual cause: pin verl_swanlab_package to the SDK your server supports."),
    }
    return fixes[kind] + retry


def _where(launch):
    swanlab = launch.get("swanlab") or {}
    return "workspace %s, project %s on %s" % (
        swanlab.get("workspace") or "?", launch.get("project_name") or "?", swanlab.get("host") or "?")


def verdict(answer, launch, rc=0, stderr="", said=()):
    """The verdict on the proof as verl.deploy.node_step returns it read (its answer, and its sentences: the lines of an
    output that was no answer): {"problems", "warnings", "notes", "summary", "created"} (created: a run was made on the
    server now, the task's change).

    refused (or no answer at all) is a problem: the training would stop at swanlab.init. unfinished is a warning: the run
    was created, but the server did not take its end (the SDK does not raise there, so a training would log and end the
    same way, its runs left "running")."""
    verdict_ = {"problems": [], "warnings": [], "notes": [], "summary": "", "created": False}
    reason = skip_reason(launch)
    if reason:
        verdict_["summary"] = reason
        return verdict_
    found = proof_of(answer)
    where, sdk = _where(launch), (found or {}).get("sdk") or ""
    if found is None:
        said = " ".join(str(stderr or "").split()[-60:]) or " ".join(" ".join(said or ()).split()[-60:]) or "no output"
        verdict_["problems"].append("The proof that the SwanLab server accepts a run (%s) gave no answer (rc %s): %s. Fix: %s"
                                    % (where, rc, said, fix_for(kind_of(said), launch, sdk)))
        verdict_["summary"] = "no run proven (the proof gave no answer)"
        return verdict_
    result, url = found["result"], found.get("url") or ""
    verdict_["created"] = result in ("accepted", "unfinished")
    run = "'%s'%s" % (EXPERIMENT, " (%s)" % url if url else "")
    if result == "accepted":
        verdict_["notes"].append("The SwanLab server accepted a run as the training will start it (%s, swanlab %s): the run %s "
                                 "was created and finished to prove it; you may delete it." % (where, sdk, run))
        verdict_["summary"] = "a run proven at %s: %s, created and finished by the deploy" % (found.get("proven_at") or "?", run)
    elif result == "skipped":
        verdict_["notes"].append("The SwanLab server accepted a run at %s (%s, swanlab %s): no new run this time (the key file, "
                                 "server, workspace, project, mode and SDK are unchanged)." % (found.get("proven_at") or "?", where, sdk))
        verdict_["summary"] = "a run proven at %s: %s" % (found.get("proven_at") or "?", run)
    elif result == "unfinished":
        error = found.get("error") or "?"
        verdict_["warnings"].append("The SwanLab server accepted the run %s (%s, swanlab %s) but not its end: %s. It stays "
                                    "'running' there, and the training's runs would end the same way. Fix: %s"
                                    % (run, where, sdk, error, fix_for(kind_of(error), launch, sdk)))
        verdict_["summary"] = "a run started but not finished at %s: %s" % (found.get("proven_at") or "?", run)
    else:
        error = found.get("error") or "?"
        verdict_["problems"].append("The SwanLab server accepted the login but refused a run (%s, swanlab %s), as it would refuse "
                                    "the training's at its swanlab.init, after the model loaded: %s. Fix: %s"
                                    % (where, sdk or "?", error, fix_for(kind_of(error), launch, sdk)))
        verdict_["summary"] = "the server refused a run"
    return verdict_
