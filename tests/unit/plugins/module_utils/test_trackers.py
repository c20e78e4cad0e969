"""verl's trackers (plugins/module_utils/_trackers.py) and their keys (plugins/module_utils/_secrets.py SECRETS): every
logger verl 0.7-0.9 takes is accepted, each refusal's fix works, and a key is never in a script or a message."""
from __future__ import annotations

import json

import pytest

from ansible_collections.verl.deploy.plugins.filter.settings_problems import settings_problems
from ansible_collections.verl.deploy.plugins.module_utils import _environment as environment
from ansible_collections.verl.deploy.plugins.module_utils import _launch_config as lc
from ansible_collections.verl.deploy.plugins.module_utils import _secrets as secrets
from ansible_collections.verl.deploy.plugins.module_utils import _trackers as trackers
from ansible_collections.verl.deploy.plugins.module_utils import _versions as versions
from helpers.launch_helpers import RULES, SPEC, render, settings

WANDB_KEY = "wandb-KEY-0123456789abcdef"
MLFLOW_TOKEN = "mlflow-TOKEN-fedcba987654"
# verl/utils/tracking.py, Tracking.supported_backend, read at the tags v0.7.0, v0.7.1 and v0.8.0 (the same list), and v0.9.0.
VERL_0_7_TO_0_8 = ["wandb", "mlflow", "swanlab", "vemlp_wandb", "tensorboard", "console", "clearml", "trackio", "file"]
VERL_0_9 = VERL_0_7_TO_0_8 + ["rl_insight"]


def build(secrets_set=(), **overrides):
    return lc.build(settings(**overrides), SPEC, RULES, host="node1", is_head=True, nnodes=1,
                    head={"name": "node1", "ansible_host": "10.0.0.1"}, secrets_set=secrets_set)


def ok(secrets_set=(), **overrides):
    config, errors, warnings = build(secrets_set, **overrides)
    assert not errors, errors
    return config, warnings


def test_the_table_is_verl_s_own_list():
    assert set(trackers.LOGGERS) == set(VERL_0_9) and lc.LOGGERS == trackers.LOGGERS
    for profile in versions.PROFILES:
        takes = {name for name, profiles in trackers.TRACKERS.items() if profile in profiles}
        assert takes == set(VERL_0_9 if profile >= "0.9.0" else VERL_0_7_TO_0_8), profile


def test_every_secret_is_a_secret_setting_and_every_tracker_s_key_is_named_where_extra_env_refuses_it():
    marked = {name for name, entry in RULES["settings"].items() if entry.get("secret")}
    assert marked == set(secrets.SECRETS) and all(SPEC[name]["no_log"] is True for name in marked)
    assert set(environment.TRACKER_KEY_SETTINGS) == set(secrets.SECRETS) - {secrets.KEY}
    for name, entry in secrets.SECRETS.items():
        described = SPEC[name]["description"]
        assert entry["tracker"] in trackers.LOGGERS and (name == secrets.KEY or entry["env"] in str(described)), name
        # Given through verl_extra_env instead, it would be written into start_verl.sh: refused, naming the setting.
        problem = environment.env_name_problem(entry["env"])
        assert problem and "Fix:" in problem and (name in problem or entry["tracker"] == "swanlab"), problem


# Each tracker with what it needs (its refusal's fix applied), rendered into trainer.logger.
NEEDS = {"wandb": ({"verl_extra_env": {"WANDB_MODE": "offline"}}, ()),
         "vemlp_wandb": ({"verl_extra_env": {"MLP_TRACKING_REGION": "cn-beijing"}},
                         ("verl_volc_access_key_id", "verl_volc_secret_access_key")),
         "rl_insight": ({"verl_version": "0.9.0"}, ()),
         "swanlab": ({"verl_swanlab_mode": "offline"}, ())}


@pytest.mark.parametrize("name", trackers.LOGGERS)
def test_every_tracker_verl_takes_is_accepted_and_rendered(name):
    overrides, given = NEEDS.get(name, ({}, ()))
    config, _warnings = ok(given, verl_loggers=[name], **overrides)
    assert config["loggers"] == ["console"] + ([name] if name != "console" else [])
    assert "\nLOGGER='[\"%s\"]'\n" % '","'.join(config["loggers"]) in render(config, "run_training.sh")


def test_a_tracker_newer_than_the_image_s_verl_is_refused_and_the_fix_works():
    _config, errors, _warnings = build(verl_loggers=["rl_insight"])
    assert [e["variable"] for e in errors] == ["verl_loggers"], errors
    assert "verl 0.7.0 does not have" in errors[0]["msg"] and "verl_version" in errors[0]["msg"]
    ok(verl_loggers=["rl_insight"], verl_version="0.9.0")


def test_wandb_without_a_key_is_refused_and_either_fix_works():
    """hiyouga/EasyR1#69 (verl's trainer): "wandb.errors.errors.UsageError: api_key not configured (no-tty). call
    wandb.login(key=[your_api_key])", after the model loaded."""
    _config, errors, _warnings = build(verl_loggers="console,wandb")
    assert [e["variable"] for e in errors] == ["verl_wandb_api_key"] and "api_key not configured (no-tty)" in errors[0]["msg"]
    config, _warnings = ok(("verl_wandb_api_key",), verl_loggers="console,wandb")
    assert config["tracker_keys"] == [{"setting": "verl_wandb_api_key", "env": "WANDB_API_KEY"}]
    config, _warnings = ok(verl_loggers="console,wandb", verl_extra_env={"WANDB_MODE": "offline"})
    assert config["tracker_keys"] == [] and config["extra_env"] == {"WANDB_MODE": "offline"}


