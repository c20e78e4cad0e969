"""start_verl.sh, executed with a stand-in `ray` (and `ip`): bounded waits, head/worker roles, re-runs.

Defects 2 (unbounded waits) and 5 (re-running kills a running training) of the original design (docs/design.md).
"""
from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from helpers.launch_helpers import CANN_SET_ENV, SECRET_KEY, SWANLAB_ON, cann_stand_in, launch, launch_ok, write_scripts

FAKE_RAY = r"""#!/bin/bash
# Stand-in `ray`: logs each call; `status` prints the NPU usage line from $FAKE_RAY/npus (absent: not running).
echo "ray $*" >> "$FAKE_RAY/calls"
case "$1" in
status)
    # Asked through a head that drops packets: it waits far past any bound (exec: `timeout` ends the wait itself).
    [ -f "$FAKE_RAY/status_hangs" ] && exec sleep 30
    [ -f "$FAKE_RAY/npus" ] || { echo "ConnectionError: could not find any running Ray instance" >&2; exit 1; }
    echo "======== Autoscaler status ========"
    echo "Usage:"
    echo " 0.0/4.0 CPU"
    [ "$(cat "$FAKE_RAY/npus")" = none ] || echo " 0.0/$(cat "$FAKE_RAY/npus").0 NPU"
    ;;
start)
    # A head that drops every packet: `ray start` waits on it far past any bound (exec: `timeout` ends the wait itself,
    # and no orphaned sleep holds the test's pipes open).
    # With start_leaves_raylet it started this node's raylet before it hung.
    if [ -f "$FAKE_RAY/start_hangs" ]; then
        [ -f "$FAKE_RAY/start_leaves_raylet" ] && : > "$FAKE_RAY/raylet_left"
        exec sleep 30
    fi
    if [ -f "$FAKE_RAY/start_failures" ] && [ "$(cat "$FAKE_RAY/start_failures")" -gt 0 ]; then
        echo $(( $(cat "$FAKE_RAY/start_failures") - 1 )) > "$FAKE_RAY/start_failures"
        echo "ConnectionError: head not reachable" >&2
        exit 1
    fi
    # Starting Ray registers this node's NPUs (plus whatever "joins" says the others bring).
    echo "$(( $(cat "$FAKE_RAY/joins" 2>/dev/null || echo 0) + 8 ))" > "$FAKE_RAY/npus"
    # A loaded node: the raylet joined, then `timeout` ended `ray start` (rc 124).
    [ -f "$FAKE_RAY/start_runs_past_bound" ] && exit 124
    # Record the environment Ray would start with (the SwanLab key must be there, not in argv).
    env > "$FAKE_RAY/start_env"
    ;;
esac
"""

FAKE_IP = r"""#!/bin/bash
# Stand-in `ip`: one interface eth7 holding 10.10.0.2, routing to the head through it.
case "$*" in
*"route get"*) echo "10.10.0.1 dev eth7 src 10.10.0.2 uid 0" ;;
*"addr show"*) echo "2: eth7    inet 10.10.0.2/24 brd 10.10.0.255 scope global eth7" ;;
esac
"""

FAKE_PGREP = r"""#!/bin/bash
# Stand-in `pgrep`: a raylet runs here when the stand-in Ray runs ($FAKE_RAY/npus exists), or when a `ray start` that
# was given up left one ($FAKE_RAY/raylet_left).
if [ "$*" = "-x raylet" ]; then
    [ -f "$FAKE_RAY/npus" ] || [ -f "$FAKE_RAY/raylet_left" ]
    exit
fi
exec /usr/bin/pgrep "$@"
"""

STUB_TRAINING = "#!/bin/bash\necho TRAINING-STARTED\nenv > \"$(dirname \"$0\")/training_env\"\n"


@pytest.fixture()
def fake(tmp_path):
    state = tmp_path / "ray-state"
    state.mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("ray", FAKE_RAY), ("ip", FAKE_IP), ("pgrep", FAKE_PGREP)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    return state, bin_dir


def scripts_for(tmp_path, **overrides):
    """The rendered scripts; CANN's environment scripts exist (stand-ins) unless verl_ascend_env_scripts is given."""
    if "verl_ascend_env_scripts" not in overrides:
        overrides["verl_ascend_env_scripts"] = cann_stand_in(tmp_path / "Ascend")
    config = launch_ok(verl_log_dir=str(tmp_path / "logs"), **overrides)
    folder = write_scripts(config, tmp_path / "out")
    (folder / "run_training.sh").write_text(STUB_TRAINING)
    return folder


