# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The shown filter: a name or value as a message may print it (a host name cannot forge report lines)."""
from __future__ import annotations

import pytest

from ansible_collections.verl.deploy.plugins.filter.shown import FilterModule, shown


@pytest.mark.parametrize(("value", "expected"), [
    ("node-1.example", "node-1.example"),           # a plain short name as it is
    ("a\nb", "'a\\nb'"),                            # a new line cannot start a line of its own
    ("ok\x1b[2Jgone", "'ok\\x1b[2Jgone'"),          # no terminal escape reaches the screen
    ("abc\u202edcba", "'abcU+202Edcba'"),          # nor a right-to-left override
    ("x" * 61, "'" + "x" * 59 + "... (61 characters)"),  # long values cut, their length told
    (["a", "b"], "['a', 'b']"),
    (8, "8"),
])
def test_shown(value, expected):
    assert shown(value) == expected


def test_a_playbook_maps_host_names_through_it(render):
    hosts = ["head", "evil\nfatal: [worker]: FAILED"]
    assert render(["hosts | map('verl.deploy.shown') | join(', ')"], hosts=hosts) == \
        ["head, 'evil\\nfatal: [worker]: FAILED'"]


def test_registered_as_a_filter():
    assert FilterModule().filters() == {"shown": shown}
