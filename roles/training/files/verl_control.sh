#!/usr/bin/env bash
# Installed by verl.deploy; do not edit (deploy again). The same file on every node: what tells this node and deployment
# apart (the host, its Ray role, the training process, its logs, the lock) is verl_control.env beside it, which the
# deploy writes from the validated settings.
# What deploy.yml, status.yml and stop.yml do inside the container, one step per call; start_verl.sh, beside it,
# resolves the addresses and starts Ray and the training.
#   bash verl_control.sh members                    head: the Ray nodes alive (members: IP=NPUS,IP=NPUS)
#   bash verl_control.sh ray-look                   one look at this node's Ray, as facts (on the head under the
#                                                   deploy's lock, with the nodes its GCS lists alive)
#   bash verl_control.sh ray-start [STALE]          Ray started (head) or joined (worker), this node's stale Ray stopped first
#                                                   when STALE says why
#   bash verl_control.sh training-state             head: facts (pid, exit code, steps, Ray sessions, launch
#                                                   record); the state is decided from them in _training_state.py
#   bash verl_control.sh start-training             head: start_verl.sh train, detached, recorded in the state folder
#   bash verl_control.sh verify-facts               head: one look of the deploy's wait for the training, as facts (its
#                                                   verify-look step decides on them on the host)
#   bash verl_control.sh npus-look                  one look: exit 0 when no process of this container holds an NPU,
#                                                   3 (naming them) while some do
#   bash verl_control.sh status MEMBERS LINES       read-only facts of this node (its Ray, the image's verl, its NPU
#                                                   sampler's last lines) and, on the head, the training's state with its start output's and log's tails
#   bash verl_control.sh stop-training              head: SIGTERM, up to 60 s, then SIGKILL of the training process only
#   bash verl_control.sh stop-ray                   Ray on this node (ray stop) and its NPU sampler, nothing else
#   bash verl_control.sh unlock                     head: the deploy's lock released (by its holder only)
#   bash verl_control.sh come-back                  worker: run by the container's own start command (roles/container): it
#                                                   joins the head's Ray again after the container or its host restarted,
#                                                   unless stop.yml stopped this node's Ray (ray_wanted is gone)
# Each step answers with ONE JSON document on stdout, {"said": [sentences for people], "answer": {KEY: VALUE}}, written
# by emit (the one printer, python3's json, as every verl image has it) when the step exits, whatever it exits with: a
# value is a JSON string whatever bytes it holds (a file name with a line break, an escape sequence), so nothing a node's
# files say can become another key. The playbooks decide only on the answer (plugins/module_utils/_run_time.py); Ray's steps
# (ray, ray-check, ray-progress) and verify-look are decided in Python on the host (plugins/module_utils/_control_step.py),
# between ray-look, ray-start, members, unlock and verify-facts. What the programs a step runs print (start_verl.sh,
# ray start) goes to stderr, with the errors.
# One deploy at a time: the steps that change the cluster on the head (ray-look, ray-start, start-training,
# stop-training) take the deploy's lock, and members, verify-facts, npus-look and training-state keep it fresh, when the
# deploy gives its identity (VERL_DEPLOY_LOCK_TOKEN, _HOLDER, _WAIT, a comparison's _KEEP and _LEASE); without it (by
# hand, tests) no lock is taken. The lock is a file in LOCK_FOLDER (a comparison's deploys name the deployment's), else
# the state folder, on the host's log folder; _deploy_lock.py beside this script takes, keeps and releases it: the code
# deploy.yml takes the same file with on the head's host before its first change (its holder, lease and take-over rules).
# Nothing here deletes a checkpoint or a log; only this node's Ray and training process are ever stopped.
set -euo pipefail
cd "$(dirname "$0")"

# HOST ROLE NPU_PER_NODE NNODES RAY_PORT DASHBOARD_PORT, and the one definition of the training process (pgrep -f
# pattern), its logs and checkpoints: TRAINING_PATTERN LOG_DIR LOG_PREFIX CKPTS_DIR; LOCK_FOLDER (empty: the state folder);
# RAY_TEMP_DIR (empty: Ray's default).
if [ ! -r verl_control.env ]; then
    echo "verl_control.sh: verl_control.env is missing beside it in $(pwd) (an interrupted install). Fix: run deploy.yml again." >&2
    exit 1
