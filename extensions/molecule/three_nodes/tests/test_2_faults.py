"""Faults on the deployed cluster, each healed by one re-run of deploy.yml (or by the cluster itself).

Each test breaks something a real cluster sees break, then checks that the re-run ends as a first
deploy does: Ray reports 3 nodes and 24 NPU, and one training runs on the head. They build on each
other in file order (pytest runs them so), sharing this scenario's cluster: a test whose fault needs no
heal of its own is left for the next one's (the worker that stops answering, healed by the stop and the
deploy after it), so that each full start of the cluster is paid once.
"""
import json
import re
import time
from pathlib import Path

from sim_scenario import (finish, hosts, in_verl, npu_processes, on_node, paused, playbook, playbook_in_background, ray_view, recap, sh, started_marker,
                          tail, training_pids)

HEAD = hosts("ray_head")[0]
WORKERS = hosts("ray_workers")
STARTED = "/sim/ckpts/qwen3-8b-dapo/stand_in_started.json"
TRAINER = "-m [r]ecipe.dapo.main_dapo"
# A new run's checkpoint folder (inside the one the containers mount), saving only at step 1000.
RUN2 = "/sim/ckpts/qwen3-8b-dapo/run2"
RUN2_SETTINGS = ("-e", "verl_ckpts_dir=%s" % RUN2, "-e", "verl_save_freq=1000")


def started(marker=STARTED):
    """What the stand-in trainer that runs now recorded when it started (pid, the step it resumed from...)."""
    pids = training_pids(HEAD)
    return started_marker(HEAD, pids[0], marker) if len(pids) == 1 else json.loads(in_verl(HEAD, "cat %s" % marker).stdout)


def until(check, seconds=90, what="the condition", explain=lambda: ""):
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "%s did not hold within %d s%s" % (what, seconds, explain())
        time.sleep(2)


def keep_alive_record():
    """The head's keep-alive as the supervisor left it: its state files, decisions, and its start's output."""
    script = "cd /sim/logs/.verl-deploy && ls && tail -n 5 keep_alive.jsonl keep_alive.err; tail -n 25 /sim/logs/start_verl.out"
    return "\n" + in_verl(HEAD, script, check=False).stdout


def kill_training_after(line):
    """The training's last line, then SIGKILL, as a trainer that printed an error and died. The trainer is stopped first
    (SIGSTOP) and tee given a second to write what it read: tee writes at its own offset, so a step line it wrote after
    the line appended here would overwrite it (seen on a busy machine: keep-alive then found no cause in the log).
    `line`: a bash word (quoted), appended to the newest log."""
    in_verl(HEAD, "pkill -STOP -f -- '%s' && sleep 1 && echo %s >>\"$(ls -t /sim/logs/verl_qwen3_8b_*.log | head -n 1)\" && "
                  "pkill -KILL -f -- '%s'" % (TRAINER, line, TRAINER))


def assert_healed(proc, marker=STARTED):
    """As after a first deploy -- with the training's workers holding the NPUs all along, as on real nodes."""
    assert proc.returncode == 0, tail(proc)
    assert ray_view(HEAD) == {"nodes": 3, "npu": 24.0}, tail(proc)
    assert len(training_pids(HEAD)) == 1, tail(proc)
    for worker in WORKERS:
        assert training_pids(worker) == []
    assert len(started(marker)["workers"]) == 24


# A worker's Ray log as a rank that ran out of NPU memory leaves it (vllm-ascend#19's text), and the follower the driver
# prints when that worker is gone (verl#2189).
WORKER_ERR = "/tmp/ray-verl/session_latest/logs/worker-57a1-01000000-4242.err"
NPU_OOM = ("RuntimeError: NPU out of memory. Tried to allocate 22.00 MiB (NPU 0; 60.97 GiB total capacity; 10.24 GiB already "
           "allocated; 10.24 GiB current active; 19.52 MiB free; 10.65 GiB reserved in total by PyTorch)")
ACTOR_DIED = "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task."