def run(folder, fake, env=None, timeout=60, step=None):
    state, bin_dir = fake
    environment = {"PATH": "%s:%s" % (bin_dir, os.environ["PATH"]), "FAKE_RAY": str(state), "HOME": str(folder)}
    environment.update(env or {})
    started = time.monotonic()
    proc = subprocess.run(["bash", str(folder / "start_verl.sh")] + ([step] if step else []), env=environment, capture_output=True, text=True,
                          timeout=timeout, check=False)
    return proc, time.monotonic() - started


def calls(fake):
    path = fake[0] / "calls"
    return path.read_text().splitlines() if path.exists() else []


def test_head_starts_ray_waits_for_all_npus_then_trains(tmp_path, fake):
    folder = scripts_for(tmp_path, nnodes=2, verl_node_ip="10.0.0.1", verl_socket_ifname="eth0", verl_train_batch_size=16)
    (fake[0] / "joins").write_text("8")  # the worker's 8 NPUs are already there when the head starts
    proc, _elapsed = run(folder, fake)
    assert proc.returncode == 0, proc.stderr
    assert "Ray reports 16/16 NPU free" in proc.stdout
    assert "TRAINING-STARTED" in proc.stdout
    start = [c for c in calls(fake) if c.startswith("ray start")]
    assert start == ['ray start --head --port=9182 --node-ip-address=10.0.0.1 --dashboard-host=10.0.0.1 --dashboard-port=8260 '
                     '--resources={"NPU": 8} --disable-usage-stats']
    env = dict(line.split("=", 1) for line in (folder / "training_env").read_text().splitlines() if "=" in line)
    assert env["ASCEND_RT_VISIBLE_DEVICES"] == "0,1,2,3,4,5,6,7"
    assert env["HCCL_SOCKET_IFNAME"] == env["GLOO_SOCKET_IFNAME"] == env["TP_SOCKET_IFNAME"] == "eth0"
    assert env["NNODES"] == "2" and env["NPU_PER_NODE"] == "8"
    # verl's ray.init() has no address: it joins the head's Ray by RAY_ADDRESS, wherever --temp-dir put Ray's folder.
    assert env["RAY_ADDRESS"] == "10.0.0.1:9182"
    for name, value in {"RAY_DEDUP_LOGS": "0", "HYDRA_FULL_ERROR": "1", "TASK_QUEUE_ENABLE": "1", "HCCL_ASYNC_ERROR_HANDLING": "0",
                        "HCCL_EXEC_TIMEOUT": "3600", "HCCL_CONNECT_TIMEOUT": "3600", "VLLM_ASCEND_ENABLE_NZ": "0",
                        "CUDA_DEVICE_MAX_CONNECTIONS": "1"}.items():
        assert env[name] == value, name


def test_extra_env_wins_over_the_npu_defaults(tmp_path, fake):
    """docs/npu-settings.md: an upstream value this collection does not set by default is one verl_extra_env away."""
    folder = scripts_for(tmp_path, verl_node_ip="10.0.0.1", verl_socket_ifname="eth0",
                         verl_extra_env={"TASK_QUEUE_ENABLE": "2", "HCCL_EXEC_TIMEOUT": "7200", "CPU_AFFINITY_CONF": "1"})
    proc, _elapsed = run(folder, fake)
    assert proc.returncode == 0, proc.stderr
    env = dict(line.split("=", 1) for line in (folder / "training_env").read_text().splitlines() if "=" in line)
    assert (env["TASK_QUEUE_ENABLE"], env["HCCL_EXEC_TIMEOUT"], env["CPU_AFFINITY_CONF"]) == ("2", "7200", "1")
    assert env["CUDA_DEVICE_MAX_CONNECTIONS"] == "1"


def test_head_gives_up_after_its_timeout_and_says_why(tmp_path, fake):
    folder = scripts_for(tmp_path, nnodes=2, verl_node_ip="10.0.0.1", verl_socket_ifname="eth0", verl_ray_wait_timeout=2,
                         verl_train_batch_size=16)
    proc, _elapsed = run(folder, fake)
    assert proc.returncode != 0
    assert "only 8 of 16 NPUs joined Ray within 2 s (verl_ray_wait_timeout)" in proc.stderr
    assert "TRAINING-STARTED" not in proc.stdout