fi
# shellcheck source=/dev/null
. ./verl_control.env
STATE_DIR="${LOG_DIR}/.verl-deploy"
START_OUT="${LOG_DIR}/start_verl.out"
# Each start's output is kept: the previous ones as start_verl.out.1 (newest) to .${START_OUT_KEEP}.
START_OUT_KEEP=4
# Ray's temporary folder (its session_latest): --temp-dir of verl_ray_start_args (RAY_TEMP_DIR, from verl_control.env),
# else Ray's default. Ray records the cluster it started (ray_current_cluster) in one or the other, by release.
RAY_DEFAULT_DIR="${RAY_TMPDIR:-/tmp}/ray"
RAY_DIR="${RAY_TEMP_DIR:-${RAY_DEFAULT_DIR}}"

SAID=()
ANSWERED=()
# supervise's output is the training's (start_verl.out): no answer there.
QUIET=""
# The lock this step holds until it exits (lock_take, lock_renew): lock_py end judges it then.
LOCK_ARMED=""

say() { SAID+=("$*"); }

answer() {
    # KEY=VALUE arguments for the playbooks: the key is this script's own text, the value is kept whole (emit).
    ANSWERED+=("$@")
}

emit() {
    # The one printer of a step's answer. Bytes that are not UTF-8 are shown as \xNN; each tail line is cut at 2,000 characters
    # by its reader below, so that the document stays far under the kernel's limit of one argument.
    python3 -I -S -c 'import json, os, sys
args = [os.fsencode(arg).decode("utf-8", "backslashreplace") for arg in sys.argv[1:]]
count = int(args[0])
answer = dict(pair.partition("=")[::2] for pair in args[1 + count:])
sys.stdout.write(json.dumps({"said": args[1:1 + count], "answer": answer}, sort_keys=True) + "\n")' "${#SAID[@]}" "${SAID[@]}" "${ANSWERED[@]}"
}

finish() {
    local code=$?
    [ -z "${LOCK_ARMED}" ] || lock_py end "${code}" || true
    [ -n "${QUIET}" ] || emit || true
    exit "${code}"
}
trap finish EXIT

tail_of() {
    # The last LINES lines of a file, each cut to 2,000 bytes (a model's output can make one line of megabytes).
    tail -n "$2" "$1" 2>/dev/null | cut -b 1-2000 || true
}

die() {
    echo "verl_control.sh on ${HOST}: $*" >&2
    exit 1
}

head_only() {
    [ "${ROLE}" = head ] || die "step '$1' runs on the Ray head only; this node is a worker."
}

now() { printf '%(%s)T' -1; }

# --- One deploy at a time (the lock on the head): _deploy_lock.py beside this script, the same code, rules and words
# as the take on the head's host (node_step's lock), with this call as the lock's holder ($$).
lock_py() { python3 -I -B _deploy_lock.py "$@" "${LOCK_FOLDER:-${STATE_DIR}}" "verl_control.sh on ${HOST}" "$$"; }

lock_take() {
    # Taken (or renewed, when this deploy holds it) before a step that changes the cluster; waits at most
    # VERL_DEPLOY_LOCK_WAIT s for another deploy's lock, then refuses (exit 4) naming it. LOCK_HOW says how, for the
    # step's answer: none (no token), held (this deploy's already), free, waited, taken-over (from a deploy that is gone).
    LOCK_HOW=none
    [ -n "${VERL_DEPLOY_LOCK_TOKEN:-}" ] || return 0
    local out code=0 taken
    out="$(lock_py take)" || code=$?
    mapfile -t taken <<<"${out}"
    SAID+=("${taken[@]:1}")
    [ "${code}" = 0 ] || exit "${code}"
    LOCK_HOW="${taken[0]}"
    LOCK_ARMED=1
}

