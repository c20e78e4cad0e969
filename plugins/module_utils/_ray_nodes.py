# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The deployment's head, workers and nodes from the inventory's groups: the one definition of each.

The groups are ray_head and ray_workers (either may be missing or empty); a host in both is the head. The
stage-0 check (roles/verl/tasks/one_head.yml) makes sure there is exactly one head; these still answer without."""
from __future__ import annotations


def _group(groups, name):
    return list((groups or {}).get(name) or [])


def ray_head(groups):
    """The head's inventory name: the first of the group ray_head, or "" when there is none."""
    return next(iter(_group(groups, "ray_head")), "")


def ray_workers(groups):
    """The nodes that join the head: the group ray_workers in its order, each once, without the head."""
    head = ray_head(groups)
    return list(dict.fromkeys(name for name in _group(groups, "ray_workers") if name != head))


def ray_nodes(groups):
    """Every node of the deployment: the group ray_head, then the workers, each once."""
    return list(dict.fromkeys(_group(groups, "ray_head") + ray_workers(groups)))
