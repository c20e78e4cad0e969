"""Stand-in for verl's two entry points in the simulated Ascend cluster (tests/sim), of the release the image is built for.

The verl-sim/verl image has this file where verl has the real ones: /verl/recipe/dapo/main_dapo.py (DAPO, in verl 0.7.0's
own recipe/; from 0.7.1 recipe/ is a verl-recipe checkout, tests/sim/stand_in_recipe.py) and /verl/verl/trainer/main_ppo.py
(GRPO, GSPO; DAPO from 0.7.1). Beside it /verl/verl/trainer/config is that release's config tree from its wheel, so Hydra
composes against exactly that release's schema. run_training.sh starts it exactly like the real trainer, from /verl:

    python3 -m recipe.dapo.main_dapo --config-path=config --config-name=dapo_megatron_trainer <overrides>
    python3 -m verl.trainer.main_ppo --config-path=config --config-name=ppo_megatron_trainer <overrides>

What it does, in the real trainer's order:
1. Hydra composes the overrides against the image's verl's own schema (@hydra.main with config_path
   "config", relative to this file: /verl/recipe/dapo/config, whose overlay adds
   /verl/verl/trainer/config to the search path, as in a verl checkout; or /verl/verl/trainer/config
   itself). A bad override ends the run with Hydra's own message, exit 1. Every interpolation is
   resolved, as verl's TaskRunner does.
2. trainer.device must be "npu". verl's own config checks, run unmodified from verl's files in the image
   (verl/utils/config.py validate_config, the config dataclasses, the DAPO reward manager), must accept
   the config: main_ppo runs them before any worker starts, main_dapo's workers fail on them later.
3. ray.init() joins the running Ray cluster as verl's does (no address: RAY_ADDRESS, else the cluster `ray start`
   recorded in Ray's default temporary folder, else a Ray of its own with this node's NPUs only, ray #55244); it needs at least
   trainer.n_gpus_per_node x trainer.nnodes available NPUs, else it fails with verl's own
   ValueError "Total available GPUs X is less than total desired GPUs Y". Then, as verl's resource
   pool and worker group do (verl/single_controller/ray/base.py: one STRICT_PACK placement group of
   n_gpus_per_node one-NPU bundles per node; a Ray actor per bundle with resources {"NPU": 1}), it
   places one worker per NPU on every node. Ray gives each worker one NPU id in
   ASCEND_RT_VISIBLE_DEVICES (its accelerator manager does so for NPU resources); the worker calls
   torch_npu.npu.set_device(LOCAL_RANK=0), as verl's Megatron workers do, through the simulated Ascend
   runtime (tests/sim/stand_in_torch_npu.py), and keeps the device for the training's life, so that
   every node's npu-smi lists the training's processes. A bad device id fails the worker's creation
   with the runtime's EE1001 and the training with Ray's error, as verl does. (Deviation: the bundles
   ask no CPU, since the simulated nodes have 2 cores; verl's ask one per NPU.)
4. With "swanlab" in trainer.logger, does what verl/utils/tracking.py does: reads SWANLAB_API_KEY,
   SWANLAB_LOG_DIR and SWANLAB_MODE, logs in when a key is set, swanlab.init(...), logs each step and
   finishes on stop (offline/local modes write LOG_DIR/run-*; a missing swanlab fails like verl).
   With "tensorboard", does what its _TensorboardAdapter does: writes to TENSORBOARD_DIR (the environment of verl's
   TaskRunner, which run_ppo gives it from ray_kwargs.ray_init.runtime_env.env_vars; else tensorboard_log/<project>/
   <experiment> below the working directory), prints "Saving tensorboard log to <dir>.", and adds each step's metrics
   as scalars, in the file torch.utils.tensorboard's SummaryWriter writes (tensorboard/summary/writer/
   event_file_writer.py: events.out.tfevents.<time>.<host>.<pid>.<n>, TFRecord-framed Event protos, "brain.Event:2"
   first), encoded here by hand since the image has no tensorboard package (_EventFile).
5. Resumes as verl's RayPPOTrainer._load_checkpoint does: with trainer.resume_mode=auto from the step
   named by <trainer.default_local_dir>/latest_checkpointed_iteration.txt, when there is one; with
   resume_path from the global_step_<N> folder trainer.resume_from_path names; with disable from 0.
   Like verl, it saves a checkpoint every trainer.save_freq steps and at its last step: global_step_N/ with the files of
   verl's save (token contents), in verl's order, then that tracker file.
6. Writes <trainer.default_local_dir>/stand_in_started.json (the values it checked, its pid, the verl version, the entry
   point and config it ran as, the key of every override it was given (Hydra's task overrides, `+`/`++` kept),
   the advantage estimator, the step it resumed from, each worker's node, pid and device), then runs a step every
   SIM_TRAINER_STEP_SECONDS (default 2), each a call on every worker, and prints one `step:N - ...` line per step with
   verl's keys (timing_s/step, timing_s/gen, timing_s/update_actor, perf/throughput, perf/max_memory_*_gb) whose values
   follow the feature mask through a MODEL of what each feature does (FEATURE_EFFECTS, with its sources: recompute and
   offload trade step time for NPU memory, remove padding and dynamic batch size cut padded tokens); the model's figures,
   not the wall time, which stays SIM_TRAINER_STEP_SECONDS. A modelled peak above SIM_TRAINER_HBM_GB fails the actor
   update with torch_npu's out-of-memory error (exit 1). Like verl's fit loop it returns after
   trainer.total_training_steps (printing "Final validation metrics"; resumed at or past that step, after one step
   more, as verl's loop starts at the resumed step + 1), releases Ray, writes
   stand_in_stopped.json and exits 0 (with no total it runs until stopped: verl would count the
   steps from the dataset, which the stand-in does not read). A worker that dies -- its node left the
   cluster, its raylet was stopped -- fails the step with Ray's RayActorError and the training exits
   non-zero, as verl's worker group does. SIGTERM or SIGINT stop it: it releases Ray, writes stand_in_stopped.json and
   exits with the signal's number, as the handler ray.init() installs in verl's driver does (ray/_private/worker.py:
   sys.exit(signum), 15 for SIGTERM): a training stopped or killed by a signal never reads as finished.
With Hydra's --cfg job (or --cfg all, --help) it prints the composed config and exits before step 1's checks, as the real
trainers do: @hydra.main answers them (hydra/_internal/utils.py run_and_report) without calling the task function.
"""
from __future__ import annotations

