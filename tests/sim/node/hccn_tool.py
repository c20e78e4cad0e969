"""Fake `hccn_tool` of the simulated Ascend nodes (tests/sim): the NPUs' own network, healthy unless a test says not.

tests/sim/simcluster.py installs this file, with a `#!/usr/bin/python3` line put in front, as
/usr/local/Ascend/driver/tools/hccn_tool in the node image (where the Ascend driver puts it; Ascend containers
mount the driver folder, so they see it too). Stdlib only.

What the real one does (Huawei's "HCCN Tool" interface reference; the answers users paste): `hccn_tool -i <device>
-link -g` prints `link status: UP` (or DOWN), `-net_health -g` prints `net health status: Success` (or the failure:
Socket fail, Receive timeout, Unreachable, Detect ip set fail, Fault, Init), `-ip -g` prints `ipaddr:...` and
`netmask:...` (capture 023), `-tls -g` prints `dev_id:N, tls switch[0](0:disable, 1:enable), tls alarm time
threshold[60]days` and then the device's certificates (CANN's HCCL troubleshooting guide, "TLS configuration
inconsistent (EI0016)"; switch[1] is on). Here:
  - the device must be one of this node's /dev/davinciN; else a message and exit 1 (the wording is this stand-in's);
  - a test sets a device's state in /etc/sim-npu-smi/hccn, lines "DEVICE link DOWN", "DEVICE health Receive timeout",
    "DEVICE ip 29.1.9.9" (the address it answers, for one that disagrees with /etc/hccn.conf) or "DEVICE tls 1" (on);
  - addresses are 29.1.<node>.<device>/16, as capture 023's shape; TLS is off (what vllm-ascend's and verl's multi-node
    guides ask for) unless a test switches it on.
"""
from __future__ import annotations

import os
import re
import socket
import sys

STATE = os.environ.get("SIM_HCCN_STATE", "/etc/sim-npu-smi/hccn")
DEV = os.environ.get("SIM_DEV_DIR", "/dev")


def _state():
    found = {}
    try:
        with open(STATE) as handle:
            for line in handle:
                fields = line.split(None, 2)
                if len(fields) == 3 and fields[0].isdigit() and fields[1] in ("link", "health", "ip", "tls"):
                    found[(int(fields[0]), fields[1])] = fields[2].strip()
    except OSError:
        pass
    return found


def main(argv):
    if len(argv) != 4 or argv[0] != "-i" or not argv[1].isdigit() or argv[3] != "-g" or argv[2] not in ("-link", "-net_health", "-ip", "-tls"):
        sys.stderr.write("hccn_tool (simulated by verl-sim): this stand-in answers `hccn_tool -i <device> -link|-net_health|-ip|-tls -g`\n")
        return 2
    device = int(argv[1])
    if not os.path.exists(os.path.join(DEV, "davinci%d" % device)):
        print("device %d is not an NPU of this host (verl-sim: no /dev/davinci%d)" % (device, device))
        return 1
    state = _state()
    if argv[2] == "-link":
        print("link status: %s" % state.get((device, "link"), "UP"))
    elif argv[2] == "-net_health":
        print("net health status: %s" % state.get((device, "health"), "Success"))
    elif argv[2] == "-tls":
        print("dev_id:%d, tls switch[%s](0:disable, 1:enable), tls alarm time threshold[60]days" % (device, state.get((device, "tls"), "0")))
        print("dev_id:%d, [pub cert] info:\n         issuer[/C=CN/ST=GD/O=HUAWEI/OU=2012/CN=2_1thCA]" % device)
    else:
        node = re.sub(r"\D", "", socket.gethostname())[-2:] or "0"
        print("ipaddr:%s\nnetmask:255.255.0.0" % state.get((device, "ip"), "29.1.%d.%d" % (int(node), device)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
