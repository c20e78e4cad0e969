# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Private to the verl.deploy collection: may change without notice.
"""Whether each worker's container reaches the head's ports, from what roles/ray/files/reach.sh printed.

Once Ray is up, each worker connects (bounded) from its container to the head's Ray port and to a port the head's
container listens on for the purpose, picked as verl picks its rendezvous port (any free one: torch.distributed's
TCPStore on MASTER_ADDR:MASTER_PORT). A Ray that formed proves only Ray's port; a firewall that drops the rest lets
the training hang at its rendezvous for 30 minutes (verl#2492: "TCP client failed to connect/validate to host
...:37991 ... The client socket has timed out"). No Ansible imports.
"""
from __future__ import annotations

from ansible_collections.verl.deploy.plugins.module_utils._training_state import parse_lines


def parse(stdout):
    """{name: (port, result)} of reach.sh connect's NAME=PORT RESULT lines (the scripts' one KEY=VALUE reading)."""
    found = {}
    for name, value in parse_lines(str(stdout or "")).items():
        port, _space, result = value.partition(" ")
        if port.isdigit() and result:
            found[name] = (int(port), result.strip())
    return found


def listened(stdout):
    """{'port': int or None, 'range': 'LOW-HIGH' or ''} of reach.sh listen's output."""
    values = parse_lines(str(stdout or ""))
    port = values.get("port", "")
    return {"port": int(port) if port.isdigit() else None, "range": values.get("range", "")}


def unreached(results, head, ephemeral=""):
    """One sentence per worker whose container did not reach a port of the head, naming node, port and fix.

    results: [{'host': worker, 'stdout': reach.sh connect's output, 'rc': its exit code}]; head: the head's address
    as the workers connect to it; ephemeral: the head's ephemeral port range (where verl's rendezvous port lies).
    """
    problems = []
    for result in results:
        host = result.get("host")
        found = parse(result.get("stdout"))
        if result.get("rc") not in (0, None) or not found:
            problems.append("%s: the check of the head's ports did not run in its container (rc %s: %s). Fix: check the "
                            "container (docker exec <container> python3 -V) and run deploy.yml again."
                            % (host, result.get("rc"), " ".join(str(result.get("stdout") or result.get("stderr") or "").split())[:200]))
            continue
        for name, (port, answer) in sorted(found.items()):
            if answer == "ok":
                continue
            what = ("Ray's port (verl_ray_port)" if name == "ray" else
                    "a free port the head listened on, as verl's rendezvous (torch.distributed's TCPStore, MASTER_PORT) "
                    "picks one%s" % (" from the range %s" % ephemeral if ephemeral else ""))
            problems.append("%s: from its container, %s:%d did not answer (%s; %s): %s. Fix: allow TCP from %s to %s on "
                            "Ray's port and the ephemeral ports%s (firewall, security group, or a container network other "
                            "than the host's), then run deploy.yml again; without it the training would wait 30 minutes "
                            "at its rendezvous." % (host, head, port, name, what, answer, host, head,
                                                    " %s" % ephemeral if ephemeral else ""))
    return problems
