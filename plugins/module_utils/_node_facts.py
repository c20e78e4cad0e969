# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) verl-deploy maintainers

# This module_utils is PRIVATE and should only be used by this collection. Breaking changes can occur any time.

"""What verl.deploy.node_facts reads on a host, as pure functions over text and plain data.

The module (plugins/modules/node_facts.py) only runs the reads -- `ip`, /proc, the Docker socket, os.walk --
and hands their raw output to these functions, so every rule here is unit-tested with pasted outputs.
No Ansible imports.
"""

from __future__ import annotations

import fnmatch
import hashlib
import ipaddress
import json
import os
import re
import stat

__all__ = (
    'parse_ip_addr', 'parse_ip_routes', 'parse_route_get', 'route_to', 'default_ipv4',
    'read_text', 'container_of', 'annotate_processes', 'still_listed', 'device_holders', 'summarize_containers', 'container_info',
    'image_present', 'npu_containers', 'holding_containers', 'find_paths', 'path_state', 'parse_hccn_value',
    'listening_sockets', 'port_holders', 'parse_hccn_ip', 'parse_hccn_tls', 'parse_hccn_conf', 'meminfo',
)

_CONTAINER_ID = re.compile(r'(?:docker[-/]|/docker/|containerd[-/]|libpod-)([0-9a-f]{64})')
_DAVINCI = re.compile(r'^/dev/davinci\d+$')


def parse_ip_addr(text):
    """`ip -4 -o addr show` -> {ifname: [{'address': '10.0.0.2', 'prefixlen': 24}]}."""
    result = {}
    for line in text.splitlines():
        fields = line.split()
        if 'inet' not in fields or len(fields) < 4:
            continue
        ifname = fields[1].rstrip(':').split('@')[0]
        address, _sep, prefix = fields[fields.index('inet') + 1].partition('/')
        result.setdefault(ifname, []).append({'address': address, 'prefixlen': int(prefix or 32)})
    return result


def _words(fields, key):
    return fields[fields.index(key) + 1] if key in fields[:-1] else None


def parse_ip_routes(text):
    """`ip -4 -o route show` (the main table) -> [{'dest': '10.0.0.0/24', 'via', 'dev', 'src', 'metric', 'type'}]."""
    routes = []
    for line in text.splitlines():
        fields = line.split()
        if not fields:
            continue
        kind = 'unicast'
        if fields[0] in ('unicast', 'local', 'broadcast', 'unreachable', 'blackhole', 'prohibit', 'throw', 'multicast'):
            kind = fields.pop(0)
        if not fields:
            continue
        dest = '0.0.0.0/0' if fields[0] == 'default' else fields[0]
        try:
            network = ipaddress.ip_network(dest, strict=False)
        except ValueError:
            continue
        metric = _words(fields, 'metric')
        routes.append({'dest': str(network), 'via': _words(fields, 'via'), 'dev': _words(fields, 'dev'), 'src': _words(fields, 'src'),
                       'metric': int(metric) if metric and metric.isdigit() else 0, 'type': kind})
    return routes


def parse_route_get(text):
    """`ip -4 -o route get ADDR` -> {'dev', 'src', 'via', 'local'} (None values when absent)."""
    fields = text.split()
    return {'dev': _words(fields, 'dev'), 'src': _words(fields, 'src'), 'via': _words(fields, 'via'),
            'local': bool(fields) and fields[0] == 'local'}


def _ipv4(text):
    try:
        return ipaddress.IPv4Address(str(text).strip())
    except ValueError:
        return None