def test_vemlp_wandb_without_its_keys_and_region_is_refused_and_the_fix_works():
    _config, errors, _warnings = build(verl_loggers=["vemlp_wandb"])
    assert errors and "MLP_TRACKING_REGION" in errors[0]["msg"] and "Fix:" in errors[0]["msg"]
    ok(("verl_volc_access_key_id", "verl_volc_secret_access_key"), verl_loggers=["vemlp_wandb"],
       verl_extra_env={"MLP_TRACKING_REGION": "cn-beijing"})


def test_a_key_whose_tracker_is_off_is_not_written():
    config, warnings = ok(("verl_mlflow_tracking_token",), verl_loggers=["console"])
    assert config["tracker_keys"] == [] and any("verl_mlflow_tracking_token is set but mlflow" in w for w in warnings)


@pytest.mark.parametrize("name, value, says", [
    ("WANDB_API_KEY", "k", "verl_wandb_api_key"), ("MLFLOW_TRACKING_TOKEN", "t", "verl_mlflow_tracking_token"),
    ("MLFLOW_TRACKING_PASSWORD", "p", "verl_mlflow_tracking_password"), ("CLEARML_API_SECRET_KEY", "s", "verl_clearml_api_secret_key"),
    ("MLFLOW_TRACKING_URI", "http://me:pw@mlflow:5000", "verl_mlflow_tracking_password"),
])
def test_a_key_given_through_the_extra_env_is_refused_naming_its_setting(name, value, says):
    _config, errors, _warnings = build(verl_loggers=["mlflow"], verl_extra_env={name: value})
    assert [e["variable"] for e in errors] == ["verl_extra_env"] and says in errors[0]["msg"], errors
    assert value not in json.dumps(errors) or len(value) == 1
    ok(verl_loggers=["mlflow"], verl_extra_env={"MLFLOW_TRACKING_URI": "http://mlflow:5000", "MLFLOW_TRACKING_USERNAME": "me"})


def test_the_scripts_read_the_keys_from_their_files_and_never_hold_them():
    config, _warnings = ok(("verl_wandb_api_key", "verl_mlflow_tracking_token"), verl_loggers="console,wandb,mlflow",
                           verl_extra_env={"MLFLOW_TRACKING_URI": "http://mlflow:5000"})
    assert config["tracker_keys"] == [{"setting": "verl_wandb_api_key", "env": "WANDB_API_KEY"},
                                      {"setting": "verl_mlflow_tracking_token", "env": "MLFLOW_TRACKING_TOKEN"}]
    start = render(config, "start_verl.sh", verl_wandb_api_key=WANDB_KEY, verl_mlflow_tracking_token=MLFLOW_TOKEN)
    assert "\nTRACKER_KEYS_DIR=/root/.verl_deploy/keys\nfor key_name in WANDB_API_KEY MLFLOW_TRACKING_TOKEN; do\n" in start, start
    assert "export MLFLOW_TRACKING_URI=http://mlflow:5000" in start
    training = render(config, "run_training.sh", verl_wandb_api_key=WANDB_KEY, verl_mlflow_tracking_token=MLFLOW_TOKEN)
    for text in (start, training, json.dumps(config)):
        assert WANDB_KEY not in text and MLFLOW_TOKEN not in text


def test_a_setting_that_holds_a_tracker_key_is_refused_without_showing_it():
    host = dict(settings(verl_experiment_name="x-" + WANDB_KEY, verl_loggers=["wandb"]), verl_wandb_api_key=WANDB_KEY,
                ansible_host="10.0.0.1")
    problems = settings_problems({"node1": host}, head="node1", spec=SPEC, rules=RULES)
    assert [p["variable"] for p in problems] == ["verl_experiment_name"], problems
    assert "the W&B key" in problems[0]["msg"] and WANDB_KEY not in json.dumps(problems)


def test_the_settings_check_never_takes_a_secret_and_masks_what_it_was_given():
    params = {name: option.get("default") for name, option in lc.ARGUMENT_SPEC.items()}
    params.update(settings=settings(verl_wandb_api_key=WANDB_KEY), spec=SPEC, rules=RULES, host="node1", is_head=True, nnodes=1,
                  head={"name": "node1", "ansible_host": "10.0.0.1"}, detected={})
    result, _warnings, masked = lc.evaluate(params)
    assert result["failed"] and "verl_wandb_api_key" in result["msg"] and WANDB_KEY not in json.dumps(result)
    assert WANDB_KEY in masked
    params.update(settings=settings(verl_experiment_name=WANDB_KEY))
    result, _warnings, masked = lc.evaluate(params, key_forms=secrets.forms_of({"verl_wandb_api_key": WANDB_KEY}))
    assert result["failed"] and "the W&B key" in result["msg"] and WANDB_KEY not in json.dumps(result) and WANDB_KEY in masked
