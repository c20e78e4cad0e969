"""playbooks/render.yml end to end: the README's command, multi-node inventories, bad input, secrets."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader

from helpers.launch_helpers import REPO, SECRET_KEY, launch_ok, render

ANSIBLE_PLAYBOOK = str(Path(sys.executable).with_name("ansible-playbook"))
PATHS = [
    "-e", "verl_model_path=/models/Qwen3-8B",
    "-e", "verl_train_file=/data/train.parquet",
    "-e", "verl_test_file=/data/test.parquet",
    "-e", "verl_ckpts_dir=/ckpt",
]


def playbook(*args, inventory=None, extra_vars_file=None, verbosity=None):
    cmd = [ANSIBLE_PLAYBOOK, "playbooks/render.yml", *args]
    if inventory:
        cmd += ["-i", str(inventory)]
    if extra_vars_file:
        cmd += ["-e", "@" + str(extra_vars_file)]
    if verbosity:
        cmd.append("-" + "v" * verbosity)
    env = dict(os.environ, ANSIBLE_FORCE_COLOR="0", ANSIBLE_NOCOLOR="1")
    return subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)


def test_readme_render_command_writes_both_scripts(tmp_path):
    out = tmp_path / "out"
    proc = playbook("-e", "mask=1010000", *PATHS, "-e", "verl_output_dir=%s" % out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for name in ("start_verl.sh", "run_training.sh"):
        path = out / "localhost" / name
        assert path.is_file()
        assert os.access(path, os.X_OK)
    text = (out / "localhost" / "run_training.sh").read_text()
    assert '"actor_rollout_ref.actor.megatron.use_remove_padding=${USE_REMOVE_PADDING}"' in text
    assert '"actor_rollout_ref.ref.megatron.use_remove_padding=${USE_REMOVE_PADDING}"' in text
    assert "USE_REMOVE_PADDING=True" in text and "PARAM_OFFLOAD=True" in text
    assert "enable_prefix_caching=False" in text


# What warns at a run's start: cryptography 51 deprecates DSA, whose classes ansible-core's SSH agent client imports
# when the CLI starts; requirements.txt (and meta/ee-requirements.txt) keep cryptography below 51.
DEPRECATION = ("DeprecationWarning", "[DEPRECATION WARNING]")


def test_no_playbook_prints_a_deprecation_warning(tmp_path):
    """Issue 60: every run printed a 2-line CryptographyDeprecationWarning before anything else. Every playbook of the
    collection parsed, and a render on localhost run, through the report callback as a user's terminal shows them."""
    env = dict(os.environ, ANSIBLE_FORCE_COLOR="0", ANSIBLE_NOCOLOR="1", ANSIBLE_STDOUT_CALLBACK="verl.deploy.report",
               VERL_DEPLOY_LOG_DIR=str(tmp_path / "logs"))
    env.pop("PYTHONWARNINGS", None)
    books = sorted(str(path.relative_to(REPO)) for path in (Path(REPO) / "playbooks").glob("*.yml"))
    checked = subprocess.run([ANSIBLE_PLAYBOOK, "--syntax-check", *books], cwd=REPO, env=env, capture_output=True, text=True,
                             timeout=300, check=False)
    rendered = subprocess.run([ANSIBLE_PLAYBOOK, "playbooks/render.yml", "-e", "mask=0000000", *PATHS,
                               "-e", "verl_output_dir=%s" % (tmp_path / "out")], cwd=REPO, env=env, capture_output=True,
                              text=True, timeout=300, check=False)
    for proc in (checked, rendered):
        said = proc.stdout + proc.stderr
        assert proc.returncode == 0, said
        assert not [word for word in DEPRECATION if word in said], said


def test_second_render_changes_nothing(tmp_path):
    out = tmp_path / "out"
    first = playbook("-e", "mask=0000000", *PATHS, "-e", "verl_output_dir=%s" % out)
    assert first.returncode == 0, first.stdout
    second = playbook("-e", "mask=0000000", *PATHS, "-e", "verl_output_dir=%s" % out)
    assert second.returncode == 0, second.stdout
    assert "changed=0" in second.stdout.split("PLAY RECAP")[-1]


