#!/usr/bin/env bash
# The one entry point: checks what each job needs, creates the virtual environment and runs the job.
#   ./run.sh demo [args]      bring up the simulated 3-node Ascend cluster and deploy to it (args go to ansible-playbook)
#   ./run.sh test [args]      the test suite as CI runs it: 3 pytest-xdist workers, --dist loadgroup (args go to
#                             pytest, e.g. -m "not integration", or tests/integration -k one_node)
#   ./run.sh render [args]    render the launch scripts for the default inventory, touching no host
#   ./run.sh lint             ansible-lint (production profile)
#   ./run.sh sanity           ansible-test sanity
#   ./run.sh molecule [args]  Molecule on simulated nodes, e.g. `./run.sh molecule test -s three_nodes`
#                             (default: test --all; scenarios in extensions/molecule)
#   ./run.sh sim-down         remove the simulated cluster
#   ./run.sh setup            virtual environment (.venv) and the collection link (.collections)
#   ./run.sh link             only the collection link: then ansible-doc verl.deploy.<module> and
#                             ansible-navigator (--ee false) find this checkout through ansible.cfg
#   ./run.sh newest [args]    the no-Docker unit tests and a render through the installed tarball on the newest
#                             ansible-core and `ansible` on PyPI, in .venv-newest (args go to pytest; CI runs it)
#   ./run.sh newest-setup     only .venv-newest (CI makes it beside `setup`: each pip install uses one core)
#   ./run.sh prereqs          check, and provide, what every job needs (CI runs this first)
# Prerequisites: Python 3.11 with venv (PYTHON_VERSION below); for `newest` a Python >= 3.12 with venv (on
# PATH as python3.1x or python3, or under pyenv's versions/); git (test, sanity); a Docker engine that answers, iptables and
# debootstrap (demo, molecule, and test when it selects tests marked integration). As root with apt-get
# (Debian/Ubuntu) a job installs what is missing and starts dockerd (log: $TMPDIR/dockerd.log, at most
# VERL_DEPLOY_DOCKERD_WAIT=60 s); otherwise it stops at once and prints the command to run.
set -euo pipefail
cd "$(dirname "$0")"
ROOT="$(pwd)"
VENV="${ROOT}/.venv"
# The Python the pinned tooling runs on: requirements*.txt are pinned for it, tests/sanity.sh and the
# tests take it from the venv. ansible-core 2.19 runs on 3.11-3.13; 2.20 and later need 3.12 or newer.
PYTHON_VERSION="3.11"
# The newest ansible-core on PyPI (2.21) needs Python 3.12 or newer: `./run.sh newest` takes the newest there is.
NEWEST_PYTHON_MIN="3.12"
NEWEST_VENV="${ROOT}/.venv-newest"
# Where Debian keeps the system tools a non-root PATH lacks (dockerd, iptables, debootstrap).
SBIN_DIRS="${VERL_DEPLOY_SBIN_DIRS-/usr/local/sbin:/usr/sbin:/sbin}"
DOCKERD_LOG="${TMPDIR:-/tmp}/dockerd.log"
DOCKERD_WAIT="${VERL_DEPLOY_DOCKERD_WAIT:-60}"
APT_UPDATED=""

# ---------------------------------------------------------------- prerequisites

find_command() { # the path of a command on PATH or in SBIN_DIRS
    local dirs="${PATH}"
    [ -z "${SBIN_DIRS}" ] || dirs="${dirs}:${SBIN_DIRS}"
    PATH="${dirs}" command -v "$1" 2>/dev/null
}

have() { find_command "$1" >/dev/null; }

python_fits() { # python_fits CANDIDATE VERSION exact|min: it runs, has venv and ensurepip, and its version fits
    "$1" -c 'import sys, ensurepip, venv
want = tuple(int(part) for part in sys.argv[1].split("."))
have = sys.version_info[:2]
sys.exit(not (have == want if sys.argv[2] == "exact" else have >= want))' "$2" "$3" 2>/dev/null
}

python_pinned() { # prints the Python PYTHON_VERSION that has venv and ensurepip, if there is one
    local candidate
    for candidate in "python${PYTHON_VERSION}" python3; do
        if have "${candidate}" && python_fits "${candidate}" "${PYTHON_VERSION}" exact; then
            echo "${candidate}"
            return 0
        fi
    done
    return 1
}

