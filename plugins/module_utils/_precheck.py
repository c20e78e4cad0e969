# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Private to the verl.deploy collection: may change without notice.
"""The pre-check's rules: one rule, one function, its message beside it.

Each rule reads what the pre-check read on a host (verl.deploy.node_facts: npu-smi, Docker, /proc, the
network, the paths) and the host's launch configuration, and returns '' when the host is fine, else a
sentence naming the variable, the value and the fix. report() runs them all, so one report names every
problem of a host at once (the filter verl.deploy.precheck_report; roles/precheck/tasks/checks.yml shows it).
Adding a check: a function here, its entry in PROBLEMS or WARNINGS, a unit test, a troubleshooting entry.
No Ansible imports.
"""
from __future__ import annotations

import json
import re

from ansible_collections.verl.deploy.plugins.module_utils import _memory_fit as memory_fit
from ansible_collections.verl.deploy.plugins.module_utils._chips import device_view
from ansible_collections.verl.deploy.plugins.module_utils import _algorithms
from ansible_collections.verl.deploy.plugins.module_utils import _ckpts
from ansible_collections.verl.deploy.plugins.module_utils import _model
from ansible_collections.verl.deploy.plugins.module_utils import _parquet
from ansible_collections.verl.deploy.plugins.module_utils import _resume
from ansible_collections.verl.deploy.plugins.module_utils import _versions
from ansible_collections.verl.deploy.plugins.module_utils._config_checks import expert_sizes, valid_tp_pp, verl_values
from ansible_collections.verl.deploy.plugins.module_utils._hydra_overrides import value_of, whole_value_of
from ansible_collections.verl.deploy.plugins.module_utils._inputs import canonical_path, ray_start_option, short, system_problem
from ansible_collections.verl.deploy.plugins.module_utils._inputs import ray_temp_dir as _ray_temp_dir
from ansible_collections.verl.deploy.plugins.module_utils._node_facts import image_present, npu_containers
from ansible_collections.verl.deploy.plugins.module_utils._readiness import brief


def _ids(numbers):
    return ", ".join(str(number) for number in numbers)


def _own_container_id(checked):
    return ((checked.get("container") or {}).get("container") or {}).get("Id") or ""


def _container_names(checked):
    """{container id: name} of the host's containers, as the pre-check listed them."""
    names = {}
    for entry in (checked.get("docker") or {}).get("containers") or []:
        listed = [name.lstrip("/") for name in entry.get("Names") or []]
        if entry.get("Id"):
            names[entry["Id"]] = listed[0] if listed else entry["Id"][:12]
    return names


def holders(npu, own_container_id, devices=None):
    """The processes npu-smi lists (on `devices`, or on any NPU), each with whose it is: {'device', 'pid', 'name',
    'owner', 'container_id'} where owner is 'training' (the deploy's own container), 'container' (another one),
    'host' (no container) or 'unknown' (npu-smi lists a pid this host does not show)."""
    if (npu or {}).get("failed"):
        return []
    view = device_view(npu)
    by_pid = {process.get("pid"): process for process in npu.get("processes") or []}
    found = []
    for device, pids in view["busy"].items():
        if devices is not None and device not in devices:
            continue
        for pid in pids:
            process = by_pid.get(pid) or {}
            container = process.get("container_id")
            if not process.get("seen", True):
                owner = "unknown"
            elif container and container == own_container_id:
                owner = "training"
            elif container:
                owner = "container"
            else:
                owner = "host"
            found.append({"device": device, "pid": pid, "name": process.get("comm") or process.get("name") or "",
                          "owner": owner, "container_id": container})
    return found


def npu_holders(checked):
    """holders() on this deploy's NPUs."""
    launch = checked.get("launch") or {}
    return holders(checked.get("npu") or {}, _own_container_id(checked), set(launch.get("npu_devices") or []))


def _ranges(numbers):
    """[0, 1, 2, 3, 5] -> '0-3,5'."""
    out, run = [], []
    for number in sorted(set(numbers)):
        if run and number == run[-1] + 1:
            run.append(number)
            continue
        if run:
            out.append("%d-%d" % (run[0], run[-1]) if len(run) > 1 else "%d" % run[0])
        run = [number]
    if run:
        out.append("%d-%d" % (run[0], run[-1]) if len(run) > 1 else "%d" % run[0])
    return ",".join(out)


def npu_usage(npu, own_container_id, containers=None):
    """The status line's words for what holds this host's NPUs: 'none', '0-7 by the training (pids ...)', and
    for anything else its NPUs, pid, name and container. containers: Docker's list, to name a container."""
    if (npu or {}).get("failed"):
        return "?"
    found = holders(npu, own_container_id)
    if not found:
        return "none"
    names = _container_names({"docker": {"containers": containers or []}})
    parts = []
    own = [holder for holder in found if holder["owner"] == "training"]
    if own:
        pids = sorted({holder["pid"] for holder in own})
        shown = ", ".join(str(pid) for pid in pids)
        parts.append("%s by the training (pid%s %s)" % (_ranges(h["device"] for h in own), "s" if len(pids) > 1 else "", shown))
    others = {}
    for holder in found:
        if holder["owner"] != "training":
            others.setdefault(_holder_text(holder, names), []).append(holder["device"])
    parts += ["%s by %s" % (_ranges(devices), who) for who, devices in others.items()]
    return "; ".join(parts)


def _holder_text(holder, names):
    what = "pid %s (%s" % (holder["pid"], holder["name"] or "no name")
    if holder["owner"] == "container":
        container = holder["container_id"]
        return what + ", container %s)" % (("%s %s" % (names[container], container[:12])) if container in names else container[:12])
    if holder["owner"] == "host":
        return what + ", on the host, in no container)"
    return what + ", a pid this host does not show)"


# --------------------------------------------------------------------------- problems

def npu_smi_failed(checked):
    npu = checked.get("npu") or {}
    if not npu.get("failed"):
        return ""
    msg = " ".join(str(npu.get("msg") or "").split())
    # npu_info's "not found" names its own fix: one fix per problem.
    fix = "" if "Fix: " in msg else " Fix: check the Ascend driver on the host (npu-smi info), or set verl_npu_smi_path."
    return "npu-smi failed: %s%s" % (msg, fix)


