# shellcheck shell=bash
# Run by the container stage inside the training container (docker exec):
#   VERL_CANN_PROGRAM="$(cat cann_env.sh)" VERL_STACK_PROGRAM="$(cat npu_stack.py)" [VERL_LOOK_DIR=DIR \
#       VERL_LOOK_PROGRAM="$(cat look.sh)"] bash -c "$(cat npu_stack_check.sh)" npu-stack-check NPUS_PER_NODE [CANN set_env.sh ...]
# python3 must exist and npu-smi answer (the driver and the devices reach the container), the container hold this deploy's
# NPU devices; then it sources CANN's environment as start_verl.sh does (VERL_CANN_PROGRAM, the training role's
# cann_env.sh) and runs the training's Python on the stack (npu_stack.py, VERL_STACK_PROGRAM: torch_npu, the NPUs under the
# ASCEND_RT_VISIBLE_DEVICES start_verl.sh exports, the image's stack); on the head, the count of the prompts longer than
# max_prompt_length (at the end). Exit codes: 7 no python3, 6 npu-smi info fails, 8 the container's NPU devices are not
# this deploy's, 3 no CANN environment, then npu_stack.py's (each code's fix: PROBE_FIXES in _versions.py).
# It answers with one JSON document on stdout when it exits, {"said": [...], "answer": {"look", "raylet", "stack",
# "prompts"}} (read_answer): emit, the one printer, keeps each value whole whatever bytes it holds (a file name with a line
# break). The Pythons it runs give theirs on fd 3; what their libraries print goes to stderr.
set -o pipefail
want="$1"
shift
if ! command -v python3 >/dev/null 2>&1; then
    echo '{"said": ["the image has no python3"], "answer": {}}'
    exit 7
fi
parts=()
emit() {
    python3 -I -S -c 'import json, os, sys
said, answer = [], {}
for kind, _, value in (os.fsencode(arg).decode("utf-8", "backslashreplace").partition("=") for arg in sys.argv[1:]):
    if kind == "say":
        said.append(value)
    elif kind == "part":
        try:
            said, answer = said + [str(line) for line in json.loads(value)["said"]], dict(answer, **json.loads(value)["answer"])
        except (ValueError, KeyError, TypeError):
            said += [value[-300:]] if value else []
    else:
        answer[kind] = value
sys.stdout.write(json.dumps({"said": said, "answer": answer}, sort_keys=True) + "\n")' "${parts[@]}"
}
trap 'code=$?; emit; exit "${code}"' EXIT
# With VERL_CHECK_RECORD (a file in verl_workdir), the container stage gives this check's own call on stdin (its arguments and
# environment, JSON) and it is kept there first: the next deploy's pre-check runs the same call in its one read of the node
# (verl.deploy.node_facts, with VERL_CHECK_NO_NPU_OP), and the container stage of that deploy needs no call of its own when
# nothing differs (container_check in plugins/module_utils/_run_time.py).
if [ -n "${VERL_CHECK_RECORD:-}" ]; then
    mkdir -p "$(dirname "${VERL_CHECK_RECORD}")" && cat >"${VERL_CHECK_RECORD}.new" && mv -f "${VERL_CHECK_RECORD}.new" "${VERL_CHECK_RECORD}"
fi
# With VERL_LOOK_DIR (verl_workdir) and VERL_LOOK_PROGRAM (the launch-scripts stage's look.sh), first the answer's look,
# "MODE SHA256 NAME,..." for the launch files there (*.sh, *.env, launch.json, the collection's Python (_*.py), the NPU
# sampler and ray_members.py at its top; empty when there are none), so that the launch-scripts stage needs no call of
# its own to compare them; and raylet, running|none, whether Ray's raylet runs here, so that the Ray stage leaves a
# worker the head lists alive without a call of its own; and sampler, whether the NPU sampler runs (a Ray kept from an
# earlier release may have none: the launch-scripts stage then starts it).
if [ -n "${VERL_LOOK_DIR:-}" ] && [ -n "${VERL_LOOK_PROGRAM:-}" ]; then
    # shellcheck disable=SC2035  # plain names: the look prints them as install.yml names the files
    parts+=("look=$(cd "${VERL_LOOK_DIR}" 2>/dev/null && sh -c "${VERL_LOOK_PROGRAM}" look . *.sh *.env launch.json _*.py npu_sampler.py ray_members.py | paste -sd, -)")
    parts+=("raylet=$(pgrep -x raylet >/dev/null 2>&1 && echo running || echo none)"
        "sampler=$(pgrep -x npu_sampler >/dev/null 2>&1 && echo running || echo none)")
