"""verl.deploy.wait_progress: progress lines appear while the wait runs, the bound holds, failures name the wait.

A real ansible-playbook against the local connection; the probe is a stand-in shell command whose progress
advances on every call (a counter file), so each poll has something new to show.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
ANSIBLE_PLAYBOOK = str(Path(sys.executable).with_name("ansible-playbook"))

PROBE = """n=$(( $(cat "$1" 2>/dev/null || echo 0) + 1 )); echo "$n" > "$1"
echo "step $n"; echo "$n/$2 nodes, $((n * 8))/$(($2 * 8)) NPU"
[ "$n" -ge "$2" ] && exit 0
[ "$n" -ge "$3" ] && { echo "node gone" >&2; exit 1; }
exit 3
"""

PLAY = """- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Wait for the stand-in (bounded by {timeout} s)
      verl.deploy.wait_progress:
        what: Ray
        argv: [bash, "{probe}", "{counter}", "{done}", "{fail}"]
        timeout: {timeout}
        interval: 1
      register: waited
    - name: Show the result
      ansible.builtin.debug:
        var: waited.polls
"""


def run(tmp_path, done, fail=99, timeout=30, check=False):
    counter = tmp_path / "counter"
    play = tmp_path / "play.yml"
    (tmp_path / "probe.sh").write_text(PROBE)
    play.write_text(PLAY.format(probe=tmp_path / "probe.sh", counter=counter, done=done, fail=fail, timeout=timeout))
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_STDOUT_CALLBACK="default", PYTHONUNBUFFERED="1")
    argv = [ANSIBLE_PLAYBOOK, "-i", "localhost,", str(play), "-e", "ansible_python_interpreter=%s" % sys.executable] + (["--check"] if check else [])
    proc = subprocess.Popen(argv, cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    for line in proc.stdout:
        lines.append((time.monotonic(), line.rstrip("\n")))
    proc.wait(timeout=120)
    return proc.returncode, lines


def test_progress_lines_appear_as_the_wait_goes(tmp_path):
    rc, lines = run(tmp_path, done=4)
    text = "\n".join(line for _t, line in lines)
    assert rc == 0, text
    progress = [(t, line) for t, line in lines if line.startswith("[localhost] Ray: ")]
    assert [line.split(", ")[0] for _t, line in progress] == ["[localhost] Ray: %d/4 nodes" % n for n in range(1, 5)]
    assert progress[0][1].endswith("/30 s") and "8/32 NPU" in progress[0][1]
    # Printed while waiting, not at the end: the lines come about one interval apart.
    assert progress[-1][0] - progress[0][0] > 2
    assert "waited.polls: 4" in text


def test_the_bound_holds_and_the_failure_names_the_wait(tmp_path):
    start = time.monotonic()
    rc, lines = run(tmp_path, done=1000, timeout=3)
    text = "\n".join(line for _t, line in lines)
    assert rc != 0
    assert time.monotonic() - start < 60
    assert "Ray: not done within 3 s; the last progress:" in text and "/1000 nodes" in text


def test_a_failing_probe_stops_at_once_with_what_it_said(tmp_path):
    rc, lines = run(tmp_path, done=10, fail=2)
    text = "\n".join(line for _t, line in lines)
    assert rc != 0
    assert "Ray: the probe failed (rc 1)" in text and "node gone" in text
    assert len([line for _t, line in lines if line.startswith("[localhost] Ray: ")]) == 2


@pytest.mark.parametrize("timeout", [0, -5])
def test_a_bound_below_one_second_is_refused(tmp_path, timeout):
    rc, lines = run(tmp_path, done=1, timeout=timeout)
    assert rc != 0
    assert "give at least 1 second" in "\n".join(line for _t, line in lines)


def test_check_mode_waits_for_nothing_and_says_so(tmp_path):
    rc, lines = run(tmp_path, done=3, check=True)
    text = "\n".join(line for _t, line in lines)
    assert rc == 0, text
    assert not [line for _t, line in lines if line.startswith("[localhost] Ray: ")]
    assert "skipping: [localhost]" in text and not (tmp_path / "counter").exists(), "the probe did not run"


REPORT_PLAY = """- hosts: all
  connection: local
  gather_facts: false
  tasks:
    - name: Wait for the stand-in on every node
      verl.deploy.wait_progress:
        what: Ray
        argv: [bash, "{probe}", "{counter}-{{{{ inventory_hostname }}}}", "{{{{ 3 if inventory_hostname == 'n1' else 5 }}}}", "99"]
        timeout: 30
        interval: 1
"""


def test_under_the_report_callback_many_nodes_poll_as_one_line_and_each_node_is_in_the_log(tmp_path):
    """verl.deploy.report: the nodes' lines go to the run's log; the terminal shows one line for all of them."""
    (tmp_path / "probe.sh").write_text(PROBE)
    play = tmp_path / "play.yml"
    play.write_text(REPORT_PLAY.format(probe=tmp_path / "probe.sh", counter=tmp_path / "counter"))
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_STDOUT_CALLBACK="verl.deploy.report",
               VERL_DEPLOY_LOG_DIR=str(tmp_path / "logs"))
    argv = [ANSIBLE_PLAYBOOK, "-i", "n1,n2,n3,", str(play), "-e", "ansible_python_interpreter=%s" % sys.executable]
    proc = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "[n1] Ray:" not in proc.stdout and "[n2] Ray:" not in proc.stdout
    summaries = [line for line in proc.stdout.splitlines() if line.startswith("Ray: ")]
    # The first poll's line; the next only after SUMMARY_EVERY seconds (the wait takes about 5).
    assert len(summaries) == 1, proc.stdout
    assert summaries[0].startswith("Ray: 0/3 done; waiting for ") and "/30 s)" in summaries[0]
    log = (tmp_path / "logs").glob("play-*.log")
    text = next(log).read_text()
    for host in ("n1", "n2", "n3"):
        assert "[%s] Ray: 1/" % host in text
    assert "[n2] Ray: 5/5 nodes" in text
    assert not list((tmp_path / "logs").glob("*.progress")), "the progress folder is removed at the end"