def test_head_without_npu_resource_waits_and_says_so(tmp_path, fake):
    """Ray up but no NPU resource registered (pain point: nodes started with --num-gpus)."""
    folder = scripts_for(tmp_path, verl_node_ip="10.0.0.1", verl_socket_ifname="eth0", verl_ray_wait_timeout=1)
    (fake[0] / "npus").write_text("none")
    proc, _elapsed = run(folder, fake)
    assert proc.returncode != 0
    assert "Ray reports 0/8 NPU free" in proc.stdout
    assert "only 0 of 8 NPUs joined Ray within 1 s" in proc.stderr


def test_head_rerun_leaves_a_running_ray_alone(tmp_path, fake):
    folder = scripts_for(tmp_path, verl_node_ip="10.0.0.1", verl_socket_ifname="eth0")
    (fake[0] / "npus").write_text("8")
    proc, _elapsed = run(folder, fake)
    assert proc.returncode == 0, proc.stderr
    assert "leaving it as it is" in proc.stdout
    assert not [c for c in calls(fake) if c.startswith("ray start") or c.startswith("ray stop")]


def test_worker_joins_after_retries(tmp_path, fake):
    folder = scripts_for(tmp_path, is_head=False, nnodes=2, verl_train_batch_size=16, verl_ray_join_delay=1)
    (fake[0] / "start_failures").write_text("2")
    proc, _elapsed = run(folder, fake)
    assert proc.returncode == 0, proc.stderr
    assert "Joined the Ray head 10.0.0.1:9182 (attempt 3)" in proc.stdout
    starts = [c for c in calls(fake) if c.startswith("ray start")]
    # Detected from the route to the head (stand-in `ip`): source 10.10.0.2 on eth7.
    assert starts[-1] == 'ray start --address=10.0.0.1:9182 --node-ip-address=10.10.0.2 --resources={"NPU": 8} --disable-usage-stats'
    assert "TRAINING-STARTED" not in proc.stdout


def test_worker_whose_ray_start_ran_past_its_bound_after_joining_is_joined(tmp_path, fake):
    folder = scripts_for(tmp_path, is_head=False, nnodes=2, verl_train_batch_size=16, verl_ray_join_delay=1)
    (fake[0] / "start_runs_past_bound").write_text("")
    proc, _elapsed = run(folder, fake)
    assert proc.returncode == 0, proc.stderr
    assert "Joined the Ray head 10.0.0.1:9182 (attempt 1: `ray start` failed or ran past 60 s (verl_ray_join_timeout)" in proc.stdout
    assert len([c for c in calls(fake) if c.startswith("ray start")]) == 1


def test_worker_gives_up_after_bounded_retries(tmp_path, fake):
    folder = scripts_for(tmp_path, is_head=False, nnodes=2, verl_train_batch_size=16, verl_ray_join_retries=3, verl_ray_join_delay=1)
    (fake[0] / "start_failures").write_text("99")
    proc, _elapsed = run(folder, fake)
    assert proc.returncode != 0
    assert "could not join the Ray head 10.0.0.1:9182 after 3 attempts (verl_ray_join_retries)" in proc.stderr
    assert "(attempt 3/3: `ray start` ended with rc 1)." in proc.stderr
    # Retried twice, the delay apart; after the last attempt it neither says it retries nor waits.
    assert proc.stderr.count("; retrying in 1 s.") == 2 and "(attempt 3/3: `ray start` ended with rc 1); retrying" not in proc.stderr
    assert len([c for c in calls(fake) if c.startswith("ray start")]) == 3


