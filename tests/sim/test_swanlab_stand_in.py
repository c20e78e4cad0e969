"""The stand-in SwanLab server (tests/sim/stand_in_swanlab_server.py) and the SwanLab stage's proof
(roles/swanlab/files/swanlab_check_run.py) talking over 127.0.0.1 only, without Docker.

The server's own answers are checked with plain HTTP. The proof runs with the real SDK of the simulated image, swanlab
0.10.3, installed once (no network) from the simulated cluster's wheelhouse into .cache/swanlab-0.10.3 (simcluster.py
build fills the wheelhouse; VERL_DEPLOY_SWANLAB_WHEELS names another folder of the same wheels); without those wheels
these tests are skipped. Each refusal is shown, the fix the verdict names applied, and the refusal gone."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from ansible_collections.verl.deploy.plugins.module_utils import _swanlab_proof as sp
from ansible_collections.verl.deploy.plugins.module_utils._control_step import step_result

SIM = Path(__file__).resolve().parent
REPO = SIM.parents[1]
sys.path.insert(0, str(SIM))
import stand_in_swanlab_server as stand_in  # noqa: E402  pylint: disable=wrong-import-position

CHECK = REPO / "roles" / "swanlab" / "files" / "swanlab_check_run.py"
KEY = "sk-stand-in-test-9f3c1e"
SDK = "swanlab==0.10.3"
SDK_VENV = REPO / ".cache" / "swanlab-0.10.3"


def swanlab_wheels():
    """The folder holding the simulated image's swanlab wheels, or None."""
    given = os.environ.get("VERL_DEPLOY_SWANLAB_WHEELS")
    if given:
        return Path(given) if Path(given).is_dir() else None
    import simcluster  # pylint: disable=import-outside-toplevel
    folder = simcluster._wheels_folder() / "swanlab"  # pylint: disable=protected-access
    return folder if (folder.parent / ".complete").is_file() else None


