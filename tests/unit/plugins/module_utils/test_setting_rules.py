# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""Every setting has a rule: each setting of the table (roles/verl/meta/argument_specs.yml with setting_rules.yml) refuses
a value of the wrong type naming itself, and every verl_* variable a playbook or role reads is a setting of it. Then each
refusal added for issue 56 with its fix passing: a text setting given a YAML boolean or number, an NPU listed twice,
verl_status_fail_on, the folders written on the controller."""
from __future__ import annotations

import re

import pytest
import yaml

from ansible_collections.verl.deploy.plugins.module_utils import _launch_config as lc
from ansible_collections.verl.deploy.plugins.module_utils._inputs import Errors
from ansible_collections.verl.deploy.plugins.module_utils._training_state import FAIL_ON
from helpers.launch_helpers import REPO, RULES, SPEC, launch, launch_ok

MERGED = lc.table(SPEC, RULES)
# A value of the wrong type per type (a text setting's: a YAML boolean, as `verl_project_name: no` gives).
WRONG = {"int": "x", "float": "x", "bool": "maybe", "str": False, "list": 5, "dict": [1], "raw": "x"}


@pytest.mark.parametrize("name", [name for name in SPEC if not MERGED[name].get("secret")])
def test_every_setting_refuses_a_value_of_the_wrong_type_naming_itself(name):
    entry = MERGED[name]
    assert entry["type"] in WRONG, name
    assert entry["type"] != "raw" or entry.get("rule") in lc.RAW_RULES, "a raw setting needs a rule: %s" % name
    errors = Errors()
    values = lc.check_settings({name: WRONG[entry["type"]]}, {name: entry}, errors, {"mask": None})
    assert values[name] is None and errors and errors[0]["variable"] in (name, "mask"), (name, list(errors))


def test_every_default_passes_its_rule():
    errors = Errors()
    lc.check_settings({}, MERGED, errors, {"mask": None})
    assert sorted(e["variable"] for e in errors) == sorted(name for name, entry in MERGED.items() if entry.get("required"))


def _read_in_jinja(text):
    """The verl_* names a task file, vars file or template reads in its Jinja expressions and conditions."""
    expressions = re.findall(r"\{\{(.*?)\}\}|\{%(.*?)%\}", text, re.S) + re.findall(
        r"^\s*(?:when|that|failed_when|changed_when|loop):(.*)$", text, re.M)
    return {name for expression in expressions
            for name in re.findall(r"(?<![A-Za-z0-9_.'\"/-])(verl_[a-z0-9_]+)(?![A-Za-z0-9_'\"-])", "".join(expression))}


def test_every_setting_a_playbook_or_role_reads_is_in_the_table():
    """Those of compare, smoke, status, remove ... included; not settings: the playbooks' tags and the stats they return."""
    files = [path for pattern in ("playbooks/*.yml", "roles/*/tasks/*.yml", "roles/*/vars/*.yml", "roles/*/templates/*")
             for path in sorted(REPO.glob(pattern))]
    read = {name: path for path in files for name in _read_in_jinja(path.read_text())}
    tags = set(yaml.safe_load((REPO / "playbooks/deploy.yml").read_text())[0]["vars"]["_verl_preflight_tags"])
    stats = set(re.findall(r"^\s+(verl_[a-z_]+):\s", "".join(p.read_text() for p in files if "set_stats" in p.read_text()), re.M))
    assert len(read) > 20  # the others are read through the checked configuration (_verl_launch, _verl_identity)
    assert {name: str(path) for name, path in read.items() if name not in SPEC and name not in tags | stats} == {}


@pytest.mark.parametrize(("name", "given", "fixed"), [
    ("verl_project_name", False, "no"), ("verl_container_name", 123, "123"), ("verl_version", 0.8, "0.8.0"),
    ("verl_swanlab_host", True, ""), ("verl_experiment_name", 1e3, "1e3"), ("verl_output_dir", 0, "/tmp/out"),
])
def test_a_text_setting_given_a_yaml_boolean_or_number_is_refused_with_the_quoting_fix(name, given, fixed):
    errors = Errors()
    assert lc.check_settings({name: given}, {name: MERGED[name]}, errors, {"mask": None})[name] is None
    assert len(errors) == 1 and errors[0]["variable"] == name
    assert "is a YAML %s, not text" % ("boolean" if isinstance(given, bool) else "number") in errors[0]["msg"]
    assert 'Fix: quote the value in YAML, e.g. %s: "' % name in errors[0]["msg"]
    errors = Errors()
    assert lc.check_settings({name: fixed}, {name: MERGED[name]}, errors, {"mask": None})[name] == fixed and not errors