MULTI_NODE = {
    "ray_cluster": {
        "children": {
            "ray_head": {"hosts": {"head1": {"ansible_host": "10.10.0.1"}}},
            "ray_workers": {"hosts": {
                "worker1": {"ansible_host": "10.10.0.2", "verl_socket_ifname": "enp1s0"},
                "worker2": {"ansible_host": "10.10.0.3", "verl_npu_devices": "8,9,10,11,12,13,14,15", "verl_node_ip": "10.10.0.3"},
            }},
        },
        "vars": {
            # Any connection attempt would fail fast: rendering must not touch the hosts.
            "ansible_connection": "ssh",
            "ansible_port": 1,
            "verl_train_batch_size": 48,
        },
    }
}


def test_multi_node_inventory_renders_every_host_without_touching_it(tmp_path):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump(MULTI_NODE))
    out = tmp_path / "out"
    proc = playbook("-e", "mask=0000001", *PATHS, "-e", "verl_output_dir=%s" % out, inventory=inventory)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    head = (out / "head1" / "start_verl.sh").read_text()
    worker1 = (out / "worker1" / "start_verl.sh").read_text()
    worker2 = (out / "worker2" / "start_verl.sh").read_text()
    assert 'ROLE="head"' in head and 'ROLE="worker"' in worker1
    for text in (head, worker1, worker2):
        assert "MASTER_ADDR=10.10.0.1" in text
        assert "export NNODES=3" in text and "export NPU_PER_NODE=8" in text
    assert "SOCKET_IFNAME=enp1s0" in worker1
    # NPUs 8-15 of the host are the container's 0-7: the Ascend runtime there speaks those logical ids.
    assert "export ASCEND_RT_VISIBLE_DEVICES=0,1,2,3,4,5,6,7" in worker2 and "CURRENT_IP=10.10.0.3" in worker2
    assert "# --- NPUs of this node: 8,9,10,11,12,13,14,15 on the host" in worker2
    # The training command is the same on every node.
    scripts = {(out / h / "run_training.sh").read_text().split("\n", 3)[3] for h in ("head1", "worker1", "worker2")}
    assert len(scripts) == 1


def test_playbook_and_helper_render_identical_scripts(tmp_path):
    """The tests render through launch_helpers; prove that equals what render.yml writes."""
    out = tmp_path / "out"
    extra = tmp_path / "extra.yml"
    values = {
        "mask": "1101101",
        "verl_swanlab_enabled": True,
        "verl_swanlab_host": "http://192.168.1.100:8000",
        "verl_swanlab_api_key": SECRET_KEY,
        "verl_extra_env": {"HCCL_BUFFSIZE": "300"},
        "verl_extra_overrides": ["trainer.val_before_train=True"],
        "verl_loggers": ["tensorboard"],
        "verl_output_dir": str(out),
    }
    extra.write_text(yaml.safe_dump(values))
    proc = playbook(*PATHS, extra_vars_file=extra)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    config = launch_ok(
        host="localhost", head={"name": "localhost", "ansible_host": "127.0.0.1"}, api_key=SECRET_KEY,
        verl_feature_mask="1101101", verl_swanlab_enabled=True, verl_swanlab_host="http://192.168.1.100:8000",
        verl_extra_env={"HCCL_BUFFSIZE": "300"}, verl_extra_overrides=["trainer.val_before_train=True"], verl_output_dir=str(out),
        verl_loggers=["tensorboard"],
    )
    for name in ("start_verl.sh", "run_training.sh"):
        assert (out / "localhost" / name).read_text() == render(config, name)


def test_the_loggers_fix_works_as_the_refusal_gives_it(tmp_path):
    """-e verl_loggers=console,tensorboard (the refusal's fix, a string on the command line) renders TensorBoard's folder."""
    out = tmp_path / "out"
    proc = playbook(*PATHS, "-e", "verl_loggers=console,tensorboard", "-e", "verl_output_dir=%s" % out)
    assert proc.returncode == 0, proc.stdout[-3000:]
    text = (out / "localhost" / "run_training.sh").read_text()
    assert """LOGGER='["console","tensorboard"]'""" in text
    assert "TENSORBOARD_DIR=/mnt/project/verl/logs/tensorboard/verl_hlm/qwen3-8b-dapo-m0000000-1x8" in text, text


