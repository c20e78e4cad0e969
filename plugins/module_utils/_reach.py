# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Private to the verl.deploy collection: may change without notice.
"""Whether each node's container reaches the head's Ray port and verl's rank-0 node, from what roles/ray/files/reach.py
answered (verl.deploy.node_step reads its document: answer, said).

Once Ray is up, verl's rank-0 node (rank0_node: not always the head) listens on a port picked as verl picks its
rendezvous port (any free one: torch.distributed's TCPStore on MASTER_ADDR:MASTER_PORT), and every node's container,
that one's included, connects to it (bounded); the workers also connect to the head's Ray port. A Ray that formed proves
only Ray's port; a firewall that drops the rest lets the training hang at its rendezvous for 30 minutes (verl#2492:
"TCP client failed to connect/validate to host ...:37991 ... The client socket has timed out"). No Ansible imports.
"""
from __future__ import annotations


def rank0_node(nodes):
    """(name, address) of the node verl makes rank 0 of its worker groups: the one whose address is MASTER_ADDR.

    verl 0.7.0, verl/single_controller/ray/base.py: sort_placement_group_by_node_ip (lines 67-84) sorts the placement
    groups, one per node, by their node's address as Ray knows it (ray.nodes()' NodeManagerAddress, which is the
    --node-ip-address the deploy gives: verl_node_ip, or the address towards the head) with sorted(key=ip), a sort of
    strings; RayWorkerGroup._init_with_resource_pool (lines 473-476) asks the first of them for the address and port
    (get_master_addr_port, lines 87-93: ray.util.get_node_ip_address() there, and a free port it binds). So 10.0.0.10
    comes before 10.0.0.5, and a head at 10.0.0.5 is not rank 0 beside a worker at 10.0.0.10.

    nodes: [(name, address)], the head first; a node whose address is unknown is left out. With no address known at all,
    the first node (the head) with no address.
    """
    known = [(str(address), index, name) for index, (name, address) in enumerate(nodes) if address]
    if not known:
        return (nodes[0][0], "") if nodes else ("", "")
    address, _index, name = min(known)
    return name, address


def parse(answer):
    """{name: (address, port, result)} of reach.py connect's answer, {NAME: "ADDRESS:PORT RESULT"}."""
    found = {}
    for name, value in (answer or {}).items():
        if name == "marker":  # the storage proof's, not a port's (storage_problems)
            continue
        target, _space, result = value.partition(" ")
        address, _colon, port = target.rpartition(":")
        if address and port.isdigit() and result:
            found[name] = (address, int(port), result.strip())
    return found


def listened(answer):
    """{'port': int or None, 'range': 'LOW-HIGH' or ''} of reach.py listen's answer."""
    values = answer or {}
    port = str(values.get("port", ""))
    return {"port": int(port) if port.isdigit() else None, "range": values.get("range", "")}


def unreached(results, rank0="", listener=None):
    """One sentence per node whose container did not reach a port, naming node, address, port and fix.

    results: [{'host': node, 'answer' and 'said': reach.py connect's, 'stderr', 'rc': its exit code}], every node's (rank 0's too);
    rank0: the name of verl's rank-0 node (rank0_node); listener: its listened() (the port and the ephemeral range
    where verl's rendezvous port lies), or None when nobody listened.
    """
    listener = listener or {}
    ephemeral = listener.get("range") or ""
    problems = []
    if rank0 and results and listener.get("port") is None:
        problems.append("%s: the listener for the rendezvous check did not start in its container (verl's rank-0 node, "
                        "where every node's workers meet). Fix: check the container (docker exec <container> python3 -V) "
                        "and run deploy.yml again." % rank0)
    for result in results:
        host = result.get("host")
        found = parse(result.get("answer"))
        if result.get("rc") not in (0, None) or not (found or (result.get("answer") or {}).get("marker")):
            said = " ".join(result.get("said") or []) or str(result.get("stderr") or "")
            problems.append("%s: the check of the head's and rank 0's ports did not run in its container (rc %s: %s). Fix: "
                            "check the container (docker exec <container> python3 -V) and run deploy.yml again."
                            % (host, result.get("rc"), " ".join(said.split())[:200]))
            continue
        for name, (address, port, answer) in sorted(found.items()):
            if answer == "ok":
                continue
            if name == "ray":
                what, ports = "the head's Ray port (verl_ray_port)", "Ray's ports"
            else:
                what = ("a free port %s listened on as verl's rendezvous (torch.distributed's TCPStore, MASTER_ADDR:MASTER_PORT) "
                        "picks one%s; %s is verl's rank 0, the first node by address as text"
                        % (rank0 or address, " from the range %s" % ephemeral if ephemeral else "", rank0 or address))
                ports = "the ephemeral ports%s" % (" %s" % ephemeral if ephemeral else "")
            problems.append("%s: from its container, %s:%d did not answer (%s; %s): %s. Fix: allow TCP from %s to %s on %s "
                            "(firewall, security group, or a container network other than the host's), then run deploy.yml "
                            "again; without it the training would wait 30 minutes at its rendezvous."
                            % (host, address, port, name, what, answer, host, address, ports))
    return problems


def storage_problems(results, marker):
    """One sentence per node whose container does not see the file the head wrote in verl_ckpts_dir (reach.py mark, then
    connect's marker=PATH), or one for the head when it could not write it. verl's workers on every node save their parts
    of a checkpoint into that folder and the head's resume reads them all: the pre-check's identity rules cannot tell two
    storages that look the same (two NFS servers exporting one path, another folder bind-mounted there), this proof can.

    results: as unreached's; marker: {'path', 'written' (bool), 'said'} of the head's mark, or None when no proof was made
    (one node, or no training to start)."""
    if not marker:
        return []
    path = marker.get("path") or "?"
    if not marker.get("written"):
        return ["the head could not write a marker in verl_ckpts_dir (%s): %s, so the nodes' checkpoint storage is not proven. "
                "Fix: make verl_ckpts_dir writable in the head's container (the deploy user's and the container's root), then "
                "run deploy.yml again." % (path, " ".join(str(marker.get("said") or "no answer").split())[:200])]
    folder = path.rsplit("/", 1)[0]
    problems = []
    for result in results:
        seen = str((result.get("answer") or {}).get("marker") or "")
        if seen.endswith(" missing"):
            problems.append("%s: verl_ckpts_dir %s is not the head's storage: the file the head wrote there (%s) is not seen "
                            "from this node's container, so a checkpoint would be saved in parts on different storages and not "
                            "resumed. Fix: mount the one shared storage at %s on every node (the same NFS export, Lustre or "
                            "GPFS file system or GlusterFS volume, not a local folder or another server's export of the same "
                            "path), then run deploy.yml again." % (result.get("host"), folder, path, folder))
    return problems