def test_a_text_setting_empty_in_yaml_is_empty_not_refused():
    assert launch_ok(verl_experiment_name=None)["experiment_name"].startswith("qwen3-8b-dapo-")


@pytest.mark.parametrize(("given", "twice", "fixed", "tp"), [("0,0,1,2,3", "0", "0,1,2,3", 4), ([3, 1, 3, 1, 0, 2], "1, 3", "0,1,2,3", 4),
                                                             ("0,1,2,3,4,5,6,7,7", "7", "0,1,2,3,4,5,6,7", 8)])
def test_an_npu_listed_twice_is_refused_naming_it_and_the_setting(given, twice, fixed, tp):
    """A regression: 0,0,1,2 became 3 NPUs and a TP x PP refusal that named neither the setting nor the duplicate."""
    config, errors, _warnings = launch(verl_npu_devices=given, verl_train_tp=tp, verl_train_pp=1)
    assert config is None and [e["variable"] for e in errors] == ["verl_npu_devices"], errors
    assert "lists NPU %s more than once" % twice in errors[0]["msg"] and "e.g. verl_npu_devices=%s." % fixed in errors[0]["msg"]
    assert launch_ok(verl_npu_devices=fixed, verl_train_tp=tp, verl_train_pp=1)["npu_devices"] == [int(d) for d in fixed.split(",")]


@pytest.mark.parametrize(("given", "used"), [(None, list(FAIL_ON)), ("crashed,stalled", ["crashed", "stalled"]),
                                             ("[]", []), ("", []), ([], []), (["orphaned", "orphaned"], ["orphaned"])])
def test_status_fail_on_takes_the_alarms_of_status(given, used):
    settings = {} if given is None else {"verl_status_fail_on": given}
    found, errors, _warnings = lc.identity(settings, SPEC, RULES)
    assert not errors and found["status_fail_on"] == used


@pytest.mark.parametrize("given", ["crashed,dead", ["crash"], [1]])
def test_status_fail_on_refuses_what_status_cannot_fail_on_and_its_fix_passes(given):
    _found, errors, _warnings = lc.identity({"verl_status_fail_on": given}, SPEC, RULES)
    assert [e["variable"] for e in errors] == ["verl_status_fail_on"], errors
    fixed, errors, _warnings = lc.identity({"verl_status_fail_on": "crashed,stalled"}, SPEC, RULES)
    assert not errors and fixed["status_fail_on"] == ["crashed", "stalled"]


@pytest.mark.parametrize("name", [name for name, entry in MERGED.items() if entry.get("use") == "controller"])
def test_a_folder_written_on_the_controller_is_refused_as_a_system_folder_also_through_a_link(name, tmp_path):
    assert {"verl_output_dir", "verl_logs_dir", "verl_compare_dir"} <= {n for n, e in MERGED.items() if e.get("use") == "controller"}
    for given in ("//etc", "/tmp", "/etc/verl"):
        config, errors, _warnings = launch(**{name: given})
        assert config is None and [e["variable"] for e in errors] == [name], (given, errors)
    link = tmp_path / "etc-link"
    link.symlink_to("/etc")
    config, errors, _warnings = launch(**{name: str(link)})
    assert config is None and "system folder" in errors[0]["msg"] and "e.g. %s=%s" % (name, MERGED[name]["default"]) in errors[0]["msg"]
    assert launch_ok(**{name: str(tmp_path / "out")})


def test_the_identity_of_the_day2_playbooks_refuses_a_logs_folder_through_a_link(tmp_path):
    link = tmp_path / "usr-link"
    link.symlink_to("/usr")
    _found, errors, _warnings = lc.identity({"verl_logs_dir": str(link)}, SPEC, RULES, host="node1")
    assert [e["variable"] for e in errors] == ["verl_logs_dir"] and "system folder" in errors[0]["msg"]
    found, errors, _warnings = lc.identity({"verl_logs_dir": str(tmp_path / "logs")}, SPEC, RULES, host="node1")
    assert not errors and found["logs_dir"] == str(tmp_path / "logs")