# A step of the holder that changes nothing keeps its lock fresh when it exits (lock_py end, from finish), as its other
# steps do: fresh when it went well (0) or is to be looked at again (3), released when it failed, kept for a comparison.
lock_renew() { [ -z "${VERL_DEPLOY_LOCK_TOKEN:-}" ] || LOCK_ARMED=1; }

unlock() {
    head_only unlock
    QUIET=1
    lock_py unlock
}

# --- Ray
addresses() {
    # "MASTER_IP CURRENT_IP", resolved by start_verl.sh as it does when it starts Ray.
    bash ./start_verl.sh address
}

raylet_runs() { pgrep -x raylet >/dev/null 2>&1; }

gcs_runs() { pgrep -x gcs_server >/dev/null 2>&1; }

members() {
    # Every Ray node the head's GCS lists as alive, with its NPUs: IP=NPUS,IP=NPUS (sorted).
    local addr master_ip _current_ip
    addr="$(addresses)" || exit 1
    read -r master_ip _current_ip <<<"${addr}"
    # No GCS on the head (its container or Ray restarted): nobody to ask, so no client or driver is waited for.
    if [ "${ROLE}" = head ] && ! gcs_runs; then
        echo ""
        return
    fi
    # Ray's GCS client first, else as a driver (ray_members.py, beside this script).
    { timeout -k 5 15 python3 -B ray_members.py gcs "${master_ip}:${RAY_PORT}" 2>/dev/null ||
        timeout -k 5 60 python3 -B ray_members.py driver "${master_ip}:${RAY_PORT}" 2>/dev/null; } | tail -n 1
}

ray_node_lock() {
    # One of ray-look, ray-start, come-back at a time on this node: a deploy that starts a stopped container looks at its
    # Ray only once the container's own come-back has joined (or given up). flock, where the image has it; bounded.
    mkdir -p "${STATE_DIR}"
    command -v flock >/dev/null 2>&1 || return 0
    exec 8>>"${STATE_DIR}/ray.lock"
    flock -w 300 8 || true
}

cluster_recorded() { [ -e "${RAY_DIR}/ray_current_cluster" ] || [ -e "${RAY_DEFAULT_DIR}/ray_current_cluster" ]; }

stop_stale_ray() {
    # Only Ray's own processes, and its pointer to a cluster that is gone; its session logs stay.
    say "ray: $1; stopping this node's stale Ray first."
    timeout 120 ray stop --force >/dev/null 2>&1 || true
    rm -f "${RAY_DIR}/ray_current_cluster" "${RAY_DEFAULT_DIR}/ray_current_cluster"
}

ray_look() {
    # One look at this node's Ray for the deploy to decide on (ray_step in plugins/module_utils/_control_step.py): its
    # addresses, whether its raylet and GCS run, whether Ray recorded a cluster here, on the head the nodes its GCS lists
    # alive (when both run) and how it took the deploy's lock (lock_take), as its answer.
    local addr master_ip current_ip raylet=false gcs=false recorded=false listed=""
    [ "${ROLE}" != head ] || lock_take
    ray_node_lock
    addr="$(addresses)" || exit 1
    read -r master_ip current_ip <<<"${addr}"
    ! raylet_runs || raylet=true
    ! gcs_runs || gcs=true
    ! cluster_recorded || recorded=true
    if [ "${ROLE}" = head ] && [ "${raylet}" = true ] && [ "${gcs}" = true ]; then listed="$(members)" || listed=""; fi
    answer "role=${ROLE}" "npus=${NPU_PER_NODE}" "nnodes=${NNODES}" "master_ip=${master_ip}" "current_ip=${current_ip}" \
        "ray_port=${RAY_PORT}" "raylet=${raylet}" "gcs=${gcs}" "recorded=${recorded}" "members=${listed}" "lock=${LOCK_HOW:-none}"
}