def npus_missing_unhealthy_or_held(checked):
    """verl_npu_devices that npu-smi does not list, that are not healthy, or that another container or the host
    holds. The deploy's own training container holding them is fine: that is the training, on a re-run."""
    npu, launch = checked.get("npu") or {}, checked.get("launch") or {}
    if npu.get("failed"):
        return ""
    view = device_view(npu)
    wanted = launch.get("npu_devices") or []
    missing = [device for device in wanted if device not in view["device_ids"]]
    unhealthy = [device for device in view["unhealthy"] if device in wanted]
    others = [holder for holder in npu_holders(checked) if holder["owner"] != "training"]
    text = ""
    if missing:
        text += "verl_npu_devices=%s names NPU(s) %s that npu-smi does not list (it lists %s%s). " % (
            launch.get("npu_devices_csv"), _ids(missing), _ids(view["device_ids"]),
            ": the chips of Atlas A3, two per card" if view["family"] == "a3" else "")
    if unhealthy:
        text += "NPU(s) %s are not healthy. " % _ids(unhealthy)
    if others:
        names = _container_names(checked)
        devices = sorted({holder["device"] for holder in others})
        shown = []
        for holder in others:
            line = _holder_text(holder, names)
            if line not in shown:
                shown.append(line)
        text += "NPU(s) %s already run processes of something other than this deployment's container %s: %s. " % (
            _ids(devices), launch.get("container_name"), "; ".join(shown))
    if text:
        text += "Fix: give verl_npu_devices for this host that lists only free, healthy NPUs, or stop what uses them."
    return text


def docker_unanswered(checked):
    docker = checked.get("docker") or {}
    if docker.get("can_talk_to_docker"):
        return ""
    if "timed out" in str(docker.get("msg") or ""):
        # The socket took the connection, but the API did not answer: the engine runs and hangs.
        return ("the Docker engine hangs: restart it (systemctl restart docker). Its socket takes connections, but its API did not "
                "answer within the timeout (%s); its log (journalctl -u docker) may say why." % docker.get("msg"))
    return ("the Docker engine does not answer (%s). Fix: start Docker (systemctl start docker) and make sure the deploy user "
            "may use it." % (docker.get("msg") or "no reply"))


def _npu_containers(checked):
    """npu_containers() of this host for this deploy's NPU devices, less the containers npu-smi already lists on them
    (npus_missing_unhealthy_or_held names those: one refusal per cause)."""
    launch = checked.get("launch") or {}
    devices = [d for d in (launch.get("container") or {}).get("devices") or [] if re.match(r"^/dev/davinci\d+$", d)]
    found = npu_containers((checked.get("docker") or {}).get("containers") or [], devices, launch.get("container_name"),
                           (checked.get("facts") or {}).get("device_holders") or [])
    listed = {holder["container_id"] for holder in npu_holders(checked) if holder["owner"] == "container"}
    return dict(found, holding=[entry for entry in found["holding"] if entry["id"] not in listed])


def containers_holding_the_npus(checked):
    """Running containers (other than the training's) whose processes have this deploy's NPU devices open, or that
    were given them (--device). A privileged container holds only what its processes open (idle_privileged_containers)."""
    holding = _npu_containers(checked)["holding"]
    if not holding:
        return ""
    parts, fixes, npus = [], [], set()
    for entry in holding:
        what = []
        if entry["mapped"]:
            what.append("was given %s (--device)" % ", ".join(entry["mapped"]))
        if entry["opened"]:
            what.append("has %s open (pid %s)" % (", ".join(entry["opened"]), ", ".join(entry["pids"])))
        parts.append("container %s%s %s" % (entry["name"], " (privileged)" if entry["privileged"] else "", " and ".join(what)))
        held = entry["mapped"] + [d for d in entry["opened"] if d not in entry["mapped"]]
        npus.update(int(d[len("/dev/davinci"):]) for d in held)
        fixes.append("docker stop %s" % entry["name"] if not entry["privileged"] or entry["mapped"] else
                     "docker stop %s, or have it not open %s (it is privileged: it sees every NPU)" % (entry["name"], ", ".join(entry["opened"])))
    return ("%s: NPU(s) %s of this deploy are taken; the training would fail at its first NPU call (dcmi error -8020, "
            "\"device is used\"). Fix: stop what holds them (%s), or leave NPU(s) %s out of verl_npu_devices for this host."
            % ("; ".join(parts), _ids(sorted(npus)), "; ".join(fixes), _ids(sorted(npus))))


def idle_privileged_containers(checked):
    """A warning: running privileged containers that see every NPU but have none open (monitoring agents, exporters)."""
    idle = _npu_containers(checked)["idle_privileged"]
    if not idle:
        return ""
    return ("privileged container(s) %s run here: they see every NPU but none of their processes has a /dev/davinci device "
            "open, so they hold none (a monitoring agent or exporter). Should one open this deploy's NPUs later, the training "
            "fails with dcmi error -8020." % ", ".join(idle))


def _paths_absent(checked):
    """The paths to check ({variable, path, kind}) that are not on this host as their kind."""
    paths = checked.get("paths") or {}
    state = paths.get("state") or {}
    return [check for check in paths.get("checks") or []
            if not (state.get(check.get("path")) or {}).get("isdir" if check.get("kind") == "directory" else "isreg")]


def paths_missing(checked):
    bad = _paths_absent(checked)
    if not bad:
        return ""
    text = "".join("%s=%s is not an existing %s on this host. " % (c["variable"], c["path"], c["kind"]) for c in bad)
    text += "Fix: give the path as it is on every node (shared storage), or copy the data there"
    if any(c["variable"] == "verl_resume_from_path" for c in bad):
        text += ("; the checkpoint to resume from is a global_step_<N> folder on the Ray head (verl_resume_mode=resume_path), or use "
                 "verl_resume_mode=auto")
    return text + "."


def host_paths(launch):
    """[(variable, host path)] of what the deploy mounts into the container, writes or chmods on the host: the host
    sides of its bind mounts, and the stage folder (<verl_host_stage_dir>/<verl_container_name>)."""
    found = [("verl_log_dir", launch.get("log_dir")), ("verl_ckpts_dir", launch.get("ckpts_dir")),
             ("verl_swanlab_log_dir", launch.get("swanlab_log_dir")), ("verl_model_path", launch.get("model_path")),
             ("verl_resume_from_path", launch.get("resume_from_path")), ("verl_host_stage_dir", launch.get("host_stage_dir"))]
    if launch.get("host_stage_dir") and launch.get("container_name"):
        found.append(("verl_host_stage_dir", "%s/%s" % (launch["host_stage_dir"], launch["container_name"])))
    for volume in launch.get("container_extra_volumes") or []:
        found.append(("verl_container_extra_volumes", str(volume).split(":", 1)[0]))
    return [(variable, path) for variable, path in found if path]


def _host_state(checked):
    """{canonical path: path_state()} of the paths node_facts read on this host."""
    return {canonical_path(str(path)): state for path, state in ((checked.get("paths") or {}).get("state") or {}).items()}


def host_paths_resolve_to_system_folders(checked):
    """A mounted or written path that is fine as text but, through this host's symbolic links, is a system folder."""
    state, bad = _host_state(checked), []
    for variable, path in host_paths(checked.get("launch") or {}):
        real = (state.get(canonical_path(path)) or {}).get("real")
        if not real or canonical_path(real) == canonical_path(path):
            continue
        problem = system_problem(canonical_path(real), "mount")
        if problem:
            bad.append("%s=%s is %s on this host (through symbolic links): that %s" % (variable, short(path, 1024), short(real, 1024), problem))
    if not bad:
        return ""
    return "; ".join(bad) + ", or remove the link. Nothing was mounted or written."


