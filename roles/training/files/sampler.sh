#!/bin/sh
# sampler.sh FOLDER -- starts this node's NPU sampler (start_verl.sh sampler: in the environment the training has, SwanLab's
# too) when sampling is on, a raylet runs here and no sampler holds its lock. The sampler starts with Ray; a healthy Ray
# that an earlier release started, which the deploy leaves alone, has none. Answers as the control script's steps do
# (changed: one was started). Run as `sh -c "$(cat sampler.sh)" sampler FOLDER` in the container (install.yml).
changed=false said=""
# shellcheck source=/dev/null
if cd "$1" 2>/dev/null && [ -f npu_sampler.py ] && . ./verl_control.env && [ "${NPU_SAMPLE_SECONDS:-0}" != 0 ] &&
    pgrep -x raylet >/dev/null &&
    python3 -c 'import fcntl; fcntl.flock(open(".npu_sampler.pid", "a"), fcntl.LOCK_EX | fcntl.LOCK_NB)' 2>/dev/null; then
    if out="$(bash ./start_verl.sh sampler 2>&1)"; then
        changed=true said="the NPU sampler started (this node's Ray ran without one)"
    else
        # Its last line, as JSON text may hold it (no quote, backslash or control character).
        said="the NPU sampler could not be started: $(printf '%s' "${out}" | tail -n 1 | tr -cd '[:print:]' | tr -d "\"\\\\")"
    fi
fi
printf '{"said": [%s], "answer": {"changed": "%s"}}\n' "${said:+\"${said}\"}" "${changed}"