ray_start() {
    # Ray started (head) or joined (worker) afresh, after stopping this node's stale Ray when STALE says why.
    # start_verl.sh's own words (ray start's banner, its retries) go with the errors: this step's output is its
    # sentences. Ray gives a new node's raylet 30 s to register with the GCS ("The current node timed out during
    # startup ... the GCS has become overloaded"): on a loaded head one more start, after a stop of what the first left,
    # comes up; a second failure ends the step with Ray's own last lines.
    local stale="${1:-}" addr master_ip _current_ip
    [ "${ROLE}" != head ] || lock_take
    ray_node_lock
    [ -z "${stale}" ] || stop_stale_ray "${stale}"
    # (Ray's daemons must not hold this node's lock: 8>&-.)
    if ! bash ./start_verl.sh ray >&2 8>&-; then
        [ "${ROLE}" = head ] || exit 1
        addr="$(addresses)" || exit 1
        read -r master_ip _current_ip <<<"${addr}"
        stop_stale_ray "the head's Ray did not start at ${master_ip}:${RAY_PORT} (attempt 1 of 2)"
        bash ./start_verl.sh ray >&2 8>&-
    fi
    # This node belongs in the cluster until stop.yml says otherwise: come-back reads it after a restart.
    mkdir -p "${STATE_DIR}" && now >"${STATE_DIR}/ray_wanted"
    say "ray: started"
}

come_back() {
    # A worker whose container (or host) restarted joins the head's Ray again by itself, once, at the container's start: the
    # training's supervisor on the head waits for every NPU before it starts the training again (keep-alive). Not after
    # stop.yml (it removed ray_wanted), nor on the head (its Ray and training come back with deploy.yml).
    ray_node_lock
    if [ "${ROLE}" = head ] || [ ! -f "${STATE_DIR}/ray_wanted" ] || raylet_runs; then
        say "ray: nothing to rejoin (the head, stopped by stop.yml, or running)"
        answer changed=false
        return
    fi
    stop_stale_ray "the container restarted"
    bash ./start_verl.sh ray >&2 8>&-
    now >"${STATE_DIR}/came_back"
    say "ray: joined the head again after the container restarted"
    answer changed=true
}

ray_session() {
    # The Ray session this node runs now (it changes whenever Ray is started anew).
    local session
    session="$(readlink "${RAY_DIR}/session_latest" 2>/dev/null)" || true
    echo "${session##*/}"
}

stop_sampler() {
    # This node's NPU sampler (npu_sampler.py, started with Ray by start_verl.sh): the pid its flock'd pid file names, when
    # that process is the sampler (a pid file left by a container that restarted may name another process by now).
    local pid
    pid="$(cat .npu_sampler.pid 2>/dev/null)" || return 0
    [[ "${pid}" =~ ^[0-9]+$ ]] && tr '\0' ' ' <"/proc/${pid}/cmdline" 2>/dev/null | grep -q npu_sampler.py || return 0
    kill -TERM "${pid}" 2>/dev/null || true
}

stop_ray() {
    # A person's stop: this node stays out of Ray after a restart too (come-back).
    rm -f "${STATE_DIR}/ray_wanted"
    stop_sampler
    if ! raylet_runs && ! gcs_runs; then
        say "ray: not running"
        answer changed=false state=not-running
        return
    fi
    timeout 120 ray stop >/dev/null 2>&1 || die "ray stop did not stop Ray within 120 s; see 'ray status' in the container."
    say "ray: stopped"
    answer changed=true state=stopped
}

# --- Training
training_pid() { pgrep -f -- "${TRAINING_PATTERN}" | head -n 1 || true; }

latest_log() {
    local file newest=""
    for file in "${LOG_DIR}/${LOG_PREFIX}"*.log; do
        [ -e "${file}" ] || continue
        if [ -z "${newest}" ] || [ "${file}" -nt "${newest}" ]; then
            newest="${file}"
        fi
    done
    echo "${newest}"
}

state_of() { cat "${STATE_DIR}/$1" 2>/dev/null || true; }

