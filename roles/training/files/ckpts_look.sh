# shellcheck shell=sh
# drift.yml's one read on the Ray head's host, before anything is started: what the deploy's state folder
# recorded about the last training and its checkpoints, and what verl_ckpts_dir holds now. Arguments:
# STATE_DIR CKPTS_DIR. Answers in KEY=VALUE lines (verl.deploy.fresh_start reads them); reads only.
set -u
state="$1" ckpts="$2"
echo "last_step=$(cat "${state}/last_step" 2>/dev/null)"
echo "ckpts_seen=$(cat "${state}/ckpts_seen" 2>/dev/null)"
echo "ckpts_fs=$(cat "${state}/ckpts_fs" 2>/dev/null)"
# The launch record the last training started from (one JSON line): its save_freq says whether it passed a save step.
echo "launch=$(cat "${state}/launch.json" 2>/dev/null)"
if [ -d "${ckpts}" ]; then
    echo "exists=yes"
    echo "fs_now=$(stat -c %d "${ckpts}" 2>/dev/null)"
    found=0
    for folder in "${ckpts}"/global_step_*; do
        [ -d "${folder}" ] && found=$((found + 1))
    done
    [ "${found}" -gt 0 ] || [ ! -f "${ckpts}/latest_checkpointed_iteration.txt" ] || found=1
    echo "checkpoints=${found}"
    if mountpoint -q "${ckpts}" 2>/dev/null; then echo "mountpoint=yes"; else echo "mountpoint=no"; fi
else
    echo "exists=no"
    echo "checkpoints=0"
fi