def test_swanlab_key_never_shown_or_written(tmp_path):
    out = tmp_path / "out"
    extra = tmp_path / "secret.yml"
    extra.write_text(yaml.safe_dump({"verl_swanlab_api_key": SECRET_KEY}))
    proc = playbook("-e", "mask=1111111", *PATHS, "-e", "verl_output_dir=%s" % out, "-e", "verl_swanlab_enabled=true",
                    "-e", "verl_swanlab_host=http://192.168.1.100:8000", extra_vars_file=extra, verbosity=4)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert SECRET_KEY not in proc.stdout + proc.stderr
    for path in out.rglob("*"):
        if path.is_file():
            assert SECRET_KEY not in path.read_text()
    text = (out / "localhost" / "start_verl.sh").read_text()
    assert "export SWANLAB_MODE=cloud" in text and "SWANLAB_API_KEY_FILE=" in text


def test_the_trackers_keys_are_never_shown_or_written(tmp_path):
    """wandb's and MLflow's keys (from a vault file, as -e @file gives them), at -vvvv: not in the output, not in any
    rendered file; start_verl.sh names the files it reads them from."""
    out = tmp_path / "out"
    extra = tmp_path / "secret.yml"
    keys = {"verl_wandb_api_key": "wandb-" + SECRET_KEY, "verl_mlflow_tracking_token": "mlflow-" + SECRET_KEY}
    extra.write_text(yaml.safe_dump(keys))
    proc = playbook(*PATHS, "-e", "verl_output_dir=%s" % out, "-e", "verl_loggers=console,wandb,mlflow",
                    "-e", '{"verl_extra_env": {"MLFLOW_TRACKING_URI": "http://10.0.0.9:5000"}}', extra_vars_file=extra, verbosity=4)
    assert proc.returncode == 0, proc.stdout[-3000:]
    for key in keys.values():
        assert key not in proc.stdout + proc.stderr
        for path in out.rglob("*"):
            assert not path.is_file() or key not in path.read_text(), path
    text = (out / "localhost" / "start_verl.sh").read_text()
    assert "for key_name in WANDB_API_KEY MLFLOW_TRACKING_TOKEN; do" in text and "export MLFLOW_TRACKING_URI=" in text


BAD_INPUTS = [
    # (extra vars, variable named, value shown, words of the fix)
    (["-e", "mask=012"], "mask", "'012'", "seven characters"),
    (["-e", "mask=11111111"], "mask", "'11111111'", "seven characters"),
    (["-e", "mask=abcdefg"], "mask", "'abcdefg'", "each 0 or 1"),
    (["-e", "mask="], "mask", "''", "seven characters"),
    (["-e", '{"mask": 10000}'], "mask", "10000", "Give the mask as text"),
    # Without a host the model's heads and layers are unknown (config.json is read by the pre-check): TP 3 and PP 5
    # are refused by the cluster's rules already.
    (["-e", "verl_train_tp=3"], "verl_train_tp", "3 x 2 = 6", "whose product divides 8"),
    (["-e", "verl_train_tp=2", "-e", "verl_train_pp=1"], "verl_train_tp", "2 x 1 = 2", "multiple of 8"),
    (["-e", "verl_gen_tp=2"], "verl_gen_tp", "verl_gen_tp=2", "set verl_gen_tp=4"),
    (["-e", "verl_train_pp=5"], "verl_train_pp", "4 x 5 = 20", "whose product divides 8"),
    (["-e", "verl_train_batch_size=16", "-e", "verl_ppo_mini_batch_size=32"], "verl_ppo_mini_batch_size",
     "verl_ppo_mini_batch_size=32", "at most 16"),
    (["-e", "verl_ppo_micro_batch_size_per_gpu=3"], "verl_ppo_micro_batch_size_per_gpu", "=3", "divides 256"),
    (["-e", "mask=0000001", "-e", "verl_train_tp=8", "-e", "verl_train_pp=1"], "verl_train_pp", "verl_train_pp=1", "bit 6"),
    (["-e", "verl_train_steps=abc"], "verl_train_steps", "'abc'", "whole number"),
    (["-e", "verl_model_path="], "verl_model_path", "verl_model_path is empty", "absolute path"),
    (["-e", "verl_model_path=models/Qwen3-8B"], "verl_model_path", "'models/Qwen3-8B'", "absolute path"),
    (["-e", "verl_npu_devices=0,1,x"], "verl_npu_devices", "'x'", "whole numbers"),
    (["-e", "verl_loggers=console,neptune"], "verl_loggers", "'neptune'", "-e verl_loggers=console,tensorboard"),
    (["-e", "verl_swanlab_enabled=true", "-e", "verl_swanlab_api_key=k"], "verl_swanlab_host", "empty", "verl_swanlab_host=http"),
    (["-e", "verl_swanlab_enabled=true", "-e", "verl_swanlab_host=http://10.0.0.9:8000"], "verl_swanlab_api_key", "empty", "vault"),
]


