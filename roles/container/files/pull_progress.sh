# shellcheck shell=sh
# One look at a background `docker pull IMAGE >LOG 2>&1` (run by verl.deploy.wait_progress; read-only):
# exit 0 when the image is there, 1 with the pull's last lines on an error, else 3 with "N/M layers"
# (without a terminal, docker pull prints each layer's state changes as lines).
# Arguments: IMAGE LOG
if docker image inspect "$1" >/dev/null 2>&1; then
    echo "pulled"
    exit 0
fi
if grep -qiE '^(error|[a-z ]*error response)' "$2" 2>/dev/null; then
    tail -n 3 "$2" >&2
    exit 1
fi
total=$(grep -cE ': (Pulling fs layer|Already exists)$' "$2" 2>/dev/null)
finished=$(grep -cE ': (Pull complete|Already exists)$' "$2" 2>/dev/null)
echo "${finished:-0}/${total:-0} layers"
exit 3
