# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Controller side of verl.deploy.node_step (docs: plugins/modules/node_step.py): the module runs the step on the host in
one round trip (in a container with `docker exec`), or its result is collected when it ran in the background; read here in
Python, with the step's verdict (plugins/module_utils/_control_step.py: step_result)."""
from __future__ import annotations

from ansible.plugins.action import ActionBase
from ansible.utils.vars import merge_hash

from ansible_collections.verl.deploy.plugins.module_utils._control_step import argument_problem, rc_problem, step_result
from ansible_collections.verl.deploy.plugins.modules.node_step import ARGUMENT_SPEC, CONSTRAINTS

MODULE = "verl.deploy.node_step"


def said_as(args):
    """The step as a message names it: verl_control.sh STEP, a role's script by its $0 (sh -c SCRIPT NAME ...), or the program."""
    if args.get("lock_folder"):
        return "the deploy's %s in %s" % (args["step"], args["lock_folder"])
    if args["step"]:
        return "verl_control.sh " + args["step"]
    argv = args["argv"]
    if len(argv) > 3 and argv[1] == "-c":
        return "%s (a role's script)" % argv[3]
    return argv[0] if argv else "the step"


class ActionModule(ActionBase):
    """Run the step (or collect the background job that ran it) and return its result, read."""

    TRANSFERS_FILES = False
    _supports_async = True

    def _job_status(self, jid, task_vars):
        """What ansible.builtin.async_status answers for the job (as its own action plugin asks)."""
        async_dir = self._remote_expand_user(self.get_shell_option("async_dir", default="~/.ansible_async"))
        found = {"ansible_job_id": jid, "started": True, "finished": False, "stdout": "", "stderr": ""}
        found = merge_hash(found, self._execute_module(module_name="ansible.legacy.async_status", task_vars=task_vars,
                                                       module_args={"jid": jid, "mode": "status", "_async_dir": async_dir}))
        found["started"], found["finished"] = bool(found.get("started")), bool(found.get("finished"))
        return found

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC, **CONSTRAINTS)
        problem = argument_problem(args)
        if problem:
            return merge_hash(result, {"failed": True, "changed": False, "msg": "verl.deploy.node_step: " + problem})
        if args["job"]:
            done = self._job_status(args["job"], task_vars)
        else:
            # The options given (those left out count as given for the module's mutually exclusive ones).
            module_args = {name: value for name, value in args.items() if name not in ("job", "fail_on_rc") and value is not None}
            wrap_async = bool(self._task.async_val) and not self._connection.has_native_async
            done = self._execute_module(module_name=MODULE, module_args=module_args, task_vars=task_vars, wrap_async=wrap_async)
            if wrap_async:
                # Started in the background: its result is collected with job=.
                return merge_hash(result, dict(done, changed=False))
            if not done.get("skipped"):
                self._remove_tmp_path(self._connection._shell.tmpdir)
        result = merge_hash(result, done)
        # Its verdict too when it did not run (check mode): a step that did not run changed nothing and answers nothing.
        result.update(step_result(args["step"], done, task_vars.get("inventory_hostname", "?")))
        if isinstance(done.get("rc"), int):
            # It ran: failed only with fail_on_rc (said explicitly, as Ansible would take a non-zero rc for a failure).
            problem = rc_problem(said_as(args), done) if args["fail_on_rc"] else ""
            result["failed"] = bool(problem)
            if problem:
                result["msg"] = problem
        return result
