"""One node: GRPO training with the mask's features, SwanLab offline, and the SwanLab key nowhere."""
import json
import subprocess
import time

from sim_scenario import SCENARIO, hosts, in_verl, on_node, ray_view, training_pids

import yaml

# testinfra reaches each node with `docker exec` itself (its docker backend): through Ansible, the nodes' connection
# (verl_sim.cluster.node) would template a command's Go-template braces.
testinfra_hosts = ["docker://" + name for name in hosts("ray_head")]
KEY = yaml.safe_load((SCENARIO / "settings.yml").read_text())["verl_swanlab_api_key"]
STARTED = "/sim/ckpts/qwen3-8b-dapo/stand_in_started.json"
EXPERIMENT = "qwen3-8b-grpo-m1101100-1x16"


def started(node):
    return json.loads(in_verl(node, "cat %s" % STARTED).stdout)


def test_training_runs_with_the_masks_features(host):
    assert host.docker("verl").is_running
    # An Atlas A3 node: its 16 chips are 16 NPUs for Ray and the training.
    assert ray_view(host.backend.get_hostname()) == {"nodes": 1, "npu": 16.0}
    pids = training_pids(host.backend.get_hostname())
    marker = started(host.backend.get_hostname())
    assert len(pids) == 1 and marker["pid"] == int(pids[0]), "the idempotence run must not restart the training"
    assert marker["nnodes"] == 1 and marker["n_gpus_per_node"] == 16
    # The image is verl 0.9.1's: the keys that release reads (the release table, docs/versions.md), composed by its own
    # config tree. Remove padding is the model's key alone (the Megatron ones are overwritten from 0.8), the bridge is
    # mbridge (no megatron.bridge in the image), and the keys 0.9.1 removed or ignores are not rendered.
    argv = marker["argv"]
    assert "actor_rollout_ref.model.use_remove_padding=True" in argv
    assert "actor_rollout_ref.actor.use_dynamic_bsz=True" in argv
    assert "actor_rollout_ref.actor.megatron.vanilla_mbridge=True" in argv
    assert not [arg for arg in argv if "megatron.use_remove_padding" in arg or "grad_offload" in arg or "nccl_timeout" in arg], argv
    assert marker["verl_version"] == "0.9.1"


def test_the_trainer_is_verls_ppo_trainer_with_the_grpo_estimator(host):
    """verl_algorithm=grpo: verl.trainer.main_ppo composed ppo_megatron_trainer, adv_estimator=grpo, a KL loss,
    no DAPO reward manager (the stand-in records what Hydra composed, as the real module would run it)."""
    marker = started(host.backend.get_hostname())
    assert marker["entry_point"] == "verl.trainer.main_ppo"
    assert marker["config_name"] == "ppo_megatron_trainer"
    assert marker["argv"][:2] == ["--config-path=config", "--config-name=ppo_megatron_trainer"]
    assert marker["adv_estimator"] == "grpo" and marker["use_kl_loss"] is True
    assert marker["reward_manager"] == "naive"
    assert not [arg for arg in marker["argv"] if "overlong" in arg or "reward_manager" in arg]
    # The default experiment name: the model folder, the algorithm, the mask, nodes x NPUs.
    assert marker["experiment_name"] == EXPERIMENT


def test_the_training_runs_with_canns_environment(host):
    """start_verl.sh sourced the image's CANN scripts (verl's layout), and the training process carries them."""
    node = host.backend.get_hostname()
    out = in_verl(node, "cat /sim/logs/start_verl.out").stdout
    assert "CANN environment: sourced /usr/local/Ascend/ascend-toolkit/set_env.sh /usr/local/Ascend/nnal/atb/set_env.sh" in out
    pid = training_pids(node)[0]
    env = in_verl(node, "tr '\\0' '\\n' < /proc/%s/environ" % pid).stdout.splitlines()
    assert "ASCEND_TOOLKIT_HOME=/usr/local/Ascend/ascend-toolkit/latest" in env and "VERL_SIM_ATB=sourced" in env


def test_swanlab_was_installed_and_logs_offline(host):
    node = host.backend.get_hostname()
    assert in_verl(node, "python3 -c 'import swanlab; print(swanlab.__version__)'").stdout.strip() == "0.10.3"
    marker = started(node)
    assert marker["logger"] == ["console", "swanlab", "tensorboard"]
    assert marker["swanlab"] == {"mode": "offline", "log_dir": "/sim/logs/swanlab", "key_set": False}
    assert in_verl(node, "ls -d /sim/logs/swanlab/run-*").stdout.strip()