def test_a_crashed_training_is_reported_then_started_again_and_resumes():
    before = started()
    # Issue 57: a worker fails first, then the training dies; the head's log holds only the driver's follower.
    in_verl(WORKERS[0], "printf '%%s\\n' 'Traceback (most recent call last):' '%s' > %s" % (NPU_OOM, WORKER_ERR))
    kill_training_after("'%s'" % ACTOR_DIED)
    until(lambda: not training_pids(HEAD), what="the training's end after SIGKILL")
    # npu-smi on the other worker reads one chip in Alarm (read now, after the failure): evidence, not the first failure.
    on_node(WORKERS[1], "sh", "-c", "echo '3 Alarm' > /etc/sim-npu-smi/health")
    try:
        status = playbook("status.yml")
    finally:
        on_node(WORKERS[1], "rm", "-f", "/etc/sim-npu-smi/health")
        in_verl(WORKERS[0], "rm -f %s" % WORKER_ERR)
    # A crashed training is an alarm (verl_status_fail_on): status.yml fails, with its table and the reason, and names the
    # first failure: the worker's, not the head's follower.
    assert status.returncode != 0, tail(status)
    assert "first failure: %s at " % WORKERS[0] in status.output and "NPU out of memory: " + NPU_OOM[:40] in status.output, tail(status)
    evidence = re.search(r"matching line\(s\) on ([^(]*) \(", status.output)
    assert evidence and WORKERS[1] in evidence.group(1), tail(status)
    assert "training: CRASHED (exit code 137)" in status.output, tail(status)
    assert "ALARM: the training CRASHED (exit code 137)" in status.output, tail(status)
    assert "training: CRASHED; step " in status.output, tail(status)
    switched_off = playbook("status.yml", "-e", '{"verl_status_fail_on": []}')
    assert switched_off.returncode == 0 and "not an alarm (verl_status_fail_on leaves it out)" in switched_off.output, tail(switched_off)
    proc = playbook("deploy.yml")
    assert_healed(proc)
    after = started()
    assert after["pid"] != before["pid"]
    # Checkpoints every 2 steps (verl_save_freq): the new run resumed from the last one.
    assert after["resumed_from_step"] >= 2, after


def test_a_transient_failure_is_started_again_from_its_checkpoint_with_no_playbook():
    """Issue 58: the trainer dies after CANN's socket timeout (vllm-ascend#1955's text, stamped now on the head's clock); the
    head's supervisor starts it again by itself, resumed from its checkpoint, and status says so (no alarm)."""
    before = started()
    kill_training_after("\"EI0006: [PID: 4242] $(date +%%Y-%%m-%%d-%%H:%%M:%%S).177.194 Getting socket times out. Reason: Remote Rank did "
                        "not send the data in time.\"")
    until(lambda: len(training_pids(HEAD)) == 1 and started()["pid"] != before["pid"], seconds=300, what="keep-alive's restart",
          explain=keep_alive_record)
    assert started()["resumed_from_step"] >= 2
    status = playbook("status.yml")
    assert status.returncode == 0, tail(status)
    assert "keep-alive: 1 restart(s); the last at " in status.output and "HCCL connection timeout at step " in status.output, tail(status)
    assert "ALARM" not in status.output, tail(status)


def test_the_heads_ray_killed_heals_and_the_orphaned_training_is_replaced():
    before = started()
    in_verl(HEAD, "ray stop --force >/dev/null 2>&1")
    proc = playbook("deploy.yml")
    assert_healed(proc)
    # The workers' raylets still ran, attached to the Ray that was killed: by identity they are not members. (The head
    # stops a stale Ray too: `ray stop` leaves the cluster's record in the folder this scenario's --temp-dir moved.)
    stale_workers = re.findall(r"the head lists no \S+ with 8 NPU \(alive: [^)]*\); stopping this node's stale Ray first", proc.output)
    assert len(stale_workers) == len(WORKERS), tail(proc)
    assert started()["pid"] != before["pid"], "the training of the Ray cluster that was killed must be replaced"


