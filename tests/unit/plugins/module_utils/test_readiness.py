"""check.yml's verdict: from what each node's check left to the report and the machine-readable verdict."""
from __future__ import annotations

import pytest

from ansible_collections.verl.deploy.plugins.module_utils._readiness import brief, check_nodes, check_verdict, did_not_answer


def node(name, answered=True, problem=""):
    return {"name": name, "answered": answered, "problem": problem}


@pytest.mark.parametrize("nodes, ready, counts, lines", [
    ([node("n1"), node("n2")], True, (2, 0, 0),
     ["READY: 2 of 2 node(s) ready to deploy to; nothing was changed on any node.", "ready: n1 (head), n2"]),
    ([node("n2", problem="n2: verl_npu_devices=0,1 has 2 NPUs. Fix: ..."), node("n1")], False, (1, 1, 0),
     ["NOT READY: 1 of 2 node(s) ready to deploy to (1 not ready); nothing was changed on any node.", "ready: n1 (head)",
      "n2: NOT READY: verl_npu_devices=0,1 has 2 NPUs. Fix: ..."]),
    ([node("n1", answered=False), node("n2")], False, (1, 0, 1),
     ["NOT READY: 1 of 2 node(s) ready to deploy to (1 did not answer); nothing was changed on any node.", "ready: n2",
      "n1 (head): DID NOT ANSWER: the node did not answer (unreachable, or its SSH login failed), so nothing on it was checked"]),
    ([], False, (0, 0, 0), ["NOT READY: 0 of 0 node(s) ready to deploy to; nothing was changed on any node."]),
], ids=["all-ready", "one-refused-head-first", "head-unreachable", "no-node"])
def test_the_verdict_and_its_report(nodes, ready, counts, lines):
    verdict = check_verdict(nodes, head="n1")
    assert verdict["ready"] is ready
    assert tuple(verdict["counts"].values()) == counts
    assert verdict["lines"] == lines
    assert list(verdict["nodes"])[:1] == (["n1"] if any(n["name"] == "n1" for n in nodes) else [])


def test_a_large_cluster_reports_its_ready_nodes_in_one_line():
    verdict = check_verdict([node("n%03d" % i) for i in range(128)], head="n000")
    assert len(verdict["lines"]) == 2 and verdict["lines"][1].endswith("and 120 more")


def test_the_nodes_read_from_hostvars():
    hostvars = {"a": {"__verl_check_answered": True}, "b": {"__verl_check_problem": "b: refused"}, "c": {}}
    assert check_nodes(["a", "b", "c"], hostvars) == [node("a"), node("b", problem="b: refused"), node("c", answered=False)]


# As the pre-check wrote them (issue 60): a search path and a list of scripts in the text.
NPU_SMI = ("npu-smi failed: npu-smi not found: searched PATH (/usr/local/Ascend/driver/tools:/usr/local/sbin:/usr/local/bin:/usr/sbin:"
           "/usr/bin:/sbin:/bin) and /usr/local/sbin/npu-smi, /usr/local/bin/npu-smi. Fix: install the Ascend driver (or mount it "
           "into the container), or set verl_npu_smi_path.")
MEMORY = ("this host has 22.9 GiB of memory available (MemAvailable) for its 8 NPU workers, and each takes about 8 GiB of host "
          "memory once started, before the model: Ray would kill them (\"Task was killed due to the node running low on memory "
          "... exceeds the memory usage threshold of 0.95\"). Fix: free host memory (stop what uses it; free -g shows it), or give "
          "verl_npu_devices at most 2 NPUs (the NPUs whose workers fit, the same count on every node).")


@pytest.mark.parametrize("problem, prefix, shown", [
    ("verl_npu_devices=0,1 has 2 NPUs. Fix: give 8.", "n2: NOT READY: ", ["n2: NOT READY: verl_npu_devices=0,1 has 2 NPUs. Fix: give 8."]),
    (NPU_SMI, "- ", ["- npu-smi failed: npu-smi not found: searched PATH and /usr/local/sbin/npu-smi, /usr/local/bin/npu-smi. Fix: install the",
                     "  Ascend driver (or mount it into the container), or set verl_npu_smi_path."]),
    (MEMORY, "- ", ["- this host has 22.9 GiB of memory available (MemAvailable) for its 8 NPU workers, and each takes about 8 GiB of ...",
                    "  Fix: free host memory (stop what uses it; free -g shows it), or give verl_npu_devices at most 2 NPUs."]),
    ("the model folder verl_model_path=/mnt/shared/team/models/Qwen3-8B-Instruct-2507/hf on node2 differs. Fix: copy it.", "- ",
     ["- the model folder verl_model_path=/mnt/shared/te...nstruct-2507/hf on node2 differs. Fix: copy it."]),
], ids=["fits", "long-aside", "what-then-fix", "long-path"])
def test_a_problem_at_the_terminal_is_at_most_two_lines_of_120(problem, prefix, shown):
    assert brief(problem, prefix) == shown
    assert all(len(line) <= 120 for line in shown)


