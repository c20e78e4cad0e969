# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What remove.yml says for a node: the container removed, and what it kept (the folders it mounted, the image)."""
from __future__ import annotations


def removal_report(info, host, container, stage_dir=None):
    """One sentence from community.docker.docker_container_info's result, read before the container was removed.

    Kept: every folder the container mounted from the host read-write (the checkpoints, logs, datasets and model are
    such binds, never deleted), its named volumes, the image, and the deploy's copy of the scripts (stage_dir).
    """
    if not (info or {}).get("exists"):
        return "%s: no container %s, nothing to remove; nothing on the host was touched." % (host, container)
    details = info.get("container") or {}
    mounts = details.get("Mounts") or []
    folders = sorted({m.get("Source") for m in mounts if m.get("Type") == "bind" and m.get("RW") and m.get("Source")})
    volumes = sorted({m.get("Name") for m in mounts if m.get("Type") == "volume" and m.get("Name")})
    kept = []
    if folders:
        kept.append("the folders it mounted (%s: checkpoints, logs, datasets, model)" % ", ".join(folders))
    if volumes:
        kept.append("its volumes (%s)" % ", ".join(volumes))
    image = (details.get("Config") or {}).get("Image")
    if image:
        kept.append("the image %s" % image)
    if stage_dir:
        kept.append("the deploy's copy of the scripts in %s/%s" % (stage_dir.rstrip("/"), container))
    return "%s: container %s removed, with Ray and the training in it (stopped first); kept on the host: %s." % (
        host, container, "; ".join(kept) or "everything outside the container")