track_steps() {
    # Passes the training's output through, keeping when each `step:N` line came (verl logs no time),
    # as long as the state folder is this run's (a training started after it writes its own).
    local run="$1" line step stamp
    while IFS= read -r line; do
        printf '%s\n' "${line}"
        if [[ "${line}" =~ ^step:([0-9]+) ]] && [ "$(state_of run)" = "${run}" ]; then
            step="${BASH_REMATCH[1]}"
            stamp="$(now)"
            [ -s "${STATE_DIR}/first_step" ] || echo "${stamp} ${step}" >"${STATE_DIR}/first_step"
            echo "${stamp} ${step}" >"${STATE_DIR}/last_step"
        fi
    done
}

supervise() {
    # The detached training: start_verl.sh train, its steps timed, its exit code kept -- only while the state folder is
    # still this run's: an old training that ends after a new one started leaves no exit code. A training that fails is
    # started again from its last checkpoint when keep-alive says so (_keep_alive.py: a transient first failure, within
    # verl_keep_alive's bound), unless a person stopped it (stopped_at) or another run started meanwhile.
    local run="${1:?supervise needs RUN}" code decision wait resume gcs
    QUIET=1
    set +e
    while :; do
        bash ./start_verl.sh train 2>&1 | track_steps "${run}"
        code="${PIPESTATUS[0]}"
        [ "$(state_of run)" = "${run}" ] || exit "${code}"
        if [ "${code}" != 0 ] && [ ! -f "${STATE_DIR}/stopped_at" ] && [ -f _keep_alive.py ]; then
            # A later deploy's keep-alive settings apply without a restart. A look meanwhile waits for the decision.
            # shellcheck source=/dev/null
            . ./verl_control.env
            touch "${STATE_DIR}/deciding"
            # The head's GCS, when it runs, for keep-alive's look at the nodes (one that left Ray is a cause of its own).
            gcs=""
            ! gcs_runs || gcs="$(addresses 2>/dev/null | cut -d' ' -f1):${RAY_PORT}"
            read -r decision wait resume < <(KEEP_ALIVE="${KEEP_ALIVE:-0}" KEEP_ALIVE_WINDOW="${KEEP_ALIVE_WINDOW:-0}" \
                KEEP_ALIVE_WAIT="${KEEP_ALIVE_WAIT:-0}" KEEP_ALIVE_GCS="${gcs}" KEEP_ALIVE_NPUS="$((NNODES * NPU_PER_NODE))" RAY_NAMES="${RAY_NAMES:-}" \
                timeout -k 5 120 python3 -I -B _keep_alive.py decide "${STATE_DIR}" "$(latest_log)" "${RAY_DIR}" "${CKPTS_DIR}" \
                "${HOST}" "${code}" 2>>"${STATE_DIR}/keep_alive.err")
            rm -f "${STATE_DIR}/deciding"
            if [ "${decision:-}" = restart ] && restart_after "${run}" "${wait:-0}"; then
                echo "verl_control.sh: keep-alive: the training ended with exit code ${code}; started again (${STATE_DIR}/keep_alive.jsonl says why)."
                export VERL_DEPLOY_RESUME="${resume:-}"
                continue
            fi
            [ "$(state_of run)" = "${run}" ] || exit "${code}"
        fi
        echo "${code}" >"${STATE_DIR}/exit_code"
        exit "${code}"
    done
}

restart_after() {
    # Waits WAIT s before keep-alive's restart (its time in restart_at, for status); true unless stop.yml stopped the
    # training or another run started meanwhile.
    local run="$1" until
    until=$(($(now) + $2))
    echo "${until}" >"${STATE_DIR}/restart_at"
    while [ ! -f "${STATE_DIR}/stopped_at" ] && [ "$(state_of run)" = "${run}" ] && [ "$(now)" -lt "${until}" ]; do
        sleep 1
    done
    rm -f "${STATE_DIR}/restart_at"
    [ ! -f "${STATE_DIR}/stopped_at" ] && [ "$(state_of run)" = "${run}" ] || return 1
    now >"${STATE_DIR}/attempt_at"
}

