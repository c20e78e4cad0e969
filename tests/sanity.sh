#!/usr/bin/env bash
# ansible-test sanity (every test, on the Python that runs ansible-test, per-test virtual environments) on this checkout.
#
#   tests/sanity.sh [extra ansible-test args]      usually through ./run.sh sanity
#
# ansible-test only runs inside <dir>/ansible_collections/<namespace>/<name>/ that is a git
# checkout, so this copies the checkout's files (tracked and untracked-but-not-ignored, i.e. also
# work not yet committed) into a throwaway directory, makes that a one-commit git repository and
# runs `ansible-test sanity --python <the Python of the ansible-test on PATH> --venv` there. The ignore files stay empty: every finding
# is fixed in the code.
#
# Offline pieces: ansible-test bootstraps pip into each new
# virtual environment with get-pip.py from ci-files.testing.ansible.com, which is unreachable here.
# A stand-in at ~/.ansible/test/cache/get_pip_<version>.py (the path ansible-test caches that file
# at) installs pip with ensurepip and then runs `pip install` with ansible-test's arguments, so pip
# reaches PyPI through the machine's own pip configuration. The per-test environments are kept in
# ~/.ansible/test/venv (keyed by their requirements), so only the first run installs anything.
#
# Output: a summary at the end (also in tests/output/sanity/summary.txt); ansible-test's full log
# (ansible-test.log) and its tests/output/ (output/) go to this checkout's tests/output/sanity/
# (git-ignored). Exit status: ansible-test's (0 = every test passed).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SHIM_MARK="verl.deploy tests/sanity.sh get-pip stand-in"
RESULTS="${ROOT}/tests/output/sanity"

say() { printf '[sanity] %s\n' "$*"; }
die() {
    printf '[sanity] ERROR: %s\n' "$*" >&2
    exit 2
}

ANSIBLE_TEST="$(command -v ansible-test)" || die "ansible-test is not on PATH (run ./run.sh sanity, or activate .venv)"
command -v git >/dev/null || die "git is required"
[ -d "${ROOT}/.git" ] || [ -f "${ROOT}/.git" ] || die "${ROOT} is not a git checkout"

# Both taken from the ansible-test on PATH, so that moving the pinned ansible-core (requirements.txt) or
# its Python (run.sh) needs no edit here: the Python of its virtual environment, and the pip version
# ansible-test bootstraps into each per-test environment (ansible_test/_internal/python_requirements.py
# get_venv_packages(), pip='<version>'; ansible_test/_util/target/setup/requirements.py bootstrap()
# reads ~/.ansible/test/cache/get_pip_<version with _>.py).
TOOL_PYTHON="$(dirname "${ANSIBLE_TEST}")/python"
PYTHON_VERSION="$("${TOOL_PYTHON}" -c 'import sys; print("%d.%d" % sys.version_info[:2])')" ||
    die "${TOOL_PYTHON} (next to ansible-test) does not run"
PIP_VERSION="$("${TOOL_PYTHON}" -c '
import pathlib, re, ansible_test
source = pathlib.Path(ansible_test.__file__).parent / "_internal" / "python_requirements.py"
print(re.search(r"\bpip=.([0-9][0-9.]*).", source.read_text()).group(1))')" ||
    die "no pip version found in ansible-test's python_requirements.py: see how this ansible-test bootstraps pip"
GET_PIP="${HOME}/.ansible/test/cache/get_pip_${PIP_VERSION//./_}.py"

# 1. The get-pip stand-in. A real get-pip.py that someone saved there is left alone.
seed_get_pip() {
    if [ -s "${GET_PIP}" ] && ! grep -qF "${SHIM_MARK}" "${GET_PIP}"; then
        say "using the existing pip bootstrap script ${GET_PIP}"
        return
    fi
    mkdir -p "$(dirname "${GET_PIP}")"
    local tmp="${GET_PIP}.tmp.$$"
    cat >"${tmp}" <<EOF
"""${SHIM_MARK}.

ansible-test runs this (as get-pip.py) with the new virtual environment's Python to install pip.
Here: ensurepip, then \`pip install <ansible-test's arguments>\` through the machine's pip
configuration. --no-setuptools/--no-wheel are get-pip.py options that pip install does not know.
"""
import subprocess
import sys

ARGS = [arg for arg in sys.argv[1:] if arg not in ("--no-setuptools", "--no-wheel")]
subprocess.check_call([sys.executable, "-m", "ensurepip", "--upgrade", "--default-pip"], stdout=subprocess.DEVNULL)
sys.exit(subprocess.call([sys.executable, "-m", "pip", "install"] + ARGS))
EOF
    mv -f "${tmp}" "${GET_PIP}"
}

