"""The SwanLab key compared by value (plugins/module_utils/_secrets.py)."""
from __future__ import annotations

import base64
import json
import urllib.parse

import pytest

from ansible_collections.verl.deploy.plugins.module_utils import _secrets as secrets

KEY = "sk-TESTKEY/do+not=print 7f3a9c"
FORMS = secrets.key_forms(KEY)


@pytest.mark.parametrize("value", [
    KEY, "prefix-%s-suffix" % KEY, base64.b64encode(KEY.encode()).decode(), base64.urlsafe_b64encode(KEY.encode()).decode().rstrip("="),
    urllib.parse.quote(KEY, safe=""), urllib.parse.quote_plus(KEY), {"HCCL_X": KEY}, {KEY: "1"}, ["--x=" + KEY], [[{"a": KEY}]],
])
def test_the_key_is_found_in_any_of_its_forms(value):
    assert secrets.holds_key(value, FORMS)


@pytest.mark.parametrize("value", ["sk-TESTKEY", "", None, True, 42, ["x"], {"a": "b"}])
def test_other_values_do_not_hold_it(value):
    assert not secrets.holds_key(value, FORMS)


def test_a_too_short_key_is_not_looked_for():
    assert secrets.key_forms("abc") == () and secrets.key_forms(None) == ()


def test_problems_name_the_setting_never_the_value():
    problems = secrets.key_problems({"verl_experiment_name": KEY, "verl_lr": "1e-6", "verl_swanlab_api_key": KEY}, FORMS)
    assert [p["variable"] for p in problems] == ["verl_experiment_name"]
    assert KEY not in json.dumps(problems) and "Fix:" in problems[0]["msg"]


def test_redact_replaces_every_form_everywhere():
    text = json.dumps(secrets.redact({"msg": "a %s b %s" % (KEY, urllib.parse.quote(KEY, safe="")), "list": [KEY]}, FORMS))
    assert not any(form in text for form in FORMS)