def route_to(target, routes, addresses):
    """The route the kernel's main table gives to an IPv4 address, computed from the table.

    target: an IPv4 address (a host name gives ok=None: it must be resolved on the host);
    routes: parse_ip_routes(); addresses: parse_ip_addr(). Returns {'target', 'ok', 'dev', 'src', 'via', 'how'}:
    ok is True with the outgoing interface and source address, False when no route matches, None when unknown.
    An address of the host itself is reached over lo, from that address (as `ip route get` says).
    """
    result = {'target': target, 'ok': None, 'dev': None, 'src': None, 'via': None, 'how': 'table'}
    address = _ipv4(target)
    if address is None:
        return result
    for ifname, entries in sorted(addresses.items()):
        if any(entry['address'] == str(address) for entry in entries):
            result.update(ok=True, dev='lo', src=str(address))
            return result
    best = None
    for route in routes:
        network = ipaddress.ip_network(route['dest'])
        if address in network and (best is None or (network.prefixlen, -route['metric']) > best[0]):
            best = ((network.prefixlen, -route['metric']), route)
    if best is None or best[1]['type'] in ('unreachable', 'blackhole', 'prohibit'):
        result['ok'] = False
        return result
    route = best[1]
    src = route['src']
    if not src:
        own = addresses.get(route['dev']) or []
        # The kernel prefers an address of the outgoing interface in the next hop's subnet, else its first one.
        hop = _ipv4(route['via']) or address
        inside = [e['address'] for e in own if hop in ipaddress.ip_network('%s/%d' % (e['address'], e['prefixlen']), strict=False)]
        src = (inside or [e['address'] for e in own] or [None])[0]
    result.update(ok=True, dev=route['dev'], src=src, via=route['via'])
    return result


def default_ipv4(routes, addresses):
    """What Ansible's setup calls default_ipv4: the default route's interface, source address and gateway ({} without one)."""
    defaults = [r for r in routes if r['dest'] == '0.0.0.0/0' and r['type'] == 'unicast']
    if not defaults:
        return {}
    route = sorted(defaults, key=lambda r: r['metric'])[0]
    chosen = route_to('0.0.0.0', [route], addresses) if route['dev'] else {}
    return {'address': chosen.get('src'), 'interface': route['dev'], 'gateway': route['via']}


def listening_sockets(*tables):
    """{port: {socket inode, ...}} of the TCP sockets in LISTEN state in /proc/net/tcp and /proc/net/tcp6 texts (the inode
    is the tenth field; /proc/<pid>/fd/* of the process that holds the socket links to `socket:[<inode>]`)."""
    found = {}
    for text in tables:
        for line in (text or '').splitlines()[1:]:
            fields = line.split()
            if len(fields) > 9 and fields[3] == '0A' and ':' in fields[1]:
                found.setdefault(int(fields[1].rsplit(':', 1)[1], 16), set()).add(fields[9])
    return found


def port_holders(sockets, processes, ports=None):
    """{port: ['pid (comm)', ...]} of the listening ports (of `ports`, or all) whose socket a process has open.

    sockets: listening_sockets(); processes: [{'pid', 'name', 'fds': [link targets]}]. A port whose socket no process
    shown here holds (another user's, without root) is left out: its holder is unknown, not absent."""
    wanted = {port: inodes for port, inodes in sockets.items() if ports is None or port in ports}
    holders = {}
    for proc in processes:
        inodes = {fd[len('socket:['):-1] for fd in proc.get('fds') or [] if fd.startswith('socket:[')}
        for port, port_inodes in wanted.items():
            if inodes & port_inodes:
                text = '%s (%s)' % (proc['pid'], proc.get('name') or '?')
                if text not in holders.setdefault(port, []):
                    holders[port].append(text)
    return holders


def read_text(path):
    """A file's text, or None when it cannot be read (a /proc entry of a process that is gone or not visible)."""
    try:
        with open(path, encoding='utf-8', errors='replace') as handle:
            return handle.read()
    except OSError:
        return None


# Where the container stage's check keeps its own call, in verl_workdir (roles/container/files/npu_stack_check.sh writes it,
# node_facts runs it in the next deploy's read).
CHECK_RECORD = ".npu_stack_check.json"


def check_record(workdir):
    """The path of the container check's record in the container, for verl_workdir `workdir`."""
    return "%s/%s" % (str(workdir).rstrip("/"), CHECK_RECORD)


def call_digest(call):
    """The digest of a container check's call ({"argv": [...], "env": {...}}) as its record holds it and as the container
    stage renders it again: sha256 of its JSON with sorted keys, values as text (both sides agree whatever types a template
    gave them)."""
    text = {"argv": [str(arg) for arg in (call or {}).get("argv") or []],
            "env": {str(key): str(value) for key, value in ((call or {}).get("env") or {}).items()}}
    return hashlib.sha256(json.dumps(text, sort_keys=True, separators=(",", ":")).encode("utf-8")).hexdigest()