import _thread
import json
import os
import signal
import socket
import struct
import sys
import threading
import time

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import OmegaConf

STARTED = "stand_in_started.json"
TRACKER = "latest_checkpointed_iteration.txt"  # verl's name for the last saved step
STOPPED = "stand_in_stopped.json"
STEP_SECONDS = float(os.environ.get("SIM_TRAINER_STEP_SECONDS", "2"))
# What each worker keeps on its NPU once loaded (a placeholder figure: weights, optimizer shards, KV cache).
WORKER_HBM_MB = int(os.environ.get("SIM_TRAINER_WORKER_HBM_MB", "24000"))
# verl waits for its placement group without a bound; 60 s was too short on a 2-core machine busy
# with other work (a training that gave up here looked like a deploy bug). Still bounded, for tests.
PLACEMENT_TIMEOUT = float(os.environ.get("SIM_TRAINER_PLACEMENT_TIMEOUT", "300"))

_STOP = []
_SENDERS = []  # who sent each stop signal (pid, uid, and the command when the sender is in this container)
# Which entry point this file stands in for: where the image put it (python3 -m <module>).
ENTRY_POINT = __spec__.name if __spec__ is not None else os.path.basename(__file__)
DEFAULT_CONFIG = "ppo_trainer" if ENTRY_POINT == "verl.trainer.main_ppo" else "dapo_trainer"


def _on_signal(signum, _frame):
    _STOP.append(signum)


def _early_stop(signum, _frame):
    """A stop signal before ray.init() installs its handler: verl's driver dies of it (exit 143), and so does this one (its
    sender is in its output: _watch_stop_signals)."""
    signal.signal(signum, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signum})  # blocked by _watch_stop_signals
    os.kill(os.getpid(), signum)


def _watch_stop_signals():
    """Learn each stop signal's sender, which a Python handler cannot: SIGTERM and SIGINT are blocked in this thread and in
    every thread started after (they inherit the mask), and one thread takes them with sigwaitinfo, notes the sender
    (si_pid 0: a process outside this container's pid namespace, the simulated node's or the machine's) and hands the
    signal to the main thread's handler (_early_stop, Ray's, _on_signal), as the kernel would have. The stand-in starts
    no process of its own, so no child inherits the blocked mask."""
    stops = {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, stops)

    def take():
        while True:
            info = signal.sigwaitinfo(stops)
            _SENDERS.append(_sender(info))
            print("stand-in %s: %s from %s" % (ENTRY_POINT, signal.Signals(info.si_signo).name, _SENDERS[-1]), file=sys.stderr, flush=True)
            _thread.interrupt_main(info.si_signo)

    threading.Thread(target=take, name="stop-signals", daemon=True).start()


