# shellcheck shell=bash
# Run by the container stage inside the training container (docker exec):
#   [VERL_LOOK_DIR=DIR] bash -c "$(cat npu_stack_check.sh)" npu-stack-check NPUS_PER_NODE [CANN set_env.sh ...]
# First npu-smi must answer and python3 exist (the driver and the devices reach the container); then it
# sources CANN's environment as start_verl.sh does (each existing script, -u off) and asks the training's
# python3 to load torch_npu and count the NPUs. Exit codes: 6 npu-smi info fails, 7 no python3,
# 3 no CANN environment, 4 torch_npu does not load, 5 fewer NPUs than the node trains on. The last line
# says what was found.
set -o pipefail
want="$1"
shift
# With VERL_LOOK_DIR (verl_workdir), first "look: MODE SHA256 NAME" for each launch file there (*.sh and
# launch.json at its top), so that the launch-scripts stage needs no call of its own to compare them.
if [ -n "${VERL_LOOK_DIR:-}" ]; then
    (
        cd "${VERL_LOOK_DIR}" 2>/dev/null || exit 0
        for name in *.sh launch.json; do
            if [ -f "${name}" ]; then
                echo "look: $(stat -c %a "${name}") $(sha256sum <"${name}" | cut -c1-64) ${name}"
            fi
        done
    )
fi
if ! smi="$(npu-smi info 2>&1)"; then
    echo "npu-smi info failed in the container: $(printf '%s' "${smi}" | tail -n 4 | tr -s ' \n' ' ')"
    exit 6
fi
if ! command -v python3 >/dev/null 2>&1; then
    echo "the image has no python3"
    exit 7
fi
found=""
for script in "$@"; do
    [ -f "${script}" ] || continue
    # shellcheck disable=SC1090
    source "${script}" >/dev/null 2>&1
    found="${found} ${script}"
done
if [ -z "${found}" ] && [ -z "${ASCEND_HOME_PATH:-}${ASCEND_TOOLKIT_HOME:-}" ]; then
    echo "no CANN environment: none of $* exists in the container and neither ASCEND_HOME_PATH nor ASCEND_TOOLKIT_HOME is set"
    exit 3
fi
python3 - "${want}" <<'PYTHON'
import sys

try:
    import torch_npu
    count = torch_npu.npu.device_count()
except Exception as exc:  # an ImportError, or the OSError of a library that does not load
    print("python3 cannot load the NPU stack: `import torch_npu` failed: %s: %s" % (type(exc).__name__, str(exc)[:300]))
    sys.exit(4)
if count < int(sys.argv[1]):
    print("torch_npu %s sees %d NPU(s), fewer than the %s this node trains on" % (getattr(torch_npu, "__version__", "?"), count, sys.argv[1]))
    sys.exit(5)
print("torch_npu %s loads and sees %d NPU(s)" % (getattr(torch_npu, "__version__", "?"), count))
PYTHON
