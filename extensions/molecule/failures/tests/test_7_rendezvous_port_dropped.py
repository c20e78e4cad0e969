"""A node whose packets to verl's rank-0 node's ephemeral ports are dropped (a firewall that opens only Ray's port): Ray
forms, and the deploy stops before the training starts, naming the node, rank 0's address and port and the fix, instead
of the training waiting 30 minutes at its rendezvous (verl#2492: "TCP client failed to connect/validate to host
...:37991"). Rank 0 is the first node by address as text (verl's rule, plugins/module_utils/_reach.py rank0_node), not
always the head: the rule is dropped on another node towards it, the head when rank 0 is a worker.
The deploy is a restart (verl_restart=true), so a training is to start: a training that runs from the same settings on a
cluster the deploy leaves as it was has been through its rendezvous already, and the check is skipped then.

In the same deploy a worker's container sees another folder at verl_ckpts_dir (a bind mount in its mount namespace, as a
second NFS server exporting the same path would be: the pre-check's identity rules read the node's mount, which is the
shared one): the file the head writes there is not seen, and the worker is named as not on the head's storage. With both
fixes (the rule and the mount gone) the Ray stage passes again (--tags verl_ray: the proof and the connects, no training
started)."""
import shlex

from sim_scenario import hosts, module_utils, nodes, on_node, playbook, sh, tail

from test_4_npu_subset_and_foreign_holder import CKPTS, SUBSET


def rank0_and_another():
    """(rank 0's name and address, a node other than rank 0) as verl will pick rank 0 among the nodes' addresses."""
    addresses = [(node, sh("docker", "exec", node, "hostname", "-i").stdout.split()[0]) for node in nodes()]
    rank0, address = module_utils("_reach").rank0_node(addresses)
    other = hosts("ray_head")[0] if rank0 != hosts("ray_head")[0] else hosts("ray_workers")[-1]
    return rank0, address, other


def in_mount_namespace(node, script, check=True):
    """script run in the mount and pid namespaces of `node`'s training container (its /proc), with the node's own privileges
    (nsenter)."""
    return on_node(node, "sh", "-c", 'nsenter -t "$(docker inspect -f "{{.State.Pid}}" verl)" -m -p sh -c %s' % shlex.quote(script),
                   check=check)


def test_a_node_that_cannot_reach_rank_0s_rendezvous_ports_stops_the_deploy_before_the_training():
    rank0, address, node = rank0_and_another()
    apart = hosts("ray_workers")[0]
    low, high = on_node(rank0, "cat", "/proc/sys/net/ipv4/ip_local_port_range").stdout.split()
    rule = ["OUTPUT", "-d", address, "-p", "tcp", "--dport", "%s:%s" % (low, high), "-m", "conntrack", "--ctstate", "NEW", "-j", "DROP"]
    on_node(node, "iptables", "-I", *rule)
    in_mount_namespace(apart, "mkdir -p /tmp/another-storage && mount --bind /tmp/another-storage %s" % CKPTS)
    mounted = in_mount_namespace(apart, "grep ' %s ' /proc/self/mountinfo" % CKPTS).stdout
    try:
        proc = playbook("deploy.yml", *SUBSET, "-e", "verl_restart=true", timeout=900)
    finally:
        on_node(node, "iptables", "-D", *rule, check=False)
        after = in_mount_namespace(apart, "grep ' %s ' /proc/self/mountinfo; umount %s" % (CKPTS, CKPTS), check=False)
    assert after.returncode == 0, (mounted, after.stdout, after.stderr, tail(proc))
    assert proc.returncode != 0, tail(proc)
    assert "%s: verl_ckpts_dir %s is not the head's storage: the file the head wrote there (%s/.verl-deploy-storage-" % (
        apart, CKPTS, CKPTS) in proc.output, tail(proc)
    assert "Fix: mount the one shared storage at %s on every node" % CKPTS in proc.output, tail(proc)
    others = [worker for worker in hosts("ray_workers") if worker != apart]
    assert all("%s: verl_ckpts_dir" % worker not in proc.output for worker in others), tail(proc)
    assert "%s: from its container, %s:" % (node, address) in proc.output and "did not answer (rendezvous; " in proc.output, tail(proc)
    assert "%s is verl's rank 0" % rank0 in proc.output, tail(proc)
    assert "timed out after 10 s" in proc.output and "Fix: allow TCP from %s to %s " % (node, address) in proc.output, tail(proc)
    # Both fixes made (the rule and the other storage gone): the Ray stage passes, and its file is there until a training
    # starts (verl_control.sh start-training removes it).
    fixed = playbook("deploy.yml", *SUBSET, "-e", "verl_restart=true", "--tags", "verl_ray", timeout=900)
    assert fixed.returncode == 0, tail(fixed)
    assert "is not the head's storage" not in fixed.output and "did not answer (rendezvous; " not in fixed.output, tail(fixed)
    assert on_node(apart, "sh", "-c", "ls -a %s | grep -c '^.verl-deploy-storage-'" % CKPTS).stdout.strip() in ("1", "2")