def _sender(info):
    """A signal's sender as one line: its pid and uid, and its command line while /proc still has it."""
    if info.si_pid == 0:
        return "pid 0 (outside this container's pid namespace), uid %d, code %d" % (info.si_uid, info.si_code)
    try:
        with open("/proc/%d/cmdline" % info.si_pid, "rb") as handle:
            command = handle.read().replace(b"\0", b" ").decode(errors="replace").strip()[:240]
    except OSError:
        command = "(gone by now)"
    try:
        with open("/proc/%d/stat" % info.si_pid) as handle:
            parent = handle.read().rsplit(")", 1)[1].split()[1]
        with open("/proc/%s/cmdline" % parent, "rb") as handle:
            command += " <- %s %s" % (parent, handle.read().replace(b"\0", b" ").decode(errors="replace").strip()[:240])
    except (OSError, IndexError):
        pass
    return "pid %d, uid %d: %s" % (info.si_pid, info.si_uid, command)


def say(message):
    print("stand-in %s: %s" % (ENTRY_POINT, message), flush=True)


def _write_json(path, values):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    temporary = path + ".tmp"
    with open(temporary, "w") as handle:
        json.dump(values, handle, indent=2, sort_keys=True)
        handle.write("\n")
    os.replace(temporary, path)


# How the feature mask moves verl's per-step metrics here: a MODEL, not a measurement. Baseline figures (all bits off)
# and one factor per feature on, applied to the phase the feature acts on, each with the public source of its direction
# (the sizes are round guesses; the comparison's tests prove the pipeline, not these numbers):
# - Remove Padding packs sequences, so the padded tokens of the actor update and the log-prob passes are not computed
#   (verl docs/perf/perf_tuning.rst, "Enable remove padding (sequence packing)"): those phases x 0.75.
# - Dynamic Batch Size fills micro batches by token count, "higher throughput" and less memory (same guide, "Tuning for
#   Dynamic Batch Size"): update and log-prob x 0.85, activation memory x 0.95.
# - Offload keeps parameters, gradients and optimizer state in host memory and copies them to the NPU when needed (verl
#   engine/megatron.yaml param_offload, grad_offload, optimizer_offload): update x 1.25, NPU memory x 0.65.
# - Prefix Cache reuses the KV cache of a prompt shared by its n responses (vLLM's automatic prefix caching): rollout
#   x 0.9, reserved memory + 1 GiB of cache.
# - Recompute (full, block) recomputes the activations in backward instead of keeping them (Megatron-LM's activation
#   recomputation; Korthikanti et al. 2022 give about a third more compute): update x 1.33, NPU memory x 0.8.
# - Swap Optimizer moves optimizer state to host memory between steps (MindSpeed's swap-optimizer): update x 1.1,
#   NPU memory x 0.85.
# - VPP interleaves virtual pipeline stages to cut the pipeline bubble at the cost of more communication (Megatron-LM's
#   interleaved schedule, Narayanan et al. 2021): update x 0.92, NPU memory x 1.03.
# Step 1 is slower (graph compilation and caches warm up: x 1.5), later steps vary by +-2 %. A modelled peak above
# SIM_TRAINER_HBM_GB (default 60.97, what torch_npu reports as an Atlas A2 64 GB NPU's total capacity) ends the training
# in the actor update with torch_npu's out-of-memory error, as a real one does.
BASE = {"gen": 30.0, "update_actor": 20.0, "log_prob": 8.0, "other": 4.0, "allocated_gb": 48.0}
TOKENS_PER_STEP = 1.6e6
HBM_GB = float(os.environ.get("SIM_TRAINER_HBM_GB", "60.97"))
FEATURE_EFFECTS = {
    # feature: {phase or memory: factor}
    "remove_padding": {"update_actor": 0.75, "log_prob": 0.75},
    "dynamic_bsz": {"update_actor": 0.85, "log_prob": 0.85, "allocated_gb": 0.95},
    "offload": {"update_actor": 1.25, "allocated_gb": 0.65},
    "prefix_cache": {"gen": 0.9},
    "recompute": {"update_actor": 1.33, "allocated_gb": 0.8},
    "swap_optimizer": {"update_actor": 1.1, "allocated_gb": 0.85},
    "vpp": {"update_actor": 0.92, "allocated_gb": 1.03},
}


def _features(resolved):
    """The mask's features as the composed config has them (the keys run_training.sh sets for each bit)."""
    actor = (resolved.get("actor_rollout_ref") or {}).get("actor") or {}
    megatron = actor.get("megatron") or {}
    override = megatron.get("override_transformer_config") or {}
    rollout = (resolved.get("actor_rollout_ref") or {}).get("rollout") or {}
    return {"remove_padding": bool(megatron.get("use_remove_padding")), "dynamic_bsz": bool(actor.get("use_dynamic_bsz")),
            "offload": bool(megatron.get("param_offload")), "prefix_cache": bool(rollout.get("enable_prefix_caching")),
            "recompute": override.get("recompute_granularity") == "full", "swap_optimizer": bool(override.get("swap_optimizer")),
            "vpp": (megatron.get("virtual_pipeline_model_parallel_size") or 1) > 1}


