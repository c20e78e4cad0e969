"""A node whose packets to verl's rank-0 node's ephemeral ports are dropped (a firewall that opens only Ray's port): Ray
forms, and the deploy stops before the training starts, naming the node, rank 0's address and port and the fix, instead
of the training waiting 30 minutes at its rendezvous (verl#2492: "TCP client failed to connect/validate to host
...:37991"). Rank 0 is the first node by address as text (verl's rule, plugins/module_utils/_reach.py rank0_node), not
always the head: the rule is dropped on another node towards it, the head when rank 0 is a worker.
The deploy is a restart (verl_restart=true), so a training is to start: a training that runs from the same settings on a
cluster the deploy leaves as it was has been through its rendezvous already, and the check is skipped then."""
from sim_scenario import hosts, module_utils, nodes, on_node, playbook, sh, tail

from test_4_npu_subset_and_foreign_holder import SUBSET


def rank0_and_another():
    """(rank 0's name and address, a node other than rank 0) as verl will pick rank 0 among the nodes' addresses."""
    addresses = [(node, sh("docker", "exec", node, "hostname", "-i").stdout.split()[0]) for node in nodes()]
    rank0, address = module_utils("_reach").rank0_node(addresses)
    other = hosts("ray_head")[0] if rank0 != hosts("ray_head")[0] else hosts("ray_workers")[-1]
    return rank0, address, other


def test_a_node_that_cannot_reach_rank_0s_rendezvous_ports_stops_the_deploy_before_the_training():
    rank0, address, node = rank0_and_another()
    low, high = on_node(rank0, "cat", "/proc/sys/net/ipv4/ip_local_port_range").stdout.split()
    rule = ["OUTPUT", "-d", address, "-p", "tcp", "--dport", "%s:%s" % (low, high), "-m", "conntrack", "--ctstate", "NEW", "-j", "DROP"]
    on_node(node, "iptables", "-I", *rule)
    try:
        proc = playbook("deploy.yml", *SUBSET, "-e", "verl_restart=true", timeout=900)
    finally:
        on_node(node, "iptables", "-D", *rule, check=False)
    assert proc.returncode != 0, tail(proc)
    assert "%s: from its container, %s:" % (node, address) in proc.output and "did not answer (rendezvous; " in proc.output, tail(proc)
    assert "%s is verl's rank 0" % rank0 in proc.output, tail(proc)
    assert "timed out after 10 s" in proc.output and "Fix: allow TCP from %s to %s " % (node, address) in proc.output, tail(proc)