def test_worker_attempt_that_hangs_is_given_up_after_verl_ray_join_timeout(tmp_path, fake):
    """Behind a head that drops packets, each attempt ends after verl_ray_join_timeout, not the default 60 s; and the look
    whether the raylet the attempt left joined after all asks the head for at most 10 s (the join's bound counts 10 s an
    attempt), though `ray status` waits far longer."""
    folder = scripts_for(tmp_path, is_head=False, nnodes=2, verl_train_batch_size=16, verl_ray_join_retries=1,
                         verl_ray_join_delay=1, verl_ray_join_timeout=1)
    for name in ("start_hangs", "start_leaves_raylet", "status_hangs"):
        (fake[0] / name).write_text("")
    proc, elapsed = run(folder, fake, timeout=60)
    assert proc.returncode != 0
    assert "(attempt 1/1: `ray start` ran past 1 s (verl_ray_join_timeout))" in proc.stderr
    assert "after 1 attempts (verl_ray_join_retries) of at most 1 s each (verl_ray_join_timeout)" in proc.stderr
    assert len([c for c in calls(fake) if c.startswith("ray start")]) == 1
    assert "ray status --address=10.0.0.1:9182" in calls(fake)
    # The 1 s attempt and the 10 s look (no pause after the last attempt), against the stand-in's 30 s waits.
    assert elapsed < 20, "the worker took %.0f s to give up" % elapsed


def test_swanlab_key_comes_from_the_protected_file_not_the_script(tmp_path, fake):
    key_file = tmp_path / "swanlab_key"
    key_file.write_text(SECRET_KEY)
    key_file.chmod(0o600)
    folder = scripts_for(tmp_path, api_key=SECRET_KEY, verl_node_ip="10.0.0.1", verl_socket_ifname="eth0",
                         verl_swanlab_api_key_file=str(key_file), verl_swanlab_log_dir=str(tmp_path / "swanlog"), **SWANLAB_ON)
    assert SECRET_KEY not in (folder / "start_verl.sh").read_text()
    proc, _elapsed = run(folder, fake)
    assert proc.returncode == 0, proc.stderr
    env = (fake[0] / "start_env").read_text()
    assert "SWANLAB_API_KEY=" + SECRET_KEY in env
    assert "SWANLAB_HOST=http://192.168.1.100:8000" in env and "SWANLAB_MODE=cloud" in env
    assert SECRET_KEY not in proc.stdout + proc.stderr
    assert all(SECRET_KEY not in c for c in calls(fake))


def test_swanlab_without_a_key_stops_before_ray(tmp_path, fake):
    folder = scripts_for(tmp_path, api_key=SECRET_KEY, verl_node_ip="10.0.0.1", verl_socket_ifname="eth0",
                         verl_swanlab_api_key_file=str(tmp_path / "missing"), verl_swanlab_log_dir=str(tmp_path / "swanlog"), **SWANLAB_ON)
    proc, _elapsed = run(folder, fake)
    assert proc.returncode != 0
    assert "needs its API key" in proc.stderr
    assert calls(fake) == []


@pytest.mark.parametrize("written", [True, False], ids=["keys-written", "key-missing"])
def test_the_trackers_keys_come_from_their_protected_files_not_the_script(tmp_path, fake, written):
    """wandb's and MLflow's keys reach Ray's (and so the training's) environment from their 0600 files, never through the
    script, an argument list or the output; a key file missing stops before Ray, naming it."""
    from ansible_collections.verl.deploy.plugins.module_utils._launch_config import build
    from helpers.launch_helpers import RULES, SPEC, settings

    keys = tmp_path / "keys"
    keys.mkdir(mode=0o700)
    values = {"WANDB_API_KEY": "w-" + SECRET_KEY, "MLFLOW_TRACKING_TOKEN": "m-" + SECRET_KEY}
    for name, value in values.items():
        if written or name == "WANDB_API_KEY":
            (keys / name).write_text(value)
            (keys / name).chmod(0o600)
    config, errors, _warnings = build(settings(verl_log_dir=str(tmp_path / "logs"), verl_ascend_env_scripts=cann_stand_in(tmp_path / "Ascend"),
                                               verl_node_ip="10.0.0.1", verl_socket_ifname="eth0", verl_tracker_keys_dir=str(keys),
                                               verl_loggers="console,wandb,mlflow"),
                                      SPEC, RULES, host="node1", head={"name": "node1", "ansible_host": "10.0.0.1"},
                                      secrets_set=("verl_wandb_api_key", "verl_mlflow_tracking_token"))
    assert not errors, errors
    folder = write_scripts(config, tmp_path / "out")
    (folder / "run_training.sh").write_text(STUB_TRAINING)
    proc, _elapsed = run(folder, fake)
    said = proc.stdout + proc.stderr + (folder / "start_verl.sh").read_text() + "".join(calls(fake))
    assert not any(value in said for value in values.values())
    if not written:
        assert proc.returncode != 0 and "MLFLOW_TRACKING_TOKEN is not in %s" % keys in proc.stderr and calls(fake) == []
        return
    assert proc.returncode == 0, proc.stderr
    env = (fake[0] / "start_env").read_text().splitlines()
    assert all("%s=%s" % pair in env for pair in values.items()), env