def test_tensorboard_writes_where_the_deploy_says(host):
    """verl_loggers=[tensorboard]: the trainer (as verl's TaskRunner, from the job's runtime environment) writes its event
    file below <verl_log_dir>/tensorboard/<project>/<experiment>, on the host's mounted log folder; the training log is
    named after the model folder (Qwen3-8B) and the experiment."""
    node = host.backend.get_hostname()
    folder = "/sim/logs/tensorboard/verl_hlm/%s" % EXPERIMENT
    assert started(node)["tensorboard"].startswith(folder + "/events.out.tfevents.")
    assert on_node(node, "sh", "-c", "ls %s/events.out.tfevents.*" % folder).stdout.strip()
    assert in_verl(node, "ls /sim/logs/verl_qwen3_8b_%s_*.log" % EXPERIMENT).stdout.strip()


def test_every_npu_is_sampled_into_its_file_and_tensorboard(host):
    """The node's NPU sampler (started with its Ray) keeps, while the training's workers hold the 16 chips, each chip's HBM and
    the AICore the simulated npu-smi shows for them (tests/sim/node/npu_smi.py: a model of the workers' memory), in
    <verl_log_dir>/npu_samples.<node>.jsonl and as TensorBoard scalars below the experiment's folder, npu/<node>."""
    node = host.backend.get_hostname()
    for _attempt in range(12):  # a sample every verl_npu_sample_seconds (30 s): at most a minute after the training started
        found = in_verl(node, "tail -q -n 1 /sim/logs/npu_samples.*.jsonl", check=False).stdout.strip()
        if found and '"npus"' in found.splitlines()[-1]:
            break
        time.sleep(5)
    last = json.loads(found.splitlines()[-1])
    assert [entry["id"] for entry in last["npus"]] == ["%d-%d" % (npu, chip) for npu in range(8) for chip in range(2)], last
    assert all(entry["aicore_pct"] > 0 and entry["hbm_used_mb"] > 24000 and entry["health"] == "OK" for entry in last["npus"]), last
    events = in_verl(node, "ls /sim/logs/tensorboard/verl_hlm/%s/npu/*/events.out.tfevents.*.npu" % EXPERIMENT).stdout.split()
    assert events and in_verl(node, "grep -ac 'npu/[^/]*/7-1/aicore_pct' %s" % events[-1]).stdout.strip() != "0"
    # One sampler, however often Ray's start ran.
    assert len(in_verl(node, "pgrep -f '[n]pu_sampler.py' || true").stdout.split()) == 1


def test_the_key_is_in_no_file_on_the_node(host):
    node = host.backend.get_hostname()
    # Everything on the node, including its engine's storage (the verl container's files). grep exits 2
    # when some file could not be read; it still lists every match it found.
    found = on_node(node, "grep", "-rlsF", "--exclude-dir=proc", "--exclude-dir=sys", "--exclude-dir=dev", KEY, "/", check=False)
    assert found.returncode in (1, 2) and not found.stdout, "the SwanLab key is in: %s" % found.stdout


# Reads the key from stdin, so that the scan's own arguments do not hold it.
SCAN = """
import os, sys
key = sys.stdin.read().strip().encode()
seen = hits = training = 0
for pid in os.listdir("/proc"):
    if not pid.isdigit() or int(pid) == os.getpid():
        continue
    seen += 1
    for name in ("cmdline", "environ"):
        try:
            with open("/proc/%s/%s" % (pid, name), "rb") as handle:
                data = handle.read()
            hits += key in data
            training += name == "cmdline" and b"verl.trainer.main_ppo" in data
        except OSError:
            pass
print(seen, hits, training)
"""


def test_the_key_is_in_no_process_argument_or_environment(host):
    node = host.backend.get_hostname()
    # The node's PID namespace holds the verl container's processes too (Ray, the training).
    proc = subprocess.run(["docker", "exec", "-i", node, "python3", "-c", SCAN], input=KEY, capture_output=True, text=True,
                          timeout=120, check=True)
    seen, hits, training = (int(word) for word in proc.stdout.split())
    assert training == 1 and seen > 10, "the scan must see the training and Ray (it saw %d processes)" % seen
    assert hits == 0, "%d process argument list(s)/environment(s) hold the SwanLab key" % hits


def test_the_prompt_count_is_kept_in_the_heads_container_for_the_rerun(host):
    """The container stage counted both data sets with the image's tokenizer and kept the lengths: the idempotence run
    read them (keyed by the files' and the tokenizer's sizes and mtimes) instead of counting again."""
    node = host.backend.get_hostname()
    kept = in_verl(node, "ls ~/.cache/verl-deploy/prompt-lengths/").stdout.split()
    assert len(kept) == 2 and all(name.endswith(".json") for name in kept), kept  # train.parquet and test.parquet
    for name in kept:
        lengths = json.loads(in_verl(node, "cat ~/.cache/verl-deploy/prompt-lengths/%s" % name).stdout)
        assert len(lengths["lengths"]) == 256 and lengths["failed"] == 0 and lengths["done"] == 256