def test_each_problem_is_said_once_with_the_nodes_it_was_found_on():
    """48 nodes with the same missing driver and one with less memory: three problems, not 49 (issue 60)."""
    nodes = [node("node%03d" % n, problem=["node%03d: %s" % (n, NPU_SMI)] + ([MEMORY] if n == 7 else [])) for n in range(1, 49)]
    nodes.append(node("node049", answered=False))
    verdict = check_verdict(nodes, head="node001")
    assert verdict["lines"][0] == ("NOT READY: 0 of 49 node(s) ready to deploy to (48 not ready, 1 did not answer); nothing was "
                                   "changed on any node.")
    assert verdict["lines"][1].startswith("node001 (head), node002, node003 and 45 more: NOT READY: npu-smi failed: npu-smi not found")
    assert verdict["lines"][2] == "  Fix: install the Ascend driver (or mount it into the container), or set verl_npu_smi_path."
    assert verdict["lines"][3].startswith("node007: NOT READY: this host has 22.9 GiB")
    assert verdict["lines"][5].startswith("node049: DID NOT ANSWER: ")
    assert len(verdict["lines"]) == 6 and all(len(line) <= 120 for line in verdict["lines"]), verdict["lines"]
    # The whole text of each, per node, for check.json and the stats.
    assert verdict["nodes"]["node007"]["problems"] == [NPU_SMI, MEMORY]
    assert verdict["nodes"]["node007"]["problem"] == NPU_SMI + " " + MEMORY


# Ansible's unreachable messages as users met them (OpenSSH's words after "Failed to connect to the host via ssh: "):
# ansible/ansible#69182 and #33321 (a refused key), the others OpenSSH's own for a closed port, an unknown name, a
# time-out and a changed host key.
@pytest.mark.parametrize(("message", "reason", "fix"), [
    ("Failed to connect to the host via ssh: Permission denied (publickey,password).",
     "the SSH login as ops was refused (Permission denied (publickey,password))",
     "give the user that may log in (ansible_user, now ops) and its key (ansible_ssh_private_key_file, now /keys/id): "
     "`ssh -p 2222 -i /keys/id ops@10.0.0.5 true` must log in without a password"),
    ("Failed to connect to the host via ssh: Permission denied (publickey,gssapi-keyex,gssapi-with-mic,password).\r\n",
     "the SSH login as ops was refused (Permission denied (publickey,gssapi-keyex,gssapi-with-mic,password))", None),
    ("Task failed: Failed to connect to the host via ssh: ssh: connect to host 10.0.0.5 port 2222: Connection refused",
     "nothing listens for SSH on 10.0.0.5 port 2222 (ssh: connect to host 10.0.0.5 port 2222: Connection refused)",
     "check ansible_port (now 2222) and that sshd runs on the node: `ssh -p 2222 -i /keys/id ops@10.0.0.5 true` must log in"),
    ("Failed to connect to the host via ssh: ssh: Could not resolve hostname 10.0.0.5: Name or service not known",
     "the name 10.0.0.5 does not resolve (ssh: Could not resolve hostname 10.0.0.5: Name or service not known)", None),
    ("Failed to connect to the host via ssh: ssh: connect to host 10.0.0.5 port 2222: Connection timed out",
     "10.0.0.5 port 2222 cannot be reached (ssh: connect to host 10.0.0.5 port 2222: Connection timed out): the node is down, "
     "or a firewall or a wrong address is in the way", None),
    ("Failed to connect to the host via ssh: Host key verification failed.",
     "the node's SSH host key is not in the controller's known_hosts, or it changed (Host key verification failed)",
     "check that 10.0.0.5 is that node, then add its key: `ssh-keyscan -p 2222 10.0.0.5 >> ~/.ssh/known_hosts`"),
], ids=["key-refused", "key-refused-gssapi", "port-closed", "name-unknown", "timed-out", "host-key"])
def test_a_node_that_did_not_answer_is_named_with_the_key_user_port_or_address_to_check(message, reason, fix):
    variables = {"ansible_host": "10.0.0.5", "ansible_port": 2222, "ansible_user": "ops", "ansible_ssh_private_key_file": "/keys/id"}
    said = did_not_answer("n2", message, variables, head="n1")
    assert said["reason"] == reason and said["role"] == "worker"
    assert fix is None or said["fix"] == fix
    assert said["line"] == "n2 (worker): DID NOT ANSWER: %s. Fix: %s." % (reason, said["fix"])


def test_without_connection_variables_the_defaults_are_named_and_other_connections_get_ping():
    said = did_not_answer("n1", "Permission denied (publickey).", {}, head="n1")
    assert said["role"] == "head" and "(ansible_user, now your login name on the controller)" in said["fix"]
    assert "(ansible_ssh_private_key_file, now not set: the ssh agent's or ~/.ssh/id_*)" in said["fix"] and "`ssh -p 22 n1 true`" in said["fix"]
    docker = did_not_answer("n1", "Error: No such container: {n1}", {"ansible_connection": "community.docker.docker"})
    assert docker["reason"] == "it did not answer over its connection community.docker.docker (Error: No such container: {n1})"
    assert "`ansible n1 -m ping` must answer pong" in docker["fix"]


def test_a_node_kept_as_unanswered_by_check_is_not_ready_with_the_reason_and_fix():
    hostvars = {"a": {"__verl_check_answered": False, "ansible_port": 9, "ansible_host": "127.0.0.1",
                      "__verl_check_unanswered": "ssh: connect to host 127.0.0.1 port 9: Connection refused"}}
    [found] = check_nodes(["a"], hostvars)
    assert found["answered"] is False and found["problem"].startswith("nothing listens for SSH on 127.0.0.1 port 9")
    assert check_verdict([found], head="a")["lines"][1].startswith("a (head): DID NOT ANSWER: nothing listens")
