# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: ray_skew
short_description: Why a worker's container cannot join the head's Ray, its Ray or Python not being the head's
version_added: 0.2.0
description:
  - Ray joins a node only when its Ray version and its Python's version (X.Y.Z) are the head's; the container stage compares
    what each container's check found (C(verl.deploy.image_stack)'s C(ray)) with the head's, before any Ray starts.
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  _input:
    description: This container's C(ray) (C(version), C(python)).
    type: dict
    required: true
  head:
    description: The head's container's C(ray); none when it is not known.
    type: dict
    required: true
  head_host:
    description: The head's inventory name, for the sentence.
    type: str
    default: ""
"""

EXAMPLES = r"""
- name: Stop if this container's Ray is not the head's
  ansible.builtin.assert:
    that: not (__container_stack.ray | verl.deploy.ray_skew(hostvars[head].__container_stack.ray, head))
"""

RETURN = r"""
_value:
  description: The refusal with Ray's own error and the fix; empty when both are the same or either is not known.
  type: str
"""


def ray_skew(mine, head, head_host=""):
    from ansible_collections.verl.deploy.plugins.module_utils._versions import ray_skew as skew
    return skew(mine if isinstance(mine, dict) else {}, head if isinstance(head, dict) else {}, head_host) or ""


class FilterModule:
    def filters(self):
        return {"ray_skew": ray_skew}