fi
if ! smi="$(npu-smi info 2>&1)"; then
    parts+=("say=npu-smi info failed in the container: $(printf '%s' "${smi}" | tail -n 4 | tr -s ' \n' ' ')")
    exit 6
fi
# With VERL_CONTAINER_NPUS (the /dev/davinciN numbers this deploy gives the container), the container must have
# exactly those: an existing container is reused as it was created, and with other devices the runtime's logical
# ids (ASCEND_RT_VISIBLE_DEVICES) would name other NPUs than verl_npu_devices.
if [ -n "${VERL_CONTAINER_NPUS:-}" ]; then
    have="$(find /dev -maxdepth 1 -name 'davinci[0-9]*' -printf '%f\n' 2>/dev/null | sed 's/^davinci//' | sort -n | paste -sd, -)"
    if [ "${have}" != "${VERL_CONTAINER_NPUS}" ]; then
        parts+=("say=the container has the NPU devices ${have:-none} (/dev/davinciN), but this deploy gives it ${VERL_CONTAINER_NPUS}")
        exit 8
    fi
fi
# CANN's environment as start_verl.sh sets it: the one sourcing (the training role's cann_env.sh, given as
# VERL_CANN_PROGRAM), quiet here, for the last line says what was found.
: "${VERL_CANN_PROGRAM:?the caller gives the sourcing of CANN, cann_env.sh of the training role, as VERL_CANN_PROGRAM}"
: "${VERL_STACK_PROGRAM:?the caller gives npu_stack.py, beside this script, as VERL_STACK_PROGRAM}"
# shellcheck disable=SC2034  # read by VERL_CANN_PROGRAM
CANN_SCRIPTS=("$@")
eval "${VERL_CANN_PROGRAM}" >/dev/null 2>&1
if [ -z "${CANN_SOURCED[*]}${CANN_PRESET}" ]; then
    parts+=("say=no CANN environment: none of $* exists in the container and neither ASCEND_HOME_PATH nor ASCEND_TOOLKIT_HOME is set")
    exit 3
fi
# Bounded: a package whose import hangs (a lock on a shared file system) must not hold the deploy.
part="$(timeout -k 10 600 python3 -c "${VERL_STACK_PROGRAM}" "${want}" 3>&1 >&2)"
code=$?
parts+=("part=${part}")
[ "${code}" = 0 ] || exit "${code}"
# On the head, with VERL_PROMPT_FILES and VERL_PROMPT_PROGRAM (prompt_lengths.py): the prompts longer than
# VERL_MAX_PROMPT_LENGTH, measured with the image's transformers and pyarrow as verl measures them, the answer's prompts.
# It never fails the check; bounded by VERL_PROMPT_SECONDS (its own deadline) and, should an import hang, by timeout.
if [ -n "${VERL_PROMPT_FILES:-}" ] && [ -n "${VERL_PROMPT_PROGRAM:-}" ]; then
    limit="$(( ${VERL_PROMPT_SECONDS:-120} + 60 ))"
    found="$(timeout -k 5 "${limit}" python3 -c "${VERL_PROMPT_PROGRAM}" 3>&1 >/dev/null 2>&1)"
    status=$?
    case "${status}" in
    0) parts+=("prompts=${found}") ;;
    124 | 137) parts+=('prompts={"files": [], "error": "the count did not answer within '"${limit}"' s"}') ;;
    *) parts+=('prompts={"files": [], "error": "the count stopped with exit code '"${status}"'"}') ;;
    esac
fi