def test_a_worker_node_restarted_comes_back_by_itself_and_the_training_resumes():
    """Issue 58: a worker's host restarts (its Docker with it) mid-run. Its container starts again (unless-stopped) and joins
    the head's Ray by itself (come-back); the head's keep-alive, which saw the node leave Ray, starts the training again once
    every NPU is back, resumed from its checkpoint. No playbook runs until status, which says so (no alarm)."""
    before = started()
    sh("docker", "restart", WORKERS[1], timeout=120)
    until(lambda: ray_view(HEAD) == {"nodes": 3, "npu": 24.0} and len(training_pids(HEAD)) == 1 and started()["pid"] != before["pid"],
          seconds=420, what="the worker's return and keep-alive's restart", explain=keep_alive_record)
    assert started()["resumed_from_step"] >= 2
    assert "joined the head again after the container restarted" in in_verl(WORKERS[1], "cat /sim/logs/come_back.out").stdout
    status = playbook("status.yml")
    assert status.returncode == 0 and "a node left the Ray cluster at step" in status.output, tail(status)
    # Named by its inventory name (verl_control.env's RAY_NAMES), not Ray's address. It resumed from the checkpoint the
    # training saved last: "from step N", or "from its start's own checkpoint" when it saved none since it started (a slow
    # machine's training can die one step after the last test's restart, as on CI).
    assert "(%s), resumed from " % WORKERS[1] in status.output and "left Ray: %s (1x)" % WORKERS[1] in status.output, tail(status)
    assert re.search(r"keep-alive: 1 restart\(s\); the last at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d: ", status.output), tail(status)
    for node in [HEAD] + WORKERS:
        assert sorted(npu_processes(node)) == list(range(8)), node


def test_a_workers_ray_killed_heals_in_one_run():
    pid = training_pids(HEAD)
    in_verl(WORKERS[0], "ray stop --force >/dev/null 2>&1")
    proc = playbook("deploy.yml")
    assert_healed(proc)
    assert recap(proc.stdout)[WORKERS[0]]["changed"] >= 1, tail(proc)  # rejoined
    # verl's worker group had a worker on every NPU of that node, gone with its Ray: the deploy found the training still
    # running (and says why it starts it again), crashed, or keep-alive waiting for the node's NPUs to start it again; each
    # time this run starts it itself and it resumes from its checkpoints.
    assert training_pids(HEAD) != pid, tail(proc)
    assert any(text in proc.output for text in ("went with their Ray, which this run started again", "Start the training, detached (it was crashed)",
                                                "keep-alive was about to start the training again")), tail(proc)
    assert started()["resumed_from_step"] >= 2


def test_a_changed_mask_while_training_stops_the_deploy_unless_verl_restart():
    """Refused without verl_restart; with it, refused while the image's recipe does not import, then while a process
    of the old training holds an NPU; then restarted."""
    pid = training_pids(HEAD)
    script = in_verl(HEAD, "cat /verl/run_training.sh").stdout
    proc = playbook("deploy.yml", "-e", "mask=1000000")
    assert proc.returncode != 0
    assert "mask 0000000 -> 1000000: Remove Padding on" in proc.output, tail(proc)
    assert "-e verl_restart=true" in proc.output, tail(proc)
    assert {counts["changed"] for counts in recap(proc.stdout).values()} == {0}, tail(proc)
    assert training_pids(HEAD) == pid and in_verl(HEAD, "cat /verl/run_training.sh").stdout == script
    # The image's own verl checks the new command before anything stops (Hydra's --cfg job in the head's container): a
    # recipe checkout that does not import on this verl (as verl's images from 0.7.1 on may hold) stops the restart with
    # Python's own line, the profile and the fix, and the running training is left alone.
    in_verl(HEAD, "cp /verl/recipe/dapo/main_dapo.py /tmp/main_dapo.py && "
                  "echo 'from verl.trainer.main_ppo_v0 import TaskRunner' > /verl/recipe/dapo/main_dapo.py")
    try:
        broken = playbook("deploy.yml", "-e", "mask=1000000", "-e", "verl_restart=true")
    finally:
        in_verl(HEAD, "cp /tmp/main_dapo.py /verl/recipe/dapo/main_dapo.py")
    assert broken.returncode != 0, tail(broken)
    assert "ModuleNotFoundError: No module named 'verl.trainer.main_ppo_v0'" in broken.output, tail(broken)
    assert "verl profile 0.7.0" in broken.output, tail(broken)
    assert training_pids(HEAD) == pid and in_verl(HEAD, "cat /verl/run_training.sh").stdout == script
    # A process of the old training that outlives it on a worker (as vLLM's engine processes can) keeps an NPU: the
    # restart stops the training, waits for the NPUs within verl_npu_release_timeout, then stops naming the process;
    # nothing new starts into the held NPU. The fix it gives: end that process and run the deploy again.
    worker = WORKERS[0]
    on_node(worker, "docker", "exec", "-d", "verl", "sh", "-c", "exec sleep 3600 3<>/dev/davinci2")
    held = playbook("deploy.yml", "-e", "mask=1000000", "-e", "verl_restart=true", "-e", "verl_npu_release_timeout=15")
    assert held.returncode != 0, tail(held)
    assert re.search(r"%s: NPUs held by (\d+ \([^)]*\) on davinci\d+; )*\d+ \(sleep\) on davinci2(; [^,]*)?, still after 15 s "
                     r"\(verl_npu_release_timeout\)" % worker, held.output), tail(held)
    assert "docker exec verl kill" in held.output and training_pids(HEAD) == [], tail(held)
    leftover = re.search(r"(\d+) \(sleep\) on davinci2", held.output).group(1)
    on_node(worker, "docker", "exec", "verl", "kill", leftover)
    # Run again as the fix says, into a new checkpoint folder: a new run there, though the last training passed its save
    # step in the old one with none in the new (not lost storage).
    proc = playbook("deploy.yml", "-e", "mask=1000000", "-e", "verl_restart=true", *RUN2_SETTINGS)
    assert_healed(proc, RUN2 + "/stand_in_started.json")
    assert training_pids(HEAD) != pid
    assert "USE_REMOVE_PADDING=True" in in_verl(HEAD, "cat /verl/run_training.sh").stdout