def _modelled(features, step):
    """The model above for one step: {"gen", "update_actor", "step", "allocated_gb", "reserved_gb"}."""
    figures = dict(BASE)
    for feature, on in (features or {}).items():
        for key, factor in FEATURE_EFFECTS.get(feature, {}).items() if on else ():
            figures[key] *= factor
    pace = 1.5 if step == 1 else 1.0 + 0.02 * ((step % 3) - 1)
    gen, update = figures["gen"] * pace, figures["update_actor"] * pace
    reserved = figures["allocated_gb"] * 1.08 + (1.0 if (features or {}).get("prefix_cache") else 0.0)
    return {"gen": gen, "update_actor": update, "step": gen + update + (figures["log_prob"] + figures["other"]) * pace,
            "allocated_gb": figures["allocated_gb"], "reserved_gb": reserved}


def _metrics(step, total, features=None, npus=1):
    """One step's metrics under verl's keys: timing_s/* (verl/trainer/ppo/metric_utils.py compute_timing_metrics),
    perf/throughput (compute_throughout_metrics: tokens / (step time x NPUs)), perf/max_memory_* (the Megatron
    actor's update_actor), with the figures of the feature model above. The others are made up but move like a run."""
    progress = step / float(max(total, 1))
    model = _modelled(features, step)
    return [
        ("actor/entropy", 0.62 - 0.1 * progress),
        ("actor/pg_loss", -0.012 + 0.004 * progress),
        ("actor/grad_norm", 0.31 - 0.05 * progress),
        ("critic/score/mean", -0.55 + 0.4 * progress),
        ("response_length/mean", 812.0 + 40 * progress),
        ("perf/max_memory_allocated_gb", model["allocated_gb"]),
        ("perf/max_memory_reserved_gb", model["reserved_gb"]),
        ("timing_s/gen", model["gen"]),
        ("timing_s/update_actor", model["update_actor"]),
        ("timing_s/step", model["step"]),
        ("perf/total_num_tokens", TOKENS_PER_STEP),
        ("perf/throughput", TOKENS_PER_STEP / (model["step"] * max(npus, 1))),
        ("training/global_step", step),
        ("training/epoch", 0),
    ]


def _out_of_memory(metrics):
    """torch_npu's error when the modelled peak does not fit (the text of a real one), else None."""
    reserved = dict(metrics)["perf/max_memory_reserved_gb"]
    if reserved <= HBM_GB:
        return None
    return ("RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB (NPU 0; %.2f GiB total capacity; %.2f GiB already "
            "allocated; %.2f GiB reserved in total by PyTorch)" % (HBM_GB, dict(metrics)["perf/max_memory_allocated_gb"], reserved))


def _step_line(step, metrics):
    # The shape of verl's console logger line.
    return "step:%d - %s" % (step, " - ".join("%s:%s" % (key, round(value, 4) if isinstance(value, float) else value)
                                              for key, value in metrics))


def _swanlab(trainer, config):
    """verl.utils.tracking.Tracking's swanlab branch (verl 0.7.0), or None when swanlab is not a logger."""
    if "swanlab" not in (trainer.get("logger") or []):
        return None
    import swanlab  # an ImportError here is what verl would raise too

    api_key = os.environ.get("SWANLAB_API_KEY", None)
    log_dir = os.environ.get("SWANLAB_LOG_DIR", "swanlog")
    mode = os.environ.get("SWANLAB_MODE", "cloud")
    if api_key:
        swanlab.login(api_key)  # NOTE: previous login information will be overwritten
    swanlab.init(project=trainer.get("project_name"), experiment_name=trainer.get("experiment_name"),
                 config={"FRAMEWORK": "verl", **config}, logdir=log_dir, mode=mode)
    say("swanlab %s: mode %s, log dir %s, key %s" % (swanlab.__version__, mode, log_dir, "set" if api_key else "not set"))
    return swanlab