def container_of(cgroup, host_cgroup=''):
    """The container a process runs in, from the text of its /proc/<pid>/cgroup: the innermost 64-hex
    Docker/containerd/Podman id of its cgroup path, or None for a process of the host itself.

    host_cgroup is the text of /proc/1/cgroup: a host that itself runs in a container (a Kubernetes pod, a
    Docker-in-Docker node) has its own id in every path, and that id is not a container of this host.
    """
    ids = _CONTAINER_ID.findall(cgroup or '')
    if not ids:
        return None
    innermost = ids[-1]
    return None if innermost in set(_CONTAINER_ID.findall(host_cgroup or '')) else innermost


def annotate_processes(processes, read, host_cgroup=''):
    """npu-smi's process rows, each with what this host shows of its pid (npu-smi prints host pids):
    'seen' (the pid exists here), 'comm' (its name in /proc) and 'container_id' (container_of()).

    read(path) returns a file's text, or None when it cannot be read (the process is gone or not visible).
    """
    annotated = []
    for process in processes or []:
        pid = process.get('pid')
        cgroup = read('/proc/%s/cgroup' % pid) if isinstance(pid, int) else None
        comm = read('/proc/%s/comm' % pid) if cgroup is not None else None
        annotated.append(dict(process, seen=cgroup is not None, comm=(comm or '').strip(),
                              container_id=container_of(cgroup, host_cgroup) if cgroup is not None else None))
    return annotated


def still_listed(annotated, again):
    """annotate_processes() rows less those this host does not show whose pid a second npu-smi read no longer
    lists (they ended between the reads). A pid npu-smi keeps listing but the host does not show stays."""
    listed = {process.get('pid') for process in again or []}
    return [process for process in annotated if process.get('seen') or process.get('pid') in listed]


def device_holders(processes, host_cgroup=''):
    """Processes that hold /dev/davinciN open.

    processes: [{'pid': int, 'name': str, 'fds': [link targets], 'cgroup': text of /proc/<pid>/cgroup}].
    Returns [{'device', 'pid', 'name', 'container_id'}] sorted by device and pid; container_id is the
    container_of() the process (None for a process of the host).
    """
    holders = []
    for proc in processes:
        devices = sorted({fd for fd in proc.get('fds') or [] if _DAVINCI.match(fd)})
        if not devices:
            continue
        container = container_of(proc.get('cgroup'), host_cgroup)
        for device in devices:
            holders.append({'device': device, 'pid': proc['pid'], 'name': proc.get('name') or '', 'container_id': container})
    return sorted(holders, key=lambda h: (int(h['device'][len('/dev/davinci'):]), h['pid']))


def summarize_containers(listed, inspected):
    """Docker's GET /containers/json?all=1 plus the inspect of the running ones -> the containers' facts.

    Keeps the keys M(community.docker.docker_host_info) returns (Id, Names, Image, Status, State) and adds
    Labels and, for running containers, HostConfig.Devices/Privileged (what holds NPUs).
    """
    containers = []
    for item in listed:
        entry = {key: item.get(key) for key in ('Id', 'Names', 'Image', 'Status', 'State')}
        entry['Labels'] = item.get('Labels') or {}
        details = inspected.get(item.get('Id')) or {}
        host_config = details.get('HostConfig') or {}
        entry['HostConfig'] = {'Devices': host_config.get('Devices') or [], 'Privileged': bool(host_config.get('Privileged'))}
        containers.append(entry)
    return containers


def _names(entry):
    return [name.lstrip('/') for name in entry.get('Names') or []]


def container_info(containers, name):
    """The part of M(community.docker.docker_container_info)'s result the deploy reads, for one container name."""
    for entry in containers:
        if name in _names(entry):
            state = entry.get('State') or ''
            return {'exists': True, 'container': {
                'Id': entry.get('Id'), 'Name': '/' + name, 'Image': entry.get('Image'),
                'State': {'Status': state, 'Running': state in ('running', 'restarting', 'paused')},
                'Config': {'Labels': entry.get('Labels') or {}, 'Image': entry.get('Image')},
                'HostConfig': entry.get('HostConfig') or {},
            }}
    return {'exists': False, 'container': None}


