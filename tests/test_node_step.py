"""verl.deploy.node_step in a real ansible-playbook (local connection, so the host form: O(argv) without a container; the
container form runs in every simulated-cluster deploy): what a step answered becomes `changed`, `answer` and `said`; a
step that must end well fails with its last lines; a step started in the background is collected with `job` and read
the same way; the module's documentation lists the action plugin's options and steps."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ansible_collections.verl.deploy.plugins.action.node_step import ARGUMENT_SPEC
from ansible_collections.verl.deploy.plugins.doc_fragments import control_step
from ansible_collections.verl.deploy.plugins.action.wait_progress import ARGUMENT_SPEC as WAIT_SPEC
from ansible_collections.verl.deploy.plugins.module_utils._control_step import CONTROL_STEPS
from ansible_collections.verl.deploy.plugins.modules import node_step, wait_progress

REPO = Path(__file__).resolve().parent.parent
ANSIBLE_PLAYBOOK = str(Path(sys.executable).with_name("ansible-playbook"))

PLAY = r"""- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: A step that changed something
      verl.deploy.node_step:
        argv: [sh, -c, 'mkdir -p "$1" && printf "{{\"said\": [\"made %s\"], \"answer\": {{\"changed\": \"true\"}}}}" "$1"', made, "{0}"]
      register: made
    - name: The same step again, that changed nothing
      verl.deploy.node_step:
        argv: [sh, -c, 'echo "{{\"said\": [\"there already\"], \"answer\": {{\"changed\": \"false\"}}}}"', again]
      register: again
    - name: A step in the background
      verl.deploy.node_step:
        argv: [sh, -c, 'sleep 1; echo "{{\"said\": [\"joined\"], \"answer\": {{\"changed\": \"true\", \"state\": \"started\"}}}}"', join]
      register: started
      async: 30
      poll: 0
    - name: Collect it
      verl.deploy.node_step:
        job: "{{{{ started.ansible_job_id }}}}"
      register: joined
      until: joined.finished
      retries: 20
      delay: 1
    - name: A step that must end well and does not
      verl.deploy.node_step:
        argv: [sh, -c, 'echo "docker: Error response from daemon: No such container: verl" >&2; exit 3', install]
        fail_on_rc: true
      register: failed
      ignore_errors: true
    - name: The same step, left to the task that reads it
      verl.deploy.node_step:
        argv: [sh, -c, 'exit 3', install]
      register: read
    - name: A step that reads its input, whose last line has no new line
      verl.deploy.node_step:
        argv: [sh, -c, 'while read -r line; do echo "got $line"; done', lines]
        stdin: "a\nb"
      register: lines
    - name: Hostile arguments, each refused before anything runs
      verl.deploy.node_step: "{{{{ item }}}}"
      loop:
        - {{container: --privileged, step: status, workdir: /verl}}
        - {{container: -uroot, argv: [id]}}
        - {{container: verl, argv: ["true"], env: {{"A=B": x}}}}
        - {{container: verl, step: status, workdir: verl}}
        - {{chdir: tmp, argv: ["true"]}}
      register: hostile
      ignore_errors: true
    - name: Keep the results
      ansible.builtin.copy:
        content: "{{{{ {{'made': made, 'again': again, 'started': started, 'joined': joined, 'failed': failed, 'read': read,
                       'lines': lines, 'hostile': hostile}} | to_json }}}}"
        dest: "{1}"
        mode: "0600"
