# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The answer filter: the KEY=VALUE block a script's step ends with, never its sentences."""
from __future__ import annotations

import pytest

from ansible_collections.verl.deploy.plugins.filter.answer import FilterModule


@pytest.mark.parametrize("stdout, expected", [
    # What verl_control.sh ray prints on a head it leaves alone: the sentence is for people.
    ("ray: the head runs at 10.0.0.1:6379; left alone.\nchanged=false\nstate=in-cluster\nmembers=10.0.0.1=8,10.0.0.2=8\n"
     "complete=true\n",
     {"changed": "false", "state": "in-cluster", "members": "10.0.0.1=8,10.0.0.2=8", "complete": "true"}),
    # A sentence holding "=" is not a key (its part before "=" is not a name).
    ("ray: nodes alive with their NPUs: 10.0.0.1=8\nchanged=true\n", {"changed": "true"}),
    # The last value of a key wins (a step that said changed=false, then changed its mind, is not possible, but a
    # lock message before the block must not be read).
    ("lock: taken after waiting 4 s for another deploy.\nchanged=false\nchanged=true\n", {"changed": "true"}),
    ("", {}), (None, {}), ("members=\n", {"members": ""}),
])
def test_the_answer_is_the_key_value_block(stdout, expected):
    assert FilterModule().filters()["answer"](stdout) == expected