def npu_containers(containers, devices, exclude='', holders=()):
    """Which running containers (other than exclude, the deploy's own) hold the given NPU device paths, and which
    privileged ones hold none: {'holding': [{'name', 'id', 'opened': [device], 'mapped': [device], 'privileged',
    'pids': ['pid (comm)']}], 'idle_privileged': [name]}.

    A container holds a device when one of its processes has it open (holders: device_holders(), read from
    /proc/<pid>/fd on the host, with the container of each pid) or the device is in its device list (--device). A
    privileged container sees every device but holds only what its processes open: a monitoring agent or exporter
    that opens no /dev/davinci* holds nothing (idle_privileged, a warning).
    """
    wanted = set(devices)
    found = {'holding': [], 'idle_privileged': []}
    for entry in containers:
        host_config = entry.get('HostConfig') or {}
        names = _names(entry)
        if entry.get('State') != 'running' or (exclude and exclude in names):
            continue
        name = (names or [entry.get('Id', '')[:12]])[0]
        own = [h for h in holders or () if h.get('container_id') and h.get('container_id') == entry.get('Id')]
        opened = sorted({h['device'] for h in own if h.get('device') in wanted}, key=_device_number)
        mapped = sorted({d.get('PathOnHost') for d in host_config.get('Devices') or []} & wanted, key=_device_number)
        if opened or mapped:
            pids = []
            for holder in own:
                text = '%s (%s)' % (holder.get('pid'), holder.get('name') or '?')
                if holder.get('device') in wanted and text not in pids:
                    pids.append(text)
            found['holding'].append({'name': name, 'id': entry.get('Id') or '', 'opened': opened, 'mapped': mapped,
                                     'privileged': bool(host_config.get('Privileged')), 'pids': pids})
        elif host_config.get('Privileged') and not any(_DAVINCI.match(h.get('device') or '') for h in own):
            found['idle_privileged'].append(name)
    return found


def _device_number(path):
    digits = re.sub(r'\D', '', str(path))
    return (int(digits) if digits else -1, str(path))


def holding_containers(containers, devices, exclude='', holders=()):
    """Names of the running containers (other than exclude) that hold any of the device paths (npu_containers())."""
    return [entry['name'] for entry in npu_containers(containers, devices, exclude, holders)['holding']]


def _normalize_image(ref):
    """docker.io/library/ubuntu -> ubuntu:latest; keeps a registry with a port; a digest stays as it is."""
    ref = ref.strip()
    if '@' in ref:
        return ref
    name, tag = ref, 'latest'
    last = ref.rsplit('/', 1)[-1]
    if ':' in last:
        name, tag = ref.rsplit(':', 1)
    for prefix in ('docker.io/library/', 'docker.io/', 'index.docker.io/library/', 'index.docker.io/'):
        if name.startswith(prefix):
            name = name[len(prefix):]
            break
    return '%s:%s' % (name, tag)


def image_present(images, ref):
    """Whether GET /images/json lists the image reference (by tag, or by digest)."""
    wanted = _normalize_image(ref)
    for image in images:
        tags = [_normalize_image(t) for t in image.get('RepoTags') or [] if t != '<none>:<none>']
        digests = image.get('RepoDigests') or []
        if wanted in tags or ref in digests or ref == image.get('Id'):
            return True
    return False


def find_paths(roots, patterns, file_type='any', depth=None, limit=20):
    """Paths under roots whose name matches a pattern (like M(ansible.builtin.find)), sorted, at most limit.

    file_type: 'directory', 'file' or 'any'; depth: how many levels below a root (None: no limit).
    Unreadable folders are skipped. Symbolic links are not followed.
    """
    found = []
    for root in roots:
        if not os.path.isdir(root):
            continue
        base = root.rstrip('/').count('/')
        for folder, dirs, files in os.walk(root, onerror=lambda _error: None):
            # The entries of a folder at level L are L + 1 levels below the root.
            level = folder.rstrip('/').count('/') - base
            candidates = []
            if file_type in ('directory', 'any'):
                candidates += dirs
            if file_type in ('file', 'any'):
                candidates += files
            found += [os.path.join(folder, name) for name in candidates if any(fnmatch.fnmatch(name, p) for p in patterns)]
            if depth is not None and level + 1 >= depth:
                dirs[:] = []
    return sorted(set(found))[:limit]