def last_step():
    """The step the training logged last, from the control script's answer (one JSON document)."""
    line = json.loads(in_verl(HEAD, "bash /verl/verl_control.sh training-state").stdout)["answer"]["last_step"].split()
    return int(line[-1]) if len(line) == 2 else 0


LOCK = "/sim/logs/.verl-deploy/deploy.lock"
# The settings the training runs with from test_a_changed_mask_while_training_stops_the_deploy_unless_verl_restart on, until
# the stop: a deploy with them finds no drift.
RUN2_NOW = ("-e", "mask=1000000", *RUN2_SETTINGS)


def test_two_deploys_at_once_start_one_training_and_a_restart_before_the_first_save_is_not_lost_storage(tmp_path):
    """One with verl_restart=true, one without (and a short lock wait): whichever comes second waits for the
    first's lock or is refused naming it, unless the one without came first: it finds the training running from its
    settings and Ray whole, so its Ray step releases the lock at once and it changes nothing. Never two trainings, never
    a stale exit code.

    Both run with the settings of the training the last test started, which saves at step 1000 only: having logged steps
    and saved nothing, it is restarted, not refused as "reached step N, but verl_ckpts_dir has no checkpoint"."""
    until(lambda: last_step() >= 2, seconds=120, what="two steps logged")
    assert "global_step_" not in in_verl(HEAD, "ls %s" % RUN2).stdout
    pid = training_pids(HEAD)
    restart = playbook_in_background("deploy.yml", "-e", "verl_restart=true", *RUN2_NOW, out=tmp_path / "restart.out")
    plain = playbook_in_background("deploy.yml", "-e", "verl_deploy_lock_timeout=5", *RUN2_NOW, out=tmp_path / "plain.out")
    restart, plain = finish(restart), finish(plain)
    assert "has no checkpoint" not in restart.output + plain.output, (tail(restart), tail(plain))
    assert restart.returncode == 0, tail(restart)
    both = restart.output + plain.output
    waited = "holds the cluster's lock since" in both
    refused = "another deploy is changing this cluster: the deploy of controller" in plain.output
    first = plain.returncode == 0 and {counts["changed"] for counts in recap(plain.stdout).values()} == {0}
    assert waited or refused or first, "the two deploys never met at the lock:\n%s\n%s" % (tail(restart), tail(plain))
    if refused:
        assert plain.returncode != 0 and "waited 5 s (verl_deploy_lock_timeout) and changed nothing" in plain.output, tail(plain)
        assert {counts["changed"] for counts in recap(plain.stdout).values()} == {0}, tail(plain)
    else:
        assert plain.returncode == 0, tail(plain)
    assert len(training_pids(HEAD)) == 1 and training_pids(HEAD) != pid, (tail(restart), tail(plain))
    assert len(started(RUN2 + "/stand_in_started.json")["workers"]) == 24
    assert on_node(HEAD, "test", "-e", LOCK, check=False).returncode != 0, "the lock was not released"
    status = playbook("status.yml")
    assert "training: running (pid %s)" % training_pids(HEAD)[0] in status.output, tail(status)