def _without_model_path(args):
    """PATHS, less verl_model_path when the case gives its own."""
    base = list(PATHS)
    if any(a.startswith("verl_model_path=") for a in args):
        base = [a for a in base if a != "verl_model_path=/models/Qwen3-8B"]
        base = [a for i, a in enumerate(base) if not (a == "-e" and (i + 1 >= len(base) or base[i + 1] == "-e"))]
    return base


def _extra_vars(args):
    """The extra vars of `-e ...` arguments, parsed by Ansible's own code as ansible-playbook does (key=value by
    parse_kv, YAML/JSON by the DataLoader, merged in order)."""
    from ansible.parsing.splitter import parse_kv
    from ansible.utils.vars import combine_vars

    values = {}
    for flag, arg in zip(args[::2], args[1::2]):
        assert flag == "-e", args
        values = combine_vars(values, DataLoader().load(arg) if arg[:1] in "[{" else parse_kv(arg))
    return values


# Every bad input is checked in process by the check render.yml's first play runs (settings_problems over the hosts'
# variables, here the local inventory's localhost with the -e values as Ansible parses them) and its refusal read as the
# play prints it; these go through render.yml itself as well (-e key=value, -e JSON, two -e that break a rule together):
# the play stops before anything is written and prints the same refusal.
THROUGH_THE_PLAYBOOK = ("-e mask=012", '-e {"mask": 10000}', "-e verl_train_tp=2 -e verl_train_pp=1")


def _ids(cases):
    return [" ".join(case[0]) for case in cases]


@pytest.mark.parametrize("args, variable, value, fix", BAD_INPUTS, ids=_ids(BAD_INPUTS))
def test_bad_input_is_refused_with_its_fix(args, variable, value, fix):
    from ansible_collections.verl.deploy.plugins.filter.settings_problems import settings_problems

    from helpers.launch_helpers import RULES, SPEC

    inventory = yaml.safe_load((REPO / "inventories/local/hosts.yml").read_text())
    host = inventory["ray_cluster"]["children"]["ray_head"]["hosts"]["localhost"]
    extra = _extra_vars(_without_model_path(args) + list(args))
    problems = settings_problems({"localhost": dict(host, **extra)}, head="localhost", spec=SPEC, rules=RULES)
    failure = "\n".join(problem["text"] for problem in problems)  # as preflight's "need fixing" task lists them
    assert problems, extra
    assert variable in failure, failure[:2000]
    assert value in failure, failure[:2000]
    assert fix in failure, failure[:2000]


PLAYBOOK_CASES = [case for case in BAD_INPUTS if " ".join(case[0]) in THROUGH_THE_PLAYBOOK]


def test_the_playbook_cases_are_bad_inputs():
    assert len(PLAYBOOK_CASES) == len(THROUGH_THE_PLAYBOOK)


