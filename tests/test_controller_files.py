"""verl.deploy.controller_files, the writer of render.yml's scripts on the controller: which files it writes (a table of
write_plan), and in a real ansible-playbook that check mode writes nothing, a run writes what differs, atomically and with
its mode, and a second run writes nothing; its documentation is the action plugin's argument spec."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ansible_collections.verl.deploy.plugins.action.controller_files import ARGUMENT_SPEC, write_plan
from ansible_collections.verl.deploy.plugins.modules import controller_files

REPO = Path(__file__).resolve().parent.parent
ANSIBLE_PLAYBOOK = str(Path(sys.executable).with_name("ansible-playbook"))


@pytest.mark.parametrize("held, files, mode, differ, problem", [
    ({}, {"a.sh": "x\n"}, "0755", ["a.sh"], ""),  # nothing there yet (nor the folder)
    ({"a.sh": ("x\n", 0o755)}, {"a.sh": "x\n"}, "0755", [], ""),
    ({"a.sh": ("x\n", 0o644)}, {"a.sh": "x\n"}, "0755", ["a.sh"], ""),  # the mode alone differs
    ({"a.sh": ("x", 0o755)}, {"a.sh": "x\n"}, "0755", ["a.sh"], ""),  # a newline is text
    ({"a.sh": ("x\n", 0o755), "b.sh": ("y\n", 0o755)}, {"b.sh": "z\n", "a.sh": "x\n"}, "0755", ["b.sh"], ""),
    ({}, {"../a.sh": "x"}, "0755", [], "files: '../a.sh' is not a plain file name"),
    ({}, {"..": "x"}, "0755", [], "files: '..' is not a plain file name"),
    ({}, {"a.sh": "x"}, "rwx", [], "mode: 'rwx' is not an octal mode"),
])
def test_write_plan_names_the_files_that_differ(tmp_path, held, files, mode, differ, problem):
    dest = tmp_path / "out"
    for name, (text, held_mode) in held.items():
        dest.mkdir(exist_ok=True)
        (dest / name).write_text(text)
        (dest / name).chmod(held_mode)
    found, said = write_plan(str(dest), files, mode)
    assert found == differ and said.startswith(problem) and bool(said) == bool(problem)


PLAY = r"""- hosts: localhost
  connection: local
  gather_facts: false
  vars:
    files: {{"run.sh": "echo one\n", "env": "A=1\n"}}
  tasks:
    - name: In check mode
      verl.deploy.controller_files: {{dest: "{0}", files: "{{{{ files }}}}", mode: "0750"}}
      check_mode: true
      register: checked
    - name: Written
      verl.deploy.controller_files: {{dest: "{0}", files: "{{{{ files }}}}", mode: "0750"}}
      register: written
    - name: Again
      verl.deploy.controller_files: {{dest: "{0}", files: "{{{{ files }}}}", mode: "0750"}}
      register: again
    - name: A name with a folder
      verl.deploy.controller_files: {{dest: "{0}", files: {{"sub/run.sh": "x"}}}}
      register: refused
      ignore_errors: true
    - name: Keep the results
      ansible.builtin.copy:
        content: "{{{{ {{'checked': checked, 'written': written, 'again': again, 'refused': refused}} | to_json }}}}"
        dest: "{1}"
        mode: "0600"
"""


def test_it_writes_what_differs_once_and_nothing_in_check_mode(tmp_path):
    play, out, dest = tmp_path / "play.yml", tmp_path / "results.json", tmp_path / "rendered" / "node1"
    play.write_text(PLAY.format(dest, out))
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_STDOUT_CALLBACK="default")
    proc = subprocess.run([ANSIBLE_PLAYBOOK, "-i", "localhost,", str(play), "-e", "ansible_python_interpreter=%s" % sys.executable],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=180, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    found = json.loads(out.read_text())
    assert (found["checked"]["changed"], sorted(found["checked"]["written"])) == (True, ["env", "run.sh"])
    assert (found["written"]["changed"], sorted(found["written"]["written"])) == (True, ["env", "run.sh"])
    assert (found["again"]["changed"], found["again"]["written"]) == (False, [])
    assert found["refused"]["failed"] is True and "'sub/run.sh' is not a plain file name" in found["refused"]["msg"]
    assert sorted(os.listdir(dest)) == ["env", "run.sh"]  # no temporary file left
    assert (dest / "run.sh").read_text() == "echo one\n" and (dest / "run.sh").stat().st_mode & 0o7777 == 0o750


def test_the_documentation_is_the_action_plugins():
    doc = yaml.safe_load(controller_files.DOCUMENTATION)
    assert set(doc["options"]) == set(ARGUMENT_SPEC)
    for name, option in ARGUMENT_SPEC.items():
        assert doc["options"][name]["type"] == option["type"], name
        assert doc["options"][name].get("default") == option.get("default"), name
        assert doc["options"][name].get("required", False) == option.get("required", False), name