@pytest.fixture(scope="module")
def sdk_python():
    """A Python with swanlab 0.10.3, from the wheelhouse only (built once, then renamed into place: parallel runs do not
    see a half-built one)."""
    python = SDK_VENV / "bin" / "python"
    if python.is_file():
        return python
    wheels = swanlab_wheels()
    if wheels is None:
        pytest.skip("no swanlab wheels: run tests/sim/simcluster.py build, or give VERL_DEPLOY_SWANLAB_WHEELS")
    SDK_VENV.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=".swanlab-venv-", dir=SDK_VENV.parent))
    try:
        subprocess.run([sys.executable, "-m", "venv", str(partial)], check=True, timeout=120)
        subprocess.run([str(partial / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                        "--no-index", "--find-links", str(wheels), SDK], check=True, timeout=600)
        try:
            os.rename(partial, SDK_VENV)
        except OSError:  # another run put it there first
            pass
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return python


class StandIn:
    """The stand-in server on 127.0.0.1, a free port, with its log; `restart(...)` keeps its projects and runs."""

    def __init__(self, tmp_path, **refusals):
        self.log = tmp_path / "server.log"
        self.server = stand_in.Server(hashlib.sha256(KEY.encode()).hexdigest(), **refusals)
        self.httpd = stand_in.serve(self.server, str(self.log), 0, "127.0.0.1")
        self.url = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def lines(self):
        return self.log.read_text().splitlines() if self.log.exists() else []

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server(tmp_path):
    made = []

    def _server(**refusals):
        made.append(StandIn(tmp_path, **refusals))
        return made[-1]
    yield _server
    for each in made:
        each.close()


def http(url, method="GET", body=None, headers=None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers=dict(headers or {}, **{"Content-Type": "application/json"}))
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


# --------------------------------------------------------------------------- the server alone

def test_the_server_takes_the_login_then_the_run_as_the_sdk_calls_it(server):
    swan = server()
    assert http(swan.url + "/api/login/api_key", "POST", headers={"authorization": "sk-wrong"})[0] == 401
    status, login = http(swan.url + "/api/login/api_key", "POST", headers={"authorization": KEY})
    assert status == 200 and login["sid"] == stand_in.SESSION and login["userInfo"]["username"] == stand_in.USERNAME
    assert http(swan.url + "/api/project/sim/p") == (401, {"code": "Unauthorized", "message": "未经授权"})
    cookie = {"Cookie": "sid=%s" % login["sid"]}
    assert http(swan.url + "/api/project/sim/p", headers=cookie)[0] == 404
    assert http(swan.url + "/api/projects/sim", "POST", {"name": "p", "visibility": "PRIVATE"}, cookie)[0] == 201
    status, project = http(swan.url + "/api/project/sim/p", headers=cookie)
    assert status == 200 and project["group"]["username"] == "sim" and project["_count"]["experiments"] == 0
    status, run = http(swan.url + "/api/project/sim/p/experiment", "POST", {"name": "n", "cuid": "r1"}, cookie)
    assert status == 201 and run["cuid"] == "r1"
    assert http(swan.url + "/api/project/sim/p/runs/r1/state", "PUT", {"state": "FINISHED"}, cookie)[0] == 200
    assert swan.server.runs_in("sim", "p") == [("n", "FINISHED")]
    assert http(swan.url + "/api/unknown", headers=cookie)[0] == 404
    assert KEY not in swan.log.read_text()


def test_the_server_refuses_runs_where_told_and_still_takes_the_login(server):
    swan = server(forbidden_workspaces=["team"], old_server=False)
    cookie = {"Cookie": "sid=%s" % http(swan.url + "/api/login/api_key", "POST", headers={"authorization": KEY})[1]["sid"]}
    assert http(swan.url + "/api/projects/team", "POST", {"name": "p"}, cookie)[0] == 403
    old = server(old_server=True)
    assert http(old.url + "/api/login/api_key", "POST", headers={"authorization": KEY})[0] == 200
    assert http(old.url + "/api/projects/sim", "POST", {"name": "p"}, cookie)[0] == 201
    assert http(old.url + "/api/project/sim/p/experiment", "POST", {"name": "n"}, cookie) == (404, {"code": 404, "message": "Not Found"})


# --------------------------------------------------------------------------- the proof with the real SDK

LAUNCH = {"swanlab_enabled": True, "is_head": True, "project_name": "verl_dapo_qwen3_8b", "container_name": "verl",
          "swanlab": {"mode": "cloud", "workspace": "TrainingMaster", "log_dir": "/tmp/unused", "needs_key": True}}


class Container:
    """What the role gives the head's container: the key in a 0600 file under a HOME of its own."""

    def __init__(self, root, python):
        self.home, self.python = root / "home", python
        (self.home / ".swanlab").mkdir(parents=True, exist_ok=True)
        self.key_file = self.home / ".swanlab" / "verl_deploy_api_key"
        self.key_file.write_text(KEY)
        self.key_file.chmod(0o600)

    def prove(self, launch, key_changed=False):
        """The role's task: swanlab_check_run.py on stdin, the key file and the request as arguments; the verdict."""
        launch = dict(launch, swanlab=dict(launch["swanlab"], api_key_file=str(self.key_file)))
        asked = sp.request(launch, key_changed)
        argv = [str(self.python), "-", str(self.key_file), asked]
        env = {"HOME": str(self.home), "PATH": os.environ.get("PATH", ""), "TMPDIR": str(self.home.parent)}
        with CHECK.open() as program:
            proc = subprocess.run(argv, stdin=program, capture_output=True, text=True, env=env, timeout=180, check=False)
        assert KEY not in proc.stdout + proc.stderr + " ".join(argv), "the key is in the proof's output or arguments"
        read = step_result(None, {"rc": proc.returncode, "stdout": proc.stdout})
        verdict = sp.verdict(read["answer"], launch, proc.returncode, proc.stderr, read["said"])
        # The task's change (verl.deploy.node_step reads the answer): a run was created on the server now.
        assert read["changed"] is verdict["created"], proc.stdout
        return proc, verdict

    def files_holding_the_key(self):
        return sorted(str(path.relative_to(self.home.parent)) for path in self.home.parent.rglob("*")
                      if path.is_file() and path.name != "server.log" and KEY in path.read_text(errors="replace"))


def on(swan, workspace=None, project=None):
    swanlab = dict(LAUNCH["swanlab"], host=swan.url, workspace=LAUNCH["swanlab"]["workspace"] if workspace is None else workspace)
    return dict(LAUNCH, swanlab=swanlab, project_name=project or LAUNCH["project_name"])


def test_a_run_is_created_and_finished_once_and_an_unchanged_rerun_creates_none(server, tmp_path, sdk_python):
    swan, head = server(), Container(tmp_path, sdk_python)
    proc, verdict = head.prove(on(swan), key_changed=True)
    assert proc.returncode == 0 and verdict["problems"] == verdict["warnings"] == [], proc.stdout + proc.stderr
    assert verdict["created"] and "'verl-deploy-check' (%s/@TrainingMaster/verl_dapo_qwen3_8b/runs/" % swan.url in verdict["notes"][0]
    assert swan.server.runs_in("TrainingMaster", "verl_dapo_qwen3_8b") == [("verl-deploy-check", "FINISHED")]
    assert swan.lines()[0] == "POST /api/login/api_key 200" and swan.lines()[-1].endswith("/state 200")
    assert not [line for line in swan.lines() if not line.endswith((" 200", " 201", "verl_dapo_qwen3_8b 404"))], swan.lines()
    record = tmp_path / "home" / ".swanlab" / sp.RECORD_NAME
    assert oct(record.stat().st_mode & 0o777) == "0o600"
    assert json.loads(record.read_text())["proven"] == {"host": swan.url, "workspace": "TrainingMaster",
                                                        "project": "verl_dapo_qwen3_8b", "mode": "cloud", "sdk": "0.10.3"}

    asked = len(swan.lines())
    proc, verdict = head.prove(on(swan))
    assert proc.returncode == 0 and not verdict["created"] and "no new run this time" in verdict["notes"][0]
    assert len(swan.lines()) == asked, "an unchanged re-run talked to the server"

    head.prove(on(swan, project="another_project"))  # another project: proven again
    head.prove(on(swan), key_changed=True)  # the key file rewritten: proven again
    assert swan.server.runs_in("TrainingMaster", "another_project") == [("verl-deploy-check", "FINISHED")]
    assert len(swan.server.runs_in("TrainingMaster", "verl_dapo_qwen3_8b")) == 2
    assert head.files_holding_the_key() == ["home/.swanlab/verl_deploy_api_key"]


def test_a_workspace_the_key_may_not_write_to_is_refused_and_the_fix_lifts_it(server, tmp_path, sdk_python):
    swan, head = server(forbidden_workspaces=["TrainingMaster"]), Container(tmp_path, sdk_python)
    proc, verdict = head.prove(on(swan), key_changed=True)
    assert proc.returncode == 1 and not verdict["created"]
    [problem] = verdict["problems"]
    # swanlab 0.10.3's own words, the server's 403 inside them.
    assert ("RuntimeError: Failed to start run: API Request Failed: [Forbidden] no permission to create a project in "
            "workspace TrainingMaster | Trace ID: sim-post | POST %s/api/projects/TrainingMaster" % swan.url) in problem
    assert "Fix: give verl_swanlab_workspace a workspace the key's user may create projects and runs in" in problem
    assert swan.lines()[:2] == ["POST /api/login/api_key 200", "GET /api/project/TrainingMaster/verl_dapo_qwen3_8b 404"]
    assert not (tmp_path / "home" / ".swanlab" / sp.RECORD_NAME).exists()

    proc, verdict = head.prove(on(swan, workspace="sim"))  # the fix: a workspace the key's user may write to, its own
    assert proc.returncode == 0 and verdict["problems"] == [] and verdict["created"], proc.stdout + proc.stderr
    assert swan.server.runs_in("sim", "verl_dapo_qwen3_8b") == [("verl-deploy-check", "FINISHED")]
    assert head.files_holding_the_key() == ["home/.swanlab/verl_deploy_api_key"]


def test_a_server_older_than_the_sdk_is_refused_and_the_fix_lifts_it(server, tmp_path, sdk_python):
    old, head = server(old_server=True), Container(tmp_path, sdk_python)
    proc, verdict = head.prove(on(old), key_changed=True)
    [problem] = verdict["problems"]
    assert ("RuntimeError: Failed to start run: API Request Failed: [404] Not Found | Trace ID: sim-post | POST "
            "%s/api/project/TrainingMaster/verl_dapo_qwen3_8b/experiment" % old.url) in problem
    assert "Pin verl_swanlab_package to the SDK your server's release supports" in problem and "or upgrade the server" in problem
    # The fix, the server's side of it (the SDK's side needs another SDK than the one here): the server upgraded, same data.
    old.server.old_server = False
    proc, verdict = head.prove(on(old))
    assert proc.returncode == 0 and verdict["problems"] == [] and verdict["created"], proc.stdout + proc.stderr


# --------------------------------------------------------------------------- the NPU sampler's charts with the real SDK

def test_the_npu_samplers_charts_reach_the_server_as_a_run_of_the_nodes_own(server, tmp_path, sdk_python):
    """The sampler (roles/training/files/npu_sampler.py) in the environment start_verl.sh exports for a cloud run: its
    samples, logged by swanlab 0.10.3, reach the server in a run '<experiment>-npu-<node>' of the training's project, which
    it finishes when it ends; the key is only in its environment, never in its arguments, output or files."""
    from test_npu_sampler import fake_proc, workdir_with  # pylint: disable=import-outside-toplevel
    swan = server()
    _module, workdir = workdir_with(tmp_path, tensorboard=False)
    with (workdir / "verl_control.env").open("a") as values:
        values.write("NPU_SWANLAB_PROJECT='verl_hlm'\nNPU_SWANLAB_EXPERIMENT='qwen3-8b-dapo'\n")
    env = {"HOME": str(tmp_path / "home"), "PATH": os.environ.get("PATH", ""), "TMPDIR": str(tmp_path), "SWANLAB_MODE": "cloud",
           "SWANLAB_WORKSPACE": "TrainingMaster", "SWANLAB_LOG_DIR": str(tmp_path / "swanlog"), "SWANLAB_API_KEY": KEY,
           "SWANLAB_HOST": swan.url, "SWANLAB_API_HOST": swan.url, "SWANLAB_WEB_HOST": swan.url}
    program = ("import sys; sys.path.insert(0, sys.argv[1]); import npu_sampler; "
               "npu_sampler.main(sys.argv[1], proc=sys.argv[2], limit=2, sleep=lambda _seconds: None)")
    argv = [str(sdk_python), "-c", program, str(workdir), fake_proc(tmp_path)]
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=180, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    samples = [json.loads(line) for line in (tmp_path / "logs" / "npu_samples.node1.jsonl").read_text().splitlines()]
    assert [sorted(line) for line in samples] == [["every", "node", "npus", "processes", "time"]] * 2, samples
    assert swan.server.runs_in("TrainingMaster", "verl_hlm") == [("qwen3-8b-dapo-npu-node1", "FINISHED")]
    assert any(line.startswith("POST /api/house/metrics 20") for line in swan.lines()), swan.lines()
    assert KEY not in proc.stdout + proc.stderr + " ".join(argv)
    assert not [path for path in tmp_path.rglob("*") if path.is_file() and path.name != "server.log"
                and KEY in path.read_text(errors="replace")]