def npu_smi_not_a_file(checked):
    """verl_npu_smi_path is bind-mounted into the container as the npu-smi program: it must be a file on the host."""
    path = (checked.get("launch") or {}).get("npu_smi_path")
    found = _host_state(checked).get(canonical_path(path or "")) if path else None
    if not found or found.get("kind") == "file":
        return ""
    return ("verl_npu_smi_path=%s is %s on this host, not a file: it is bind-mounted into the container as the npu-smi "
            "program. Fix: give the npu-smi executable itself (command -v npu-smi on the host, e.g. "
            "/usr/local/sbin/npu-smi), or leave verl_npu_smi_path empty to find it."
            % (short(path, 1024), {"directory": "a folder", "socket": "a socket", "other": "a device or FIFO", "missing": "missing"}
               .get(found.get("kind"), "not a file")))


def no_route_to_the_head(checked):
    route, launch = checked.get("route") or {}, checked.get("launch") or {}
    if route.get("ok"):
        return ""
    return ("no route to the head %s (verl_master_addr): %s. Fix: check the network, or set verl_master_addr to an address this "
            "host reaches." % (launch.get("master_addr"), route.get("msg") or "no matching route"))


def socket_ifname_unknown(checked):
    launch = checked.get("launch") or {}
    interfaces = ((checked.get("facts") or {}).get("network") or {}).get("interfaces") or []
    ifname = launch.get("socket_ifname")
    if not ifname or ifname in interfaces:
        return ""
    return ("verl_socket_ifname=%s is not an interface of this host (%s). Fix: give one of them, or leave it empty to use the one "
            "that reaches the head." % (ifname, ", ".join(interfaces)))


def ray_ports_taken(checked):
    """The head's Ray ports in use while the training container does not run (then something else holds them)."""
    launch = checked.get("launch") or {}
    container = checked.get("container") or {}
    running = container.get("exists") and ((container.get("container") or {}).get("State") or {}).get("Running")
    if not launch.get("is_head") or running:
        return ""
    listening = (checked.get("facts") or {}).get("listening_ports") or []
    taken = [port for port in (launch.get("ray_port"), launch.get("dashboard_port")) if port in listening]
    if not taken:
        return ""
    free = [_free_port(listening, port, (launch.get("ray_port"), launch.get("dashboard_port"))) for port in taken]
    names = ["verl_ray_port" if port == launch.get("ray_port") else "verl_ray_dashboard_port" for port in taken]
    return ("port(s) %s on %s are in use, but the training container is not running. Fix: free them, or choose %s (free on this "
            "host)." % (_ids(taken), launch.get("master_addr"), " ".join("%s=%d" % pair for pair in zip(names, free))))


def _free_port(listening, port, avoid=(), count=1):
    """The first port above `port` with `count` ports from it not in `listening` (nor in `avoid`)."""
    taken = set(listening) | {p for p in avoid if p}
    candidate = port + 1
    while any(candidate + offset in taken for offset in range(count)) and candidate < 65535 - count:
        candidate += 1
    return candidate


# HCCL listens on a range from HCCL_IF_BASE_PORT (default 60000) on every node: 16 ports up to CANN 8.2, 32 from
# CANN 8.3 (CANN's environment-variable reference, HCCL_IF_BASE_PORT). HCCL_HOST_SOCKET_PORT_RANGE, where set, takes
# precedence over it ("60000-60050", "60000,60050-60100", single ports, or "auto": the OS picks; CANN's reference,
# HCCL_HOST_SOCKET_PORT_RANGE). A taken one fails the first collective: "EJ0003: Failed to bind the IP port. Reason: The
# IP address and port have been bound already." / "host nic listen start failed, port[60000]" (vllm-ascend #405),
# Communication_Error_Bind_IP_Port(EI0019). HCCL_NPU_SOCKET_PORT_RANGE (default 16666) are ports of the NPUs' own network
# stack, not of the host: no /proc of the host shows who holds them, so no rule reads them.
HCCL_BASE_PORT = 60000
HCCL_PORTS = 32


def hccl_port_spec(text):
    """HCCL_HOST_SOCKET_PORT_RANGE's value -> its sorted ports, 'auto', or None when it is not of CANN's forms
    (ports and ranges in [1, 65535] separated by commas)."""
    text = str(text).strip()
    if text.lower() == "auto":
        return "auto"
    ports = set()
    for part in text.split(","):
        low, sep, high = part.strip().partition("-")
        if not low.strip().isdigit() or (sep and not high.strip().isdigit()):
            return None
        first, last = int(low), int(high) if sep else int(low)
        if not 1 <= first <= last <= 65535:
            return None
        ports.update(range(first, last + 1))
    return sorted(ports)


def _held_by(ports, holders):
    """' (60005 by pid 4242 (python3); ...)' for the ports whose holder node_facts saw, '' when it saw none."""
    shown = ["%d by pid %s" % (port, ", ".join(holders[str(port)])) for port in ports if holders.get(str(port))]
    return " (%s)" % "; ".join(shown) if shown else ""


def hccl_ports_taken(checked):
    """HCCL's host-side ports in use on a node where the deployment's training does not hold the NPUs (then something else
    does): HCCL_HOST_SOCKET_PORT_RANGE where set (not 'auto'), else the range from HCCL_IF_BASE_PORT."""
    launch = checked.get("launch") or {}
    if in_use_by_training(checked)["devices"]:
        return ""
    env = launch.get("extra_env") or {}
    facts = checked.get("facts") or {}
    listening = set(facts.get("listening_ports") or [])
    holders = facts.get("port_holders") or {}
    if "HCCL_HOST_SOCKET_PORT_RANGE" in env:
        value = str(env["HCCL_HOST_SOCKET_PORT_RANGE"])
        ports = hccl_port_spec(value)
        if ports in (None, "auto"):
            return ""
        taken = [port for port in ports if port in listening]
        if not taken:
            return ""
        free = _free_port(listening, min(ports), count=len(ports))
        return ("port(s) %s of HCCL's host ports (HCCL_HOST_SOCKET_PORT_RANGE=%s) are in use on this host%s, and the training is "
                "not running here: HCCL would fail with \"EJ0003: Failed to bind the IP port\". Fix: free them (ss -ltnp), or give "
                "verl_extra_env: {HCCL_HOST_SOCKET_PORT_RANGE: \"%d-%d\"} (its %d ports are free here), or \"auto\" (the OS picks)."
                % (_ids(taken), value, _held_by(taken, holders), free, free + len(ports) - 1, len(ports)))
    base = str(env.get("HCCL_IF_BASE_PORT", HCCL_BASE_PORT))
    if not base.isdigit():
        return ""
    taken = [port for port in range(int(base), int(base) + HCCL_PORTS) if port in listening]
    if not taken:
        return ""
    return ("port(s) %s of HCCL's range %d-%d (HCCL_IF_BASE_PORT=%s) are in use on this host%s, and the training is not running "
            "here: HCCL would fail with \"listen on ip[...] and specific port[...] fail\". Fix: free them (ss -ltnp), or move HCCL's "
            "range with verl_extra_env: {HCCL_IF_BASE_PORT: %d} (its %d ports are free here)." % (
                _ids(taken), int(base), int(base) + HCCL_PORTS - 1, base, _held_by(taken, holders),
                _free_port(listening, int(base), count=HCCL_PORTS), HCCL_PORTS))