def path_state(path):
    """{'exists', 'isdir', 'isreg', 'real', 'kind'} of a path on this host; a symbolic link counts as what it points to (a
    dangling one does not exist). real: the path with every link and '..' resolved as this host's kernel would (of a
    path that does not exist yet, its existing part), the form the pre-check judges a mounted or written path on;
    kind: 'directory', 'file', 'socket', 'other' (a device, a FIFO) or 'missing'."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        kind = 'missing'
    else:
        kind = ('directory' if stat.S_ISDIR(mode) else 'file' if stat.S_ISREG(mode) else
                'socket' if stat.S_ISSOCK(mode) else 'other')
    return {'exists': kind != 'missing', 'isdir': kind == 'directory', 'isreg': kind == 'file', 'real': os.path.realpath(path),
            'kind': kind}


def parse_hccn_value(text, key):
    """The value of `key: value` in hccn_tool's answer ('link status' -> 'UP', 'net health status' -> 'Success'),
    or None when it printed no such line (an error, a device it does not know)."""
    for line in (text or '').splitlines():
        name, sep, value = line.partition(':')
        if sep and name.strip().lower() == key:
            return value.strip() or None
    return None


def parse_hccn_ip(text):
    """`hccn_tool -i N -ip -g` -> {'address', 'netmask'} ('ipaddr:29.1.112.213', 'netmask:255.255.0.0' lines; None where absent)."""
    found = {'address': None, 'netmask': None}
    for line in (text or '').splitlines():
        name, sep, value = line.partition(':')
        key = {'ipaddr': 'address', 'netmask': 'netmask'}.get(name.strip().lower())
        if sep and key and value.strip():
            found[key] = value.strip()
    return found


_TLS_SWITCH = re.compile(r'tls switch\[(\d)\]')


def parse_hccn_tls(text):
    """`hccn_tool -i N -tls -g` -> 'enabled', 'disabled' or None from its first line, e.g.
    `dev_id:0, tls switch[0](0:disable, 1:enable), tls alarm time threshold[60]days` (CANN's HCCL troubleshooting,
    "TLS信息配置不一致 (EI0016)")."""
    match = _TLS_SWITCH.search(text or '')
    return None if match is None else ('enabled' if match.group(1) == '1' else 'disabled')


def parse_hccn_conf(text):
    """/etc/hccn.conf -> {device number as text: address} (as JSON carries it) from its `address_N=A.B.C.D` lines (`netmask_N=`, `netdetect_N=` ... are
    not compared)."""
    found = {}
    for line in (text or '').splitlines():
        name, sep, value = line.strip().partition('=')
        match = re.match(r'^address_(\d+)$', name.strip())
        if sep and match and value.strip():
            found[str(int(match.group(1)))] = value.strip()
    return found


# The Ascend HDK's own version files on a host (as the driver and firmware installers write them: `Version=24.1.rc3`,
# `package_version=24.1.rc3`, the firmware's `Version=7.5.0.1.129` with `package_version=24.1.rc3`, its HDK release).
DRIVER_VERSION_INFO = '/usr/local/Ascend/driver/version.info'
FIRMWARE_VERSION_INFO = '/usr/local/Ascend/firmware/version.info'


def _version_info(text):
    """A version.info's `key=value` lines -> {key: value}."""
    return {name.strip(): value.strip() for name, sep, value in (line.partition('=') for line in (text or '').splitlines())
            if sep and name.strip()}


def ascend_versions(driver_text, firmware_text):
    """{'driver': the driver's HDK version, 'firmware': the firmware's own version (7.x.y.z.w, as npu-smi's board view
    prints it), 'firmware_hdk': the HDK release of the firmware} from the two version.info files; None where a file or
    line is missing (a host without them, a container that does not mount them)."""
    driver, firmware = _version_info(driver_text), _version_info(firmware_text)
    return {'driver': driver.get('Version') or driver.get('package_version') or None,
            'firmware': firmware.get('Version') or None, 'firmware_hdk': firmware.get('package_version') or None}


def meminfo(text):
    """/proc/meminfo -> {'total_kb', 'available_kb'} (None where the line is missing: MemAvailable needs Linux 3.14)."""
    found = {'total_kb': None, 'available_kb': None}
    for line in (text or '').splitlines():
        name, _sep, value = line.partition(':')
        key = {'MemTotal': 'total_kb', 'MemAvailable': 'available_kb'}.get(name.strip())
        if key and value.split() and value.split()[0].isdigit():
            found[key] = int(value.split()[0])
    return found