python_newest() { # prints the newest Python >= NEWEST_PYTHON_MIN with venv: on PATH, else one pyenv installed
    local candidate pyenv_root="${PYENV_ROOT:-${HOME}/.pyenv}"
    # pyenv's shims answer only for the selected version, so its versions/ are asked directly.
    for candidate in python3.14 python3.13 python3.12 python3 \
        $(find "${pyenv_root}/versions" -mindepth 3 -maxdepth 3 -path '*/bin/python3.*[0-9]' 2>/dev/null | sort -rV); do
        if { have "${candidate}" || [ -x "${candidate}" ]; } && python_fits "${candidate}" "${NEWEST_PYTHON_MIN}" min; then
            echo "${candidate}"
            return 0
        fi
    done
    return 1
}

docker_info() { have docker && timeout 20 docker info --format '{{.ServerVersion}}' 2>&1; }

is_root() { [ "$(id -u)" -eq 0 ]; }

apt_install() { # apt-get update (once per run) and install "$@", both bounded
    echo "run.sh: installing $* (apt-get, as root)"
    if [ -z "${APT_UPDATED}" ]; then
        DEBIAN_FRONTEND=noninteractive timeout 300 apt-get update -qq ||
            { echo "run.sh: \`apt-get update\` failed or took over 300 s; fix the package sources and run again." >&2; exit 1; }
        APT_UPDATED=1
    fi
    DEBIAN_FRONTEND=noninteractive timeout 1200 apt-get install -y -qq --no-install-recommends "$@" >/dev/null ||
        { echo "run.sh: \`apt-get install -y --no-install-recommends $*\` failed or took over 1200 s; run it to see why." >&2; exit 1; }
}

start_dockerd() { # no service manager assumed: dockerd in its own session, bounded wait, the log on failure
    local dockerd pid deadline=$((SECONDS + DOCKERD_WAIT))
    dockerd="$(find_command dockerd)"
    echo "run.sh: starting the Docker engine: ${dockerd} (log: ${DOCKERD_LOG}; waiting at most ${DOCKERD_WAIT} s)"
    setsid "${dockerd}" >"${DOCKERD_LOG}" 2>&1 </dev/null &
    pid=$!
    while [ "${SECONDS}" -lt "${deadline}" ]; do
        docker_info >/dev/null && return 0
        kill -0 "${pid}" 2>/dev/null || break
        sleep 1
    done
    docker_info >/dev/null && return 0
    echo "run.sh: dockerd did not answer within ${DOCKERD_WAIT} s (or exited); the end of its log, ${DOCKERD_LOG}:" >&2
    tail -n 30 "${DOCKERD_LOG}" >&2
    exit 1
}

prereqs() { # prereqs NEED... (python, git, docker, debootstrap): provide what is missing, or stop with the fix
    local need packages=() problems=() want_docker="" info="" sudo=""
    for need in "$@"; do
        case "${need}" in
        python)
            python_pinned >/dev/null || packages+=("python${PYTHON_VERSION}" "python${PYTHON_VERSION}-venv")
            [ -e /etc/ssl/certs/ca-certificates.crt ] || packages+=(ca-certificates) # HTTPS to PyPI
            ;;
        git) have git || packages+=(git) ;;
        debootstrap) have debootstrap || packages+=(debootstrap) ;; # the simulated nodes' base image
        docker)
            if ! info="$(docker_info)"; then
                want_docker=1
                if [[ "${info}" != *"ermission denied"* ]]; then # else an engine runs, but not for this user
                    { have docker && have dockerd; } || packages+=(docker.io)
                    have iptables || packages+=(iptables) # dockerd sets up its bridge with it
                fi
            fi
            ;;
        esac
    done
    is_root || sudo="sudo "
    if [ "${#packages[@]}" -gt 0 ]; then
        if is_root && have apt-get; then
            apt_install "${packages[@]}"
            [[ " $* " != *" python "* ]] || python_pinned >/dev/null ||
                problems+=("apt-get installed python${PYTHON_VERSION} but no Python ${PYTHON_VERSION} with venv and ensurepip answers as python${PYTHON_VERSION} or python3")
        elif have apt-get; then
            problems+=("install the missing packages: ${sudo}apt-get update && ${sudo}apt-get install -y ${packages[*]}")
        else
            problems+=("install the missing packages (their Debian names: ${packages[*]}) with this system's package manager")
        fi
    fi
    if [ -n "${want_docker}" ] && ! info="$(docker_info)"; then
        if [ "${#problems[@]}" -eq 0 ] && is_root; then
            start_dockerd
        elif [[ "${info}" == *"ermission denied"* ]]; then
            problems+=("the Docker engine runs but refuses you: sudo usermod -aG docker \"\${USER}\", then log in again")
        else
            problems+=("start the Docker engine: ${sudo}systemctl start docker, or without a service manager: ${sudo}sh -c 'dockerd > /tmp/dockerd.log 2>&1 &' (then \`docker info\` answers)")
        fi
    fi
    if [ "${#problems[@]}" -gt 0 ]; then
        echo "run.sh ${JOB}: this machine lacks what the job needs. Run, then try again:" >&2
        printf '  - %s\n' "${problems[@]}" >&2
        exit 1
    fi
}