end_supervisor() {
    # The supervisor of the training started last, and what it started (its own process group: setsid), when it runs
    # with no training: waiting for keep-alive's restart, or starting it.
    local run pid
    run="$(state_of run)"
    [ -n "${run}" ] || return 0
    pid="$(pgrep -f -- "verl_control.sh supervise ${run//./\\.}\$" | head -n 1)" || true
    [ -z "${pid}" ] || kill -TERM -- "-${pid}" 2>/dev/null || true
}

supervised() {
    # Whether the supervisor of the training started last still runs (it writes the exit code as it ends).
    local run
    run="$(state_of run)"
    [ -n "${run}" ] && pgrep -f -- "verl_control.sh supervise ${run//./\\.}\$" >/dev/null 2>&1
}

has_checkpoint() {
    # Whether verl_ckpts_dir holds a checkpoint: a global_step_<N> folder, or verl's tracker file alone.
    compgen -G "${CKPTS_DIR}/global_step_*/" >/dev/null || [ -f "${CKPTS_DIR}/latest_checkpointed_iteration.txt" ]
}

rotate_start_out() {
    # The previous starts' output stays readable: start_verl.out -> .1 -> ... -> .START_OUT_KEEP (the oldest goes).
    local index
    [ -e "${START_OUT}" ] || return 0
    for index in $(seq $((START_OUT_KEEP - 1)) -1 1); do
        [ ! -e "${START_OUT}.${index}" ] || mv -f "${START_OUT}.${index}" "${START_OUT}.$((index + 1))"
    done
    mv -f "${START_OUT}" "${START_OUT}.1"
}

start_training() {
    head_only start-training
    lock_take
    local pid run
    pid="$(training_pid)"
    [ -z "${pid}" ] || die "a training already runs (pid ${pid}); stop it first (verl_control.sh stop-training)."
    ! supervised || end_supervisor
    mkdir -p "${STATE_DIR}"
    rm -f "${STATE_DIR}/exit_code" "${STATE_DIR}/stopped_at" "${STATE_DIR}/first_step" "${STATE_DIR}/last_step" "${STATE_DIR}/verify_seen" \
        "${STATE_DIR}/restart_at" "${STATE_DIR}/attempt_at" "${STATE_DIR}/keep_alive.jsonl" "${STATE_DIR}/deciding"
    # The Ray stage's proof that every node reads this storage is done (roles/ray/files/reach.py mark).
    rm -f "${CKPTS_DIR}"/.verl-deploy-storage-*
    # What this training is started from (the deploy writes launch.json beside the scripts).
    if [ -f launch.json ]; then cp launch.json "${STATE_DIR}/launch.json"; else rm -f "${STATE_DIR}/launch.json"; fi
    ray_session >"${STATE_DIR}/ray_session"
    # The checkpoints it starts with (this training's: an earlier one's in another folder say nothing of it), and the
    # file system verl_ckpts_dir is on (a later deploy compares them).
    if has_checkpoint; then now >"${STATE_DIR}/ckpts_seen"; else rm -f "${STATE_DIR}/ckpts_seen"; fi
    stat -c %d "${CKPTS_DIR}" >"${STATE_DIR}/ckpts_fs" 2>/dev/null || rm -f "${STATE_DIR}/ckpts_fs"
    run="$(now).$$"
    echo "${run}" >"${STATE_DIR}/run"
    now >"${STATE_DIR}/started_at"
    rotate_start_out
    setsid nohup bash ./verl_control.sh supervise "${run}" >"${START_OUT}" 2>&1 </dev/null &
    say "training: started"
    answer changed=true state=started
}

verify_facts() {
    # One look of the deploy's wait for the training, as facts (decided on the host: verify_look in
    # plugins/module_utils/_control_step.py): once it ended, its exit code, last step and newest log, and the last lines of
    # its start's output (start_output); else its pid, its newest log and that log's size, and the
    # log and size the previous look saw (remembered in the state folder, which this look updates).
    head_only verify-facts
    lock_renew
    local pid log size="" seen=""
    log="$(latest_log)"
    answer "host=${HOST}" "start_out=${START_OUT}" "log=${log}"
    if [ -f "${STATE_DIR}/exit_code" ]; then
        answer "exit_code=$(state_of exit_code)" "last_step=$(state_of last_step | cut -d' ' -f2)" \
            "start_output=$(tail_of "${START_OUT}" 12)"
        return
    fi
    pid="$(training_pid)"
    [ -z "${log}" ] || size="$(stat -c %s "${log}")"
    seen="$(cat "${STATE_DIR}/verify_seen" 2>/dev/null)" || seen=""
    [ -z "${pid}" ] || [ -z "${log}" ] || echo "${log} ${size}" >"${STATE_DIR}/verify_seen"
    answer "pid=${pid}" "size=${size}" "seen=${seen}"
}

npus_look() {
    # One look at the NPUs the processes of this container hold (a stopped or crashed training's workers, or
    # what they spawned): exit 0 when none does, 3 (one line naming them) while some do. Read from
    # /proc/<pid>/fd, as the pre-check reads the host's. On the head it keeps the deploy's lock fresh.
    local held
    lock_renew
    held="$( (find /proc/[0-9]*/fd -maxdepth 1 -lname '/dev/davinci[0-9]*' -printf '%h %l\n' 2>/dev/null || true) | while read -r fds device; do
        pid="${fds#/proc/}"
        pid="${pid%/fd}"
        echo "${pid} ($(cat "/proc/${pid}/comm" 2>/dev/null || echo gone)) on ${device#/dev/}"
    done | sort -u | paste -sd ';' - | sed 's/;/; /g')"
    if [ -z "${held}" ]; then
        say "no process in this container holds an NPU"
        return 0
    fi
    say "held by ${held}"
    answer "held=${held}"
    exit 3
}

