"""One source of truth: the settings' defaults, argument specs and module options agree."""
from __future__ import annotations

import re

import yaml

import settings_table
from helpers.launch_helpers import DEFAULTS, REPO, RULES, SPEC

from ansible_collections.verl.deploy.plugins.module_utils import _features


def test_every_default_is_specified_and_every_spec_has_a_default():
    assert set(DEFAULTS) == set(SPEC)


def test_spec_defaults_equal_the_defaults_file():
    for name, option in SPEC.items():
        default = DEFAULTS[name]
        if isinstance(default, str) and "{{" in default:
            # Derived defaults (e.g. verl_gen_tp follows verl_train_tp) are described, not repeated.
            assert "default" not in option, name
            assert "efault" in option["description"] or "follows" in option["description"], name
        else:
            assert option.get("default") == default, name


def test_spec_types_fit_the_defaults():
    python_types = {"int": int, "float": float, "bool": bool, "str": str, "list": list, "dict": dict}
    for name, option in SPEC.items():
        value = DEFAULTS[name]
        if option["type"] == "raw" or (isinstance(value, str) and "{{" in value):
            continue
        assert isinstance(value, python_types[option["type"]]), name


def test_the_pre_checks_read_repeats_the_settings_defaults():
    """roles/precheck/tasks/gather.yml runs before the verl role's defaults are loaded, so it repeats the ones it needs (the
    NPUs whose hccn_tool network it reads, the resume mode): each must be the verl role's."""
    gather = (REPO / "roles/precheck/tasks/gather.yml").read_text()
    repeated = re.findall(r"(verl_[a-z0-9_]+) \| default\('([^']+)'", gather)
    assert {name for name, _value in repeated} >= {"verl_npu_devices", "verl_resume_mode"}, repeated
    for name, value in repeated:
        assert value == DEFAULTS[name], name


def test_every_setting_is_public_and_prefixed():
    assert all(re.fullmatch(r"verl_[a-z0-9_]+", name) for name in SPEC)


def test_public_interface_names_exist():
    """The public interface: outside tests (and users' inventories) rely on these names."""
    required = """verl_confirm verl_output_dir verl_model_path verl_train_file verl_test_file verl_ckpts_dir verl_log_dir
    verl_npu_devices verl_train_steps verl_train_batch_size verl_lr verl_train_tp verl_train_pp verl_gen_tp
    verl_n_resp_per_prompt verl_swanlab_enabled verl_swanlab_host verl_swanlab_api_key verl_swanlab_mode
    verl_swanlab_workspace verl_swanlab_log_dir verl_project_name verl_image verl_container_name verl_master_addr
    verl_socket_ifname verl_workdir verl_feature_mask""".split()
    assert set(required) <= set(SPEC)
    assert (REPO / "playbooks/render.yml").is_file()
    assert yaml.safe_load((REPO / "galaxy.yml").read_text())["namespace"] == "verl"


def test_original_defaults():
    """The original design's defaults, which verl.deploy keeps (docs/design.md names them, docs/settings.md lists them)."""
    assert DEFAULTS["verl_train_steps"] == 4 and DEFAULTS["verl_train_batch_size"] == 32 and DEFAULTS["verl_lr"] == 1e-6
    assert DEFAULTS["verl_train_tp"] == 4 and DEFAULTS["verl_train_pp"] == 2 and DEFAULTS["verl_n_resp_per_prompt"] == 8
    # The original's image is the 910B one; empty verl_image chooses it, or the A3 one, by the detected chip.
    assert DEFAULTS["verl_image"] == ""
    assert DEFAULTS["verl_image_by_chip"] == {"910b": "quay.io/ascend/verl:verl-8.3.rc1-910b-ubuntu22.04-py3.11-v0.7.0",
                                              "a3": "quay.io/ascend/verl:verl-8.3.rc1-a3-ubuntu22.04-py3.11-v0.7.0"}
    assert DEFAULTS["verl_swanlab_mode"] == "cloud" and DEFAULTS["verl_swanlab_workspace"] == "TrainingMaster"
    assert DEFAULTS["verl_swanlab_log_dir"] == "/mnt/project/h4380/examples/verl/swanlab_cloud_fsdp_log/"
    assert DEFAULTS["verl_project_name"] == "verl_hlm" and DEFAULTS["verl_workdir"] == "/verl"
    assert DEFAULTS["verl_ray_port"] == 9182 and DEFAULTS["verl_ray_dashboard_port"] == 8260
    assert DEFAULTS["verl_npu_devices"] == "0,1,2,3,4,5,6,7" and DEFAULTS["verl_output_dir"] == "/tmp/verl_scripts"
    assert DEFAULTS["verl_feature_mask"] == "{{ mask | default('0000000') }}"


def test_feature_guide_matches_the_feature_table():
    guide = (REPO / "docs/features.md").read_text()
    for feature in _features.FEATURES:
        assert "| %d | %s |" % (feature["bit"], feature["name"]) in guide, feature["name"]
        for line in feature["on_lines"] + feature["off_lines"]:
            assert line in guide, line
        for var, keys in feature["variables"].items():
            assert var in guide
            for key in keys:
                assert key in guide, key


def test_defaults_file_and_settings_guide_are_generated_from_the_table():
    """Fix: .venv/bin/python tools/settings_table.py --write"""
    assert settings_table.DEFAULTS_FILE.read_text() == settings_table.defaults_text()
    assert settings_table.DOCS_FILE.read_text() == settings_table.docs_text()


def test_every_setting_has_its_rules_and_every_number_an_upper_bound():
    # A setting whose type's bounds fit needs no line in setting_rules.yml; a line names a setting, in the spec's order.
    assert [name for name in SPEC if name in RULES["settings"]] == list(RULES["settings"])
    for name, entry in settings_table.entries():
        if entry["type"] in ("int", "float"):
            assert entry["max"] is not None and str(entry["max"]) in settings_table.bounds(entry).replace("1e+06", "1000000"), name


def test_the_readme_points_to_the_settings_guide():
    assert "docs/settings.md" in (REPO / "README.md").read_text()


def test_a_setting_whose_0_turns_it_off_takes_0():
    """A description that says C(0) turns the setting off is a fix users follow (docs/operations.md: -e verl_keep_alive=0):
    its rule must take 0 (verl_keep_alive's refused it, "out of range ... from 1 to 100")."""
    found = []
    for name, option in SPEC.items():
        text = " ".join(option["description"]) if isinstance(option["description"], list) else option["description"]
        if re.search(r"C\(0\)[^.]*\b(off|turns|disables)", text):
            rule = dict(RULES["types"].get(option["type"], {}), **RULES["settings"].get(name, {}))
            found.append(name)
            assert rule.get("min", 0) <= 0 <= rule.get("max", 0), (name, rule)
    assert {"verl_keep_alive", "verl_npu_sample_seconds"} <= set(found), found