def npu_network_down(checked):
    """On a multi-node run, the NPUs' own network (hccn_tool) of this deploy's devices: link UP, health Success."""
    launch = checked.get("launch") or {}
    devices = ((checked.get("facts") or {}).get("hccn") or {}).get("devices") or {}
    if (launch.get("nnodes") or 1) < 2 or not devices:
        return ""
    bad, not_asked = [], []
    for device in launch.get("npu_devices") or []:
        entry = devices.get(str(device))
        if entry is None:
            continue
        if entry.get("not_asked"):  # after an NPU whose hccn_tool call hung: that one is named, these are counted
            not_asked.append(device)
        elif entry.get("link") != "UP":
            bad.append("NPU %d link %s (hccn_tool -i %d -link -g)" % (device, entry.get("link") or "unknown: " + (entry.get("error") or ""), device))
        elif entry.get("health") != "Success":
            bad.append("NPU %d net health %s (hccn_tool -i %d -net_health -g)" % (
                device, entry.get("health") or "unknown: " + (entry.get("error") or ""), device))
    if not_asked:
        # Only this deploy's NPUs are asked (node_facts' hccn), in order: the one whose call hung is named just before.
        bad.append("NPU(s) %s were not asked after that" % _ids(not_asked))
    if not bad:
        return ""
    return ("the NPUs' own network is not up: %s; HCCL between the nodes would time out. Fix: check the NPU ports' cables and "
            "switch, and their addresses (hccn_tool -i <id> -ip -g, /etc/hccn.conf), or leave those NPUs out of verl_npu_devices."
            % "; ".join(bad))


def npu_address_not_hccn_conf(checked):
    """On a multi-node run, an NPU of this deploy whose address (hccn_tool -i N -ip -g) is not /etc/hccn.conf's address_N.
    Said only on evidence: both read (a host without hccn_tool or /etc/hccn.conf, or a device the file does not name, is fine)."""
    launch = checked.get("launch") or {}
    hccn = (checked.get("facts") or {}).get("hccn") or {}
    devices, conf = hccn.get("devices") or {}, hccn.get("conf") or {}
    if (launch.get("nnodes") or 1) < 2 or not devices or not conf:
        return ""
    bad, fixes = [], []
    for device in launch.get("npu_devices") or []:
        entry, wanted = devices.get(str(device)) or {}, conf.get(str(device))
        if wanted and entry.get("address") and entry["address"] != wanted:
            bad.append("NPU %d has %s (hccn_tool -i %d -ip -g), /etc/hccn.conf says address_%d=%s" % (
                device, entry["address"], device, device, wanted))
            fixes.append("hccn_tool -i %d -ip -s address %s netmask %s" % (device, wanted, entry.get("netmask") or "<netmask_%d>" % device))
    if not bad:
        return ""
    return ("the NPUs' addresses are not those of /etc/hccn.conf: %s; the other nodes reach an NPU at the address it has, and "
            "the next driver restart gives it the file's: HCCL between the nodes would fail (HcclCommPrepare fail, or a socket "
            "timeout, EI0006). Fix: give each NPU the file's address (%s), or write the address it has into /etc/hccn.conf "
            "(address_<N>=...), whichever your network plan holds." % ("; ".join(bad), "; ".join(fixes)))


def npu_tls_mixed(checked):
    """Judged once, on the head, over every node's read: the TLS switch of the deploy's NPUs (hccn_tool -i N -tls -g) on for
    some and off for others. HCCL refuses to build the communicator (EI0016); NPUs whose switch was not read are left out."""
    launch = checked.get("launch") or {}
    nodes, used = checked.get("hccn_nodes") or {}, checked.get("npu_devices_nodes") or {}
    if not launch.get("is_head") or (launch.get("nnodes") or 1) < 2:
        return ""
    states = {"enabled": [], "disabled": []}
    for host in sorted(nodes):
        devices = (nodes[host] or {}).get("devices") or {}
        ids = [d for d in used.get(host) or [] if (devices.get(str(d)) or {}).get("tls") in states]
        for state in states:
            chosen = [d for d in ids if devices[str(d)]["tls"] == state]
            if chosen:
                states[state].append("%s NPU(s) %s" % (host, _ranges(chosen)))
    if not states["enabled"] or not states["disabled"]:
        return ""
    return ("the NPUs' TLS switch differs between the NPUs of this run: on for %s, off for %s (hccn_tool -i <id> -tls -g, "
            "\"tls switch[1]\" is on); HCCL would refuse to connect them (EI0016: Value Disable for config \"tls\" is invalid. "
            "Expected Value:\"All ranks are consistent.\"). Fix: switch it the same on every NPU of the run, on (hccn_tool -i <id> "
            "-tls -s enable 1 on %s) or off (hccn_tool -i <id> -tls -s enable 0 on %s)."
            % ("; ".join(states["enabled"]), "; ".join(states["disabled"]), "; ".join(states["disabled"]), "; ".join(states["enabled"])))


# --------------------------------------------------------------------------- host resources (docs/memory.md, "Host memory")

GIB = memory_fit.GIB
# Each NPU's worker (Ray's WorkerDict: torch_npu, vLLM-Ascend, Megatron imported) holds 7.8-10.3 GB of host memory once
# started, before any weights (verl-omni #402, on Ascend: "WorkerDict.__init__ ... actual memory used=10.27GB", "7.84GB").
# Ray kills the newest worker once the node's memory passes 95 % (RAY_memory_usage_threshold's default): "Task was killed
# due to the node running low on memory ... which exceeds the memory usage threshold of 0.95" (verl #2950).
WORKER_START_BYTES = 8 * GIB  # below this per worker they do not all start: refused
WORKER_ROOM_BYTES = 11 * GIB  # 10.27 GB / 0.95: below this Ray may kill one as the weights arrive: a warning
# A pull holds a layer's download while it extracts it: room for the image's size and a quarter more is not tight.
PULL_MARGIN = 1.25


