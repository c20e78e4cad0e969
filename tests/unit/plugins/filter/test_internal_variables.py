# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The internal_variables filter: inventory or extra variables named like the collection's internals, read from
Ansible's own hostvars without templating them."""
from __future__ import annotations

from ansible_collections.verl.deploy.plugins.filter.internal_variables import FilterModule, internal_variables

INVENTORY = """
all:
  children:
    ray_head:
      hosts:
        head: {ansible_host: 10.0.0.1, _verl_launch: {module: os}, verl_train_tp: 4}
    ray_workers:
      hosts:
        w1: {__precheck_facts: forged, _verl_launch: {module: os}}
        w2: {_training_start: "{{ lookup('pipe', 'touch /tmp/pwned') }}", verl_lr: 1e-6}
"""


def test_each_internal_name_once_with_every_host_that_has_it(hostvars):
    problems = internal_variables(hostvars(INVENTORY), ["localhost", "head", "w1", "w2", "w1"])
    assert [p.split(" (")[0] for p in problems] == ["__precheck_facts", "_training_start", "_verl_launch"]
    assert "seen on head, w1)" in problems[2] and "Fix: remove it" in problems[2]


def test_values_are_never_templated(hostvars, tmp_path):
    # Only the names are read: the lookup in w2's value must not run.
    internal_variables(hostvars(INVENTORY.replace("/tmp/pwned", str(tmp_path / "pwned"))), ["w2"])
    assert not (tmp_path / "pwned").exists()


def test_settings_and_hosts_not_in_the_inventory_are_fine(hostvars):
    problems = internal_variables(hostvars(INVENTORY), ["head", "not-a-host"])
    assert len(problems) == 1 and problems[0].startswith("_verl_launch (given in the inventory or with -e, seen on head) is named")
    assert internal_variables(hostvars(INVENTORY), []) == []


def test_registered_as_a_filter():
    assert FilterModule().filters() == {"internal_variables": internal_variables}
