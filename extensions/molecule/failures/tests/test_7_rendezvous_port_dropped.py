"""A worker whose packets to the head's ephemeral ports are dropped (a firewall that opens only Ray's port): Ray forms,
and the deploy stops before the training starts, naming the worker, the head's port and the fix, instead of the
training waiting 30 minutes at its rendezvous (verl#2492: "TCP client failed to connect/validate to host ...:37991").
The deploy is a restart (verl_restart=true), so a training is to start: a training that runs from the same settings on a
cluster the deploy leaves as it was has been through its rendezvous already, and the check is skipped then."""
from sim_scenario import hosts, on_node, playbook, sh, tail

from test_4_npu_subset_and_foreign_holder import SUBSET


def test_a_worker_that_cannot_reach_the_heads_rendezvous_ports_stops_the_deploy_before_the_training():
    head, worker = hosts("ray_head")[0], hosts("ray_workers")[-1]
    address = sh("docker", "exec", head, "hostname", "-i").stdout.split()[0]
    low, high = on_node(head, "cat", "/proc/sys/net/ipv4/ip_local_port_range").stdout.split()
    rule = ["OUTPUT", "-d", address, "-p", "tcp", "--dport", "%s:%s" % (low, high), "-m", "conntrack", "--ctstate", "NEW", "-j", "DROP"]
    on_node(worker, "iptables", "-I", *rule)
    try:
        proc = playbook("deploy.yml", *SUBSET, "-e", "verl_restart=true", timeout=900)
    finally:
        on_node(worker, "iptables", "-D", *rule, check=False)
    assert proc.returncode != 0, tail(proc)
    assert "%s: from its container, " % worker in proc.output and "did not answer (rendezvous; " in proc.output, tail(proc)
    assert "timed out after 10 s" in proc.output and "Fix: allow TCP from %s to " % worker in proc.output, tail(proc)
