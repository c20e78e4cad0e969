"""What the scenarios' testinfra verifiers share: the Molecule inventory, deploy runs, node access.

The scenarios drive the product as a user does (ansible-playbook with the scenario's settings.yml as
extra vars) and look at the result from outside: `docker exec` into a simulated node, and from there
into its verl container.
"""
from __future__ import annotations

import functools
import importlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from testinfra.utils.ansible_runner import AnsibleRunner

REPO = Path(os.environ["MOLECULE_PROJECT_DIRECTORY"])
SCENARIO = Path(os.environ["MOLECULE_SCENARIO_DIRECTORY"])
INVENTORY = os.environ["MOLECULE_INVENTORY_FILE"]
PLAYBOOK = str(Path(sys.executable).with_name("ansible-playbook"))
# Either algorithm's training (DAPO, GRPO); the brackets keep pgrep -f from matching its own shell.
TRAINING = r"-m ([r]ecipe\.dapo\.main_dapo|[v]erl\.trainer\.main_ppo)( |$)"


@functools.lru_cache(maxsize=None)
def _hosts(group):
    return tuple(AnsibleRunner(INVENTORY).get_hosts(group))


def hosts(group):
    """Inventory hostnames of a group, as testinfra_hosts wants them. Read once per group and verify run: each read is
    an ansible-inventory process (about a CPU second), and a test that asked for them per line of a status output
    spent minutes of CI in it."""
    return list(_hosts(group))


def nodes():
    return hosts("ray_head") + hosts("ray_workers")


# The default callback's whole task stream, which the verifiers read (ansible.cfg sets the short verl.deploy.report).
PLAYBOOK_ENV = {"ANSIBLE_NOCOLOR": "1", "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_STDOUT_CALLBACK": "default"}


def playbook(name, *extra, timeout=1200, env=None):
    """Run playbooks/<name> against the scenario's nodes with its settings (env: more environment); returns the
    CompletedProcess."""
    env = {**os.environ, **PLAYBOOK_ENV, **(env or {})}
    argv = [PLAYBOOK, "-i", INVENTORY, str(REPO / "playbooks" / name), "-e", "@%s" % (SCENARIO / "settings.yml"), *extra]
    proc = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    # Ansible writes task errors to stderr: the messages a user reads are in both streams. The whole text of the
    # pre-check's problems is a YAML list there (for the log file), where a quote is doubled.
    proc.output = " ".join((proc.stdout + "\n" + proc.stderr).split()).replace("''", "'")
    return proc


def playbook_in_background(name, *extra, out, session=False):
    """Start playbooks/<name> like playbook(), its output going to the file `out`; returns the Popen (wait with finish()).
    session: in a process group of its own (os.killpg reaches it and everything it starts, as Ctrl-C does a terminal's)."""
    env = dict(os.environ, **PLAYBOOK_ENV)
    argv = [PLAYBOOK, "-i", INVENTORY, str(REPO / "playbooks" / name), "-e", "@%s" % (SCENARIO / "settings.yml"), *extra]
    handle = open(out, "w", encoding="utf-8")  # pylint: disable=consider-using-with  # closed by finish()
    proc = subprocess.Popen(argv, cwd=REPO, env=env, stdout=handle, stderr=subprocess.STDOUT, text=True, start_new_session=session)
    proc.out_file, proc.out_handle = Path(out), handle
    return proc


def finish(proc, timeout=1200):
    """Wait for a playbook_in_background(); returns it with stdout and output as playbook() gives them."""
    proc.wait(timeout=timeout)
    proc.out_handle.close()
    proc.stdout = proc.out_file.read_text(encoding="utf-8")
    proc.stderr = ""
    proc.output = " ".join(proc.stdout.split()).replace("''", "'")
    return proc


def sh(*argv, check=True, timeout=300):
    proc = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, check=False)
    if check and proc.returncode:
        raise AssertionError("%s failed (%d): %s %s" % (" ".join(argv), proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:]))
    return proc