@pytest.mark.parametrize("mode", ["offline", "local"])
def test_swanlab_modes_without_login_never_pass_a_key_on(tmp_path, fake, mode):
    """verl logs in whenever SWANLAB_API_KEY is set: in offline/local mode that would reach for a server."""
    _config, errors, warnings = launch(api_key=SECRET_KEY, verl_swanlab_enabled=True, verl_swanlab_mode=mode)
    assert not errors and any("verl_swanlab_mode is %s, which needs no login" % mode in warning for warning in warnings)
    key_file = tmp_path / "swanlab_key"
    key_file.write_text(SECRET_KEY)
    folder = scripts_for(tmp_path, api_key=SECRET_KEY, verl_node_ip="10.0.0.1", verl_socket_ifname="eth0", verl_swanlab_enabled=True,
                         verl_swanlab_mode=mode, verl_swanlab_api_key_file=str(key_file), verl_swanlab_log_dir=str(tmp_path / "swanlog"))
    assert str(key_file) not in (folder / "start_verl.sh").read_text()
    # Even a key left in the caller's environment is not passed to Ray and the training.
    proc, _elapsed = run(folder, fake, env={"SWANLAB_API_KEY": SECRET_KEY})
    assert proc.returncode == 0, proc.stderr
    env = (fake[0] / "start_env").read_text()
    assert SECRET_KEY not in env and "SWANLAB_MODE=%s" % mode in env


def test_steps_let_the_deploy_drive_each_stage(tmp_path, fake):
    """`ray` only starts Ray, `wait` only waits, `train` waits then trains: each stage with its own message."""
    folder = scripts_for(tmp_path, verl_node_ip="10.0.0.1", verl_socket_ifname="eth0")
    proc, _elapsed = run(folder, fake, step="ray")
    assert proc.returncode == 0, proc.stderr
    assert "TRAINING-STARTED" not in proc.stdout and "Ray reports" not in proc.stdout
    assert len([c for c in calls(fake) if c.startswith("ray start --head")]) == 1
    proc, _elapsed = run(folder, fake, step="wait")
    assert proc.returncode == 0 and "Ray reports 8/8 NPU free" in proc.stdout and "TRAINING-STARTED" not in proc.stdout
    proc, _elapsed = run(folder, fake, step="train")
    assert proc.returncode == 0 and "TRAINING-STARTED" in proc.stdout
    assert len([c for c in calls(fake) if c.startswith("ray start")]) == 1


def test_a_worker_refuses_head_only_steps(tmp_path, fake):
    folder = scripts_for(tmp_path, is_head=False, nnodes=2, verl_train_batch_size=16)
    proc, _elapsed = run(folder, fake, step="train")
    assert proc.returncode != 0 and "runs on the Ray head only" in proc.stderr
    proc, _elapsed = run(folder, fake, step="bogus")
    assert proc.returncode != 0 and "unknown step 'bogus'" in proc.stderr
    assert calls(fake) == []


def test_rendered_scripts_never_kill_or_delete(tmp_path):
    """Defect 3 of the original: `pkill -9 python`, and `rm -rf /tmp/ray` on every start."""
    config = launch_ok(verl_feature_mask="1111111", **SWANLAB_ON, api_key=SECRET_KEY)
    folder = write_scripts(config, tmp_path / "out")
    for name in ("start_verl.sh", "run_training.sh"):
        text = Path(folder / name).read_text()
        for forbidden in ("pkill", "killall", "kill -9", "rm -rf", "ray stop"):
            assert forbidden not in text, (name, forbidden)


# --- CANN's environment (docs/ascend-images.md): sourced when present, never silently missing.

def training_env(folder):
    return dict(line.split("=", 1) for line in (folder / "training_env").read_text().splitlines() if "=" in line)


