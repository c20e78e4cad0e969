"""Prove that the SwanLab server accepts a run as the training will start it (run inside the Ray head's container).

    python3 - KEY_FILE REQUEST_JSON < swanlab_check_run.py

REQUEST_JSON (plugins/module_utils/_swanlab_proof.py builds it): {"host", "workspace", "project", "mode", "experiment",
"description", "record", "force"}. The key is read from KEY_FILE (mode 0600): it never appears in an argument list, the
environment or the output.

What the training does (start_verl.sh exports SWANLAB_HOST, SWANLAB_API_HOST, SWANLAB_WEB_HOST, SWANLAB_WORKSPACE and
SWANLAB_MODE; verl's tracking calls swanlab.login(key), then swanlab.init(project=..., experiment_name=..., config=...,
logdir=..., mode=...)) is done here with the SDK of this container, for a run named after the deploy; then the run is
finished at once. A server that accepts the login but refuses the run (a workspace the key may not write to, a server
older or newer than the SDK) fails here, not at the training's first log call hours later.

An unchanged re-run does not create a run each time: RECORD (0600, next to the key file) keeps what was proven (host,
workspace, project, mode, the SDK's version, never the key); the same again without "force" (the key file was not
rewritten) answers "skipped". Its stdout is one JSON document, {"said": [], "answer": {"proof": PROOF, "changed": ...}}: PROOF
{"result": "accepted" | "refused" | "unfinished" | "skipped", ...} as JSON text, changed "true" when a run was created on
the server now (accepted, unfinished), else "false". What the SDK prints goes to stderr.
"""
import contextlib
import json
import os
import re
import shutil
import sys
import tempfile
import time


# Where the answer goes: the process' stdout, whose file descriptor the SDK's words no longer reach (__main__).
ANSWER = sys.stdout


def say(answer):
    created = "true" if answer["result"] in ("accepted", "unfinished") else "false"
    ANSWER.write(json.dumps({"said": [], "answer": {"proof": json.dumps(answer, sort_keys=True), "changed": created}}, sort_keys=True) + "\n")
    ANSWER.flush()


def read_record(path):
    try:
        with open(path, encoding="utf-8") as handle:
            found = json.load(handle)
        return found if isinstance(found, dict) else {}
    except (OSError, ValueError):
        return {}


def write_record(path, record):
    """The record, 0600 from its creation (it holds no secret, but sits beside the key)."""
    partial = path + ".partial"
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        json.dump(record, handle, sort_keys=True)
    os.replace(partial, path)


# A line of the SDK's log starts with its time (swanlab 0.10: "2026-12-03 10:15:38.704 | ERROR | ...").
LOG_LINE_START = re.compile(r"\s(?=\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)")


def failed_finish(text):
    """The SDK's own words when it could not tell the server the run finished, or None. The SDK does not raise there
    (swanlab 0.10 logs "Failed to report run finish: <the error>", then "Failed to finish run, but it has been saved
    locally."): the run would stay "running" on the server. Its log wraps long lines, so they are joined first."""
    flat = " ".join(text.split())
    for entry in LOG_LINE_START.split(flat):
        for words in ("Failed to report run finish", "Failed to finish run"):
            if words in entry:
                return entry[entry.index(words):].strip()
    return None


@contextlib.contextmanager
def output_of_finish(said):
    """What the SDK writes while finishing, appended to `said` and passed on to stderr. Read at the file descriptors:
    the SDK's logger holds the streams it found at import, so replacing sys.stdout would not see it."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for descriptor in saved:
                os.close(descriptor)
            sink.seek(0)
            text = sink.read().decode("utf-8", "replace")
            said.append(text)
            sys.stdout.write(text)
            sys.stdout.flush()


def run_url(run):
    """The run's page: Run.url in swanlab 0.10, run.public.cloud.experiment_url before; "" when neither answers."""
    for read in (lambda: run.url, lambda: run.public.cloud.experiment_url):
        with contextlib.suppress(Exception):
            found = read()
            if found:
                return str(found)
    return ""


def prove(key, request, sdk_version):
    """Log in, start the run and finish it: the answer's fields."""
    import swanlab  # pylint: disable=import-outside-toplevel

    # The training's environment (start_verl.sh), without the key: it is given to swanlab.login only.
    for name in ("SWANLAB_HOST", "SWANLAB_API_HOST", "SWANLAB_WEB_HOST"):
        os.environ[name] = request["host"]
    os.environ["SWANLAB_MODE"] = request["mode"]
    if request.get("workspace"):
        os.environ["SWANLAB_WORKSPACE"] = request["workspace"]
    else:  # set but empty, swanlab 0.10 refuses it ("String should have at least 1 character"); none: the key's user
        os.environ.pop("SWANLAB_WORKSPACE", None)
    logdir = tempfile.mkdtemp(prefix="verl-deploy-swanlab-check-")
    try:
        try:
            swanlab.login(key)
            run = swanlab.init(project=request["project"], experiment_name=request["experiment"],
                               description=request.get("description"), config={"verl_deploy_check": True},
                               logdir=logdir, mode=request["mode"])
        except Exception as error:  # pylint: disable=broad-except  # whatever the SDK raises is the server's answer
            return {"result": "refused", "error": "%s: %s" % (type(error).__name__, error)}
        url = run_url(run)
        said = []
        try:
            with output_of_finish(said):
                swanlab.finish()
        except Exception as error:  # pylint: disable=broad-except
            return {"result": "unfinished", "error": "%s: %s" % (type(error).__name__, error), "url": url}
        problem = failed_finish("".join(said))
        if problem:
            return {"result": "unfinished", "error": problem, "url": url}
        return {"result": "accepted", "url": url, "sdk": sdk_version}
    finally:
        shutil.rmtree(logdir, ignore_errors=True)


def installed_version():
    """The SDK's version without importing it (an unchanged re-run needs nothing more), or None when it is missing."""
    try:
        from importlib import metadata  # pylint: disable=import-outside-toplevel
        return metadata.version("swanlab")
    except Exception:  # pylint: disable=broad-except  # no metadata (or Python < 3.8): ask the module itself
        try:
            import swanlab  # pylint: disable=import-outside-toplevel
        except ImportError:
            return None
        return str(getattr(swanlab, "__version__", "unknown"))


def main(key_file, request_json):
    request = json.loads(request_json)
    sdk_version = installed_version()
    if sdk_version is None:
        say({"result": "refused", "error": "ImportError: No module named 'swanlab'"})
        return 1
    proven = {name: request.get(name) or "" for name in ("host", "workspace", "project", "mode")}
    proven["sdk"] = sdk_version
    record = read_record(request["record"])
    if not request.get("force") and record.get("proven") == proven:
        say({"result": "skipped", "proven_at": record.get("proven_at", ""), "url": record.get("url", ""), "sdk": sdk_version})
        return 0
    with open(key_file, encoding="utf-8") as handle:
        key = handle.read().strip()
    answer = prove(key, request, sdk_version)
    answer["sdk"] = sdk_version
    if answer["result"] == "accepted":
        answer["proven_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        write_record(request["record"], {"proven": proven, "proven_at": answer["proven_at"], "url": answer.get("url", "")})
    say(answer)
    return 0 if answer["result"] in ("accepted", "unfinished") else 1


if __name__ == "__main__":
    ANSWER = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.exit(main(sys.argv[1], sys.argv[2]))
