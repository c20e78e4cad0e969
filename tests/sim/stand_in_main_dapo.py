"""Stand-in for verl 0.7.0's two entry points in the simulated Ascend cluster (tests/sim).

The verl-sim/verl image has this file twice, where verl has the real ones: /verl/recipe/dapo/main_dapo.py
(DAPO) and /verl/verl/trainer/main_ppo.py (GRPO). run_training.sh starts it exactly like the real
trainer, from /verl:

    python3 -m recipe.dapo.main_dapo --config-path=config --config-name=dapo_megatron_trainer <overrides>
    python3 -m verl.trainer.main_ppo --config-path=config --config-name=ppo_megatron_trainer <overrides>

What it does, in the real trainer's order:
1. Hydra composes the overrides against verl 0.7.0's own schema (@hydra.main with config_path
   "config", relative to this file: /verl/recipe/dapo/config, whose overlay adds
   /verl/verl/trainer/config to the search path, as in a verl checkout; or /verl/verl/trainer/config
   itself). A bad override ends the run with Hydra's own message, exit 1. Every interpolation is
   resolved, as verl's TaskRunner does.
2. trainer.device must be "npu". As main_ppo, verl's validate_config() arithmetic for the Megatron
   actor (verl/utils/config.py; main_dapo does not call it) must hold.
3. ray.init(address="auto") joins the running Ray cluster; it needs at least
   trainer.n_gpus_per_node x trainer.nnodes available NPUs, else it fails with verl's own
   ValueError "Total available GPUs X is less than total desired GPUs Y". It then holds them
   (a placement group of one {"NPU": n_gpus_per_node} bundle per node), as verl's resource pool does.
4. With "swanlab" in trainer.logger, does what verl/utils/tracking.py does: reads SWANLAB_API_KEY,
   SWANLAB_LOG_DIR and SWANLAB_MODE, logs in when a key is set, swanlab.init(...), logs each step and
   finishes on stop (offline/local modes write LOG_DIR/run-*; a missing swanlab fails like verl).
5. Resumes as verl's RayPPOTrainer._load_checkpoint does: with trainer.resume_mode=auto from the step
   named by <trainer.default_local_dir>/latest_checkpointed_iteration.txt, when there is one; with
   resume_path from the global_step_<N> folder trainer.resume_from_path names; with disable from 0.
   Like verl, it saves a checkpoint (global_step_N/ and that tracker file) every trainer.save_freq steps.
6. Writes <trainer.default_local_dir>/stand_in_started.json (the values it checked, its pid, the entry
   point and config it ran as, the advantage estimator, the step it resumed from), prints one
   `step:N - ...` line every SIM_TRAINER_STEP_SECONDS (default 2) up to trainer.total_training_steps,
   then a heartbeat every SIM_TRAINER_HEARTBEAT_SECONDS (default 10) until SIGTERM or SIGINT, on which
   it releases Ray, writes stand_in_stopped.json and exits 0.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import sys
import time

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import OmegaConf

STARTED = "stand_in_started.json"
TRACKER = "latest_checkpointed_iteration.txt"  # verl's name for the last saved step
STOPPED = "stand_in_stopped.json"
STEP_SECONDS = float(os.environ.get("SIM_TRAINER_STEP_SECONDS", "2"))
HEARTBEAT_SECONDS = float(os.environ.get("SIM_TRAINER_HEARTBEAT_SECONDS", "10"))
# verl waits for its placement group without a bound; 60 s was too short on a 2-core machine busy
# with other work (a training that gave up here looked like a deploy bug). Still bounded, for tests.
PLACEMENT_TIMEOUT = float(os.environ.get("SIM_TRAINER_PLACEMENT_TIMEOUT", "300"))

_STOP = []
# Which entry point this file stands in for: where the image put it (python3 -m <module>).
ENTRY_POINT = __spec__.name if __spec__ is not None else os.path.basename(__file__)
DEFAULT_CONFIG = "ppo_trainer" if ENTRY_POINT == "verl.trainer.main_ppo" else "dapo_trainer"


def _on_signal(signum, _frame):
    _STOP.append(signum)


def say(message):
    print("stand-in %s: %s" % (ENTRY_POINT, message), flush=True)


def _write_json(path, values):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    temporary = path + ".tmp"
    with open(temporary, "w") as handle:
        json.dump(values, handle, indent=2, sort_keys=True)
        handle.write("\n")
    os.replace(temporary, path)


def _sleep(seconds):
    """Sleep up to `seconds`, returning early (True) once a stop signal arrived."""
    deadline = time.monotonic() + seconds
    while not _STOP:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        time.sleep(min(0.25, left))
    return True


def _step_line(step, total):
    # The shape of verl's console logger line; the numbers are made up but move like a real run.
    progress = step / float(max(total, 1))
    metrics = [
        ("actor/entropy", 0.62 - 0.1 * progress),
        ("actor/pg_loss", -0.012 + 0.004 * progress),
        ("actor/grad_norm", 0.31 - 0.05 * progress),
        ("critic/score/mean", -0.55 + 0.4 * progress),
        ("response_length/mean", 812.0 + 40 * progress),
        ("timing_s/step", STEP_SECONDS),
        ("training/global_step", step),
        ("training/epoch", 0),
    ]
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


def _validate_config(resolved):
    """verl/utils/config.py validate_config(), the Megatron arithmetic main_ppo runs before any worker starts."""
    actor = resolved["actor_rollout_ref"]["actor"]
    if actor.get("use_dynamic_bsz"):
        return
    trainer, megatron = resolved["trainer"], actor["megatron"]
    n_gpus = int(trainer["n_gpus_per_node"]) * int(trainer["nnodes"])
    model_parallel = megatron["tensor_model_parallel_size"] * megatron["pipeline_model_parallel_size"] * megatron["context_parallel_size"]
    assert n_gpus % model_parallel == 0, "n_gpus (%d) must be divisible by model_parallel_size (%d)" % (n_gpus, model_parallel)
    minimal_bsz = n_gpus // model_parallel * actor["ppo_micro_batch_size_per_gpu"]
    real_train_batch_size = resolved["data"]["train_batch_size"] * resolved["actor_rollout_ref"]["rollout"]["n"]
    assert real_train_batch_size % minimal_bsz == 0, (
        "real_train_batch_size (%d) must be divisible by minimal possible batch size (%d)" % (real_train_batch_size, minimal_bsz))


def _save_checkpoint(local_dir, step):
    os.makedirs(os.path.join(local_dir, "global_step_%d" % step), exist_ok=True)
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
    if ENTRY_POINT == "verl.trainer.main_ppo":
        _validate_config(resolved)
    nnodes = int(trainer["nnodes"])
    per_node = int(trainer["n_gpus_per_node"])
    wanted = nnodes * per_node

    import ray  # as verl: only after the config is known to be good

    ray.init(address="auto", log_to_driver=False)
    total = float(ray.cluster_resources().get("NPU", 0.0))
    available = float(ray.available_resources().get("NPU", 0.0))
    if available < wanted:
        # verl/trainer/ppo/ray_trainer.py ResourcePoolManager._check_resource_available()
        raise ValueError("Total available GPUs %s is less than total desired GPUs %s" % (available, wanted))
    from ray.util.placement_group import placement_group, remove_placement_group

    group = placement_group([{"NPU": float(per_node)}] * nnodes, strategy="SPREAD" if nnodes > 1 else "PACK")
    try:
        ray.get(group.ready(), timeout=PLACEMENT_TIMEOUT)
    except Exception as exc:
        raise ValueError("Could not reserve %d x %d NPUs in Ray within %s s: %s" % (nnodes, per_node, PLACEMENT_TIMEOUT, exc))

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
        "entry_point": ENTRY_POINT,
        "config_name": HydraConfig.get().job.config_name,
        "adv_estimator": resolved["algorithm"]["adv_estimator"],
        "use_kl_loss": resolved["actor_rollout_ref"]["actor"]["use_kl_loss"],
        "reward_manager": resolved["reward_model"]["reward_manager"],
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
    }
    tracker = _swanlab(trainer, resolved)
    started["swanlab"] = {"mode": os.environ.get("SWANLAB_MODE"), "log_dir": os.environ.get("SWANLAB_LOG_DIR"),
                          "key_set": bool(os.environ.get("SWANLAB_API_KEY"))} if tracker else None
    _write_json(os.path.join(local_dir, STARTED), started)
    say("config composed and checked: %d node(s) x %d NPU, Ray has %s NPU on %d node(s); %s written"
        % (nnodes, per_node, total, started["ray_nodes"], os.path.join(local_dir, STARTED)))

    step = resumed_from
    while not _STOP and (steps is None or step < steps):
        if _sleep(STEP_SECONDS):
            break
        step += 1
        print(_step_line(step, steps or 1000), flush=True)
        if save_freq > 0 and step % save_freq == 0:
            _save_checkpoint(local_dir, step)
        if tracker is not None:
            tracker.log({"training/global_step": step}, step=step)
    if not _STOP:
        say("finished %d step(s); staying up until SIGTERM/SIGINT" % step)
    while not _STOP:
        if _sleep(HEARTBEAT_SECONDS):
            break
        say("heartbeat: %d step(s) done, waiting for SIGTERM/SIGINT" % step)

    signum = _STOP[0]
    say("got %s after %d step(s); releasing Ray and exiting" % (signal.Signals(signum).name, step))
    if tracker is not None:
        tracker.finish()
    remove_placement_group(group)
    ray.shutdown()
    _write_json(os.path.join(local_dir, STOPPED), {"pid": os.getpid(), "signal": signal.Signals(signum).name, "steps": step,
                                                   "stopped_at": time.time()})


@hydra.main(config_path="config", config_name=DEFAULT_CONFIG, version_base=None)
def main(config):
    run(config)


if __name__ == "__main__":
    main()  # pylint: disable=no-value-for-parameter