setup() {
    local stamp="${VENV}/.requirements.sha"
    local want
    want="$(cat requirements.txt requirements-test.txt | sha256sum | cut -d' ' -f1)"
    if [ ! -x "${VENV}/bin/python" ] || [ "$(cat "${stamp}" 2>/dev/null)" != "${want}" ]; then
        "$(python_pinned)" -m venv "${VENV}" # prereqs python ran first
        "${VENV}/bin/python" -m pip install --quiet --upgrade pip
        "${VENV}/bin/python" -m pip install --quiet -r requirements.txt -r requirements-test.txt
        echo "${want}" >"${stamp}"
    fi
    link_collection
    export PATH="${VENV}/bin:${PATH}"
}

link_collection() {
    # ansible.cfg points collections_path at .collections: link this checkout in as verl.deploy.
    # Only when it is not there yet: re-linking races with tests that read it (./run.sh test in tests).
    if [ "$(readlink .collections/ansible_collections/verl/deploy)" != ../../.. ]; then
        mkdir -p .collections/ansible_collections/verl
        ln -sfn ../../.. .collections/ansible_collections/verl/deploy
    fi
}

setup_newest() { # .venv-newest: the newest ansible-core and `ansible` on PyPI, upgraded on every run
    local python
    python="$(python_newest)" || {
        echo "run.sh newest: no Python >= ${NEWEST_PYTHON_MIN} with venv and ensurepip (python3.12 .. python3.14 or python3 on PATH, or under ${PYENV_ROOT:-${HOME}/.pyenv}/versions). Debian 12 has none: install one (e.g. \`pyenv install 3.13\`; on Debian 13, apt-get install python3-venv), then run again." >&2
        exit 1
    }
    if [ ! -x "${NEWEST_VENV}/bin/python" ] || ! python_fits "${NEWEST_VENV}/bin/python" "${NEWEST_PYTHON_MIN}" min; then
        rm -rf "${NEWEST_VENV}"
        "${python}" -m venv "${NEWEST_VENV}"
    fi
    "${NEWEST_VENV}/bin/python" -m pip install --quiet --upgrade pip
    # The newest ansible-core and `ansible`, as a user installing today gets them; the controller's other
    # requirements (hydra-core) and the test runner at the versions requirements*.txt pin.
    # shellcheck disable=SC2046 # one requirement per word
    "${NEWEST_VENV}/bin/python" -m pip install --quiet --upgrade ansible-core ansible \
        $(grep -E '^[A-Za-z]' requirements.txt | grep -vE '^(ansible|ansible-core)==') \
        $(grep -E '^(pytest|pytest-xdist|PyYAML)==' requirements-test.txt)
    export PATH="${NEWEST_VENV}/bin:${PATH}"
}

selection_needs_docker() { # do the tests pytest "$@" selects include any marked integration? (tests/conftest.py counts)
    local listing
    listing="$(python -m pytest --collect-only -q "$@" 2>/dev/null)" || return 1 # pytest itself reports what is wrong
    [[ "${listing}" =~ verl-deploy:\ [1-9][0-9]*\ selected\ test\(s\)\ need\ a\ Docker\ engine ]]
}

JOB="${1:-}"
shift || true
case "${JOB}" in
prereqs)
    prereqs python git docker debootstrap
    echo "run.sh: $("$(python_pinned)" --version), $(git --version), Docker engine $(docker_info), $(find_command debootstrap)"
    ;;
