# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The said filter: a step's sentences for people, never its KEY=VALUE answer."""
from __future__ import annotations

import pytest

from ansible_collections.verl.deploy.plugins.filter.said import FilterModule


@pytest.mark.parametrize("stdout, expected", [
    # What verl_control.sh ray prints on a head that waited for another deploy's lock, then started Ray.
    ("lock: taken after waiting 4 s for another deploy.\nray: started\nchanged=true\nstate=started\nlock=waited\n"
     "members=10.0.0.1=8\ncomplete=false\n",
     ["lock: taken after waiting 4 s for another deploy.", "ray: started"]),
    # A sentence holding "=" is a sentence (its part before "=" is not a name), as answer does not read it.
    ("ray: nodes alive with their NPUs: 10.0.0.1=8\nchanged=true\n", ["ray: nodes alive with their NPUs: 10.0.0.1=8"]),
    # Empty lines say nothing; an answer without sentences says nothing.
    ("\nray: stopped\n\nchanged=true\n", ["ray: stopped"]), ("changed=false\nstate=not-running\n", []),
    ("", []), (None, []),
])
def test_said_is_what_the_answer_is_not(stdout, expected):
    assert FilterModule().filters()["said"](stdout) == expected


def test_said_and_the_step_changed_split_every_line(render):
    # As a playbook calls them: every non-empty line is either a sentence or a key of the answer.
    stdout = "lock: taken over from c9 (since 2026-01-01 00:00:00): that deploy is gone.\nray: started\nchanged=true\nlock=taken-over\n"
    said, changed = render(["out | verl.deploy.said", "{'rc': 0, 'stdout': out} | verl.deploy.step_changed"], out=stdout)
    assert said == stdout.splitlines()[:2] and changed is True
