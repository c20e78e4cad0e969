# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Controller side of verl.deploy.launch_config (docs: plugins/modules/launch_config.py).

The checks read only their arguments, so they run here, in the worker Ansible already has for the task,
instead of in a module process started for every host (0.3-0.5 s of controller CPU each): the same
evaluate() as the module, with the same argument spec."""
from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.verl.deploy.plugins.module_utils._launch_config import ARGUMENT_SPEC, evaluate
from ansible_collections.verl.deploy.plugins.module_utils._secrets import SECRETS, key_forms


def masked(value, secrets):
    """value with every secret replaced, in strings, lists and dicts (as a module's no_log_values are)."""
    if isinstance(value, str):
        for secret in secrets:
            value = value.replace(secret, "********")
        return value
    if isinstance(value, list):
        return [masked(item, secrets) for item in value]
    if isinstance(value, dict):
        return {key: masked(item, secrets) for key, item in value.items()}
    return value


class ActionModule(ActionBase):
    """Check the settings of one host and return its launch configuration, on the controller."""

    TRANSFERS_FILES = False
    _requires_connection = False

    def _key_forms(self, task_vars):
        """{secret setting: its spellings}, read here on the controller (never an argument): no setting may hold one."""
        found = {}
        for name in SECRETS:
            raw = (task_vars or {}).get(name)
            if raw is None:
                continue
            try:
                key = self._templar.template(raw)
            except Exception:  # pylint: disable=broad-exception-caught  # a key that refers to facts: left to stage 0
                continue
            forms = key_forms(key) if isinstance(key, str) else ()
            if forms:
                found[name] = forms
        return found

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        outcome, warnings, secrets = evaluate(args, key_forms=self._key_forms(task_vars))
        secrets = sorted((secret for secret in secrets if secret), key=len, reverse=True)
        result.update(masked(outcome, secrets))
        if warnings:
            result["warnings"] = masked(list(warnings), secrets)
        result.setdefault("changed", False)
        return result