def _crc32c(data):
    """CRC-32C (Castagnoli), which TFRecord framing uses."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _bit in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def _masked_crc(data):
    crc = _crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _varint(number):
    out = bytearray()
    while True:
        low, number = number & 0x7F, number >> 7
        out.append(low | (0x80 if number else 0))
        if not number:
            return bytes(out)


def _field(number, wire, payload):
    """A protobuf field: wire 0 varint (payload an int), 1 fixed64 and 5 fixed32 (bytes), 2 length-delimited (bytes)."""
    key = _varint(number << 3 | wire)
    if wire == 0:
        return key + _varint(payload)
    return key + (_varint(len(payload)) + payload if wire == 2 else payload)


class _EventFile:
    """What SummaryWriter(dir).add_scalar(tag, value, step) writes: tensorflow's Event proto (wall_time = 1 double, step = 2
    int64, file_version = 3 string, summary = 5 Summary{value = 1 Value{tag = 1 string, simple_value = 2 float}}) in
    TFRecord records (length, masked CRC-32C of the length, data, masked CRC-32C of the data)."""

    def __init__(self, folder):
        os.makedirs(folder, exist_ok=True)
        self.path = os.path.join(folder, "events.out.tfevents.%010d.%s.%s.%s" % (time.time(), socket.gethostname(), os.getpid(), 0))
        self.handle = open(self.path, "wb")  # pylint: disable=consider-using-with
        self._write(_field(1, 1, struct.pack("<d", time.time())) + _field(3, 2, b"brain.Event:2"))

    def _write(self, event):
        length = struct.pack("<Q", len(event))
        self.handle.write(length + struct.pack("<I", _masked_crc(length)) + event + struct.pack("<I", _masked_crc(event)))
        self.handle.flush()

    def log(self, data, step):
        for key, value in data.items():
            summary = _field(1, 2, _field(1, 2, key.encode("utf-8")) + _field(2, 5, struct.pack("<f", float(value))))
            self._write(_field(1, 1, struct.pack("<d", time.time())) + _field(2, 0, int(step)) + _field(5, 2, summary))

    def finish(self):
        self.handle.close()


def _tensorboard(trainer, resolved):
    """verl.utils.tracking.Tracking's tensorboard branch (verl 0.7.0), or None when tensorboard is not a logger."""
    if "tensorboard" not in (trainer.get("logger") or []):
        return None
    job_env = (((resolved.get("ray_kwargs") or {}).get("ray_init") or {}).get("runtime_env") or {}).get("env_vars") or {}
    folder = job_env.get("TENSORBOARD_DIR") or os.environ.get(
        "TENSORBOARD_DIR", "tensorboard_log/%s/%s" % (trainer.get("project_name"), trainer.get("experiment_name")))
    print("Saving tensorboard log to %s." % folder, flush=True)
    return _EventFile(folder)


def _verl_version():
    """verl.__version__ of the image (verl/__init__.py reads verl/version/version)."""
    try:
        with open(os.path.join(os.environ.get("SIM_VERL_SOURCE_DIR", "/verl"), "verl", "version", "version")) as handle:
            return handle.read().strip()
    except OSError:
        return None


def _reward_manager(resolved):
    """The reward manager's name where the release reads it: reward.reward_manager.name from 0.7.1 (the `reward` group),
    reward_model.reward_manager in 0.7.0. (0.7.1/0.8.x's main_ppo also migrates a non-null legacy reward_model.* key;
    the stand-in does not: the rendered lines use the keys of their release.)"""
    reward = resolved.get("reward")
    if isinstance(reward, dict) and isinstance(reward.get("reward_manager"), dict):
        return reward["reward_manager"].get("name")
    return (resolved.get("reward_model") or {}).get("reward_manager")


def _resume_step(trainer, local_dir):
    """The step verl would resume from (0: a fresh start), as RayPPOTrainer._load_checkpoint finds it."""
    mode = trainer.get("resume_mode", "auto")
    if mode == "disable":
        return 0
    if mode == "resume_path":
        folder = trainer.get("resume_from_path")
        assert isinstance(folder, str), "resume ckpt must be str type"
        assert "global_step_" in folder, "resume ckpt must specify the global_steps"
        if not os.path.isdir(folder):
            raise FileNotFoundError("resume ckpt %s does not exist (stand-in check: verl would fail loading it)" % folder)
        say("Load from checkpoint folder: %s" % folder)
        return int(folder.split("global_step_")[-1])
    try:
        with open(os.path.join(local_dir, TRACKER)) as handle:
            step = int(handle.read().strip() or 0)
    except (OSError, ValueError):
        return 0
    say("Load from checkpoint folder: %s" % os.path.join(local_dir, "global_step_%d" % step))
    return step


def _validate_config(config):
    """verl 0.7.0's own config checks, run from verl's files in the image (/verl, the checkout) by the loader in
    /opt/sim/stand-ins/verl_checks.py (tests/helpers/verl_config/verl_checks.py): verl/utils/config.py validate_config, the
    config dataclasses' __post_init__ and validate, RolloutConfig, the DAPO reward manager's asserts. main_ppo runs
    validate_config before any worker starts; main_dapo's Megatron workers fail on the same arithmetic a little later.
    The first refusal is raised again, with verl's own exception and message."""
    folder = os.environ.get("SIM_VERL_CHECKS_DIR", "/opt/sim/stand-ins")
    if folder not in sys.path:
        sys.path.insert(0, folder)
    import verl_checks  # pylint: disable=import-outside-toplevel

    verl_checks.raise_first(verl_checks.refusals(config, ENTRY_POINT, os.environ.get("SIM_VERL_SOURCE_DIR", "/verl")))