@pytest.mark.parametrize("args, variable, value, fix", PLAYBOOK_CASES, ids=_ids(PLAYBOOK_CASES))
def test_bad_input_fails_before_anything_is_written(args, variable, value, fix, tmp_path):
    out = tmp_path / "out"
    proc = playbook(*_without_model_path(args), *args, "-e", "verl_output_dir=%s" % out)
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0, output[-2000:]
    assert not out.exists(), "something was written despite the bad input"
    failure = output[output.find("need fixing"):]  # the refusals are listed once, then the task fails with their count
    assert variable in failure, failure[:2000]
    assert value in failure, failure[:2000]
    assert fix in failure, failure[:2000]


def report_render(tmp_path, nodes):
    """render.yml over `nodes` inventory nodes with the console report ansible.cfg sets (verl.deploy.report)."""
    inventory = tmp_path / ("hosts-%d.yml" % nodes)
    workers = {"node%03d" % n: {"ansible_host": "10.10.%d.%d" % (n // 200, n % 200 + 2)} for n in range(2, nodes + 1)}
    inventory.write_text(yaml.safe_dump({"ray_cluster": {
        "children": {"ray_head": {"hosts": {"node001": {"ansible_host": "10.10.0.1"}}}, "ray_workers": {"hosts": workers}},
        # A layout whose data-parallel ranks (a node each, TP 8) divide the mini batch at both sizes: 48 x 8 sequences.
        "vars": {"ansible_connection": "ssh", "ansible_port": 1, "verl_train_tp": 8, "verl_train_pp": 1,
                 "verl_train_batch_size": 48, "verl_ppo_mini_batch_size": 48}}}))
    cmd = [ANSIBLE_PLAYBOOK, "playbooks/render.yml", "-i", str(inventory), "-e", "mask=0000000", *PATHS,
           "-e", "verl_output_dir=%s" % (tmp_path / ("out-%d" % nodes))]
    env = dict(os.environ, ANSIBLE_FORCE_COLOR="0", ANSIBLE_NOCOLOR="1", ANSIBLE_STDOUT_CALLBACK="verl.deploy.report",
               VERL_DEPLOY_LOG_DIR=str(tmp_path / ("logs-%d" % nodes)))
    return subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=False)


def test_the_console_report_is_as_long_for_48_nodes_as_for_3_and_the_log_holds_every_node(tmp_path):
    """Issue 31: the console grows by at most a line or two per stage, whatever the cluster's size; the whole task
    stream (every node's result) is in the log file the report names."""
    for nodes in (3, 48):  # an earlier render's folder: not this run's, never named
        (tmp_path / ("out-%d" % nodes) / "old-node").mkdir(parents=True)
    runs = {nodes: report_render(tmp_path, nodes) for nodes in (3, 48)}
    for nodes, proc in runs.items():
        assert proc.returncode == 0, proc.stdout + proc.stderr
        lines = proc.stdout.splitlines()
        assert lines[0].startswith("render.yml: the full log is "), lines
        log = Path(lines[-1].split(" Full log: ")[-1])
        assert log.parent == tmp_path / ("logs-%d" % nodes) and log.is_file(), lines
        text = log.read_text()
        assert "PLAY RECAP" in text and all("changed: [node%03d" % n in text for n in range(1, nodes + 1))
        assert [line.split(" (")[0] for line in lines if line.startswith("[")] == [
            "[0/1] Find the collection, check the inventory and the settings: done on the controller",
            "[1/1] Render the launch scripts of every node: changed on %d" % nodes]
        # Where this run wrote what, its nodes only (issue 60).
        names = "node001, node002, node003" + (" and 45 more" if nodes == 48 else "")
        assert "Rendered start_verl.sh and run_training.sh of %d node(s) into %s/<node>/: %s." % (
            nodes, tmp_path / ("out-%d" % nodes), names) in lines, lines
        assert "old-node" not in proc.stdout
        # The nodes, never the controller (issue 60: "Result: 49 host(s)" for 48 nodes).
        assert lines[-1].startswith("Result: %d host(s), changed on %d (" % (nodes, nodes)), lines
        assert "TASK [" not in proc.stdout and "included:" not in proc.stdout and "/roles/" not in proc.stdout
    small, large = (len(runs[nodes].stdout.splitlines()) for nodes in (3, 48))
    assert small <= 15 and large <= small + 2, (runs[3].stdout, runs[48].stdout)
