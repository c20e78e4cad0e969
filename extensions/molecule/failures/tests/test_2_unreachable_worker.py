"""A worker that cannot be reached (its container paused): the deploy stops at once, naming it,
and nothing changes on the nodes that answer."""
import time

from sim_scenario import hosts, inner_containers, nodes, paused, playbook, tail


def test_unreachable_worker_stops_the_deploy_and_is_named():
    worker = hosts("ray_workers")[-1]
    with paused(worker):
        began = time.monotonic()
        proc = playbook("deploy.yml", timeout=300)
        took = time.monotonic() - began
    assert proc.returncode != 0, tail(proc)
    said = " ".join(proc.output.split())
    assert "did not answer, so nothing was changed on any node. %s (worker): DID NOT ANSWER: " % worker in said, tail(proc)
    assert "must answer pong" in said or "must log in" in said, tail(proc)  # what to check, by the node's connection
    assert took < 120, "an unreachable node must stop the deploy quickly, not after %.0f s" % took
    for node in nodes():
        assert inner_containers(node) == [], "%s changed although a node was unreachable" % node