def _save_layout(resolved):
    """What verl 0.7.0's Megatron checkpoint manager records of the actor's layout, from the config it runs with: the
    TransformerConfig's parallel sizes (mbridge fills them from megatron.core.parallel_state, which verl initialises
    from actor_rollout_ref.actor.megatron), the number of saving ranks, the distributed optimizer's sharding type and
    the model's Hugging Face config (hf_config.save_pretrained: the model folder's config.json)."""
    actor = resolved["actor_rollout_ref"]["actor"]
    megatron = actor.get("megatron") or {}
    trainer = resolved["trainer"]
    try:
        with open(os.path.join(str(resolved["actor_rollout_ref"]["model"]["path"]), "config.json")) as handle:
            hf_config = handle.read()
        model = json.loads(hf_config)
    except (OSError, ValueError):  # verl would have failed at the model's load: a token config, as before
        hf_config, model = '{"architectures": ["Qwen3ForCausalLM"]}\n', {}
    tp = int(megatron.get("tensor_model_parallel_size") or 1)
    transformer = {
        "tensor_model_parallel_size": tp,
        "pipeline_model_parallel_size": int(megatron.get("pipeline_model_parallel_size") or 1),
        "virtual_pipeline_model_parallel_size": megatron.get("virtual_pipeline_model_parallel_size"),
        "context_parallel_size": int(megatron.get("context_parallel_size") or 1),
        "expert_model_parallel_size": int(megatron.get("expert_model_parallel_size") or 1),
        "expert_tensor_parallel_size": megatron.get("expert_tensor_parallel_size") or tp,
        "sequence_parallel": tp > 1,
        "num_layers": model.get("num_hidden_layers"), "hidden_size": model.get("hidden_size"),
        "num_attention_heads": model.get("num_attention_heads"), "params_dtype": "torch.bfloat16",
    }
    distributed = str(megatron.get("use_distributed_optimizer", True)).lower() not in ("false", "0")
    contents = (actor.get("checkpoint") or {}).get("save_contents") or ["model", "optimizer", "extra"]
    return {"ranks": int(trainer["nnodes"]) * int(trainer["n_gpus_per_node"]), "transformer": transformer, "hf_config": hf_config,
            "sharding": "fully_sharded_model_space" if distributed else "", "extra": "extra" in contents}


def _common_state(sharding):
    """actor/dist_ckpt/common.pt as torch.save writes it: a zip archive holding a pickle (protocol 2) of the state every
    rank shares; the distributed optimizer's part names its sharding type (token values otherwise)."""
    import io
    import pickle
    import zipfile

    optimizer = {"optimizer": {"param_groups": [{"lr": 1e-6, "weight_decay": 0.01, "params": [0, 1]}]}}
    if sharding:
        optimizer["param_state_sharding_type"] = sharding
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("common/data.pkl", pickle.dumps({"optimizer": optimizer, "lr_scheduler": {"num_steps": 0}}, protocol=2))
        archive.writestr("common/version", "3\n")
    return buffer.getvalue()


def _save_checkpoint(local_dir, step, resolved):
    """A save in verl v0.7.0's layout and order (megatron_checkpoint_manager.py save_checkpoint), the files that record
    the layout written from the config it runs with, the weights' and optimizer's contents tokens: Megatron's
    actor/dist_ckpt (a __<rank>_<i>.distcp per saving rank, two threads each; common.pt; then metadata.json, from rank 0
    after the shards, dist_checkpointing's metadata_finalize_fn), the Hugging Face actor/huggingface/config.json (the
    model's, rank 0), actor/transformer_config.json (rank 0, with "extra" in save_contents), data.pt (the dataloader,
    ray_trainer.py _save_checkpoint), and the tracker file last. A save stopped part-way leaves what verl would leave:
    the files before the stop."""
    layout = _save_layout(resolved)
    folder = os.path.join(local_dir, "global_step_%d" % step)
    files = [("actor/dist_ckpt/__%d_%d.distcp" % (rank, thread), b"stand-in optimizer shard\n")
             for rank in range(layout["ranks"]) for thread in range(2)]
    files += [("actor/dist_ckpt/common.pt", _common_state(layout["sharding"])),
              ("actor/dist_ckpt/metadata.json", b'{"sharded_backend": "torch_dist", "sharded_backend_version": 1}\n'),
              ("actor/huggingface/config.json", layout["hf_config"].encode())]
    if layout["extra"]:
        files.append(("actor/transformer_config.json", json.dumps(layout["transformer"], indent=2).encode()))
    files.append(("data.pt", b"stand-in dataloader state\n"))
    for name, data in files:
        os.makedirs(os.path.dirname(os.path.join(folder, name)), exist_ok=True)
        with open(os.path.join(folder, name), "wb") as handle:
            handle.write(data)
    temporary = os.path.join(local_dir, TRACKER + ".tmp")
    with open(temporary, "w") as handle:
        handle.write("%d\n" % step)
    os.replace(temporary, os.path.join(local_dir, TRACKER))