"""


def test_node_step_reads_what_the_step_answered(tmp_path):
    play, out = tmp_path / "play.yml", tmp_path / "results.json"
    play.write_text(PLAY.format(tmp_path / "made", out))
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_STDOUT_CALLBACK="default", ANSIBLE_ASYNC_DIR=str(tmp_path / "async"))
    proc = subprocess.run([ANSIBLE_PLAYBOOK, "-i", "localhost,", str(play), "-e", "ansible_python_interpreter=%s" % sys.executable],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=180, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    found = json.loads(out.read_text())
    made, again, started, joined, failed, read = (found[name] for name in ("made", "again", "started", "joined", "failed", "read"))
    assert (made["changed"], made["rc"], made["answer"], made["said"]) == (True, 0, {"changed": "true"}, ["made %s" % (tmp_path / "made")])
    assert (again["changed"], again["said"]) == (False, ["there already"])
    # In the background: started, nothing read yet; collected: read as if it had run in the foreground.
    assert started["changed"] is False and started["ansible_job_id"]
    assert (joined["finished"], joined["changed"], joined["answer"], joined["said"]) == (True, True, {"changed": "true", "state": "started"},
                                                                                         ["joined"])
    assert failed["failed"] is True
    assert failed["msg"] == ("install (a role's script) ended with rc 3; its last lines: docker: Error response from daemon: "
                             "No such container: verl")
    # Without fail_on_rc a step that ended badly fails nothing; a role's script that says nothing changed nothing.
    assert (read.get("failed", False), read["rc"], read["changed"]) == (False, 3, False)
    assert "changed=" in proc.stdout and "failed=0" in proc.stdout
    # Its input ends with a new line, as ansible.builtin.command ends it: the last line is read.
    assert found["lines"]["said"] == ["got a", "got b"]
    # A container named like a docker option, an env name with "=", a relative folder: refused with a message, no traceback.
    refused = [(item["failed"], item["msg"]) for item in found["hostile"]["results"]]
    assert [failed for failed, _msg in refused] == [True] * 5 and not any("Traceback" in msg for _failed, msg in refused), refused
    assert [msg.split(" is not ")[0].split(", which ")[0] for _failed, msg in refused] == [
        "verl.deploy.node_step: container='--privileged'", "verl.deploy.node_step: container='-uroot'",
        "verl.deploy.node_step: env names 'A=B'", "verl.deploy.node_step: workdir='verl'", "verl.deploy.node_step: chdir='tmp'"], refused


DOCKER = """#!/bin/sh
# A stand-in for the Docker CLI's `docker exec`: the engine's words for a missing container, else the command's argv and
# the values of the variables it names with -e, taken from its own environment as the CLI takes them.
case " $* " in *" gone "*) { echo "Error response from daemon: No such container: gone" >&2; exit 1; };; esac
echo "argv: $*"
echo "A=$A"
"""


def test_in_a_container_the_values_stay_out_of_the_argv_and_a_missing_container_did_not_run(tmp_path):
    docker = tmp_path / "docker"
    docker.write_text(DOCKER)
    docker.chmod(0o755)
    params = {"container": "verl", "step": None, "workdir": None, "args": [], "lock_env": [], "argv": ["true"], "stdin": None,
              "env": {"A": "s3cret"}, "chdir": None}
    ran = node_step.run(params, str(docker))
    assert ran == {"rc": 0, "stdout": "argv: exec -e A verl true\nA=s3cret", "stderr": ""}
    gone = node_step.run(dict(params, container="gone", env=None), str(docker))
    assert gone["failed"] and gone["msg"] == "gone: Error response from daemon: No such container: gone" and "rc" not in gone


@pytest.mark.parametrize("module, spec", [(node_step, ARGUMENT_SPEC), (wait_progress, WAIT_SPEC)])
def test_the_documentation_is_the_action_plugins(module, spec):
    """Both plugins that run the control script's steps document the options they take, and its steps."""
    doc = yaml.safe_load(module.DOCUMENTATION)
    doc["options"].update(yaml.safe_load(control_step.ModuleDocFragment.DOCUMENTATION)["options"])
    assert doc["extends_documentation_fragment"][-1] == "verl.deploy.control_step"
    assert set(doc["options"]) == set(spec)
    for name, option in spec.items():
        assert doc["options"][name]["type"] == option["type"], name
        assert doc["options"][name].get("default") == option.get("default"), name
        assert doc["options"][name].get("required", False) == option.get("required", False), name
    assert doc["options"]["step"]["choices"] == list(CONTROL_STEPS) == spec["step"]["choices"]
