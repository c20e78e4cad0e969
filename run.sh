#!/usr/bin/env bash
# The one entry point: creates the virtual environment and runs each job.
#   ./run.sh setup            virtual environment (.venv) and the collection link (.collections)
#   ./run.sh demo [args]      bring up the simulated 3-node Ascend cluster and deploy to it (args go to ansible-playbook)
#   ./run.sh render [args]    render the launch scripts for the default inventory, touching no host
#   ./run.sh test [args]      the whole test suite (extra args go to pytest)
#   ./run.sh lint             ansible-lint (production profile)
#   ./run.sh sanity           ansible-test sanity
#   ./run.sh molecule [args]  Molecule on simulated nodes, e.g. `./run.sh molecule test -s three_nodes`
#                             (default: test --all; scenarios in extensions/molecule)
#   ./run.sh sim-down         remove the simulated cluster
set -euo pipefail
cd "$(dirname "$0")"
ROOT="$(pwd)"
VENV="${ROOT}/.venv"

python_311() {
    for candidate in python3.11 python3; do
        if command -v "${candidate}" >/dev/null 2>&1 &&
            "${candidate}" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
            echo "${candidate}"
            return
        fi
    done
    echo "run.sh: Python 3.11 is required (ansible-core 2.19 and the test pins are for 3.11)." >&2
    exit 1
}

setup() {
    local stamp="${VENV}/.requirements.sha"
    local want
    want="$(cat requirements.txt requirements-test.txt | sha256sum | cut -d' ' -f1)"
    if [ ! -x "${VENV}/bin/python" ] || [ "$(cat "${stamp}" 2>/dev/null)" != "${want}" ]; then
        "$(python_311)" -m venv "${VENV}"
        "${VENV}/bin/python" -m pip install --quiet --upgrade pip
        "${VENV}/bin/python" -m pip install --quiet -r requirements.txt -r requirements-test.txt
        echo "${want}" >"${stamp}"
    fi
    # ansible.cfg points collections_path at .collections: link this checkout in as verl.deploy.
    mkdir -p .collections/ansible_collections/verl
    ln -sfn ../../.. .collections/ansible_collections/verl/deploy
    export PATH="${VENV}/bin:${PATH}"
}

job="${1:-}"
shift || true
case "${job}" in
setup)
    setup
    ;;
demo)
    setup
    # The simulated cluster: real Docker engines, Ray and verl schemas; replayed npu-smi (tests/sim/).
    python tests/sim/simcluster.py up --nodes 3
    ansible-playbook -i inventories/sim/hosts.yml tests/sim/prepare.yml >/dev/null
    image="$(python tests/sim/simcluster.py info --json | python -c 'import json, sys; print(json.load(sys.stdin)["verl_image"])')"
    confirm=()
    # With a terminal you are asked to confirm; without one (CI) the confirmation is given here.
    [ -t 0 ] || confirm=(-e verl_confirm=true)
    ansible-playbook -i inventories/sim/hosts.yml playbooks/deploy.yml -e mask=0000000 -e verl_image="${image}" "${confirm[@]}" "$@"
    echo "Look: ansible-playbook -i inventories/sim/hosts.yml playbooks/status.yml"
    echo "      docker exec verl-sim-node1 docker exec verl bash -c 'tail -f /sim/logs/verl_qwen3_8b_*.log'"
    echo "Stop: ansible-playbook -i inventories/sim/hosts.yml playbooks/stop.yml; remove the cluster: ./run.sh sim-down"
    ;;
render)
    setup
    out="${VERL_DEMO_OUTPUT:-/tmp/verl_scripts}"
    ansible-playbook playbooks/render.yml \
        -e mask=0000000 \
        -e verl_model_path=/mnt/public/Qwen3-8B \
        -e verl_train_file=/mnt/project/data/train.parquet \
        -e verl_test_file=/mnt/project/data/test.parquet \
        -e verl_ckpts_dir=/mnt/project/ckpts/qwen3-8b-dapo \
        -e verl_output_dir="${out}" "$@"
    echo "Rendered: $(ls -d "${out}"/*/) -- read start_verl.sh and run_training.sh there."
    ;;
sim-down)
    setup
    python tests/sim/simcluster.py down
    ;;
test)
    setup
    python -m pytest tests "$@"
    ;;
lint)
    setup
    ansible-lint
    ;;
sanity)
    setup
    tests/sanity.sh
    ;;
molecule)
    setup
    # The scenarios read the simulated cluster's image refs from the environment.
    python tests/sim/simcluster.py build
    eval "$(python tests/sim/simcluster.py env)"
    [ "$#" -gt 0 ] || set -- test --all
    molecule "$@"
    ;;
*)
    sed -n '2,12p' "$0" >&2
    exit 2
    ;;
esac
