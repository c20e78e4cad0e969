# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Run by the Ray stage in the training containers (docker exec, the image's python3), once Ray is up and before the
training starts:
  timeout -k 5 120 python3 -c "$(cat reach.py)" listen SECONDS COUNT                   (on verl's rank-0 node)
  timeout -k 5 120 python3 -c "$(cat reach.py)" connect SECONDS NAME=ADDRESS:PORT ... [marker=PATH]  (on every node)
  timeout -k 5 30 python3 -c "$(cat reach.py)" mark PATH                             (on the head, first)
Nodes that joined Ray can still be unable to reach each other's other ports: verl's worker groups rendezvous
(torch.distributed's TCPStore, MASTER_ADDR:MASTER_PORT) on a port its rank-0 node picks among the free ones (the first
node by address as text, not always the head), and a firewall or security group that opens only Ray's port lets Ray
form and the training hang for 30 minutes
("TCP client failed to connect/validate to host ...:37991 ... The client socket has timed out").
listen: a listener on a free port as verl picks one (bind to port 0: the kernel's ephemeral range), kept in the
  background for SECONDS or COUNT connections; answers port (N) and range (LOW-HIGH,
  /proc/sys/net/ipv4/ip_local_port_range), then returns.
connect: one bounded TCP connect per NAME=ADDRESS:PORT; answers NAME: "ADDRESS:PORT ok", or "ADDRESS:PORT" and why not;
  and with marker=PATH whether this node's container sees the file the head marked: marker: "PATH seen" or "PATH missing".
mark: the head writes PATH (a file of this run's in verl_ckpts_dir), so that every node proves it reads the head's
  storage there: a storage that only looks the same (two NFS servers exporting one path, a bind mount of another folder)
  passes the pre-check's identity rules, and the training's checkpoint is then split across storages.
The answer is one JSON document on stdout, {"said": [...], "answer": {...}}. Exit code 0 for both modes whatever the result
(the deploy judges the answer); 2 for a wrong call."""
import json
import os
import socket
import sys
import time


def listen(seconds, count):
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("", 0))
    server.listen(64)
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as handle:
            low, high = handle.read().split()[:2]
    except (OSError, ValueError):
        low, high = "?", "?"
    if os.fork():
        answer({"port": str(server.getsockname()[1]), "range": "%s-%s" % (low, high)})
        os._exit(0)
    # The listener: its own session, no terminal or pipe of docker exec's, gone after SECONDS or COUNT connections.
    os.setsid()
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    deadline = time.monotonic() + seconds
    accepted = 0
    while accepted < count:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        server.settimeout(left)
        try:
            connection, _peer = server.accept()
        except OSError:  # the deadline (socket.timeout), or the socket gone
            break
        connection.close()
        accepted += 1
    os._exit(0)


def answer(found, said=()):
    sys.stdout.write(json.dumps({"said": list(said), "answer": found}, sort_keys=True) + "\n")
    sys.stdout.flush()


def mark(path):
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as handle:
            handle.write(os.path.basename(path) + "\n")
    except OSError as exc:
        answer({}, ["cannot write %s: %s" % (path, exc.strerror or exc)])
        sys.exit(1)
    answer({"marker": path})


def connect(seconds, targets):
    found = {}
    for target in targets:
        if target.startswith("marker="):
            path = target.partition("=")[2]
            found["marker"] = "%s %s" % (path, "seen" if os.path.isfile(path) else "missing")
            continue
        name, _eq, address = target.partition("=")
        host, _colon, port = address.rpartition(":")
        try:
            with socket.create_connection((host, int(port)), timeout=seconds):
                result = "ok"
        except socket.timeout:
            result = "timed out after %g s (no answer: packets dropped on the way)" % seconds
        except OSError as exc:  # refused, no route, unknown host
            result = "failed: %s" % (exc.strerror or exc)
        found[name] = "%s %s" % (address, result)
    answer(found)


if len(sys.argv) == 4 and sys.argv[1] == "listen":
    listen(float(sys.argv[2]), int(sys.argv[3]))
elif len(sys.argv) >= 4 and sys.argv[1] == "connect" and all(
        ":" in target or target.startswith("marker=/") for target in sys.argv[3:]):
    connect(float(sys.argv[2]), sys.argv[3:])
elif len(sys.argv) == 3 and sys.argv[1] == "mark" and sys.argv[2].startswith("/"):
    mark(sys.argv[2])
else:
    answer({}, ["usage: reach listen SECONDS COUNT | reach connect SECONDS NAME=ADDRESS:PORT ... [marker=PATH] | reach mark PATH"])
    sys.exit(2)