def run(config):
    """verl's run_ppo(), simulated: the checks, then the training loop until a stop signal."""
    resolved = OmegaConf.to_container(config, resolve=True)  # raises on an unresolvable interpolation, like verl
    trainer = resolved["trainer"]
    if trainer.get("device") != "npu":
        raise ValueError("trainer.device is %r; on Ascend it must be 'npu' (stand-in check)" % trainer.get("device"))
    _validate_config(config)
    nnodes = int(trainer["nnodes"])
    per_node = int(trainer["n_gpus_per_node"])
    wanted = nnodes * per_node

    import ray  # as verl: only after the config is known to be good

    # As verl's run_ppo: ray.init() without an address (RAY_ADDRESS, else the cluster `ray start` recorded in Ray's default
    # temporary folder; else a Ray of its own, with this node's NPUs only). log_to_driver=False: the workers' output stays in their logs.
    ray.init(log_to_driver=False)
    total = float(ray.cluster_resources().get("NPU", 0.0))
    available = float(ray.available_resources().get("NPU", 0.0))
    if available < wanted:
        # verl/trainer/ppo/ray_trainer.py ResourcePoolManager._check_resource_available()
        raise ValueError("Total available GPUs %s is less than total desired GPUs %s" % (available, wanted))
    from ray.util.placement_group import remove_placement_group

    groups, workers = _worker_group(ray, nnodes, per_node)
    placed = ray.get([worker.ready.remote() for worker in workers])
    say("worker group: %d worker(s), one per NPU: %s" % (len(placed), ", ".join(
        "%s davinci%s" % (info["hostname"], info["device"]) for info in placed)))

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, _on_signal)
    steps = trainer.get("total_training_steps")
    steps = int(steps) if steps is not None else None
    local_dir = os.path.abspath(str(trainer["default_local_dir"]))
    save_freq = int(trainer.get("save_freq") or -1)
    resumed_from = _resume_step(trainer, local_dir)
    started = {
        "pid": os.getpid(),
        "hostname": socket.gethostname(),
        "cwd": os.getcwd(),
        "argv": sys.argv[1:],
        "verl_version": _verl_version(),
        "entry_point": ENTRY_POINT,
        "config_name": HydraConfig.get().job.config_name,
        "override_keys": [line.split("=", 1)[0] for line in HydraConfig.get().overrides.task],
        "adv_estimator": resolved["algorithm"]["adv_estimator"],
        "use_kl_loss": resolved["actor_rollout_ref"]["actor"]["use_kl_loss"],
        "reward_manager": _reward_manager(resolved),
        "resume_mode": trainer.get("resume_mode"),
        "nnodes": nnodes,
        "n_gpus_per_node": per_node,
        "device": trainer["device"],
        "logger": trainer.get("logger"),
        "project_name": trainer.get("project_name"),
        "experiment_name": trainer.get("experiment_name"),
        "total_training_steps": steps,
        "default_local_dir": local_dir,
        "cluster_npus": total,
        "available_npus": available,
        "ray_nodes": sum(1 for node in ray.nodes() if node.get("Alive")),
        "started_at": time.time(),
        "resumed_from_step": resumed_from,
        "workers": placed,
    }
    tracker = _swanlab(trainer, resolved)
    board = _tensorboard(trainer, resolved)
    started["tensorboard"] = board.path if board else None
    started["swanlab"] = {"mode": os.environ.get("SWANLAB_MODE"), "log_dir": os.environ.get("SWANLAB_LOG_DIR"),
                          "key_set": bool(os.environ.get("SWANLAB_API_KEY"))} if tracker else None
    _write_json(os.path.join(local_dir, STARTED), started)
    say("config composed and checked: %d node(s) x %d NPU, Ray has %s NPU on %d node(s); %s written"
        % (nnodes, per_node, total, started["ray_nodes"], os.path.join(local_dir, STARTED)))

    features = _features(resolved)
    # verl's fit loop (ray_trainer.py, and recipe/dapo's): the first step is the resumed one + 1, and the step that reaches
    # total_training_steps is the last, saved whatever save_freq says; so a training resumed at or past its total trains,
    # saves and logs one step more before it ends.
    step = resumed_from
    busy = [worker.work.remote() for worker in workers]
    while not _STOP:
        last = steps is not None and step + 1 >= steps
        if not _step(ray, busy):
            break
        step += 1
        metrics = _metrics(step, steps or 1000, features, wanted)
        oom = _out_of_memory(metrics)
        if oom:
            # How verl's driver reports a worker's error in the actor update (Ray's RayTaskError of the worker group call).
            print("ray.exceptions.RayTaskError(RuntimeError): ray::WorkerDict.actor_rollout_update_actor() (pid=%d)" % os.getpid(), flush=True)
            print(oom, flush=True)
            raise SystemExit(1)
        print(_step_line(step, metrics), flush=True)
        if board is not None:
            board.log(dict(metrics), step=step)
        if save_freq > 0 and (last or step % save_freq == 0):
            _save_checkpoint(local_dir, step, resolved)
        if tracker is not None:
            tracker.log({"training/global_step": step}, step=step)
        if last:
            break
    signum = _STOP[0] if _STOP else None
    if signum is None:
        # verl's fit loop on its last step: the final validation metrics, then it returns.
        say("finished: %d of %s step(s)" % (step, steps))
        print("Final validation metrics: {'val-core/openai/gsm8k/reward/mean@1': 0.71}", flush=True)
    else:
        say("got %s after %d step(s); releasing Ray and exiting" % (signal.Signals(signum).name, step))
    if tracker is not None:
        tracker.finish()
    if board is not None:
        board.finish()
    for group in groups:
        remove_placement_group(group)
    ray.shutdown()
    _write_json(os.path.join(local_dir, STOPPED), {"pid": os.getpid(), "signal": signal.Signals(signum).name if signum else None,
                                                   "finished": signum is None, "steps": step, "stopped_at": time.time(),
                                                   "senders": _SENDERS})
    if signum is not None:
        raise SystemExit(signum)


