# shellcheck shell=bash
# cann_env.sh -- the one sourcing of CANN's environment, as the training gets it: start_verl.sh holds this text (its
# template reads it in), and the container stage's check (roles/container/files/npu_stack_check.sh) runs it, given
# as VERL_CANN_PROGRAM, so that the check loads the NPU stack exactly as the training will.
# Run at the top level of the script (not in a function: a set_env.sh that declares its variables would make them
# local), with CANN_SCRIPTS set (verl_ascend_env_scripts): it sources each of them that exists, in order, one reached
# through a link only once, with -u off while they run (they read unset variables). It then sets CANN_SOURCED (the
# scripts sourced, resolved) and CANN_PRESET (ASCEND_HOME_PATH or ASCEND_TOOLKIT_HOME as it was before, or empty);
# the caller says what it found, and stops when both are empty.
# shellcheck disable=SC2034  # read by the caller
CANN_PRESET="${ASCEND_HOME_PATH:-${ASCEND_TOOLKIT_HOME:-}}"
CANN_SOURCED=()
case "$-" in *u*) cann_nounset=1 ;; *) cann_nounset="" ;; esac
set +u
for cann_script in "${CANN_SCRIPTS[@]}"; do
    [ -f "${cann_script}" ] || continue
    cann_real="$(readlink -f "${cann_script}")"
    case " ${CANN_SOURCED[*]} " in *" ${cann_real} "*) continue ;; esac
    CANN_SOURCED+=("${cann_real}")
    # shellcheck disable=SC1090
    source "${cann_script}"
done
[ -z "${cann_nounset}" ] || set -u
