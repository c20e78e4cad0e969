"""A worker whose Ray never joins (every packet to the head dropped inside the node): the deploy
fails within its bound (verl_ray_join_retries x verl_ray_join_timeout, one attempt of 15 s here), naming the node."""
import time

from sim_scenario import hosts, on_node, playbook, sh, tail


def test_worker_that_never_joins_fails_the_deploy_within_its_timeout_naming_it():
    head, worker = hosts("ray_head")[0], hosts("ray_workers")[-1]
    address = sh("docker", "exec", head, "hostname", "-i").stdout.split()[0]
    rules = (["-I", "OUTPUT", "-d", address, "-j", "DROP"], ["-I", "INPUT", "-s", address, "-j", "DROP"])
    for rule in rules:
        on_node(worker, "iptables", *rule)
    try:
        began = time.monotonic()
        # One short attempt: it can only time out, so its bound is all it waits (the scenario's other deploys keep the
        # default 60 s, settings.yml). The head's wait for the NPUs does not end when a join gives up: 25 s (60 s in
        # settings.yml) ends it about when the join does, which is then reported first.
        proc = playbook("deploy.yml", "-e", "verl_ray_join_retries=1", "-e", "verl_ray_join_timeout=15", "-e", "verl_ray_wait_timeout=25",
                        timeout=900)
        took = time.monotonic() - began
    finally:
        for rule in rules:
            on_node(worker, "iptables", "-D", *rule[1:], check=False)
    assert proc.returncode != 0, tail(proc)
    assert "%s (worker): Ray did not join the head" % worker in proc.output, tail(proc)
    assert "could not join the Ray head" in proc.output and "verl_ray_join_retries" in proc.output, tail(proc)
    assert "verl_ray_join_timeout" in proc.output, tail(proc)
    # Containers and scripts come first; then 1 attempt of at most 15 s and a look of at most 10 s, and the head's 25 s wait.
    assert took < 360, "the deploy took %.0f s to give up" % took
