# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Every Ray node the head's GCS lists as alive, with its NPUs: IP=NPUS,IP=NPUS (sorted), for verl_control.sh's members.

  python3 ray_members.py gcs|driver ADDRESS:PORT
gcs: Ray's GCS client, which answers in about a third of the time a driver (ray.init) takes; it is not a public API, so
where this Ray has none (or it fails) verl_control.sh asks again as a driver (driver: ray.init and ray.nodes())."""
import sys


def gcs(address):
    from ray._raylet import GcsClient  # pylint: disable=import-error,import-outside-toplevel
    from ray.core.generated import gcs_pb2  # pylint: disable=import-error,import-outside-toplevel

    nodes = GcsClient(address=address).get_all_node_info(timeout=10).values()
    return ("%s=%d" % (node.node_manager_address, dict(node.resources_total).get("NPU", 0)) for node in nodes
            if node.state == gcs_pb2.GcsNodeInfo.ALIVE)


def driver(address):
    import ray  # pylint: disable=import-error,import-outside-toplevel

    ray.init(address=address, logging_level="ERROR", log_to_driver=False)
    return ("%s=%d" % (node["NodeManagerAddress"], node["Resources"].get("NPU", 0)) for node in ray.nodes() if node["Alive"])


if __name__ == "__main__":
    print(",".join(sorted({"gcs": gcs, "driver": driver}[sys.argv[1]](sys.argv[2]))))
