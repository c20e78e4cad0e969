"""SwanLab's login mode against a stand-in SwanLab server (tests/sim/stand_in_swanlab_server.py, on
the node; the verl container shares the node's network): the key goes into a 0600 file, the login
is stored and verified, a run is created and finished once to prove the server takes the training's
(not again on an unchanged re-run), and the key is in no output (-vvv) and no process. A wrong key
fails with SwanLab's own reason, still without showing the key. The server's refusals of a run are
proven without Docker (tests/sim/test_swanlab_stand_in.py).

Runs last (pytest takes the files in name order): it leaves the key in the container's 0600 files."""
import hashlib
import subprocess
import time

from sim_scenario import REPO, hosts, in_verl, on_node, playbook, recap, sh, tail

from test_1_deployed import KEY, SCAN

PORT = 18000
CLOUD = ["--tags", "verl_swanlab", "-e", "verl_swanlab_mode=cloud", "-e", "verl_swanlab_host=http://127.0.0.1:%d" % PORT]
SERVER_LOG = "/var/log/sim-swanlab.log"


def start_server(node):
    sh("docker", "cp", str(REPO / "tests/sim/stand_in_swanlab_server.py"), "%s:/opt/sim-swanlab-server.py" % node)
    sh("docker", "exec", "-d", node, "python3", "/opt/sim-swanlab-server.py", "--port", str(PORT),
       "--key-sha256", hashlib.sha256(KEY.encode()).hexdigest(), "--log", SERVER_LOG)
    probe = "import socket; socket.create_connection(('127.0.0.1', %d), timeout=1)" % PORT
    deadline = time.monotonic() + 20
    while on_node(node, "python3", "-c", probe, check=False).returncode != 0:
        assert time.monotonic() < deadline, "the stand-in SwanLab server did not listen within 20 s"
        time.sleep(0.5)


def test_cloud_login_stores_and_verifies_the_login_and_shows_the_key_nowhere():
    node = hosts("ray_head")[0]
    start_server(node)

    wrong = playbook("deploy.yml", *CLOUD, "-e", "verl_swanlab_api_key=sk-WRONG-key-for-the-test")
    assert wrong.returncode != 0, tail(wrong)
    assert "Log in to the SwanLab server" in wrong.output and "API key is correct" in wrong.output, tail(wrong)
    assert "sk-WRONG-key-for-the-test" not in wrong.stdout + wrong.stderr

    proc = playbook("deploy.yml", "-vvv", *CLOUD)
    assert proc.returncode == 0, tail(proc)
    assert KEY not in proc.stdout + proc.stderr, "the SwanLab key is in the -vvv output"
    served = on_node(node, "cat", SERVER_LOG).stdout.splitlines()
    # After the login, the head's proof: a run created in the training's workspace and project, then finished.
    login = len(served) - served[::-1].index("POST /api/login/api_key 200") - 1
    assert "POST /api/project/TrainingMaster/verl_hlm/experiment 201" in served[login:], served[login:]
    assert served[-1].startswith("PUT /api/project/TrainingMaster/verl_hlm/runs/") and served[-1].endswith("/state 200"), served[login:]
    assert "'verl-deploy-check'" in proc.stdout and "was created and finished to prove it" in proc.stdout, tail(proc)
    modes = in_verl(node, "stat -c '%a %U %n' /root/.swanlab/verl_deploy_api_key /root/.swanlab/.netrc").stdout.split("\n")
    assert [line.split()[:2] for line in modes if line] == [["600", "root"], ["600", "root"]]
    assert "machine http://127.0.0.1:%d" % PORT in in_verl(node, "cat /root/.swanlab/.netrc").stdout

    scan = subprocess.run(["docker", "exec", "-i", node, "python3", "-c", SCAN], input=KEY, capture_output=True, text=True,
                          timeout=120, check=True)
    assert scan.stdout.split()[1] == "0", "a process argument list or environment holds the SwanLab key"

    before = len(on_node(node, "cat", SERVER_LOG).stdout.splitlines())
    again = playbook("deploy.yml", *CLOUD)
    assert again.returncode == 0, tail(again)
    assert {counts["changed"] for counts in recap(again.stdout).values()} == {0}, tail(again)
    # Unchanged: the login again, but no new run (the record beside the key file says it was proven).
    assert on_node(node, "cat", SERVER_LOG).stdout.splitlines()[before:] == ["POST /api/login/api_key 200"]
    assert "no new run this time" in again.stdout, tail(again)
