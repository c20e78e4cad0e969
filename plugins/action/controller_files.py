# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Controller side of verl.deploy.controller_files (docs: plugins/modules/controller_files.py).

Files the controller keeps for itself (render.yml's scripts) are written here, in the worker Ansible already has for the
task. ansible.builtin.template delegated to localhost ran a module process, a temporary folder and its removal per file:
about 1.2 s of controller CPU a host for two scripts and their folder (a 48-node render took 90 CPU-s, 58 of them
there)."""
from __future__ import annotations

import os
import tempfile

from ansible.plugins.action import ActionBase

ARGUMENT_SPEC = {
    "dest": {"type": "path", "required": True},
    "files": {"type": "dict", "required": True},
    "mode": {"type": "str", "default": "0644"},
}


def write_plan(dest, files, mode):
    """(the names in files whose text or mode differs from what dest holds, in order; a problem or '')."""
    bad = [name for name in files if not name or name in (".", "..") or "/" in name or "\0" in name]
    if bad:
        return [], "files: %s is not a plain file name (no folders: the files go straight into dest)" % ", ".join(map(repr, bad))
    try:
        wanted = int(mode, 8)
    except ValueError:
        return [], "mode: %r is not an octal mode such as 0644" % mode
    differ = []
    for name, text in files.items():
        path = os.path.join(dest, name)
        try:
            with open(path, "rb") as handle:
                same = handle.read() == str(text).encode() and os.stat(path).st_mode & 0o7777 == wanted
        except OSError:
            same = False
        if not same:
            differ.append(name)
    return differ, ""


def write(dest, files, names, mode):
    """Write each named file atomically (a temporary file in dest, then renamed over the old one)."""
    os.makedirs(dest, mode=0o755, exist_ok=True)
    for name in names:
        handle, temporary = tempfile.mkstemp(prefix=".%s." % name, dir=dest)
        try:
            with os.fdopen(handle, "wb") as stream:
                stream.write(str(files[name]).encode())
            os.chmod(temporary, int(mode, 8))
            os.replace(temporary, os.path.join(dest, name))
        except BaseException:
            os.unlink(temporary)
            raise


class ActionModule(ActionBase):
    """Write the files on the controller, only those that differ."""

    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        dest = os.path.abspath(args["dest"])
        differ, problem = write_plan(dest, args["files"], args["mode"])
        if problem:
            return dict(result, failed=True, msg=problem)
        if differ and not self._task.check_mode:
            try:
                write(dest, args["files"], differ, args["mode"])
            except OSError as exc:
                return dict(result, failed=True, msg="cannot write %s in %s on the controller: %s" % (", ".join(differ), dest, exc))
        return dict(result, changed=bool(differ), dest=dest, written=differ)
