"""Run module main() functions as they run on a target host.

Once any controller code is imported in the test process (other tests render templates with
Ansible's Templar), ansible-core flags the process as the controller and module warnings go to
the display instead of the module result. Modules never run that way, so undo it here.
"""
from __future__ import annotations

import pytest
from ansible.module_utils import _internal


@pytest.fixture(autouse=True)
def _run_as_target(monkeypatch):
    monkeypatch.setattr(_internal, "is_controller", False)