setup)
    prereqs python
    setup
    ;;
link)
    link_collection
    ;;
demo)
    prereqs python docker debootstrap
    setup
    # The simulated cluster: real Docker engines, Ray and verl schemas; replayed npu-smi (tests/sim/).
    python tests/sim/simcluster.py up --nodes 3
    ansible-playbook -i inventories/sim/hosts.yml tests/sim/prepare.yml >/dev/null
    image="$(python tests/sim/simcluster.py info --json | python -c 'import json, sys; print(json.load(sys.stdin)["verl_image"])')"
    confirm=()
    # With a terminal you are asked to confirm; without one (CI) the confirmation is given here.
    [ -t 0 ] || confirm=(-e verl_confirm=true)
    # The stand-in trainer, as verl, exits after its last step: 2000 steps of about 2 s keep the demo training for an hour.
    ansible-playbook -i inventories/sim/hosts.yml playbooks/deploy.yml -e mask=0000000 -e verl_image="${image}" \
        -e verl_train_steps=2000 "${confirm[@]}" "$@"
    echo "Look: ansible-playbook -i inventories/sim/hosts.yml playbooks/status.yml"
    echo "      docker exec verl-sim-node1 docker exec verl bash -c 'tail -f /sim/logs/verl_qwen3_8b_*.log'"
    echo "Stop: ansible-playbook -i inventories/sim/hosts.yml playbooks/stop.yml; remove the cluster: ./run.sh sim-down"
    ;;
render)
    prereqs python
    setup
    out="${VERL_DEMO_OUTPUT:-/tmp/verl_scripts}"
    ansible-playbook playbooks/render.yml \
        -e mask=0000000 \
        -e verl_model_path=/mnt/public/Qwen3-8B \
        -e verl_train_file=/mnt/project/data/train.parquet \
        -e verl_test_file=/mnt/project/data/test.parquet \
        -e verl_ckpts_dir=/mnt/project/ckpts/qwen3-8b-dapo \
        -e verl_output_dir="${out}" "$@"
    ;;
sim-down)
    prereqs python docker
    setup
    python tests/sim/simcluster.py down
    ;;
test)
    prereqs python git
    setup
    # Docker only when the selection has simulated-cluster tests: -m "not integration" runs without it.
    if selection_needs_docker "$@"; then
        prereqs docker debootstrap
    fi
    # As CI: three workers on two cores. loadgroup keeps each xdist_group on one worker: three_nodes on one,
    # one_node, failures and the sim smoke test on another, ansible-test and ansible-lint then the rest on the
    # third (docs/development.md). The 25 slowest tests are listed at the end: CI's time is spent where it says.
    python -m pytest -n "${VERL_DEPLOY_TEST_WORKERS:-3}" --dist loadgroup --durations=25 "$@"
    ;;
newest-setup)
    prereqs python git
    setup_newest
    ;;
newest)
    prereqs python git
    setup_newest
    # Not in newest-setup, which CI runs beside `setup`: two links made at once could race.
    link_collection
    echo "run.sh newest: $(python -c 'import sys; from ansible.release import __version__ as core; from importlib.metadata import version
print("Python %d.%d.%d, ansible-core %s, ansible %s" % (*sys.version_info[:3], core, version("ansible")))')"
    # No Docker, no development tools: the unit tests, and the tarball built, installed and rendered from.
    [ "$#" -gt 0 ] || set -- tests/unit \
        tests/test_packaging.py::test_installed_collection_renders_from_an_empty_folder \
        tests/test_packaging.py::test_installed_collection_rejects_a_misshapen_inventory
    python -m pytest -n 2 --dist loadgroup "$@"
    ;;
lint)
    prereqs python
    setup
    ansible-lint
    ;;
sanity)
    prereqs python git
    setup
    tests/sanity.sh
    ;;
molecule)
    prereqs python docker debootstrap
    setup
    # The scenarios read the simulated cluster's image refs from the environment.
    python tests/sim/simcluster.py build --verl all
    eval "$(python tests/sim/simcluster.py env)"
    [ "$#" -gt 0 ] || set -- test --all
    molecule "$@"
    ;;
*)
    sed -n '2,/^set /{/^#/p}' "$0" >&2
    exit 2
    ;;
esac