def test_the_default_cann_scripts_are_verl_images_then_the_cann_layout():
    """verl v0.7.0's docker/ascend/Dockerfile.ascend_8.3.rc1_a2/_a3 source ascend-toolkit/ and nnal/atb/; newer CANN
    installs have the plain cann/set_env.sh (verl v0.9.0's Dockerfile.ascend_8.5.2_a2_qwen3-5 sources it); the
    /usr/local/Ascend/cann/ layout is kept after them."""
    assert launch_ok()["ascend_env_scripts"] == [
        "/usr/local/Ascend/ascend-toolkit/set_env.sh", "/usr/local/Ascend/cann/set_env.sh", "/usr/local/Ascend/nnal/atb/set_env.sh",
        "/usr/local/Ascend/cann/ascend-toolkit/set_env.sh", "/usr/local/Ascend/cann/nnal/atb/set_env.sh"]


def test_the_plain_cann_set_env_of_a_newer_install_is_sourced(tmp_path, fake):
    """Only /usr/local/Ascend/cann/set_env.sh (no ascend-toolkit/): sourced, and its environment reaches the training."""
    root = tmp_path / "Ascend"
    plain = root / "cann" / "set_env.sh"
    plain.parent.mkdir(parents=True)
    plain.write_text(CANN_SET_ENV["ascend-toolkit/set_env.sh"])
    scripts = [str(root / "ascend-toolkit/set_env.sh"), str(plain), str(root / "nnal/atb/set_env.sh")]
    folder = scripts_for(tmp_path, verl_node_ip="10.0.0.1", verl_socket_ifname="eth0", verl_ascend_env_scripts=scripts)
    proc, _elapsed = run(folder, fake)
    assert proc.returncode == 0, proc.stderr
    assert "CANN environment: sourced %s\n" % plain in proc.stdout
    assert training_env(folder)["ASCEND_HOME_PATH"] == "%s/latest" % plain.parent


def test_the_cann_scripts_are_sourced_before_ray_and_reach_the_training(tmp_path, fake):
    folder = scripts_for(tmp_path, verl_node_ip="10.0.0.1", verl_socket_ifname="eth0")
    proc, _elapsed = run(folder, fake)
    assert proc.returncode == 0, proc.stderr
    root = tmp_path / "Ascend"
    assert "CANN environment: sourced %s %s" % (root / "ascend-toolkit/set_env.sh", root / "nnal/atb/set_env.sh") in proc.stdout
    env = training_env(folder)
    assert env["ASCEND_HOME_PATH"] == env["ASCEND_TOOLKIT_HOME"] == "%s/ascend-toolkit/latest" % root
    assert env["ATB_HOME_PATH"] == "%s/nnal/atb/latest/atb/cxx_abi_1" % root
    assert "ASCEND_TOOLKIT_HOME=" in (fake[0] / "start_env").read_text(), "Ray starts with CANN's environment"


@pytest.mark.parametrize("is_head", [True, False], ids=["head", "worker"])
def test_without_any_cann_script_the_script_stops_before_ray_naming_the_paths(tmp_path, fake, is_head):
    missing = [str(tmp_path / "nowhere/ascend-toolkit/set_env.sh"), str(tmp_path / "nowhere/nnal/atb/set_env.sh")]
    folder = scripts_for(tmp_path, is_head=is_head, nnodes=2, verl_train_batch_size=16, verl_node_ip="10.0.0.2",
                         verl_socket_ifname="eth0", verl_ascend_env_scripts=missing)
    proc, _elapsed = run(folder, fake)
    assert proc.returncode != 0
    assert "no CANN environment: none of %s %s exists in this container" % tuple(missing) in proc.stderr
    assert "neither ASCEND_HOME_PATH nor ASCEND_TOOLKIT_HOME is set" in proc.stderr
    assert "Fix: set verl_ascend_env_scripts" in proc.stderr
    assert calls(fake) == [], "nothing of Ray ran"
    assert not (folder / "training_env").exists()


def test_a_cann_environment_already_set_is_used_when_no_script_exists(tmp_path, fake):
    folder = scripts_for(tmp_path, verl_node_ip="10.0.0.1", verl_socket_ifname="eth0",
                         verl_ascend_env_scripts=[str(tmp_path / "nowhere/set_env.sh")])
    proc, _elapsed = run(folder, fake, env={"ASCEND_HOME_PATH": "/opt/cann"})
    assert proc.returncode == 0, proc.stderr
    assert "using the one already set (ASCEND_HOME_PATH/ASCEND_TOOLKIT_HOME=/opt/cann)" in proc.stdout
    assert "TRAINING-STARTED" in proc.stdout


