"""verl_extra_overrides judged by hydra-core's own override parser (plugins/module_utils/_hydra_overrides.py)."""
from __future__ import annotations

import pytest

from ansible_collections.verl.deploy.plugins.module_utils import _hydra_overrides as hydra_overrides


@pytest.mark.parametrize("line", [
    "trainer.critic_warmup=0", "+actor_rollout_ref.actor.megatron.param_dtype=bf16", "++trainer.log_val_generations=4",
    "~trainer.rollout_data_dir", "trainer.x='$(touch y)'", "data.filter_overlong_prompts=True", "a=[1,2,{b:c}]", "a=null",
    "actor_rollout_ref.actor.optim.weight_decay=0.01", "a=str(1)",
])
def test_usable_overrides_pass(line):
    assert hydra_overrides.override_problem(line) is None


@pytest.mark.parametrize(("line", "says"), [
    ("a.b={_target_:os.system,_args_:[id]}", "_target_"),
    ("a.b={c:{_target_:subprocess.run,args:[id]}}", "_target_"),
    ("a=[1,{_partial_:true}]", "_partial_"),
    ("+a._recursive_=false", "_recursive_"),
    ("a._convert_=all", "_convert_"),
    ("a='x_args_y'", "_args_"),
    ("a._target_=os.system", "_target_"),
    ("trainer.experiment_name2=${oc.env:SWANLAB_API_KEY}", "interpolation"),
    ("a='${oc.env:X}'", "interpolation"),
    ("a=[${x}]", "interpolation"),
    ("a=1,2", "sweep"), ("a=choice(1,2)", "sweep"), ("a=range(1,3)", "sweep"), ("a=glob(*)", "sweep"), ("a=interval(0,1)", "sweep"),
    ("hydra.run.dir=/etc", "hydra"), ("hydra/launcher=basic", "hydra"), ("+x@hydra.callbacks=y", "hydra"), ("~hydra", "hydra"),
    ("a=$(id)", "cannot be parsed"), ("a=`id`", "cannot be parsed"), ("a=extend_list(1)", "cannot be parsed"),
    ("a b=c", "not one Hydra override"), ("=x", "not one Hydra override"),
    ("trainer.total_training_steps=5", "verl_train_steps"),
    ("++data.train_files=/etc/passwd", "verl_train_file"),
    ("~trainer.project_name", "verl_project_name"),
    ("actor_rollout_ref.actor.optim={lr:1}", "verl_lr"),
    ("trainer={}", "verl_"),
    ("actor_rollout_ref.model.use_remove_padding=True", "verl_feature_mask"),
    ("+actor_rollout_ref.actor.megatron.override_transformer_config.recompute_num_layers=2", "verl_feature_mask"),
])
def test_hostile_overrides_are_refused_by_meaning(line, says):
    problem = hydra_overrides.override_problem(line)
    assert problem and says in problem and "Fix:" in problem, problem


# Hydra's own settings are `hydra` as written (Override.is_hydra_override compares case-sensitively): other letters
# are an unknown key of verl's config, and the message says what Hydra does with each form (tests/test_hostile_inputs.py
# composes them against verl's config).
@pytest.mark.parametrize(("line", "says"), [
    ("HYDRA.run.dir=/tmp/x", "Could not override 'HYDRA.run.dir'."), ("Hydra.run.dir=x", "Could not override 'Hydra.run.dir'."),
    ("HYDRA/launcher=basic", "Could not override 'HYDRA/launcher'."), ("~Hydra", "Could not delete from config. 'Hydra' does not exist."),
    ("~HYDRA.run", "'HYDRA.run' does not exist"), ("+HYDRA.x=1", "adds a key HYDRA.x"), ("++HyDrA.callbacks.x=1", "adds a key HyDrA"),
    ("+x@HYDRA.callbacks=y", "package HYDRA.callbacks"), ("+trainer.Hydra=1", "adds a key trainer.Hydra"),
])
def test_hydra_in_other_letters_is_refused_as_what_hydra_makes_of_it(line, says):
    problem = hydra_overrides.override_problem(line)
    assert problem and says in problem and "is not Hydra's own settings" in problem and "Fix: leave it out" in problem, problem


@pytest.mark.parametrize("line", ["trainer.hydra_x=1", "+trainer.HydraNote=1", "+trainer.note=HYDRA", "+a.b=hydra.run.dir"])
def test_words_that_only_contain_hydra_pass(line):
    assert hydra_overrides.override_problem(line) is None


def test_an_owned_key_names_the_setting_to_use():
    problem = hydra_overrides.override_problem("trainer.experiment_name=x")
    assert "Fix: set verl_experiment_name instead" in problem


def test_without_hydra_core_the_check_refuses_and_says_what_to_install(monkeypatch):
    monkeypatch.setattr(hydra_overrides, "parser", lambda: None)
    problem = hydra_overrides.override_problem("trainer.critic_warmup=0")
    assert "hydra-core" in problem and "requirements.txt" in problem


def test_every_key_the_template_sets_from_a_setting_is_owned():
    """Each "key=${VAR}" line of run_training.sh's command line is in the table, so it cannot be replaced."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[4] / "roles/training/templates/run_training.sh.j2").read_text()
    keys = {key.lstrip("+") for key in re.findall(r'^\s*"([+A-Za-z0-9_.]+)=\$[{(]', text, re.M) if not key.startswith("{")}
    assert keys and keys <= set(hydra_overrides.OWNED_KEYS), keys - set(hydra_overrides.OWNED_KEYS)
