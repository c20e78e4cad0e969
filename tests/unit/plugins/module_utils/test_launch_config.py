# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The launch configuration, one concern at a time: the table, conversion, rules, hosts, network, SwanLab,
parallelism, the output folder, and the assembled configuration derived from the table."""
from __future__ import annotations

import pytest

from ansible_collections.verl.deploy.plugins.module_utils import _launch_config as lc
from ansible_collections.verl.deploy.plugins.module_utils._inputs import Errors
from helpers.launch_helpers import RULES, SPEC, launch, launch_ok, settings

MERGED = lc.table(SPEC, RULES)


def test_table_merges_spec_type_bounds_and_rule():
    assert MERGED["verl_ray_port"]["type"] == "int" and MERGED["verl_ray_port"]["max"] == 65535 and MERGED["verl_ray_port"]["min"] == 1
    assert MERGED["verl_test_freq"]["min"] == -1 and MERGED["verl_train_steps"]["default"] == 4
    assert MERGED["verl_model_path"]["rule"] == "path" and MERGED["verl_model_path"]["use"] == "mount"
    assert MERGED["verl_project_name"]["max_length"] == 128
    assert MERGED["verl_swanlab_mode"]["choices"][0] == "cloud"


def test_every_rule_entry_is_a_setting_and_every_setting_is_bounded():
    assert set(RULES["settings"]) <= set(SPEC)
    assert {r["rule"] for r in RULES["settings"].values() if "rule" in r} <= set(lc.RULES) | set(lc.RAW_RULES)
    for name, entry in MERGED.items():
        if entry["type"] in ("int", "float"):
            assert entry.get("max") is not None, name
        if entry["type"] in ("str", "list", "dict", "raw"):
            assert entry.get("max_length") or entry.get("rule") in ("devices", "mask"), name


def test_raw_value_follows_the_default_of_another_setting():
    assert lc.raw_value("verl_gen_tp", MERGED, {"verl_train_tp": 8}, {}) == 8
    assert lc.raw_value("verl_gen_tp", MERGED, {}, {}) == 4
    assert lc.raw_value("verl_feature_mask", MERGED, {}, {"mask": "1000000"}) == "1000000"
    assert lc.raw_value("verl_feature_mask", MERGED, {}, {}) == "0000000"
    assert lc.raw_value("verl_ray_port", MERGED, {}, {}) == 9182


@pytest.mark.parametrize(("name", "raw", "expected"), [
    ("verl_train_steps", "12", 12), ("verl_lr", "2e-6", 2e-6), ("verl_restart", "yes", True), ("verl_swanlab_mode", "offline", "offline"),
    ("verl_extra_overrides", None, []), ("verl_extra_env", None, {}), ("verl_train_steps", 10 ** 7, None),
    ("verl_swanlab_mode", "evil", None), ("verl_extra_overrides", "a=b", None), ("verl_extra_env", [], None),
])
def test_coerce_converts_to_the_type_within_its_bounds(name, raw, expected):
    assert lc.coerce(name, MERGED[name], raw, Errors()) == expected


@pytest.mark.parametrize(("rule", "name", "value", "expected"), [
    ("url", "verl_swanlab_host", "http://h:8000/", "http://h:8000/"), ("url", "verl_swanlab_host", "h:8000", None),
    ("image", "verl_image", " ubuntu:22.04 ", "ubuntu:22.04"), ("image", "verl_image", "", ""), ("image", "verl_image", "x/UP", None),
    ("images", "verl_image_by_chip", {"a3": " r/v:a3 "}, {"a3": "r/v:a3"}), ("images", "verl_image_by_chip", {"950": "r/v:x"}, None),
    ("images", "verl_image_by_chip", {"910b": ""}, None), ("images", "verl_image_by_chip", {"910b": ["x"]}, None),
    ("address", "verl_master_addr", "head.example", "head.example"), ("address", "verl_master_addr", "localhost", None),
    ("ipv4", "verl_node_ip", "10.0.0.2", "10.0.0.2"), ("ifname", "verl_socket_ifname", "enp1s0", "enp1s0"),
    ("requirement", "verl_swanlab_package", "swanlab==0.10.3", "swanlab==0.10.3"), ("requirement", "verl_swanlab_package", "-e x", None),
    ("ray_args", "verl_ray_start_args", ["--num-cpus=4"], ["--num-cpus=4"]), ("ray_args", "verl_ray_start_args", ["x"], None),
    # Ray refuses a temporary folder that is not absolute ("temp_dir must be absolute path or None."); the fix's form passes.
    ("ray_args", "verl_ray_start_args", ["--temp-dir=ray_tmp"], None), ("ray_args", "verl_ray_start_args", ["--temp-dir"], None),
    ("ray_args", "verl_ray_start_args", ["--temp-dir=/data/ray"], ["--temp-dir=/data/ray"]),
    ("overrides", "verl_extra_overrides", ["+a.b=c d"], ["+a.b=c d"]), ("overrides", "verl_extra_overrides", ["a b"], None),
    ("overrides", "verl_extra_overrides", ["trainer.hydra_x=1", "a.target=b"], ["trainer.hydra_x=1", "a.target=b"]),
    ("overrides", "verl_extra_overrides", ["+x._target_=os.system"], None),
    ("volumes", "verl_container_extra_volumes", ["/w:/w:ro"], ["/w:/w:ro"]), ("volumes", "verl_container_extra_volumes", ["/:/w"], None),
    ("env", "verl_extra_env", {"OMP_B": 2, "HCCL_A": "1"}, {"HCCL_A": "1", "OMP_B": "2"}), ("env", "verl_extra_env", {"BASH_ENV": "x"}, None),
    ("paths", "verl_ascend_env_scripts", ["/a/set_env.sh"], ["/a/set_env.sh"]), ("name", "verl_project_name", "a b", None),
])
def test_each_rule(rule, name, value, expected):
    assert lc.RULES[rule](name, MERGED[name], value, Errors(), {}) == expected


def test_devices_rule_reads_lists_strings_and_numbers():
    entry = MERGED["verl_npu_devices"]
    assert lc._rule_devices("verl_npu_devices", entry, "0, 1,2", Errors(), {}) == [0, 1, 2]
    assert lc._rule_devices("verl_npu_devices", entry, 3, Errors(), {}) == [3]
    context = {}
    assert lc._rule_devices("verl_npu_devices", entry, "4,5,6,7", Errors(), context) == [4, 5, 6, 7] and "npu_devices_note" not in context


@pytest.mark.parametrize("given, used", [("0,2,4,6,1,3,5,7", list(range(8))), ([3, 1], [1, 3]), ("7,6", [6, 7])])
def test_devices_are_used_in_ascending_order_and_the_summary_says_so(given, used):
    """The Ascend runtime refuses an unsorted ASCEND_RT_VISIBLE_DEVICES ("it must be configured in ascending order")."""
    context, errors = {}, Errors()
    assert lc._rule_devices("verl_npu_devices", MERGED["verl_npu_devices"], given, errors, context) == used and not list(errors)
    assert context["npu_devices_note"].endswith("is used as %s: the Ascend runtime takes the NPUs in ascending order."
                                                % ",".join(map(str, used)))


def test_mask_rule_decodes_and_names_the_short_variable():
    assert lc._rule_mask("verl_feature_mask", {}, "1000000", Errors(), {})["enabled"]["remove_padding"]
    errors = Errors()
    assert lc._rule_mask("verl_feature_mask", {}, "12", errors, {"mask": "12"}) is None and errors[0]["variable"] == "mask"


def test_check_settings_reports_every_problem_and_keeps_the_rest():
    errors = Errors()
    values = lc.check_settings(settings(verl_train_steps="x", verl_image="x/UPPER"), MERGED, errors, {"mask": None})
    assert [e["variable"] for e in errors] == ["verl_train_steps", "verl_image"]
    assert values["verl_train_steps"] is None and values["verl_train_tp"] == 4 and "verl_swanlab_api_key" not in values


def test_check_unknown_warns_about_typos_and_refuses_key_lookalikes():
    errors = Errors()
    warnings = lc.check_unknown(["verl_trian_tp", "verl_swanlab_apikey"], SPEC, errors)
    assert warnings == ["verl_trian_tp is not a setting of verl.deploy and is ignored. Did you mean verl_train_tp?"]
    assert [e["variable"] for e in errors] == ["verl_swanlab_apikey"] and errors[0]["value"] == "(not shown)"


def test_check_hosts_names_the_bad_host():
    errors = Errors()
    lc.check_hosts("ok-1", {"name": "../head"}, errors)
    assert len(errors) == 1 and "'../head' (the Ray head)" in errors[0]["msg"]


def test_master_address_precedence():
    assert lc.master_address("", {"name": "h", "node_ip": "10.0.0.9", "ansible_host": "10.0.0.1"}, Errors())[0] == "10.0.0.9"
    assert lc.master_address("10.0.0.5", {"name": "h", "ansible_host": "10.0.0.1"}, Errors())[0] == "10.0.0.5"
    errors = Errors()
    assert lc.master_address("", {"name": "h"}, errors) == (None, None) and "unknown" in errors[0]["msg"]


def test_check_network_uses_what_was_detected_when_nothing_is_stated():
    values = {"verl_node_ip": "", "verl_socket_ifname": "", "verl_master_addr": "", "verl_ray_port": 1, "verl_ray_dashboard_port": 2}
    network = lc.check_network(values, {"name": "h", "ansible_host": "10.0.0.1"}, {"node_ip": "10.0.0.3", "socket_ifname": "eth1"}, Errors())
    assert network == {"node_ip": "10.0.0.3", "socket_ifname": "eth1", "master_addr": "10.0.0.1", "master_addr_source": "ansible_host of h"}
    errors = Errors()
    lc.check_network(dict(values, verl_ray_dashboard_port=1), {"name": "h", "ansible_host": "10.0.0.1"}, {}, errors)
    assert errors[0]["variable"] == "verl_ray_dashboard_port"


def test_check_swanlab_needs_a_key_only_in_login_modes():
    on = {"verl_swanlab_enabled": True, "verl_swanlab_mode": "cloud", "verl_swanlab_host": "http://h", "verl_swanlab_workspace": "w"}
    errors, warnings = Errors(), []
    assert lc.check_swanlab(on, False, errors, warnings)["needs_key"] and errors[0]["variable"] == "verl_swanlab_api_key"
    errors, warnings = Errors(), []
    assert not lc.check_swanlab(dict(on, verl_swanlab_mode="offline"), True, errors, warnings)["needs_key"]
    assert not errors and "needs no login" in warnings[0]
    assert lc.check_swanlab({"verl_swanlab_enabled": False}, True, Errors(), []) is None


def test_check_parallelism_of_runs_only_with_every_number():
    errors = Errors()
    values = lc.check_settings(settings(verl_train_tp=3, verl_gen_tp=3), MERGED, Errors(), {"mask": None})
    lc.check_parallelism_of(values, None, 1, errors)
    assert "verl_train_tp" in [e["variable"] for e in errors]
    errors = Errors()
    lc.check_parallelism_of(dict(values, verl_train_pp=None), None, 1, errors)
    assert not errors


def test_check_output_folder_refuses_links_out(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "h1").symlink_to(tmp_path)
    errors = Errors()
    lc.check_output_folder({"verl_output_dir": str(out)}, "h1", errors, MERGED)
    assert "symbolic link" in errors[0]["msg"]
    link = tmp_path / "etc-link"
    link.symlink_to("/etc")
    errors = Errors()
    lc.check_output_folder({"verl_output_dir": str(link)}, "h1", errors, MERGED)
    assert "system folder" in errors[0]["msg"]
    errors = Errors()
    lc.check_output_folder({"verl_output_dir": str(tmp_path / "new")}, "h1", errors, MERGED)
    assert not errors


def test_check_mount_parents_refuses_a_dataset_in_the_root():
    errors = Errors()
    lc.check_mount_parents({"verl_train_file": "/train.parquet", "verl_test_file": "/d/t.parquet"}, errors)
    assert [e["variable"] for e in errors] == ["verl_train_file"]


def test_assemble_derives_every_setting_from_the_table():
    config = launch_ok()
    for name, entry in MERGED.items():
        key = entry.get("output") or name[len("verl_"):]
        assert (key in config) != bool(entry.get("secret")), name
    assert config["dashboard_port"] == 8260 and config["lr"] == "1e-6" and config["gen_tp"] == 4
    assert config["feature_mask"] == "0000000" and config["features"]["mask"] == "0000000"


def test_the_ray_join_bound_follows_each_attempts_timeout():
    """roles/ray waits this long for a worker's background join: every attempt's `ray start` bound, 10 s of slack and the
    pause between attempts, and 240 s for the checks."""
    assert launch_ok()["ray_join_bound"] == 30 * (10 + 60 + 10) + 240
    assert launch_ok(verl_ray_join_retries=2, verl_ray_join_delay=3, verl_ray_join_timeout=300)["ray_join_bound"] == 2 * (3 + 300 + 10) + 240


def test_build_returns_errors_and_no_configuration():
    config, errors, _warnings = launch(verl_train_steps=0, host="a/b")
    assert config is None and {e["variable"] for e in errors} == {"verl_train_steps", "inventory_hostname"}


def test_a_setting_declared_only_in_the_argument_specs_is_checked_and_reaches_the_configuration():
    """Adding a setting: its argument spec (plus a setting_rules line only when its type's bounds do not fit),
    the template that reads _verl_launch.<name>, and its test. Nothing in this module changes."""
    spec = dict(SPEC, verl_new_knob={"type": "int", "default": 3, "description": "A new knob."},
                verl_new_label={"type": "str", "default": "a", "description": "A new label."})
    config, errors, _warnings = lc.build(settings(), spec, RULES, host="node1", head={"name": "node1", "ansible_host": "10.0.0.1"})
    assert not errors and config["new_knob"] == 3 and config["new_label"] == "a"
    config, errors, _warnings = lc.build(dict(settings(), verl_new_knob=10 ** 9, verl_new_label="a\nb"), spec, RULES, host="node1",
                                         head={"name": "node1", "ansible_host": "10.0.0.1"})
    assert config is None and [e["variable"] for e in errors] == ["verl_new_knob", "verl_new_label"]


def test_identity_checks_only_the_deployment_and_the_host_name():
    found, errors, _warnings = lc.identity({"verl_train_tp": "x", "verl_workdir": "/"}, SPEC, RULES, host="n1")
    assert [e["variable"] for e in errors] == ["verl_workdir"] and found["container_name"] == "verl"
    _found, errors, _warnings = lc.identity({}, SPEC, RULES, unknown=["verl_swanlab_apikey"], host="a/b")
    assert [e["variable"] for e in errors] == ["verl_swanlab_apikey", "inventory_hostname"]


@pytest.mark.parametrize("mode, path, problem", [
    ("resume_path", "", "verl_resume_mode=resume_path needs verl_resume_from_path, which is empty"),
    ("auto", "/ckpt/global_step_4", "verl_resume_from_path='/ckpt/global_step_4' is given, but verl_resume_mode=auto does not read it"),
    ("resume_path", "/ckpt/run1", "is not a checkpoint folder: verl resumes only from a folder named global_step_<N>"),
])
def test_check_resume_names_the_variable_the_value_and_the_fix(mode, path, problem):
    config, errors, _warnings = launch(verl_resume_mode=mode, verl_resume_from_path=path)
    assert config is None and [e["variable"] for e in errors] == ["verl_resume_from_path"]
    assert problem in errors[0]["msg"] and "Fix:" in errors[0]["msg"]


def test_the_checkpoint_to_resume_from_is_mounted_into_a_new_container():
    config = launch_ok(verl_resume_mode="resume_path", verl_resume_from_path="/old/ckpts/global_step_40/")
    assert config["resume_mode"] == "resume_path" and config["resume_from_path"] == "/old/ckpts/global_step_40"
    assert "/old/ckpts/global_step_40:/old/ckpts/global_step_40:rw" in config["container"]["volumes"]
    inside = launch_ok(verl_resume_mode="resume_path", verl_resume_from_path="/ckpt/global_step_4")  # under verl_ckpts_dir
    assert not [v for v in inside["container"]["volumes"] if "global_step" in v]
    assert launch_ok()["resume_mode"] == "auto" and launch_ok()["resume_from_path"] == ""


def test_grpo_leaves_the_overlong_buffer_unchecked():
    assert launch_ok(verl_algorithm="grpo", verl_overlong_buffer_len=8192)["algorithm"] == "grpo"
    _config, errors, _warnings = launch(verl_overlong_buffer_len=8192)
    assert [e["variable"] for e in errors] == ["verl_overlong_buffer_len"]


# --- Trackers, the experiment name, the log's name (issue 31 item 5, issue 33 item 6)

@pytest.mark.parametrize("path, dashes, underscores", [
    ("/mnt/public/Qwen3-8B", "qwen3-8b", "qwen3_8b"), ("/models/Qwen2.5-7B-Instruct", "qwen2.5-7b-instruct", "qwen2.5_7b_instruct"),
    ("/m/DeepSeek_R1 Distill", "deepseek-r1-distill", "deepseek_r1_distill"), ("/m/--", "model", "model"),
    ("/m/" + "A" * 80, "a" * 48, "a" * 48), ("/m/Llama-3.1-8B/", "llama-3.1-8b", "llama_3.1_8b"),
])
def test_model_label_is_the_folder_name_sanitised(path, dashes, underscores):
    assert lc.model_label(path) == dashes and lc.model_label(path, "_") == underscores
    assert lc.log_name_prefix(path) == "verl_%s_" % underscores and lc.log_name_prefix(path).startswith(lc.LOG_PREFIX)


@pytest.mark.parametrize("loggers, swanlab, expected", [
    (["console"], False, ["console"]), (["console"], True, ["console", "swanlab"]), ([], False, ["console"]),
    (["tensorboard"], False, ["console", "tensorboard"]), (["tensorboard", "swanlab"], False, ["console", "swanlab", "tensorboard"]),
    (["swanlab"], True, ["console", "swanlab"]),
])
def test_trackers_always_log_to_console_and_swanlab_enabled_is_the_shorthand(loggers, swanlab, expected):
    assert lc.trackers(loggers, swanlab) == expected


@pytest.mark.parametrize("raw, expected", [
    (["console", "tensorboard"], ["console", "tensorboard"]), ("console,tensorboard", ["console", "tensorboard"]),
    ("tensorboard swanlab", ["tensorboard", "swanlab"]), (["tensorboard", "tensorboard"], ["tensorboard"]), ("", []),
    ('["console", "tensorboard"]', ["console", "tensorboard"]), ("[console,tensorboard]", ["console", "tensorboard"]),
])
def test_loggers_rule_takes_a_list_or_a_string(raw, expected):
    errors = Errors()
    assert lc._rule_loggers("verl_loggers", MERGED["verl_loggers"], raw, errors, {}) == expected and not errors


@pytest.mark.parametrize("bad", [["console", "neptune"], "WandB", ["TensorBoard"]])
def test_unknown_logger_is_refused_naming_the_list_and_the_fix_works(bad):
    """A name outside verl's own list stops verl at the start with `AssertionError: TensorBoard is not supported`
    (verl/utils/tracking.py, Tracking.__init__): refused before anything is changed."""
    _config, errors, _warnings = launch(verl_loggers=bad)
    assert [e["variable"] for e in errors] == ["verl_loggers"], errors
    msg = errors[0]["msg"]
    assert "Fix: give a list of %s, e.g. -e verl_loggers=console,tensorboard" % ", ".join(lc.LOGGERS) in msg
    fixed = launch_ok(verl_loggers="console,tensorboard")  # the fix the message gives, as -e gives it
    assert fixed["loggers"] == ["console", "tensorboard"]


def test_default_experiment_name_carries_model_algorithm_mask_and_layout():
    config = launch_ok(nnodes=2, mask="1100100", verl_algorithm="grpo", verl_npu_devices="0,1,2,3,4,5,6,7")
    assert config["experiment_name"] == "qwen3-8b-grpo-m1100100-2x8"
    assert launch_ok(verl_experiment_name="mine")["experiment_name"] == "mine"
    assert lc.experiment_name("/m/Qwen3-8B", "dapo", "0000000", 3, 8) == "qwen3-8b-dapo-m0000000-3x8"


def test_checkpoint_folder_does_not_follow_the_experiment_name():
    """A mask change changes the default experiment name, never the checkpoint folder: the training resumes."""
    before, after = launch_ok(mask="0000000"), launch_ok(mask="1100000")
    assert before["experiment_name"] != after["experiment_name"] and before["ckpts_dir"] == after["ckpts_dir"] == "/ckpt"


def test_swanlab_in_the_list_turns_swanlab_on_as_the_shorthand_does():
    listed = launch_ok(verl_loggers=["swanlab"], verl_swanlab_mode="offline")
    shorthand = launch_ok(verl_swanlab_enabled=True, verl_swanlab_mode="offline")
    assert listed["swanlab_enabled"] and shorthand["swanlab_enabled"] and listed["swanlab"] == shorthand["swanlab"]
    assert listed["loggers"] == shorthand["loggers"] == ["console", "swanlab"]
    off = launch_ok()
    assert off["loggers"] == ["console"] and not off["swanlab_enabled"] and off["tensorboard"] is None


def test_tensorboard_folder_is_below_the_log_dir_or_the_setting_and_mounted():
    config = launch_ok(verl_loggers="console,tensorboard", verl_log_dir="/mnt/logs", verl_project_name="p")
    assert config["tensorboard"] == {"root": "/mnt/logs/tensorboard", "dir": "/mnt/logs/tensorboard/p/%s" % config["experiment_name"]}
    assert "/mnt/logs:/mnt/logs:rw" in config["container"]["volumes"]
    own = launch_ok(verl_loggers=["tensorboard"], verl_tensorboard_dir="/mnt/tb", verl_project_name="p", verl_experiment_name="e")
    assert own["tensorboard"] == {"root": "/mnt/tb", "dir": "/mnt/tb/p/e"} and "/mnt/tb:/mnt/tb:rw" in own["container"]["volumes"]


@pytest.mark.parametrize("hccl, exported", [(None, None), ({"mb": 150}, None), ({"mb": 957}, "957")])
def test_start_verl_exports_the_hccl_window_the_rollouts_expert_parallelism_needs(hccl, exported):
    """Derived, not constant: above CANN's default 200 MB (C26's need), start_verl.sh exports it; verl_extra_env's own value is
    exported after the release's env and wins (checked by C26)."""
    env = lc.training_entry("dapo", "0.8.0", hccl=hccl)["env"]
    assert env.get("HCCL_BUFFSIZE") == exported
    assert env["HF_DEACTIVATE_ASYNC_LOAD"] == "1" and "HCCL_BUFFSIZE" not in lc.versions.release("0.8.0")["env"]
