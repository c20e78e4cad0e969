#!/usr/bin/env bash
# sim-runc: the simulated node's OCI runtime, runc with one difference: a container asking for a capability that this
# machine cannot grant (a privileged one asks for all of them) gets the others instead of failing.
#
# Why: the machines the suite runs on (2-core VMs, CI's too) have CAP_SYS_RESOURCE outside their capability bounding set,
# so runc refuses every privileged container there, even on the machine itself ("runc create failed: unable to start
# container process: unable to apply caps: operation not permitted"). Real Ascend hosts run privileged monitoring agents
# and exporters (npu-exporter, node-exporter), and the deploy must tell those apart from containers that hold NPUs. With
# this runtime a `docker run --privileged` on a simulated node runs as on a real host: `docker inspect` says Privileged,
# it sees every /dev/davinci*, its processes can open them; only the capabilities outside the bounding set are left out.
# Everything else is runc's own: the spec is changed only when it names such a capability (grep first, so the common
# calls cost a grep), and then only its capability lists. Registered by sim-node-entrypoint as dockerd's default runtime.
set -euo pipefail
RUNC=/usr/sbin/runc

# The spec runc reads: the bundle's config.json (create, run) or an exec's process file.
spec=""
previous=""
for arg in "$@"; do
    case "${previous}" in
        --bundle | -b) spec="${arg}/config.json" ;;
        --process | -p) spec="${arg}" ;;
    esac
    case "${arg}" in
        --bundle=*) spec="${arg#--bundle=}/config.json" ;;
        --process=*) spec="${arg#--process=}" ;;
    esac
    previous="${arg}"
done

# Linux's capability numbers (linux/capability.h), to name what this machine's bounding set lacks.
NAMES=(CHOWN DAC_OVERRIDE DAC_READ_SEARCH FOWNER FSETID KILL SETGID SETUID SETPCAP LINUX_IMMUTABLE NET_BIND_SERVICE
    NET_BROADCAST NET_ADMIN NET_RAW IPC_LOCK IPC_OWNER SYS_MODULE SYS_RAWIO SYS_CHROOT SYS_PTRACE SYS_PACCT SYS_ADMIN
    SYS_BOOT SYS_NICE SYS_RESOURCE SYS_TIME SYS_TTY_CONFIG MKNOD LEASE AUDIT_WRITE AUDIT_CONTROL SETFCAP MAC_OVERRIDE
    MAC_ADMIN SYSLOG WAKE_ALARM BLOCK_SUSPEND AUDIT_READ PERFMON BPF CHECKPOINT_RESTORE)
bounding=$((16#$(sed -n 's/^CapBnd:[[:space:]]*//p' /proc/self/status)))
missing=()
for number in "${!NAMES[@]}"; do
    (((bounding >> number) & 1)) || missing+=("CAP_${NAMES[number]}")
done

if [ -n "${spec}" ] && [ -f "${spec}" ] && [ "${#missing[@]}" -gt 0 ] \
    && grep -q -F "$(printf '"%s"\n' "${missing[@]}")" "${spec}"; then
    python3 -c '
import json, sys
path, missing = sys.argv[1], set(sys.argv[2:])
with open(path, encoding="utf-8") as handle:
    spec = json.load(handle)
process = spec.get("process", spec)  # config.json holds the process; an exec process file is one
process["capabilities"] = {kind: [cap for cap in names if cap not in missing]
                           for kind, names in (process.get("capabilities") or {}).items() if names is not None}
with open(path, "w", encoding="utf-8") as handle:
    json.dump(spec, handle)
' "${spec}" "${missing[@]}"
fi
exec "${RUNC}" "$@"
