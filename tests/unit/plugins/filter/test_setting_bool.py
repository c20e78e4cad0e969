# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The setting_bool filter: a boolean setting read in a task exactly as the settings check reads it."""
from __future__ import annotations

import pytest

from ansible_collections.verl.deploy.plugins.filter.setting_bool import FilterModule, setting_bool
from ansible_collections.verl.deploy.plugins.module_utils import _inputs as inputs

SPELLINGS = [True, False, 1, 0, "true", "False", " yes ", "NO", "on", "off", "1", "0", " true "]


@pytest.mark.parametrize("value", SPELLINGS)
def test_agrees_with_the_settings_check(value):
    errors = inputs.Errors()
    assert setting_bool(value) is inputs.to_bool("verl_confirm", value, errors)
    assert not errors


@pytest.mark.parametrize("value", ["maybe", "", None, 2, "truee", ["true"]])
def test_what_the_check_refuses_reads_as_false(value):
    # The settings check stops the deploy on these before any task reads them; false is the safe side
    # (verl_confirm false asks for the confirmation).
    assert setting_bool(value) is False


def test_ansible_bool_would_disagree_on_a_survey_answer_with_spaces(render):
    # ansible's own bool reads a survey answer with spaces as false: why the collection has its own reading.
    assert render(["' true ' | verl.deploy.setting_bool", "' true ' | bool"]) == [True, False]


def test_registered_as_a_filter():
    assert FilterModule().filters() == {"setting_bool": setting_bool}
