"""Facts between stages are declared inputs: each role entry point's argument spec lists the facts it reads that another
stage set (`_verl_launch`, `_precheck_node`, `_ray_head`, ...), and nothing else of that kind.

What an entry point reads is found in its task files (the file of the entry point and those it includes or imports, in the
same role) and in the role's vars/main.yml values those files use (a lazy var reads what its template reads); a fact belongs
to the role whose tasks set it (set_fact, or register). A fact read by one stage and set by another that its spec does not list fails
here, and so does a listed one that nothing reads any more."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

ROLES = Path(__file__).resolve().parent.parent / "roles"
NAME = re.compile(r"\b(_[a-z][a-z0-9_]+)\b")
INCLUDE = re.compile(r"(?:include|import)_tasks:\s*(?:file:\s*)?([\w.]+\.yml)")


def _facts_set_by_role():
    """{fact: role} for every fact a role's tasks set with set_fact (top-level keys of its argument) or register (a step's
    result with its verdict: node_step)."""
    owners = {}
    for path in ROLES.glob("*/tasks/*.yml"):
        for task in _tasks(yaml.safe_load(path.read_text()) or []):
            facts = task.get("ansible.builtin.set_fact") or task.get("set_fact")
            for name in list(facts if isinstance(facts, dict) else []) + [task.get("register") or ""]:
                if name.startswith("_") and not name.startswith("__"):
                    owners.setdefault(name, path.parts[-3])
    return owners


def _tasks(items):
    for item in items:
        if isinstance(item, dict):
            yield item
            for key in ("block", "rescue", "always"):
                yield from _tasks(item.get(key) or [])


def _lazy_vars(role):
    path = ROLES / role / "vars" / "main.yml"
    values = yaml.safe_load(path.read_text()) if path.exists() else None
    return {name: str(value) for name, value in (values or {}).items()}


def _reads(role, entry):
    """Every `_name` the entry point's task files and the lazy vars they use mention."""
    folder, seen, todo, names = ROLES / role / "tasks", set(), ["%s.yml" % entry], set()
    while todo:
        name = todo.pop()
        if name in seen or not (folder / name).exists():
            continue
        seen.add(name)
        text = (folder / name).read_text()
        names |= set(NAME.findall(text))
        todo += INCLUDE.findall(text)
    lazy = _lazy_vars(role)
    pending = [name for name in names if name in lazy]
    while pending:
        found = set(NAME.findall(lazy[pending.pop()])) - names
        names |= found
        pending += [name for name in found if name in lazy]
    return names


# verl.deploy.verl's main entry point is the settings table itself (every option a user setting: tests/test_settings_contract.py);
# its validate.yml reads the pre-check's _precheck_node as the settings check's input, named in docs/architecture.md.
ENTRY_POINTS = [(path.parts[-3], entry) for path in sorted(ROLES.glob("*/meta/argument_specs.yml"))
                for entry in yaml.safe_load(path.read_text())["argument_specs"] if (path.parts[-3], entry) != ("verl", "main")]


@pytest.mark.parametrize("role, entry", ENTRY_POINTS, ids=["%s:%s" % pair for pair in ENTRY_POINTS])
def test_each_entry_point_declares_the_facts_it_reads_from_other_stages(role, entry):
    owners = _facts_set_by_role()
    read = {name for name in _reads(role, entry) if owners.get(name, role) != role}
    spec = yaml.safe_load((ROLES / role / "meta" / "argument_specs.yml").read_text())["argument_specs"][entry]
    declared = {name for name in spec.get("options") or {} if name.startswith("_") and owners.get(name, role) != role}
    assert declared == read, "%s (%s): read but not declared: %s; declared but not read: %s" % (
        role, entry, sorted(read - declared), sorted(declared - read))


def test_the_scan_sees_the_facts_it_must():
    """The scan is not vacuous: the stages' best-known hand-overs are found where they are read."""
    owners = _facts_set_by_role()
    assert (owners["_verl_launch"], owners["_precheck_node"], owners["_ray_head"]) == ("verl", "precheck", "ray")
    assert {"_ray_head", "_precheck_node", "_ray_rejoined_workers"} <= _reads("training", "start")
