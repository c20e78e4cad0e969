# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Private to the verl.deploy collection: may change without notice.
#
# The secrets (the SwanLab key, the other trackers' keys) compared by value, not by name: after templating, no
# setting other than the secret's own may hold it (as it is, base64-encoded or URL-encoded: a setting such as
# verl_experiment_name: "{{ verl_swanlab_api_key }}" or a URL's userinfo would write it into the scripts and
# the job's output), and no message may show a value that holds it. Callers hold the secrets on the controller
# and pass them here; nothing here returns one.
from __future__ import annotations

import base64
import urllib.parse

# A key shorter than this is not looked for in other values (every value would seem to hold it); such a
# key is refused by SwanLab itself.
MIN_LENGTH = 4

# The secret settings (setting_rules.yml marks each `secret: true`; a test keeps both equal): what each is called in
# a message, the environment variable it becomes in the training's environment and the tracker of verl_loggers that
# reads it there (verl/utils/tracking.py). SwanLab's key has a stage of its own (roles/swanlab: the login, its key
# file); the others are written by the deploy into one 0600 file each in the container (verl_tracker_keys_dir), which
# start_verl.sh reads: never in a script, an argument list or the output.
SECRETS = {
    "verl_swanlab_api_key": {"label": "the SwanLab key", "env": "SWANLAB_API_KEY", "tracker": "swanlab"},
    "verl_wandb_api_key": {"label": "the W&B key", "env": "WANDB_API_KEY", "tracker": "wandb"},
    "verl_mlflow_tracking_password": {"label": "the MLflow password", "env": "MLFLOW_TRACKING_PASSWORD", "tracker": "mlflow"},
    "verl_mlflow_tracking_token": {"label": "the MLflow token", "env": "MLFLOW_TRACKING_TOKEN", "tracker": "mlflow"},
    "verl_clearml_api_access_key": {"label": "the ClearML access key", "env": "CLEARML_API_ACCESS_KEY", "tracker": "clearml"},
    "verl_clearml_api_secret_key": {"label": "the ClearML secret key", "env": "CLEARML_API_SECRET_KEY", "tracker": "clearml"},
    "verl_volc_access_key_id": {"label": "the Volcengine access key id", "env": "VOLC_ACCESS_KEY_ID", "tracker": "vemlp_wandb"},
    "verl_volc_secret_access_key": {"label": "the Volcengine secret key", "env": "VOLC_SECRET_ACCESS_KEY", "tracker": "vemlp_wandb"},
}
KEY = "verl_swanlab_api_key"


def hidden(secret_name=KEY):
    return "(not shown: it holds %s)" % SECRETS.get(secret_name, SECRETS[KEY])["label"]


def key_forms(key):
    """The spellings of `key` that carry it: as it is, base64 (standard and URL-safe, with and without padding)
    and URL-encoded (quote and quote_plus). Empty when there is no usable key."""
    text = "" if key is None else str(key)
    if len(text) < MIN_LENGTH:
        return ()
    raw = text.encode("utf-8", "surrogatepass")
    forms = {text, urllib.parse.quote(text, safe=""), urllib.parse.quote_plus(text)}
    for encoded in (base64.b64encode(raw), base64.urlsafe_b64encode(raw)):
        forms.add(encoded.decode("ascii"))
        forms.add(encoded.decode("ascii").rstrip("="))
    # Longest first, so that redact() replaces a whole form before a part of it.
    return tuple(sorted(forms, key=len, reverse=True))


def holds_key(value, forms, depth=0):
    """Whether a value (strings, dict keys and values, lists; nested) holds one of the key's forms."""
    if not forms or depth > 16:
        return False
    if isinstance(value, dict):
        return any(holds_key(k, forms, depth + 1) or holds_key(v, forms, depth + 1) for k, v in value.items())
    if isinstance(value, (list, tuple, set)):
        return any(holds_key(item, forms, depth + 1) for item in value)
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        text = str(value)
        return any(form in text for form in forms)
    return False


def key_problems(settings, forms, secret_name=KEY):
    """An error ({variable, value, msg}) for each setting whose value holds the secret; the value is never shown."""
    problems = []
    label = SECRETS.get(secret_name, SECRETS[KEY])["label"]
    for name in sorted(settings, key=str):
        if name in SECRETS or not holds_key(settings[name], forms):
            continue
        problems.append({"variable": name, "value": hidden(secret_name), "msg": (
            "%s holds %s (the value of %s, or its base64 or URL-encoded form), so its value is not shown: it "
            "would be written into the launch scripts, the deploy's output and the job's artifacts. Fix: give it only as "
            "%s (from a vault or an AWX credential) and remove it from %s." % (name, label, secret_name, secret_name, name))})
    return problems


def forms_of(values):
    """{secret setting: its forms} for the secrets among `values` ({name: value}) that are usable strings."""
    return {name: key_forms(value) for name, value in values.items()
            if name in SECRETS and isinstance(value, str) and key_forms(value)}


def problems_of(settings, forms_by_secret):
    """key_problems for every secret, each setting named once (by the first secret it holds)."""
    problems, named = [], set()
    for secret_name in sorted(forms_by_secret):
        for problem in key_problems(settings, forms_by_secret[secret_name], secret_name):
            if problem["variable"] not in named:
                named.add(problem["variable"])
                problems.append(problem)
    return problems


def all_forms(forms_by_secret):
    """Every form of every secret, longest first (to redact)."""
    return tuple(sorted({form for forms in forms_by_secret.values() for form in forms}, key=len, reverse=True))


def redact(value, forms, depth=0):
    """`value` with every form of the key replaced by ********, in strings, lists and dicts."""
    if not forms or depth > 32:
        return value
    if isinstance(value, str):
        for form in forms:
            value = value.replace(form, "********")
        return value
    if isinstance(value, (list, tuple)):
        return [redact(item, forms, depth + 1) for item in value]
    if isinstance(value, dict):
        return {redact(k, forms, depth + 1): redact(v, forms, depth + 1) for k, v in value.items()}
    return value