training_state() {
    # The facts the playbooks decide the training's state from (plugins/module_utils/_training_state.py, classify:
    # running, orphaned, crashed, finished, stopped, not-started), as its answer.
    head_only training-state
    # A comparison reads the state of its mask's training every few seconds: that keeps its lock fresh (no-op without its token).
    lock_renew
    local pid waits=0
    pid="$(training_pid)"
    # The trainer ended by itself, its supervisor not yet: it writes the exit code once it has read the log's last lines and
    # keep-alive decided. A look in between read a training that finished as crashed; it waits for the code (at most 5 s, 45 s
    # while keep-alive decides, which waits up to 30 s for Ray's view of a node that went away; a process the trainer left
    # holding its output keeps the supervisor on; a stopped training is stopped whatever its code).
    while [ -z "${pid}" ] && [ ! -f "${STATE_DIR}/exit_code" ] && [ ! -f "${STATE_DIR}/stopped_at" ] && [ ! -f "${STATE_DIR}/attempt_at" ] \
        && [ ! -f "${STATE_DIR}/restart_at" ] && { [ "${waits}" -lt 25 ] || { [ -f "${STATE_DIR}/deciding" ] && [ "${waits}" -lt 225 ]; }; } \
        && supervised; do
        sleep 0.2
        waits=$((waits + 1))
        pid="$(training_pid)"
    done
    # The Ray session this node runs now, and the one the training started in.
    answer "pid=${pid}" "exit_code=$(state_of exit_code)" "started_at=$(state_of started_at)" "stopped_at=$(state_of stopped_at)" \
        "first_step=$(state_of first_step)" "last_step=$(state_of last_step)" "ray_session=$(ray_session)" \
        "ray_session_started=$(state_of ray_session)" "log=$(latest_log)" "now=$(now)" "launch=$(state_of launch.json)" \
        "supervisor=$(supervised && echo running || true)" "restart_at=$(state_of restart_at)" "attempt_at=$(state_of attempt_at)" \
        "keep_alive=$(tail_of "${STATE_DIR}/keep_alive.jsonl" 20)"
}

