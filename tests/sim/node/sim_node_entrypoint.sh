#!/usr/bin/env bash
# sim-node-entrypoint: start one simulated Ascend host of the verl-sim cluster (tests/sim).
#
# tests/sim/simcluster.py installs this as /usr/local/bin/sim-node-entrypoint in the node image.
# Environment (all optional):
#   SIM_NPU_FIXTURE        capture replayed by npu-smi: a file name in /opt/sim/npu-smi/
#                          (default: 8 healthy Atlas A2 NPUs, 910B3)
#   SIM_NPU_BOARD_FIXTURE  capture replayed by `npu-smi info -t board -i N`
#   SIM_NPU_COUNT          create /dev/davinci0..N-1 instead of the device numbers of the capture
#   SIM_DOCKER_BIP         the inner engine's docker0 address (default 10.96.0.1/24)
# Then it replaces itself with dockerd (the node's own Docker engine); extra arguments go to dockerd.
set -euo pipefail

FIXTURES=/opt/sim/npu-smi
STATE=/etc/sim-npu-smi
DEFAULT_FIXTURE=007_info_910B3_8cards_v24.1.rc2_procs_emptyname_mixed.txt
DEFAULT_BOARD=025_board_t-board_i0_IT21HMDC_Bin5_v25.5.1_indented.txt

say() { printf 'sim-node-entrypoint: %s\n' "$*" >&2; }

fixture="${SIM_NPU_FIXTURE:-${DEFAULT_FIXTURE}}"
board="${SIM_NPU_BOARD_FIXTURE:-${DEFAULT_BOARD}}"
for name in "${fixture}" "${board}"; do
    if [ ! -f "${FIXTURES}/${name}" ]; then
        say "'${name}' is not a capture in ${FIXTURES}; the captures are:"
        ls "${FIXTURES}" >&2
        exit 64
    fi
done
mkdir -p "$(readlink -f "${STATE}")"
printf '%s\n' "${fixture}" >"${STATE}/default"
printf '%s\n' "${board}" >"${STATE}/board-default"

# --- Ascend device files (/dev is a fresh tmpfs at every container start). Character devices with
# /dev/null's numbers, so that `docker run --device /dev/davinciN` works in the node's own engine;
# plain files where mknod is not allowed.
if [ -n "${SIM_NPU_COUNT:-}" ]; then
    ids="$(seq 0 $((SIM_NPU_COUNT - 1)))"
else
    ids="$(/usr/local/sbin/npu-smi --sim-device-ids "${fixture}")"
    # An error capture (dcmi -8005: "the device is in use") has no table: the host still has 8 NPUs.
    [ -n "${ids}" ] || ids="$(seq 0 7)"
fi
device() {
    [ -e "$1" ] || mknod -m 666 "$1" c 1 3 2>/dev/null || : >"$1"
}
count=0
for id in ${ids}; do
    device "/dev/davinci${id}"
    count=$((count + 1))
done
for name in davinci_manager devmm_svm hisi_hdc; do
    device "/dev/${name}"
done

# --- Driver files an Ascend host has (what containers mount in and what checks look for)
version="$(sed -n 's/.*npu-smi[[:space:]]\+[^[:space:]]\+[[:space:]]\+Version:[[:space:]]*\([^[:space:]]\+\).*/\1/p' \
    "${FIXTURES}/${fixture}" | head -n 1)"
version="${version:-24.1.0}"
# The firmware's own version is the one `npu-smi info -t board` prints (its capture); its HDK release is the driver's
# (one HDK installs both).
firmware="$(sed -n 's/^[[:space:]]*Firmware Version[[:space:]]*:[[:space:]]*\([^[:space:]]\+\).*/\1/p' "${FIXTURES}/${board}" | head -n 1)"
mkdir -p /usr/local/Ascend/driver/lib64/driver /usr/local/Ascend/driver/tools /usr/local/dcmi /usr/local/Ascend/firmware
# Both in the installers' format (a real host's, HDK 24.1.rc3: the driver's compatible_version_fw names the firmware it
# accepts, the firmware's compatible_version_drv the drivers); a version.info holds no comment line.
cat >/usr/local/Ascend/driver/version.info <<EOF
Version=${version}
ascendhal_version=7.35.23
aicpu_version=1.0
tdt_version=1.0
log_version=1.0
prof_version=2.0
dvppkernels_version=1.1
tsfw_version=1.0
Innerversion=V100R001C19SPC001B124
compatible_version=[V100R001C13],[V100R001C15],[V100R001C17],[V100R001C18],[V100R001C19]
compatible_version_fw=[7.0.0,7.8.99]
package_version=${version}
EOF
cat >/usr/local/Ascend/firmware/version.info <<EOF
Version=${firmware:-7.5.0.1.129}
firmware_version=1.0
package_version=${version}
compatible_version_drv=[23.0.0,23.0.0.],[24.0,24.0.],[24.1,24.1.],[25.0,25.0.]
EOF
: >/usr/local/Ascend/driver/lib64/driver/libdrvdsmi_host.so
: >/usr/local/dcmi/libdcmi.so
cat >/etc/ascend_install.info <<'EOF'
UserName=HwHiAiUser
UserGroup=HwHiAiUser
Driver_Install_Type=full
Driver_Install_Path_Param=/usr/local/Ascend
Driver_Install_For_All=no
EOF
say "$(hostname): ${count} NPU device(s) ($(echo "${ids}" | tr '\n' ' ')), npu-smi replays ${fixture}"

# --- The node's own Docker engine. A restarted node keeps its file system: drop stale pid files.
rm -f /var/run/docker.pid /var/run/docker/containerd/containerd.pid
# Its runtime is runc through sim-runc, which lets privileged containers run on machines that cannot grant every capability.
exec dockerd \
    --storage-driver=overlay2 \
    --add-runtime=sim-runc=/usr/local/bin/sim-runc --default-runtime=sim-runc \
    --bip="${SIM_DOCKER_BIP:-10.96.0.1/24}" \
    --insecure-registry=registry:5000 \
    "$@"