def on_node(node, *argv, check=True):
    """A command on the simulated host itself."""
    return sh("docker", "exec", node, *argv, check=check)


def paused(node):
    """`with paused(node):` the node stops answering (simcluster.paused: docker pause, retried when the freezer gives up)."""
    sys.path.insert(0, str(REPO / "tests" / "sim"))
    try:
        import simcluster  # pylint: disable=import-outside-toplevel
    finally:
        sys.path.remove(str(REPO / "tests" / "sim"))
    return simcluster.paused(node)


def module_utils(name):
    """This checkout's plugins/module_utils/<name>, as the playbooks run it (./run.sh setup links it as ansible_collections.verl.deploy)."""
    if str(REPO / ".collections") not in sys.path:
        sys.path.insert(0, str(REPO / ".collections"))
    return importlib.import_module("ansible_collections.verl.deploy.plugins.module_utils." + name)


def in_verl(node, script, check=True):
    """A bash script inside the node's verl container."""
    return on_node(node, "docker", "exec", "verl", "bash", "-c", script, check=check)


def training_pids(node):
    return in_verl(node, "pgrep -f -- '%s' || true" % TRAINING).stdout.split()


def npu_processes(node):
    """{npu id: [pid, ...]} of the node's own `npu-smi info` process table (host pids), as the collection parses it."""
    if str(REPO / ".collections") not in sys.path:
        sys.path.insert(0, str(REPO / ".collections"))  # this checkout as ansible_collections.verl.deploy (./run.sh setup)
    from ansible_collections.verl.deploy.plugins.module_utils._npu_smi import parse_info  # pylint: disable=import-outside-toplevel

    table = {}
    for process in parse_info(on_node(node, "npu-smi", "info").stdout)["processes"]:
        table.setdefault(process["npu_id"], []).append(process["pid"])
    return table


def started_marker(node, pid, path="/sim/ckpts/qwen3-8b-dapo/stand_in_started.json", seconds=240):
    """The stand-in trainer's started marker once the training `pid` wrote it. It writes it after its worker group is
    up (a worker on every NPU), which can be well after the deploy saw its log grow, as with verl."""
    deadline = time.monotonic() + seconds
    while True:
        found = in_verl(node, "cat %s" % path, check=False).stdout
        try:
            marker = json.loads(found)
        except ValueError:
            marker = {}
        if marker.get("pid") == int(pid):
            return marker
        if time.monotonic() > deadline:
            raise AssertionError("the training %s wrote no started marker within %d s (it holds: %s)" % (pid, seconds, found[:300]))
        time.sleep(2)


def ray_view(node):
    """{'nodes': alive Ray nodes, 'npu': cluster NPU total} as Ray itself reports them, asked from `node`."""
    script = ("import json, ray; ray.init(address='auto', log_to_driver=False); "
              "print('ray_view=' + json.dumps({'nodes': sum(1 for n in ray.nodes() if n['Alive']), 'npu': ray.cluster_resources().get('NPU', 0)}))")
    out = in_verl(node, "python3 -c \"%s\" 2>/dev/null" % script).stdout
    # Ray prints its own warnings on stdout too ("raylet has lagging heartbeats ..." on a busy machine): the marked line.
    found = [line.split("=", 1)[1] for line in out.splitlines() if line.startswith("ray_view=")]
    return json.loads(found[-1]) if found else {"no answer": out[-500:]}


def inner_containers(node):
    return on_node(node, "docker", "ps", "-aq").stdout.split()


def recap(output):
    """{host: {'changed': n, 'failed': n, 'unreachable': n}} from a PLAY RECAP."""
    result = {}
    for line in output.split("PLAY RECAP")[-1].splitlines():
        counts = dict(re.findall(r"(\w+)=(\d+)", line))
        if "changed" in counts:
            result[line.split()[0]] = {key: int(value) for key, value in counts.items()}
    return result


def tail(proc, chars=4000):
    return "rc=%s\n%s\n%s" % (proc.returncode, proc.stdout[-chars:], proc.stderr[-chars:])