stop_training() {
    head_only stop-training
    lock_take
    mkdir -p "${STATE_DIR}"
    if [ -z "$(training_pid)" ]; then
        if supervised && [ ! -f "${STATE_DIR}/exit_code" ] && [ ! -f "${STATE_DIR}/stopped_at" ]; then
            # keep-alive waits to restart it, or is starting it: a person's stop wins.
            now >"${STATE_DIR}/stopped_at"
            end_supervisor
            rm -f "${STATE_DIR}/restart_at"
            say "training: stopped (keep-alive's restart cancelled)"
            answer changed=true state=stopped
            return
        fi
        say "training: not running"
        answer changed=false state=not-running
        return
    fi
    now >"${STATE_DIR}/stopped_at"
    pkill -TERM -f -- "${TRAINING_PATTERN}" || true
    for _ in $(seq 60); do
        if [ -z "$(training_pid)" ]; then
            say "training: stopped"
            answer changed=true state=stopped
            return
        fi
        sleep 1
    done
    pkill -KILL -f -- "${TRAINING_PATTERN}" || true
    sleep 2
    [ -z "$(training_pid)" ] || die "the training did not stop, even after SIGKILL (pid $(training_pid))."
    say "training: stopped (SIGKILL after 60 s without exiting on SIGTERM)"
    answer changed=true state=stopped
}

# --- Status (read-only): facts only; status.yml says them (node_status and status_report, in
# plugins/module_utils/_training_state.py); on the head with the last 5 lines of the last start's output (start_output)
# and the log's last LINES lines (log_tail).
status() {
    local listed="${1:-}" lines="${2:-20}" addr master_ip="" current_ip="" problem="" log
    if addr="$(addresses 2>&1)"; then
        read -r master_ip current_ip <<<"${addr}"
    else
        problem="${addr//$'\n'/ }"
    fi
    # The head lists its Ray's members itself (status.yml's one call to it); a worker is given the head's list.
    [ "${ROLE}" != head ] || [ -n "${listed}" ] || [ -n "${problem}" ] || listed="$(members 2>/dev/null)" || true
    # The image's verl as its checkout in verl_workdir says (verl/__init__.py reads the same file), and which control
    # script this is (status.yml names one another release of verl-deploy installed).
    answer "address_problem=${problem}" "raylet=$(raylet_runs && echo running || echo none)" "role=${ROLE}" \
        "master_ip=${master_ip}" "current_ip=${current_ip}" "npus=${NPU_PER_NODE}" "ray_port=${RAY_PORT}" \
        "dashboard_port=${DASHBOARD_PORT}" "listed=${listed}" "workdir=$(pwd)" \
        "verl=$(cat verl/version/version 2>/dev/null || true)" "control=$(sha256sum <verl_control.sh | cut -c1-64)" \
        "npu_samples=$(tail -n 4 "${LOG_DIR}/npu_samples.${HOST}.jsonl" 2>/dev/null | cut -b 1-8000 || true)" "clock=$(now)"
    [ "${ROLE}" = head ] || return 0
    training_state
    log="$(latest_log)"
    answer "now=$(now)" "log_dir=${LOG_DIR}" "log_lines=${lines}" "start_out=$([ ! -e "${START_OUT}" ] || echo "${START_OUT}")" \
        "start_out_previous=$([ ! -e "${START_OUT}.1" ] || echo "${START_OUT}.1")" "start_output=$(tail_of "${START_OUT}" 5)" \
        "log_tail=$([ -z "${log}" ] || tail_of "${log}" "${lines}")"
}

step="${1:-}"
shift || true
case "${step}" in
members) head_only members && lock_renew && answer "members=$(members)" ;;
ray-look) ray_look ;;
ray-start) ray_start "${1:-}" ;;
training-state) training_state ;;
start-training) start_training ;;
supervise) supervise "${1:-}" ;;
verify-facts) verify_facts ;;
npus-look) npus_look ;;
status) status "$@" ;;
stop-training) stop_training ;;
stop-ray) stop_ray ;;
unlock) unlock ;;
come-back) come_back ;;
*) die "unknown step '${step}'; use one of: members, ray-look, ray-start, training-state, start-training, verify-facts, npus-look, status, stop-training, stop-ray, unlock, come-back." ;;
esac