def test_only_the_scripts_that_exist_are_sourced_each_once(tmp_path, fake):
    """The /usr/local/Ascend/cann/ layout alone (the first two defaults missing); a second path that links to a
    script already sourced is not sourced again."""
    cann = cann_stand_in(tmp_path / "Ascend/cann")
    (tmp_path / "link").symlink_to(tmp_path / "Ascend/cann/ascend-toolkit")
    scripts = [str(tmp_path / "Ascend/ascend-toolkit/set_env.sh"), str(tmp_path / "Ascend/nnal/atb/set_env.sh"), *cann,
               str(tmp_path / "link/set_env.sh")]
    folder = scripts_for(tmp_path, verl_node_ip="10.0.0.1", verl_socket_ifname="eth0", verl_ascend_env_scripts=scripts)
    proc, _elapsed = run(folder, fake)
    assert proc.returncode == 0, proc.stderr
    assert "CANN environment: sourced %s %s\n" % tuple(cann) in proc.stdout
    env = training_env(folder)
    assert env["ASCEND_HOME_PATH"] == "%s/Ascend/cann/ascend-toolkit/latest" % tmp_path
    assert env["LD_LIBRARY_PATH"].count("/Ascend/cann/ascend-toolkit/latest/lib64") == 1


@pytest.mark.parametrize("version, exported", [("0.7.0", None), ("0.8.0", "1"), ("0.9.1", "1")])
def test_a_transformers_5_release_turns_off_its_asynchronous_loading(tmp_path, fake, version, exported):
    """verl's multi-machine guide (v0.9.0, docs/ascend_tutorial/model_support/examples/multi-machine_task_startup_practice.rst)
    exports HF_DEACTIVATE_ASYNC_LOAD=1 for transformers 5's images; transformers 4 (0.7.x) does not read it."""
    folder = scripts_for(tmp_path, verl_node_ip="10.0.0.1", verl_socket_ifname="eth0", verl_version=version)
    proc, _elapsed = run(folder, fake)
    assert proc.returncode == 0, proc.stderr
    assert training_env(folder).get("HF_DEACTIVATE_ASYNC_LOAD") == exported


# --- The NPU sampler starts with Ray (npu_sampler.py beside the script), detached: the step's output is not held open by it.
STAND_IN_SAMPLER = """import os, sys, time
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "sampler_started"), "a") as out:
    out.write("%d %d %s\\n" % (os.getpid(), os.getsid(0), os.getcwd()))
time.sleep(30)
"""


@pytest.mark.parametrize("is_head, step", [(True, "ray"), (False, "ray"), (False, None), (True, "train"), (False, "sampler")])
def test_the_npu_sampler_starts_with_ray_detached(tmp_path, fake, is_head, step):
    folder = scripts_for(tmp_path, is_head=is_head, nnodes=1 if is_head else 2, verl_node_ip="10.0.0.1", verl_socket_ifname="eth0",
                         **({} if is_head else {"verl_train_batch_size": 16}))
    (folder / "npu_sampler.py").write_text(STAND_IN_SAMPLER)
    if step == "train":
        run(folder, fake, step="ray")
    proc, elapsed = run(folder, fake, step=step, timeout=20)
    assert proc.returncode == 0, proc.stderr
    assert elapsed < 15  # the sampler's sleep holds none of the step's pipes
    marker = folder / "sampler_started"
    deadline = time.monotonic() + 10
    # A whole line: the stand-in creates the file before it writes its line (a busy machine read it empty in between).
    while not (marker.exists() and marker.read_text().endswith("\n")) and time.monotonic() < deadline:
        time.sleep(0.1)
    started = [line.split() for line in marker.read_text().splitlines()]
    try:
        assert started and all(pid == sid and cwd == str(folder) for pid, sid, cwd in started)  # its own session, in verl_workdir
    finally:
        for pid, _sid, _cwd in started:
            subprocess.run(["kill", pid], check=False)


def test_without_the_sampler_file_ray_starts_as_before(tmp_path, fake):
    folder = scripts_for(tmp_path, verl_node_ip="10.0.0.1", verl_socket_ifname="eth0")
    proc, _elapsed = run(folder, fake, step="ray")
    assert proc.returncode == 0 and not (folder / "sampler_started").exists(), proc.stderr
