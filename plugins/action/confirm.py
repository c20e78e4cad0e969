# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Controller side of verl.deploy.confirm: a bounded yes/no question (docs: plugins/modules/confirm.py)."""
from __future__ import annotations

import time

from ansible.errors import AnsiblePromptInterrupt, AnsiblePromptNoninteractive
from ansible.module_utils.common.text.converters import to_text
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

display = Display()

ARGUMENT_SPEC = {
    "prompt": {"type": "str", "required": True},
    "timeout": {"type": "int", "default": 300},
    "answers": {"type": "list", "elements": "str", "default": ["yes", "y"]},
    "probe": {"type": "bool", "default": False},
}


class ActionModule(ActionBase):
    """Ask once, on the controller's terminal; never wait longer than `timeout` seconds, never wait without one."""

    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        if args["timeout"] < 1:
            result.update(failed=True, msg="timeout=%d: give at least 1 second." % args["timeout"])
            return result
        result.update(changed=False, interactive=True, confirmed=False, timed_out=False, interrupted=False, waited=0.0)
        # A probe waits 0 s: it only learns whether a person could answer (stdin is a terminal in the foreground).
        seconds = 0 if args["probe"] else args["timeout"]
        prompt = "" if args["probe"] else "%s (%d s): " % (args["prompt"], seconds)
        start = time.monotonic()
        try:
            answer = display.prompt_until(prompt, private=False, seconds=seconds, complete_input=(b"\r", b"\n"))
        except AnsiblePromptNoninteractive:
            result["interactive"] = False
            return result
        except AnsiblePromptInterrupt:
            result["interrupted"] = True
            return result
        waited = time.monotonic() - start
        result["waited"] = round(waited, 1)
        if args["probe"]:
            return result
        # On time-out prompt_until returns what was typed so far: only an answer ended with Enter counts.
        result["timed_out"] = waited >= seconds
        typed = to_text(answer, errors="surrogate_or_strict").strip().lower()
        result["confirmed"] = not result["timed_out"] and typed in [a.strip().lower() for a in args["answers"]]
        return result