def _host_memory(checked):
    """(available bytes, workers on this host, what each holds beyond its start: memory_fit.host_bytes() when the model
    and the HBM are known, else None), or None when not judged (MemAvailable unread, the training runs here)."""
    available = ((checked.get("facts") or {}).get("memory") or {}).get("available_kb")
    workers = len((checked.get("launch") or {}).get("npu_devices") or [])
    if available is None or not workers or in_use_by_training(checked)["devices"]:
        return None
    case = memory_case(checked)
    return available * 1024, workers, memory_fit.host_bytes(case) if case else None


def _later(extra):
    """What the message says of the memory each worker takes later, by the model and the feature bits."""
    if not extra or not extra["extra"]:
        return ""
    if extra["sleep"] >= extra["offload"]:
        return (", and %.1f GiB more once vLLM sleeps after the first rollout (vLLM-Ascend sleeps at level 1: the rollout's "
                "weights move to host memory)" % (extra["sleep"] / GIB))
    return ", and %.1f GiB more for what Offload (bit 2) or Swap Optimizer (bit 5) keeps in host memory" % (extra["offload"] / GIB)


def host_memory_short(checked):
    """Host memory (MemAvailable) below what the NPU workers of this host take: at their start, and later what the
    model's size and the offload bits move to host memory (memory_fit.host_bytes)."""
    read = _host_memory(checked)
    per_worker = read and WORKER_START_BYTES + (read[2] or {}).get("extra", 0)
    if read is None or read[0] >= read[1] * per_worker:
        return ""
    available, workers, extra = read
    fits = int(available // per_worker)
    return ("this host has %.1f GiB of memory available (MemAvailable) for its %d NPU workers, and each takes about 8 GiB of host "
            "memory once started, before the model%s: Ray would kill them (\"Task was killed due to the node running low on memory "
            "... exceeds the memory usage threshold of 0.95\"). Fix: free host memory (stop what uses it; free -g shows it; %.0f GiB "
            "for all), or give verl_npu_devices %s (the NPUs whose workers fit, the same count on every node)." % (
                available / GIB, workers, _later(extra), workers * per_worker / GIB, "fewer NPUs" if fits < 1 else "at most %d NPUs" % fits))


def host_memory_tight(checked):
    """A warning: host memory enough for the workers to start, but under the room the source shows them taking."""
    read = _host_memory(checked)
    extra = (read[2] or {}).get("extra", 0) if read else 0
    if read is None or not read[1] * (WORKER_START_BYTES + extra) <= read[0] < read[1] * (WORKER_ROOM_BYTES + extra):
        return ""
    return ("this host has %.1f GiB of memory available for its %d NPU workers: each may take up to 10.3 GB of host memory%s, "
            "and Ray kills the newest worker above 95 %% of the node's memory. Free host memory if the workers are killed."
            % (read[0] / GIB, read[1], _later(read[2])))


def _pull(checked):
    """(image, bytes it takes, the node it was measured on, free bytes under Docker's data root) when this host must pull
    the image and another node of the run has it (its size there); None otherwise (no size known: nothing is judged)."""
    launch, docker = checked.get("launch") or {}, checked.get("docker") or {}
    image, free = launch.get("image"), docker.get("root_free_bytes")
    if not image or free is None or not docker.get("can_talk_to_docker") or image_present(docker.get("images") or [], image):
        return None
    sizes = [(entry.get("Size") or 0, host) for host, images in sorted((checked.get("images_nodes") or {}).items())
             for entry in images or [] if entry.get("Size") and image_present([entry], image)]
    if not sizes:
        return None
    size, host = max(sizes)
    return image, size, host, free


def docker_root_short(checked):
    """The image must be pulled here, and Docker's data root has less free space than the image takes on another node."""
    pull = _pull(checked)
    if pull is None or pull[3] >= pull[1]:
        return ""
    image, size, host, free = pull
    root = (checked.get("docker") or {}).get("root_dir") or "Docker's data root"
    return ("the image %s is not on this host and must be pulled: it takes %.1f GiB (on %s), but Docker's data root %s has %.1f GiB "
            "free; the pull would fail with \"failed to register layer: ... no space left on device\". Fix: free space there (docker "
            "image prune -a removes the images no container uses), or move Docker's data root to a larger disk (data-root in "
            "/etc/docker/daemon.json), then run again." % (image, size / GIB, host, root, free / GIB))


# Ray in the training container keeps its session files under its temporary folder (/tmp/ray, or `ray start --temp-dir`)
# and spills objects there once its object store is full (Ray's docs, "Object Spilling"). Unless `--object-store-memory`
# sets it, the store takes 30 % of the memory available at its start, at most 200 GB and at most 95 % of /dev/shm's free
# space, but not under 10 GB (ray/_private/utils.py resolve_object_store_memory: DEFAULT_OBJECT_STORE_MEMORY_PROPORTION,
# DEFAULT_OBJECT_STORE_MAX_MEMORY_BYTES, REQUIRE_SHM_SIZE_THRESHOLD). A store larger than /dev/shm's free space lives in
# /tmp (older Ray) or Ray's temporary folder (newer: services.py determine_plasma_store_config), both counted as the
# container's /tmp here. Ray treats a disk over 95 % full as full: "/tmp/ray/session_... is over 95% full ... Object
# creation will fail if spilling is required" (local_fs_capacity_threshold; lmdeploy #3457, ray #36959). Unless the folder
# is a mount, that is the container's writable layer: on Docker's data root.
RAY_STORE_SHARE = 0.3
RAY_STORE_MAX_BYTES = 200 * 10 ** 9
RAY_STORE_SHM_SHARE = 0.95
RAY_STORE_MIN_CAP_BYTES = 10 ** 10
RAY_DISK_FULL = 0.95


def _store_given(launch):
    """--object-store-memory of verl_ray_start_args in bytes, when it is a number (`ray start` refuses anything else)."""
    given = ray_start_option(launch.get("ray_start_args"), "--object-store-memory")
    return int(given) if given is not None and given.isdigit() else None


def ray_temp_dir(launch):
    """Ray's temporary folder in the training container (_inputs.ray_temp_dir of verl_ray_start_args)."""
    return _ray_temp_dir(launch.get("ray_start_args"))


def ray_store_bytes(launch, available_kb, shm_free_kb):
    """The object store Ray makes: `--object-store-memory` when given, else Ray's default from the memory available
    (and /dev/shm's free space, when read); None when neither is known."""
    given = _store_given(launch)
    if given is not None:
        return given
    if available_kb is None:
        return None
    cap = RAY_STORE_MAX_BYTES
    if shm_free_kb is not None:
        cap = min(cap, max(RAY_STORE_MIN_CAP_BYTES, int(shm_free_kb * 1024 * RAY_STORE_SHM_SHARE)))
    return min(available_kb * 1024 * RAY_STORE_SHARE, cap)


def _mounted(launch, folder):
    """Whether a folder of the training container is on a bind mount (verl_container_extra_volumes: the folder itself or
    one above it; /tmp itself may not be one: the settings check keeps system folders out)."""
    targets = [str(volume).split(":")[1].rstrip("/") for volume in (launch.get("container") or {}).get("volumes") or []
               if str(volume).count(":") >= 1]
    return any(target and (folder == target or folder.startswith(target + "/")) for target in targets)


def ray_spill_dirs(launch):
    """The folders Ray spills objects to in the training container, as Ray 2.60 decides (node.py,
    _get_object_spilling_config): `--object-spilling-directory`, else `object_spilling_directory` of `--system-config`,
    else a filesystem `object_spilling_config` of `--system-config` and its directory_path (one or a list), else the
    session folder under Ray's temporary folder. [] when the configured spilling is not to a local file system (smart_open:
    S3 and the like). (Ray's RAY_object_spilling_* variables are not among those verl_extra_env may set.)"""
    args = launch.get("ray_start_args")
    try:
        system = json.loads(ray_start_option(args, "--system-config") or "{}")
    except ValueError:  # `ray start` refuses it; nothing else is read from it here
        system = {}
    system = system if isinstance(system, dict) else {}
    directory = ray_start_option(args, "--object-spilling-directory") or system.get("object_spilling_directory")
    if directory:
        return [str(directory).rstrip("/") or "/"]
    config = system.get("object_spilling_config")
    if not config:
        return [ray_temp_dir(launch)]
    try:
        config = json.loads(config) if isinstance(config, str) else config
        if config.get("type") != "filesystem":
            return []
        paths = (config.get("params") or {}).get("directory_path")
    except (ValueError, AttributeError):  # Ray refuses a config it cannot read
        return [ray_temp_dir(launch)]
    paths = [paths] if isinstance(paths, str) else paths if isinstance(paths, list) else []
    return [str(path).rstrip("/") or "/" for path in paths if path] or [ray_temp_dir(launch)]


def _plasma_dir(launch):
    """`--plasma-directory` of verl_ray_start_args (the object store's files go there), or None."""
    plasma = ray_start_option(launch.get("ray_start_args"), "--plasma-directory")
    return (plasma.rstrip("/") or "/") if plasma else None


def ray_data_root_folders(launch):
    """The training container's folders, not on a mount, where Ray writes as much as its object store: the store's own
    files with `--plasma-directory`, and its spilling (ray_spill_dirs)."""
    folders = [folder for folder in [_plasma_dir(launch)] + ray_spill_dirs(launch) if folder]
    return [folder for folder in dict.fromkeys(folders) if not _mounted(launch, folder)]


def data_root_terms(checked):
    """[(what, bytes)] that this host needs under Docker's data root: the image to pull (when it must be pulled and its size
    is known), and Ray's room in the container (when the host's memory was read, or the store's size given): its object
    store when /dev/shm is smaller (or in `--plasma-directory`, unless that is a mount), and, unless the folders Ray spills
    to are mounts (ray_spill_dirs), the store's size again for spilling and the 5 % of the disk Ray keeps free."""
    launch, docker, facts = checked.get("launch") or {}, checked.get("docker") or {}, checked.get("facts") or {}
    terms = []
    pull = _pull(checked)
    if pull is not None:
        terms.append(("the image %s to pull (%.1f GiB on %s)" % (pull[0], pull[1] / GIB, pull[2]), pull[1]))
    shm_free = (facts.get("shm") or {}).get("free_kb")
    store = ray_store_bytes(launch, (facts.get("memory") or {}).get("available_kb"), shm_free)
    if store is None or docker.get("root_free_bytes") is None:
        return terms
    plasma, on_root = _plasma_dir(launch), ray_data_root_folders(launch)
    if plasma:
        if plasma in on_root:
            terms.append(("Ray's object store in the container's %s (--plasma-directory)" % plasma, store))
    elif shm_free is not None and shm_free * 1024 < store:
        terms.append(("Ray's object store in the container's /tmp (/dev/shm has %.1f GiB free)" % (shm_free / 2 ** 20), store))
    spill = [folder for folder in ray_spill_dirs(launch) if folder in on_root]
    if not spill:
        return terms
    terms.append(("Ray's spilling to the container's %s, up to its object store (%s, %.1f GiB)" % (
        " and ".join(spill), "--object-store-memory" if _store_given(launch) is not None else "Ray's default from the memory available",
        store / GIB), store))
    size = docker.get("root_size_bytes")
    if size:
        terms.append(("the %d %% of the disk Ray keeps free" % round((1 - RAY_DISK_FULL) * 100), size * (1 - RAY_DISK_FULL)))
    return terms


def docker_root_tight(checked):
    """A warning, never a refusal: less room under Docker's data root than the image's pull with its margin, or than the
    image and Ray's room in the container's /tmp (data_root_terms)."""
    docker, launch = checked.get("docker") or {}, checked.get("launch") or {}
    free, terms = docker.get("root_free_bytes"), data_root_terms(checked)
    pull = _pull(checked)
    if free is None or not terms or (pull is not None and free < pull[1]):
        return ""  # nothing known, or docker_root_short refuses it
    need = sum(size for _what, size in terms)
    if pull is not None and pull[1] <= free < pull[1] * PULL_MARGIN:
        return ("Docker's data root %s has %.1f GiB free for the pull of %s (%.1f GiB on %s): a layer's download is held while "
                "it is extracted, so the pull may run out of space."
                % (docker.get("root_dir") or "", free / GIB, pull[0], pull[1] / GIB, pull[2]))
    ray_terms = terms[1:] if pull is not None else terms
    if not ray_terms or free >= need:
        return ""
    folders = ray_data_root_folders(launch) or [ray_temp_dir(launch)]
    elsewhere = [folder for folder in folders if folder != "/tmp" and not folder.startswith("/tmp/")]
    mounts = ["/data/ray_tmp%s:%s" % (index or "", folder) for index, folder in enumerate(folders)]
    return ("Docker's data root %s has %.1f GiB free, and it also holds the training container's %s, where Ray keeps its "
            "session files and spills objects: %s come to %.1f GiB. Past 95 %% of the disk Ray fails object creation "
            "(\"/tmp/ray/session_... is over 95%% full ... Object creation will fail if spilling is required\"). Mount a "
            "folder of a larger disk at the container's %s (verl_container_extra_volumes: %s), "
            "enlarge /dev/shm when Ray's store does not fit there, or free space under the data root." % (
                docker.get("root_dir") or "", free / GIB, " and ".join(["/tmp"] + elsewhere),
                ", ".join("%s %.1f GiB" % (what, size / GIB) for what, size in terms), need / GIB, " and ".join(folders),
                json.dumps(mounts)))


# --------------------------------------------------------------------------- the checkpoint folder (rules: _ckpts.py)

def _ckpts_read(checked):
    """node_facts' read of verl_ckpts_dir, when it read the folder the settings check gave (else nothing is judged)."""
    ckpts = (checked.get("facts") or {}).get("ckpts") or {}
    launch = checked.get("launch") or {}
    return ckpts if ckpts.get("path") and ckpts.get("path") == launch.get("ckpts_dir") else {}


def ckpts_not_writable(checked):
    return _ckpts.not_writable(_ckpts_read(checked), checked.get("launch") or {}) if _ckpts_read(checked) else ""


def ckpts_not_shared(checked):
    """Judged once, on the head, over every node's read."""
    launch = checked.get("launch") or {}
    return _ckpts.not_shared(checked.get("ckpts_nodes") or {}, launch) if launch.get("is_head") and _ckpts_read(checked) else ""


def ckpts_storage(checked):
    """For the confirmation, on the head: which storage verl_ckpts_dir is on, on every node."""
    launch = checked.get("launch") or {}
    return _ckpts.storage_summary(checked.get("ckpts_nodes") or {}, launch) if launch.get("is_head") and _ckpts_read(checked) else ""


def ckpts_no_space(checked):
    ckpts = _ckpts_read(checked)
    # The model's one parameter count (its weight files, else config.json: the model read), as the memory rule's.
    return _ckpts.no_space(ckpts, checked.get("launch") or {}, _model_read(checked).get("parameters")) if ckpts else ""


def ckpts_resume_broken(checked):
    return _ckpts.resume_broken(_ckpts_read(checked), checked.get("launch") or {}) if _ckpts_read(checked) else ""


def ckpts_resume_layout_changed(checked):
    """On the head: the checkpoint verl would resume from, saved with another TP/PP/VPP/CP/EP, optimizer or model (_resume.py)."""
    resume = (checked.get("facts") or {}).get("resume") or {}
    return _resume.layout_changed(resume, checked.get("launch") or {}, _model_read(checked).get("facts"))


def ckpts_resume_world_changed(checked):
    return _resume.world_changed((checked.get("facts") or {}).get("resume") or {}, checked.get("launch") or {})


def ckpts_newer_than_tracked(checked):
    return _ckpts.newer_than_tracked(_ckpts_read(checked), checked.get("launch") or {}) if _ckpts_read(checked) else ""


# --------------------------------------------------------------------------- the data sets (rules: _parquet.py)

def datasets_not_verls(checked):
    """On the head: both parquet files in verl's shape, the training one with a batch's rows at least."""
    launch = checked.get("launch") or {}
    read = (checked.get("facts") or {}).get("parquet") or {}
    if not launch.get("is_head"):
        return ""
    prompt_key = value_of(launch.get("extra_overrides"), "data.prompt_key") or "prompt"
    # A file that is not there is paths_missing()'s problem, said once.
    absent = {check.get("path") for check in _paths_absent(checked)}
    problems = []
    for variable, key, rows in (("verl_train_file", "train_file", launch.get("train_batch_size") or 1), ("verl_test_file", "test_file", 1)):
        path = launch.get(key)
        if path and path in read and path not in absent:
            problems += _parquet.dataset_problems(variable, path, read[path], prompt_key, int(rows))
            # The values of its first rows, where verl's own reward functions score them (no custom one set).
            if not value_of(launch.get("extra_overrides"), _parquet.CUSTOM_REWARD) and not read[path].get("error"):
                problems += _parquet.values_problems(variable, path, read[path].get("sample") or {})
    return " ".join(fold_fixes(problems))


def fold_fixes(sentences):
    """Sentences ending in the same fix said once: ['A. Fix: F.', 'B. Fix: F.'] -> ['A. B. Fix: F.']. A sentence without
    a fix belongs to the next one's (as _parquet.dataset_problems() writes a file's problems: the fix after the last)."""
    groups, pending = {}, []
    for sentence in sentences:
        what, found, fix = sentence.partition(" Fix: ")
        pending.append(what)
        if found:
            groups.setdefault(fix, []).extend(pending)
            pending = []
    return [" ".join(whats) + " Fix: " + fix for fix, whats in groups.items()] + pending


# --------------------------------------------------------------------------- warnings

def devices_open_outside(checked):
    """Host processes (in no container) that hold this deploy's NPU devices open (npu-smi may not list them yet); a
    container's are containers_holding_the_npus()."""
    launch = checked.get("launch") or {}
    devices = set((launch.get("container") or {}).get("devices") or [])
    procs = [h for h in (checked.get("facts") or {}).get("device_holders") or []
             if h.get("device") in devices and not h.get("container_id")]
    if not procs:
        return ""
    text = "".join("%s is open in pid %s (%s, on the host); " % (h["device"], h["pid"], h.get("name") or "") for h in procs)
    return text + "the training may fail with dcmi error -8020. Fix: stop them, or choose other NPUs with verl_npu_devices."


# The command that installs a Python package for the system's Python, per package manager.
INSTALL = {"requests": "apt-get install -y python3-requests (Debian, Ubuntu), dnf install -y python3-requests (openEuler, "
                       "EulerOS, CentOS)"}


def node_python_lacks(checked):
    """The node's Python (the one Ansible runs the modules with) lacks a package the later stages' modules import."""
    python = (checked.get("facts") or {}).get("python") or {}
    missing = python.get("missing") or []
    if not missing:
        return ""
    return ("the Python that runs the deploy's modules on this node (%s, %s) cannot import %s, which community.docker's "
            "modules (docker_container, docker_container_info, docker_container_copy_into) need: the container stage would fail "
            "with \"Failed to import the required Python library (%s)\". Fix: install it for that Python: %s, or %s -m pip "
            "install %s; or point ansible_python_interpreter for this node at a Python that has it."
            % (python.get("executable") or "?", python.get("version") or "?", ", ".join(missing), missing[0],
               "; ".join(INSTALL.get(name, "") for name in missing if INSTALL.get(name)) or "your package manager",
               python.get("executable") or "python3", " ".join(missing)))


def small_shm(checked):
    shm = (checked.get("facts") or {}).get("shm") or {}
    size = shm.get("size_kb")
    if size is None or size >= 1048576:
        return ""
    return ("/dev/shm has only %d MiB; Ray's object store may fall back to /tmp or fail with a bus error. Fix: enlarge /dev/shm "
            "(mount -o remount,size=64G /dev/shm)." % (size // 1024))


# --------------------------------------------------------------------------- the model and the memory (issue 19)

def _model_read(checked):
    return (checked.get("facts") or {}).get("model") or {}


def model_unusable(checked):
    """config.json unreadable, shards missing or truncated, the tokenizer incomplete (node_facts' model read)."""
    return " ".join(_model_read(checked).get("problems") or [])


def model_not_the_heads(checked):
    """On a worker: its copy of verl_model_path against the head's ('model_head': the head's node_facts model read)."""
    launch = checked.get("launch") or {}
    head = checked.get("model_head") or {}
    if launch.get("is_head") or not head:
        return ""
    return _model.not_the_heads(_model_read(checked), head, checked.get("host") or "this node", checked.get("head_host") or "the head",
                                _model_read(checked).get("path") or launch.get("model_path") or "")


def hbm_bytes(npu):
    """The smallest HBM of this host's NPUs as npu-smi reports it (bytes), or None (no HBM column: 310, 310P)."""
    sizes = [chip.get("hbm_total_mb") for card in (npu or {}).get("npus") or [] for chip in card.get("chips") or []]
    sizes = [size for size in sizes if size]
    return min(sizes) * 1024 * 1024 if sizes and not (npu or {}).get("failed") else None


def memory_case(checked):
    """The inputs of _memory_fit.verdict for this host, or None when the model or the HBM is not known."""
    launch, read = checked.get("launch") or {}, _model_read(checked)
    facts, hbm = read.get("facts"), hbm_bytes(checked.get("npu"))
    if not facts or not hbm or not launch.get("train_tp"):
        return None
    budget = launch["max_prompt_length"] + launch["max_response_length"]
    overrides = launch.get("extra_overrides") or []
    enabled = (launch.get("features") or {}).get("enabled") or {}
    shape = {"num_layers": facts["num_layers"], "num_attention_heads": facts["num_attention_heads"],
             "num_kv_heads": facts["num_kv_heads"], "vocab_size": facts.get("vocab_size"), "npu_per_node": launch["npu_per_node"],
             "world_size": launch["world_size"], "vpp": enabled.get("vpp", False), "extra_overrides": overrides}
    megatron = "actor_rollout_ref.actor.megatron."
    return {"facts": facts, "parameters": read["parameters"], "expert_parameters": read.get("expert_parameters") or 0,
            "ep": whole_value_of(overrides, megatron + "expert_model_parallel_size", 1),
            "etp": whole_value_of(overrides, megatron + "expert_tensor_parallel_size", None), "hbm_bytes": hbm, "train_tp": launch["train_tp"],
            "train_pp": launch["train_pp"], "gen_tp": launch["gen_tp"], "world_size": launch["world_size"],
            "algorithm": launch.get("algorithm", _algorithms.DEFAULT), "gpu_memory_utilization": float(launch["gpu_memory_utilization"]),
            "max_prompt_length": launch["max_prompt_length"], "max_response_length": launch["max_response_length"],
            "max_num_batched_tokens": whole_value_of(overrides, "actor_rollout_ref.rollout.max_num_batched_tokens", budget),
            "max_num_seqs": verl_values(overrides, _versions.defaults((launch.get("verl_profile") or {}).get("profile")
                                                                      or _versions.DEFAULT_PROFILE))["actor_rollout_ref.rollout.max_num_seqs"],
            "train_batch_size": launch["train_batch_size"], "n_resp_per_prompt": launch["n_resp_per_prompt"],
            "offload": enabled.get("offload", False), "swap_optimizer": enabled.get("swap_optimizer", False),
            "layouts": valid_tp_pp(shape), "shape": shape, "extra_overrides": overrides,
            "expert_sizes": expert_sizes(dict(shape, train_tp=launch["train_tp"], train_pp=launch["train_pp"], extra_overrides=overrides,
                                              num_experts=facts.get("num_experts")))}


def memory_does_not_fit(checked):
    case = memory_case(checked)
    return " ".join(memory_fit.verdict(case)[0]) if case else ""


def memory_tight(checked):
    case = memory_case(checked)
    return " ".join(memory_fit.verdict(case)[1]) if case else ""


def _driver_fit(checked):
    """The host's driver and firmware (node_facts' ascend) against the CANN of verl_image (_versions.driver_fit)."""
    return _versions.driver_fit((checked.get("facts") or {}).get("ascend"), (checked.get("launch") or {}).get("image"),
                                checked.get("host") or "this node")


def driver_older_than_cann(checked):
    return _driver_fit(checked)[0]


def driver_behind_cann(checked):
    return _driver_fit(checked)[1]


PROBLEMS = (npu_smi_failed, npus_missing_unhealthy_or_held, docker_unanswered, containers_holding_the_npus, paths_missing,
            host_paths_resolve_to_system_folders, npu_smi_not_a_file,
            no_route_to_the_head, socket_ifname_unknown, ray_ports_taken, hccl_ports_taken, npu_network_down,
            npu_address_not_hccn_conf, npu_tls_mixed,
            ckpts_not_writable, ckpts_not_shared, ckpts_no_space, ckpts_resume_broken, ckpts_resume_layout_changed, datasets_not_verls,
            model_unusable, model_not_the_heads, memory_does_not_fit, node_python_lacks, host_memory_short, docker_root_short,
            driver_older_than_cann)
WARNINGS = (devices_open_outside, idle_privileged_containers, small_shm, ckpts_newer_than_tracked, ckpts_resume_world_changed,
            memory_tight, host_memory_tight, docker_root_tight, driver_behind_cann)


def in_use_by_training(checked):
    """{'devices': [...], 'pids': [...]} that the deploy's own training container holds (for the reports)."""
    own = [holder for holder in npu_holders(checked) if holder["owner"] == "training"]
    return {"devices": sorted({holder["device"] for holder in own}), "pids": sorted({holder["pid"] for holder in own})}


def report(checked):
    """{'problems': [sentence, ...], 'warnings': [...], 'brief' and 'brief_warnings': the terminal's lines of them (brief()),
    'training_npus': in_use_by_training(), 'ckpts_storage': which storage verl_ckpts_dir is on (_ckpts.storage_summary(),
    on the head; '' elsewhere)} of one host.

    checked: {'launch': the launch configuration, 'npu': node_facts' npu (npu_info's result, processes with
    container_id), 'docker': node_facts' docker, 'container': container_info() of the training container,
    'facts': the rest of node_facts, 'paths': {'checks': [{variable, path, kind}], 'state': {path: path_state()}},
    'route': the route to the head ({ok, msg, src}), 'ckpts_nodes': {host: node_facts' ckpts} of every node of the run,
    'hccn_nodes': {host: node_facts' hccn}, 'npu_devices_nodes': {host: its verl_npu_devices} and 'images_nodes': {host: its
    Docker images} of every node of the run,
    'host' and 'head_host': this host's and the head's inventory names, 'model_head': the head's node_facts model read}.
    """
    problems = [text for text in (rule(checked) for rule in PROBLEMS) if text]
    warnings = [text for text in (rule(checked) for rule in WARNINGS) if text]
    return {"problems": problems, "warnings": warnings,
            # At the terminal: each in at most two lines (the whole text goes to the log file).
            "brief": [line for text in problems for line in brief(text, "- ")],
            "brief_warnings": [line for text in warnings for line in brief(text, "- ")],
            "training_npus": in_use_by_training(checked), "ckpts_storage": ckpts_storage(checked)}