def test_a_deploy_refused_at_the_lock_changed_nothing_on_any_node():
    """Another deploy holds the lock (a fresh lock file on the head, as its take before the container stage writes it): a
    deploy that would restart the training and install a script again is refused right after the confirmation, naming
    that deploy, and changes nothing on any node: no container, no script, no training, the other's lock untouched."""
    pid, watched = training_pids(HEAD), "/verl/start_verl.sh /verl/run_training.sh /verl/launch.json /verl/verl_control.env"
    # The head's start_verl.sh edited in its container: a deploy that got to the scripts stage would write it again.
    in_verl(HEAD, "cp /verl/start_verl.sh /tmp/start_verl.sh.kept && echo '# edited' >> /verl/start_verl.sh")
    before = {node: (in_verl(node, "sha256sum %s" % watched).stdout, on_node(node, "docker", "inspect", "-f", "{{.Id}}", "verl").stdout)
              for node in [HEAD] + WORKERS}
    other = "token=other:42:1\\nholder=the deploy of controller other pid 42 (AWX job 9)\\nsince=%s\\npid=1\\nlease=120\\n"
    on_node(HEAD, "sh", "-c", 'mkdir -p %s && printf "%s" "$(date +%%s)" > %s && cp %s /tmp/other.lock' % (Path(LOCK).parent, other, LOCK, LOCK))
    try:
        proc = playbook("deploy.yml", "-e", "verl_restart=true", "-e", "verl_deploy_lock_timeout=3")
        held = on_node(HEAD, "sh", "-c", "cmp %s /tmp/other.lock && echo same" % LOCK, check=False).stdout
        # (Read before the edited start_verl.sh is put back below.)
        after = {node: (in_verl(node, "sha256sum %s" % watched).stdout, on_node(node, "docker", "inspect", "-f", "{{.Id}}", "verl").stdout)
                 for node in [HEAD] + WORKERS}
    finally:
        on_node(HEAD, "rm", "-f", LOCK, "/tmp/other.lock")
        in_verl(HEAD, "cp /tmp/start_verl.sh.kept /verl/start_verl.sh")
    assert proc.returncode != 0, tail(proc)
    assert ("%s (head): another deploy is changing this cluster: the deploy of controller other pid 42 (AWX job 9) holds its lock "
            "since " % HEAD) in proc.output, tail(proc)
    assert "This deploy waited 3 s (verl_deploy_lock_timeout) and changed nothing." in proc.output, tail(proc)
    assert {counts["changed"] for counts in recap(proc.stdout).values()} == {0}, tail(proc)
    assert held.strip() == "same", "the other deploy's lock was touched"
    assert training_pids(HEAD) == pid, "the refused deploy restarted the training"
    assert after == before, "the refused deploy changed a container or a script"