# 2. The throwaway collection checkout.
WORK="$(mktemp -d "${TMPDIR:-/tmp}/verl-sanity.XXXXXX")"
# (chmod: tests/fixtures/ is read-only.)
trap 'chmod -R u+w "${WORK}" 2>/dev/null; rm -rf "${WORK}"' EXIT
DEST="${WORK}/ansible_collections/verl/deploy"

copy_checkout() {
    mkdir -p "${DEST}"
    local list="${WORK}/files"
    # Tracked and untracked-not-ignored files; tracked files deleted in the work tree are skipped.
    (
        cd "${ROOT}"
        git ls-files -z --cached --others --exclude-standard |
            while IFS= read -r -d '' path; do
                if [ -e "${path}" ] || [ -L "${path}" ]; then
                    printf '%s\0' "${path}"
                fi
            done
    ) | sort -zu >"${list}"
    # tar keeps modes (the shebang test checks executable bits) and symlinks.
    tar -C "${ROOT}" --null --no-recursion -T "${list}" -cf - | tar -C "${DEST}" -xf -
    (
        cd "${DEST}"
        git init --quiet
        # ansible-test must not lint its own output (pep8 would walk the per-test venvs there).
        printf '/tests/output/\n' >>.git/info/exclude
        git add -A
        git -c user.name=sanity -c user.email=sanity@localhost -c commit.gpgsign=false \
            commit --quiet --no-verify -m "sanity snapshot"
    )
    say "copied $(tr -cd '\0' <"${list}" | wc -c) files to ${DEST}"
}

summarise() {
    local log="$1" status="$2" seconds="$3"
    local ran failed
    ran="$(grep -c '^Running sanity test "' "${log}" || true)"
    failed="$(grep -oE "The [0-9]+ sanity test\(s\) listed below \(out of [0-9]+\) failed" "${log}" || true)"
    echo
    say "================================ summary ================================"
    say "ansible-test: ${ANSIBLE_TEST} ($("${ANSIBLE_TEST}" --version 2>/dev/null || echo '?'))"
    say "tests run: ${ran}, time: ${seconds}s, log: ${RESULTS}/ansible-test.log"
    if [ "${status}" -eq 0 ]; then
        say "PASSED: every sanity test passed (ignore files empty)"
    else
        say "FAILED (exit ${status}) ${failed}"
        # ansible-test prints each finding as "ERROR: Found N <test> issue(s) ..." followed by
        # "ERROR: <path>:<line>:<col>: <message>" lines; repeat them so they are easy to find.
        grep -E '^(ERROR|FATAL):' "${log}" | sed 's/^/[sanity]   /' || true
    fi
}

seed_get_pip
copy_checkout

mkdir -p "${RESULTS}"
LOG="${RESULTS}/ansible-test.log"
say "ansible-test sanity --python ${PYTHON_VERSION} --venv $* (in ${DEST})"
start=${SECONDS}
set +e
(
    cd "${DEST}"
    "${ANSIBLE_TEST}" sanity --python "${PYTHON_VERSION}" --venv --color no "$@" </dev/null
) 2>&1 | tee "${LOG}"
status=${PIPESTATUS[0]}
set -e
elapsed=$((SECONDS - start))

if [ -d "${DEST}/tests/output" ]; then
    rm -rf "${RESULTS}/output"
    cp -r "${DEST}/tests/output" "${RESULTS}/output"
fi
summarise "${LOG}" "${status}" "${elapsed}" | tee "${RESULTS}/summary.txt"
exit "${status}"
