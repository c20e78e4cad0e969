# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Private to the verl.deploy collection: may change without notice.
#
# verl's trackers (trainer.logger, verl_loggers): the one table of what verl takes and what each needs before the
# training may start. Their keys are secret settings (_secrets.SECRETS); their other settings (a server's URL, an
# entity, a mode) are environment variables given through verl_extra_env (_environment.ALLOWED).
from __future__ import annotations

from ansible_collections.verl.deploy.plugins.module_utils import _secrets as secrets
from ansible_collections.verl.deploy.plugins.module_utils import _versions as versions

# verl/utils/tracking.py, Tracking.supported_backend, at the tags v0.7.0, v0.7.1, v0.8.0 and v0.9.0 (rl_insight from
# v0.9.0 on): each tracker with the profiles whose verl takes it. console is always on: status reads its `step:N` lines
# from the training log. In this order in trainer.logger.
TRACKERS = {
    "console": versions.PROFILES,
    "swanlab": versions.PROFILES,
    "tensorboard": versions.PROFILES,
    "wandb": versions.PROFILES,
    "mlflow": versions.PROFILES,
    "clearml": versions.PROFILES,
    "trackio": versions.PROFILES,
    "file": versions.PROFILES,
    "vemlp_wandb": versions.PROFILES,
    "rl_insight": versions.PROFILES[versions.PROFILES.index("0.9.0"):],
}
LOGGERS = tuple(TRACKERS)
# wandb with neither a key nor one of these modes asks for a key at wandb.init and, with no terminal, stops the training
# after the model loaded: "wandb.errors.errors.UsageError: api_key not configured (no-tty). call
# wandb.login(key=[your_api_key])" (hiyouga/EasyR1#69, verl's trainer).
WANDB_KEYLESS_MODES = ("offline", "disabled", "dryrun")


def keys_of(tracker):
    """The secret settings a tracker reads, in the table's order."""
    return [name for name, entry in secrets.SECRETS.items() if entry["tracker"] == tracker]


def check(loggers, extra_env, secrets_set, profile, errors, warnings):
    """What the trackers of `loggers` need (secrets_set: the names of the secret settings given, never their values).
    Returns the keys the deploy writes into the container, [{setting, env}] (SwanLab's has a stage of its own)."""
    loggers, extra_env, given = list(loggers or ()), dict(extra_env or {}), set(secrets_set or ())
    for name in loggers:
        if profile not in TRACKERS[name]:
            errors.add("verl_loggers", name, "verl_loggers lists %s, which verl %s does not have (verl/utils/tracking.py: from %s on). "
                       "Fix: remove it from verl_loggers, or use an image of verl %s (verl_version)." % (
                           name, profile, TRACKERS[name][0], TRACKERS[name][0]))
    mode = str(extra_env.get("WANDB_MODE", "")).strip().lower()
    if "wandb" in loggers and "verl_wandb_api_key" not in given and mode not in WANDB_KEYLESS_MODES:
        errors.add("verl_wandb_api_key", "(empty)", "wandb is in verl_loggers but verl_wandb_api_key is empty: wandb.init would stop the "
                   "training after the model loaded (\"api_key not configured (no-tty)\"). Fix: give the key from a vault or an AWX "
                   "credential (never on a shared command line), or log offline with verl_extra_env: {WANDB_MODE: offline}.")
    if "vemlp_wandb" in loggers:
        missing = [name for name in keys_of("vemlp_wandb") if name not in given]
        if missing or not extra_env.get("MLP_TRACKING_REGION"):
            errors.add(missing[0] if missing else "verl_extra_env", "(empty)", "vemlp_wandb is in verl_loggers, which reads "
                       "VOLC_ACCESS_KEY_ID, VOLC_SECRET_ACCESS_KEY and MLP_TRACKING_REGION at its start (a KeyError without one). "
                       "Fix: give verl_volc_access_key_id and verl_volc_secret_access_key from a vault or an AWX credential and "
                       "verl_extra_env: {MLP_TRACKING_REGION: <region>}, or remove vemlp_wandb.")
    keys = []
    for name in sorted(given & set(secrets.SECRETS) - {secrets.KEY}, key=list(secrets.SECRETS).index):
        tracker = secrets.SECRETS[name]["tracker"]
        if tracker in loggers:
            keys.append({"setting": name, "env": secrets.SECRETS[name]["env"]})
        else:
            warnings.append("%s is set but %s is not in verl_loggers: it is not written to any node." % (name, tracker))
    return keys
