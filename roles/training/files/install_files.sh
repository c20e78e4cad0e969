# shellcheck shell=sh
# install.yml's one call on the host: arguments STAGE CONTAINER WORKDIR [SECONDS [CANN_SCRIPT...]]; on stdin one line per
# file, "MODE NAME BASE64". Each file is written to STAGE (0700) and copied into the container's WORKDIR.
# With SECONDS (the head, when run_training.sh is among the files): first the image's verl checks the command. The new
# run_training.sh, copied in as .run_training.sh.check, runs with --cfg-job (python3 -m <entry> ... --cfg job: the
# module imports, Hydra composes every override against the image's schema, nothing starts) under CANN's environment as
# start_verl.sh sources it (VERL_CANN_PROGRAM, the role's cann_env.sh, with the CANN_SCRIPTS), within SECONDS.
# A command the image refuses installs nothing in the container, so that a re-run looks, differs and checks again.
# The answer is one JSON document, {"said": ["installed PATH", ...], "answer": {...}} (read_answer): command_check_rc and
# command_check_tail (the output's last lines, base64: any bytes stay one JSON string; _versions.command_check decides),
# changed "true" when a file was installed. Printed by printf (the host's Python need not be python3 on PATH): every other
# value is this script's own text or a path the settings check allows ([A-Za-z0-9._/@%+:~-], verl_workdir).
set -eu
said="" answer=""
emit() { printf '{"said": [%s], "answer": {%s}}\n' "${said#, }" "${answer#, }"; }
stage="$1" container="$2" workdir="$3" seconds="${4:-}"
if [ $# -ge 4 ]; then shift 4; else shift $#; fi
umask 077
mkdir -p "${stage}"
chmod 0700 "${stage}"
docker exec "${container}" mkdir -p "${workdir}"
names=""
while read -r mode name data; do
    [ -n "${name}" ] || continue
    printf '%s' "${data}" | base64 -d >"${stage}/.${name}.new"
    chmod "${mode}" "${stage}/.${name}.new"
    mv -f "${stage}/.${name}.new" "${stage}/${name}"
    names="${names} ${name}"
done
case " ${names} " in *" run_training.sh "*) ;; *) seconds="" ;; esac
if [ -n "${seconds}" ]; then
    docker cp "${stage}/run_training.sh" "${container}:${workdir}/.run_training.sh.check"
    rc=0
    # shellcheck disable=SC2016  # expanded in the container
    output="$(docker exec -e VERL_CANN_PROGRAM "${container}" bash -c '
        check="$1" seconds="$2"; shift 2
        CANN_SCRIPTS=("$@")
        eval "${VERL_CANN_PROGRAM:-}" >/dev/null 2>&1
        timeout "${seconds}" bash "${check}" --cfg-job 2>&1
        rc=$?
        rm -f "${check}"
        exit "${rc}"' command-check "${workdir}/.run_training.sh.check" "${seconds}" "$@" 2>&1)" || rc=$?
    answer="${answer}, \"command_check_rc\": \"${rc}\", \"command_check_tail\": \"$(printf '%s\n' "${output}" | tail -n 25 | base64 | tr -d '\n')\""
    [ "${rc}" = 0 ] || [ "${rc}" = 124 ] || { emit; exit 0; }
fi
for name in ${names}; do
    docker cp "${stage}/${name}" "${container}:${workdir}/${name}"
    said="${said}, \"installed ${workdir}/${name}\""
done
[ -z "${names}" ] || answer="${answer}, \"changed\": \"true\""
emit