def _worker_group(ray, nnodes, per_node):
    """verl's resource pool and worker group, as Ray sees them: a placement group per node, a worker per NPU."""
    from ray.util.placement_group import placement_group
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    groups = [placement_group([{"NPU": 1.0}] * per_node, strategy="STRICT_PACK") for _node in range(nnodes)]
    try:
        ray.get([group.ready() for group in groups], timeout=PLACEMENT_TIMEOUT)
    except Exception as exc:
        raise ValueError("Could not reserve %d x %d NPUs in Ray within %s s: %s" % (nnodes, per_node, PLACEMENT_TIMEOUT, exc))
    worker_class = ray.remote(num_cpus=0, resources={"NPU": 1})(NpuWorker)
    workers = []
    for index, group in enumerate(groups):
        for local in range(per_node):
            strategy = PlacementGroupSchedulingStrategy(placement_group=group, placement_group_bundle_index=local)
            workers.append(worker_class.options(scheduling_strategy=strategy).remote(index * per_node + local))
    return groups, workers


def _step(ray, busy):
    """One step's time with every worker busy; False when a stop signal came first. A dead worker raises Ray's error.

    verl's workers are busy for the whole of every step (rollout, log-probs, update), so the stand-in keeps one call
    running on each for the whole training instead of a call per step: a worker whose node or raylet is gone fails it
    with Ray's RayActorError (ActorDiedError) at once, and the idle cluster costs no CPU per step (a call to each of 24
    workers every 2 s cost a 3-node cluster about 9 CPU-s a minute)."""
    deadline = time.monotonic() + STEP_SECONDS
    while not _STOP:
        left = deadline - time.monotonic()
        if left <= 0:
            return True
        done, _pending = ray.wait(busy, num_returns=1, timeout=min(0.5, left))
        ray.get(done)  # a worker's call ends only with its process: Ray raises its RayActorError here
    return False


class NpuWorker:
    """One rank of verl's worker group: it binds its NPU as verl's Megatron worker does and keeps it."""

    def __init__(self, rank):
        import torch_npu  # in the worker, with the environment of the node's raylet (CANN sourced by start_verl.sh)

        local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        torch_npu.npu.set_device(local_rank)  # raises the runtime's EE1001 / 107001 for a bad device id
        torch_npu.npu._sim_hold_memory(WORKER_HBM_MB)  # pylint: disable=protected-access
        self.info = {"rank": rank, "hostname": socket.gethostname(), "pid": os.getpid(),
                     "visible_devices": os.environ.get("ASCEND_RT_VISIBLE_DEVICES"),
                     "device": torch_npu.npu._sim_physical_device()}  # pylint: disable=protected-access

    def ready(self):
        return self.info

    def work(self):
        """The worker's share of every step, for as long as the training runs (see _step)."""
        while True:
            time.sleep(3600)


@hydra.main(config_path="config", config_name=DEFAULT_CONFIG, version_base=None)
def main(config):
    run(config)


if __name__ == "__main__":
    _watch_stop_signals()
    signal.signal(signal.SIGTERM, _early_stop)
    main()  # pylint: disable=no-value-for-parameter