def test_an_empty_mountpoint_under_the_checkpoints_is_refused_before_anything_starts():
    """After steps were logged and checkpoints saved, verl_ckpts_dir's storage gone on the head (an empty file system
    mounted there): with verl_resume_mode=auto the training would start over from step 0, and the head's folder is no
    longer the storage the workers write to, so the pre-check refuses, naming the head's file system and the workers'."""
    pid = training_pids(HEAD)
    ckpts = "/sim/ckpts/qwen3-8b-dapo"
    on_node(HEAD, "mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", ckpts)
    try:
        proc = playbook("deploy.yml", "-e", "verl_restart=true")
    finally:
        on_node(HEAD, "umount", ckpts)
    text = " ".join(proc.output.split())
    assert proc.returncode != 0, tail(proc)
    assert "verl_ckpts_dir=%s is not the same storage on every node (" % ckpts in text, tail(proc)
    assert "%s: tmpfs tmpfs on %s" % (HEAD, ckpts) in text, tail(proc)
    fix = "Fix: mount one shared file system (NFS, CephFS, Lustre, GPFS, BeeGFS, GlusterFS, JuiceFS, obsfs...) at the same path on every node"
    assert fix in text, tail(proc)
    assert {counts["changed"] for counts in recap(proc.stdout).values()} == {0}, tail(proc)
    assert training_pids(HEAD) == pid


def test_a_worker_that_stops_answering_during_the_ray_wait_is_named_not_the_head(tmp_path):
    """Left as it fails (the stop and the deploy after it, next, bring everything back); with the running training's settings."""
    in_verl(WORKERS[0], "ray stop --force >/dev/null 2>&1")  # the deploy re-joins it, and the head waits for it
    proc = playbook_in_background("deploy.yml", "-e", "verl_ray_wait_timeout=30", *RUN2_NOW, out=tmp_path / "deploy.out")
    try:
        until(lambda: "Wait until Ray reports every node's NPUs" in proc.out_file.read_text() or proc.poll() is not None,
              seconds=900, what="the Ray wait")
        with paused(WORKERS[0]):
            began = time.monotonic()
            proc = finish(proc, timeout=600)
            took = time.monotonic() - began
    finally:
        if proc.poll() is None:  # the test failed before the deploy ended: it must not go on under the next tests
            proc.kill()
            finish(proc)
    assert proc.returncode != 0, tail(proc)
    assert "%s (worker): stopped answering during the Ray wait" % WORKERS[0] in proc.output, tail(proc)
    assert took < 30 + 120, "named within the wait's bound, not after %.0f s" % took
    counts = recap(proc.stdout)
    assert counts[HEAD]["unreachable"] == 0 and counts[HEAD]["failed"] == 0, tail(proc)
    assert on_node(HEAD, "test", "-e", LOCK, check=False).returncode != 0, "the head must release the lock"
    # The worker's join goes on in the background (Ansible's async) once the node answers again: the stop that comes next must
    # find it ended, or the Ray it starts would outlive that stop.
    until(lambda: on_node(WORKERS[0], "pgrep", "-f", "[a]sync_wrapper", check=False).returncode != 0, seconds=300,
          what="the end of the worker's background join")


def test_stop_works_with_a_dataset_gone_and_a_worker_container_stopped():
    on_node(WORKERS[1], "docker", "stop", "verl")
    # The training's inputs are not needed to stop it: a dataset that has gone changes nothing.
    proc = playbook("stop.yml", "-e", "verl_train_file=/sim/data/gone.parquet", "-e", "verl_model_path=relative/nonsense")
    assert proc.returncode == 0, tail(proc)
    assert "%s: container verl exited" % WORKERS[1] in proc.output, tail(proc)
    assert training_pids(HEAD) == []
    for node in (HEAD, WORKERS[0]):
        assert in_verl(node, "pgrep -x raylet", check=False).returncode != 0, "Ray still runs on %s" % node


def test_deploy_after_stop_brings_everything_back(tmp_path):
    """As the operator reads it, with the console report ansible.cfg sets: about 40 lines for 3 nodes (45 at most), and the whole
    task stream in the log file the report names."""
    proc = playbook("deploy.yml", env={"ANSIBLE_STDOUT_CALLBACK": "verl.deploy.report", "VERL_DEPLOY_LOG_DIR": str(tmp_path)})
    assert_healed(proc)
    lines = proc.stdout.splitlines()
    assert len(lines) <= 45 and "TASK [" not in proc.stdout and "included:" not in proc.stdout, proc.stdout
    log = Path(lines[-1].split(" Full log: ")[-1])
    assert log.parent == tmp_path and log.is_file(), lines[-3:]
    counts = recap(log.read_text(encoding="utf-8"))
    assert counts[WORKERS[1]]["changed"] >= 2, proc.stdout  # its container started, Ray joined
