"""The algorithm table (plugins/module_utils/_algorithms.py): its entries are well formed, every place that must
spell its keys literally (the argument spec, the AWX survey) equals it, its page is current, and no production file
decides anything on an algorithm's name."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import settings_table
import yaml

from ansible_collections.verl.deploy.plugins.module_utils import _algorithms as algorithms
from ansible_collections.verl.deploy.plugins.module_utils import _versions as versions
from ansible_collections.verl.deploy.plugins.module_utils._config_checks import check_parallelism

REPO = Path(__file__).resolve().parents[4]
TEMPLATE = REPO / "roles" / "training" / "templates" / "run_training.sh.j2"
KEYS = [entry["key"] for entry in algorithms.ALGORITHMS]


def test_the_argument_spec_offers_the_table_and_its_default():
    option = yaml.safe_load((REPO / "roles" / "verl" / "meta" / "argument_specs.yml").read_text())[
        "argument_specs"]["main"]["options"]["verl_algorithm"]
    assert option["choices"] == KEYS and option["default"] == algorithms.DEFAULT


def test_the_awx_survey_offers_the_table_and_its_default():
    question = yaml.safe_load((REPO / "awx" / "surveys.yml").read_text())["questions"]["algorithm"]
    assert question["choices"] == KEYS and "default" not in question
    assert question["question_description"].endswith("else the table's default (docs/algorithms.md).")


def test_the_algorithms_page_is_generated_from_the_table():
    """Fix: .venv/bin/python tools/settings_table.py --write"""
    assert settings_table.ALGORITHMS_FILE.read_text() == settings_table.algorithms_text()


@pytest.mark.parametrize("entry", algorithms.ALGORITHMS, ids=KEYS)
def test_an_entry_is_complete_and_its_lines_are_safe_in_the_script(entry):
    assert re.fullmatch(r"[a-z][a-z0-9_]*", entry["key"]) and entry["label"] == entry["key"].upper()
    assert entry["module"] and entry["config"] and entry["summary"] and entry["description"] and entry["source"]
    assert set(entry["rules"]) <= set(algorithms.RULES)
    assert len(entry["overrides"]) == len(set(entry["overrides"]))
    script_variables = set(re.findall(r"^([A-Z_]+)=", TEMPLATE.read_text(), re.M))
    for line in entry["overrides"]:
        # run_training.sh writes each line inside double quotes: nothing but ${VAR} of its own variables may expand.
        assert not re.search(r"[\"`\\]|\$(?!\{[A-Z_]+\})", line), line
        assert set(re.findall(r"\$\{([A-Z_]+)\}", line)) <= script_variables, line
        assert re.fullmatch(r"\+{0,2}[A-Za-z0-9_.]+=\S+", line), line
    keys = {line.lstrip("+").split("=", 1)[0] for line in entry["overrides"]}
    for left_out, why in entry["left_out"].items():
        assert why and not any(key == left_out or key.startswith(left_out + ".") for key in keys), left_out


def test_the_entry_points_are_verls_ppo_trainer_and_dapo_on_0_7_0_its_recipe():
    assert {key: versions.entry_of(key, "0.7.0") for key in algorithms.CHOICES} == {
        "dapo": ("recipe.dapo.main_dapo", "dapo_megatron_trainer"), "grpo": ("verl.trainer.main_ppo", "ppo_megatron_trainer"),
        "gspo": ("verl.trainer.main_ppo", "ppo_megatron_trainer")}
    assert {versions.entry_of(key, "0.7.1") for key in algorithms.CHOICES} == {("verl.trainer.main_ppo", "ppo_megatron_trainer")}
    assert versions.entry_point("gspo")["file"] == "verl/trainer/main_ppo.py"


def test_an_unknown_rule_is_an_error_not_false():
    with pytest.raises(KeyError, match="no algorithm rule 'overlong'"):
        algorithms.applies("dapo", "overlong")


# 8 NPUs, TP 4 PP 2 with VPP: the old log-prob pass always runs; the reference pass only for an algorithm with a KL loss.
VPP_CASE = {"train_tp": 4, "train_pp": 2, "gen_tp": 4, "npu_per_node": 8, "nnodes": 1, "world_size": 8, "train_batch_size": 8,
            "ppo_mini_batch_size": 8, "n_resp_per_prompt": 2, "ppo_micro_batch_size_per_gpu": 2,
            "ref_log_prob_micro_batch_size_per_gpu": 16, "rollout_log_prob_micro_batch_size_per_gpu": 4, "max_prompt_length": 1024,
            "max_response_length": 1024, "overlong_buffer_len": 2048, "num_layers": 36, "num_attention_heads": 32,
            "num_kv_heads": 8, "dynamic_bsz": False, "recompute": False, "vpp": True}


@pytest.mark.parametrize("key", KEYS)
def test_the_checks_apply_the_rules_the_table_names(key):
    rules = [(error["rule"], error["variable"]) for error in check_parallelism(dict(VPP_CASE, algorithm=key))]
    assert (("C12", "verl_ref_log_prob_micro_batch_size_per_gpu") in rules) is algorithms.applies(key, "reference_model")
    assert (("C18", "verl_overlong_buffer_len") in rules) is algorithms.applies(key, "overlong_buffer")


# Where an algorithm's name may stand in production: the table, and the YAML that must list its keys literally
# (tested above); an example path (qwen3-8b-dapo, dapo-math-17k) names a dataset, not a choice.
PRODUCTION = [path for path in [*REPO.glob("roles/**/*"), *REPO.glob("plugins/**/*.py"), *REPO.glob("playbooks/**/*.yml"),
                                *REPO.glob("awx/*.yml"), *REPO.glob("extensions/eda/**/*")]
              if path.is_file() and path.name != "_algorithms.py"]
NAME = re.compile(r"(?<![-/\w])(%s)(?![-/\w])" % "|".join(KEYS), re.I)
LITERAL_CHOICE = re.compile(r"^\s*(- \w+|default: \w+|choices: \[[\w, ]+\]|verl_algorithm: \w+)\s*$")


def test_no_production_file_names_an_algorithm_outside_the_table():
    found = ["%s:%d: %s" % (path.relative_to(REPO), number, line.strip())
             for path in PRODUCTION for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
             if NAME.search(line) and not LITERAL_CHOICE.match(line)]
    assert found == []
