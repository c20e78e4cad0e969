# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""What remove.yml says for a node: the container removed, the folders it mounted read-write, its volumes and image kept."""
from __future__ import annotations

import pytest

from ansible_collections.verl.deploy.plugins.module_utils._removal import removal_report

MOUNTS = [{"Type": "bind", "Source": "/usr/local/Ascend/driver", "RW": False},
          {"Type": "bind", "Source": "/sim/ckpts", "RW": True}, {"Type": "bind", "Source": "/sim/logs", "RW": True},
          {"Type": "volume", "Name": "cache", "RW": True}]


@pytest.mark.parametrize("info, said", [
    ({"exists": False}, "node1: no container verl, nothing to remove; nothing on the host was touched."),
    ({"exists": True, "container": {"Mounts": MOUNTS, "Config": {"Image": "quay.io/ascend/verl:x"}}},
     "node1: container verl removed, with Ray and the training in it (stopped first); kept on the host: the folders it mounted "
     "(/sim/ckpts, /sim/logs: checkpoints, logs, datasets, model); its volumes (cache); the image quay.io/ascend/verl:x; "
     "the deploy's copy of the scripts in /var/lib/verl-deploy/verl."),
    ({"exists": True, "container": {}}, "node1: container verl removed, with Ray and the training in it (stopped first); "
     "kept on the host: the deploy's copy of the scripts in /var/lib/verl-deploy/verl."),
])
def test_removal_report(info, said):
    assert removal_report(info, "node1", "verl", "/var/lib/verl-deploy/") == said


def test_without_a_stage_folder_and_nothing_mounted_everything_outside_the_container_is_kept():
    assert removal_report({"exists": True}, "n", "verl").endswith("kept on the host: everything outside the container.")
