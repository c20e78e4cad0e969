"""AWX as code (awx/) and the AWX job without AWX (ansible-runner on a private data directory, tests/helpers/awx_job.py).

The deploy job end to end on the simulated cluster is in the Molecule scenario one_node
(extensions/molecule/one_node/tests/test_4_awx_job.py); these need no cluster."""
from __future__ import annotations

import json
import os
import re
import subprocess

import pexpect
import pytest
import yaml

from helpers import awx_job
from helpers.awx_job import BIN, REPO, SURVEYS, awx_launch, awx_variables, closed_ports_inventory, run_job, survey_answers

SPEC = yaml.safe_load((REPO / "roles/verl/meta/argument_specs.yml").read_text())["argument_specs"]["main"]["options"]
# compare.yml's own argument (masks) is declared by the entry point it is planned in (verl.deploy.compare's plan); its
# settings are main's.
PLAN = yaml.safe_load((REPO / "roles/compare/meta/argument_specs.yml").read_text())["argument_specs"]["plan"]
SPECS = {"compare": dict(SPEC, **PLAN["options"])}
CREDENTIAL_TYPES = yaml.safe_load((REPO / "awx/credential_types.yml").read_text())
# `mask` is the short form of verl_feature_mask (its default is `mask`, else 0000000).
ALIASES = {"mask": ("verl_feature_mask", "0000000")}
# A default a question's description names by where it is kept (an algorithm's name stands only in its table).
STATED_ELSEWHERE = {"verl_algorithm": "the table's default (docs/algorithms.md)"}
AWX_TYPES = {"str": {"text", "textarea", "password", "multiplechoice"}, "raw": {"text"}, "int": {"integer", "multiplechoice"},
             "float": {"float"}, "bool": {"multiplechoice"}, "list": {"multiselect"}}
KEY = "sk-AWX-credential-key-5e8c1a"
WANDB_KEY = "wandb-AWX-credential-key-91d0c2"
PATHS = {"verl_model_path": "/models/Qwen3-8B", "verl_train_file": "/data/train.parquet",
         "verl_test_file": "/data/test.parquet", "verl_ckpts_dir": "/ckpt"}


# One job template per playbook, each with its survey.
TEMPLATES = ("deploy", "check", "render", "status", "stop", "remove", "logs", "compare", "smoke")
# What a survey may ask: what changes from one run to the next. A typed answer is an extra var, which beats the
# inventory: the cluster's constants come from the inventory only (docs/awx.md, "The inventory").
PER_RUN = {"mask", "verl_algorithm", "verl_train_steps", "verl_train_batch_size", "verl_lr", "verl_train_tp", "verl_train_pp",
           "verl_n_resp_per_prompt", "verl_resume_mode", "verl_resume_from_path", "verl_loggers", "verl_restart"}
CLUSTER_CONSTANTS = {"verl_model_path", "verl_train_file", "verl_test_file", "verl_ckpts_dir", "verl_log_dir", "verl_image",
                     "verl_image_by_chip", "verl_npu_devices", "verl_container_name", "verl_workdir", "verl_host_stage_dir",
                     "verl_node_ip", "verl_socket_ifname", "verl_master_addr", "verl_swanlab_mode", "verl_swanlab_host",
                     "verl_swanlab_workspace", "verl_swanlab_log_dir", "verl_logs_dir", "verl_npu_smi_path", "verl_confirm"}


def as_awx_sends(value):
    """A spec default as a survey answer: AWX's text/multiplechoice answers are strings (bools in lower case)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return ",".join(str(item) for item in value)
    return str(value)


def questions():
    for template in TEMPLATES:
        for question in SURVEYS[template]["spec"]:
            yield template, question


@pytest.mark.parametrize("template, question", list(questions()), ids=lambda value: value if isinstance(value, str) else value["variable"])
def test_survey_question_agrees_with_the_argument_spec(template, question):
    """Type and choices are the setting's; no question has a default (AWX would send it unasked) and its description
    names what an unanswered question leaves: the inventory's value, else the setting's default."""
    name, alias_default = ALIASES.get(question["variable"], (question["variable"], None))
    spec = SPECS.get(template, SPEC)
    assert name in spec, "%s asks for %s, which roles/verl/meta/argument_specs.yml does not declare" % (template, name)
    option = spec[name]
    assert question["type"] in AWX_TYPES[option["type"]], (name, question["type"], option["type"])
    assert "default" not in question, "%s: AWX sends a question's default when nobody typed an answer" % name
    default = option.get("default", alias_default)
    description = " ".join(option["description"]) if isinstance(option["description"], list) else option["description"]
    if default in ("", None) and re.search(r"\bRequired\.", description):
        assert question["required"] and question["question_description"].endswith("Required."), name
    else:
        assert question["required"] is False, name
        stated = question["question_description"].rsplit("Unanswered, the inventory's value, else ", 1)[-1]
        expected = STATED_ELSEWHERE.get(name) or ("none" if default in ("", None) else as_awx_sends(default))
        assert stated == "%s." % expected, (name, stated)
    if "choices" in option:
        assert question["type"] == "multiplechoice" and question["choices"] == option["choices"], name
    if option["type"] == "bool":
        assert sorted(question["choices"]) == ["false", "true"], name
    if question["type"] == "multiselect":  # the trackers verl takes (plugins/module_utils/_trackers.py)
        from ansible_collections.verl.deploy.plugins.module_utils._trackers import LOGGERS

        assert question["choices"] == list(LOGGERS) and set(option["default"]) <= set(question["choices"]), name
    assert SURVEYS[template]["name"] and "description" in SURVEYS[template]


def test_the_mask_question_takes_exactly_seven_characters():
    mask = next(q for q in SURVEYS["deploy"]["spec"] if q["variable"] == "mask")
    assert (mask["type"], mask["min"], mask["max"], mask["required"]) == ("text", 7, 7, False)


def test_the_surveys_ask_only_what_changes_per_run():
    """The deploy survey (also the workflow's) asks exactly the per-run settings; no survey asks a cluster constant or
    the confirmation (the workflow's approval node is the confirmation)."""
    assert {q["variable"] for q in SURVEYS["deploy"]["spec"]} == PER_RUN
    assert {q["variable"] for q in SURVEYS["check"]["spec"]} == PER_RUN
    # The comparison: the masks, the steps per mask, whether to train its failed masks again, and the training's per-run settings as the deploy was given
    # them (its masks are compared under them; a training it stopped is started again with them), not the one mask.
    compare_asks = PER_RUN - {"mask"} | {"masks", "verl_compare_steps", "verl_compare_retry_failed"}
    assert {q["variable"] for q in SURVEYS["compare"]["spec"]} == compare_asks
    # The smoke launch trains the training's own mask and settings (a training it stopped is started again with them).
    assert {q["variable"] for q in SURVEYS["smoke"]["spec"]} == PER_RUN
    for template in TEMPLATES:
        names = [q["variable"] for q in SURVEYS[template]["spec"]]
        assert len(set(names)) == len(names), template
        assert not set(names) & CLUSTER_CONSTANTS, (template, set(names) & CLUSTER_CONSTANTS)


@pytest.mark.parametrize("template", [t for t in TEMPLATES if SURVEYS[t]["spec"]])
def test_awx_accepts_every_survey(template):
    """AWX's API checks of a survey spec (helpers.awx_job.spec_errors, after AWX's JobTemplateSurveySpec._validate_spec_data)
    find nothing; the check itself refuses what AWX refuses."""
    assert awx_job.spec_errors(SURVEYS[template]) == []
    question = SURVEYS[template]["spec"][0]
    for broken in (dict(question, required="no"), dict(question, type="date"), dict(question, default=3.5), dict(question, min="1")):
        assert awx_job.spec_errors(dict(SURVEYS[template], spec=[broken])), broken
    assert awx_job.spec_errors(dict(SURVEYS[template], spec=[question, question]))


@pytest.mark.parametrize("template", TEMPLATES)
def test_awx_sends_nothing_the_launcher_did_not_type(template):
    """AWX's own rules for unanswered questions (AWX's SurveyJobTemplateMixin in awx/main/models/mixins.py:
    _update_unified_job_kwargs sends the default of every question whose default is not None and passes
    _survey_element_validation, required or not; _accept_or_ignore_variables refuses a launch missing a required
    answer, "'<variable>' value missing"; helpers.awx_job.awx_launch applies them) on every survey, nothing typed: no
    extra var at all, so whatever the inventory holds stands. The one required question (the comparison's masks, which
    nothing else can give) refuses the launch until typed and sends only what was typed."""
    spec = SURVEYS[template]["spec"]
    required = [q["variable"] for q in spec if q["required"]]
    if required:
        with pytest.raises(awx_job.LaunchRefused) as refused:
            awx_launch(spec, {})
        assert refused.value.args[0] == ["'%s' value missing" % name for name in required]
    assert awx_launch(spec, {name: "each" for name in required}) == {name: "each" for name in required}
    # The same rules with a default: a default sends itself unasked (what the surveys did before), a typed answer wins.
    with_default = [dict(q, default=q["choices"][0]) if q["type"] == "multiplechoice" else q for q in spec]
    chosen = {q["variable"]: q["choices"][0] for q in spec if q["type"] == "multiplechoice"}
    assert awx_launch(with_default, {name: "each" for name in required}) == dict(chosen, **{name: "each" for name in required})
    for question in spec:
        if question["type"] == "multiplechoice":
            answer = question["choices"][-1]
            assert awx_launch(spec, {question["variable"]: answer, **{n: "each" for n in required}})[question["variable"]] == answer
    # An answer AWX would refuse (not a choice, a string for an integer) is refused, as AWX refuses it.
    for question in spec:
        wrong = {"multiplechoice": "nine", "multiselect": ["nine"], "integer": "4", "float": "0.1", "text": 7}[question["type"]]
        with pytest.raises(awx_job.LaunchRefused):
            awx_launch(spec, {**{n: "each" for n in required}, question["variable"]: wrong})


def test_no_survey_asks_for_a_key_the_credentials_inject_them():
    """Every secret setting (the SwanLab key, the trackers' keys) comes from a credential type of awx/credential_types.yml,
    each input a secret, each injected as its setting's extra var; no survey asks one."""
    from ansible_collections.verl.deploy.plugins.module_utils._secrets import SECRETS

    assert all(q["variable"] not in SECRETS and q["type"] != "password" for q in [pair[1] for pair in questions()])
    injected = {}
    for kind in CREDENTIAL_TYPES:
        fields = {field["id"]: field for field in kind["inputs"]["fields"]}
        assert all(field["secret"] is True for field in fields.values()) and set(kind["inputs"]["required"]) <= set(fields)
        for variable, template in kind["injectors"]["extra_vars"].items():
            assert re.fullmatch(r"\{\{ (\w+) \}\}", template).group(1) in fields, (kind["name"], variable)
            injected[variable] = kind["name"]
    assert set(injected) == set(SECRETS) and all(SPEC[name]["no_log"] is True for name in injected)
    assert injected["verl_swanlab_api_key"] == "SwanLab API key"


@pytest.mark.parametrize("type_name, refused", [("WandB", True), ("W&B API key", False)])
def test_a_tracker_credential_of_no_type_is_refused_and_the_fix_works(type_name, refused):
    """The fix (a type name of credential_types.yml) gets past the check to the AWX API (here a closed port on
    127.0.0.1), and the key is never printed."""
    env = dict(os.environ, CONTROLLER_HOST="https://127.0.0.1:9", ANSIBLE_STDOUT_CALLBACK="default", ANSIBLE_NOCOLOR="1")
    proc = subprocess.run([str(BIN / "ansible-playbook"), "awx/configure.yml", "-e", "verl_awx_scm_url=https://git.example.org/x.git",
                           "-e", "verl_awx_inventory_path=inventories/example",
                           "-e", json.dumps({"verl_awx_tracker_credentials": {type_name: {"api_key": KEY}}})],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=False)
    said = proc.stdout + proc.stderr
    assert proc.returncode != 0 and KEY not in said
    assert ("is not a credential type of awx/credential_types.yml. Fix: use one of" in said) is refused, said[-3000:]
    assert ("https://127.0.0.1:9/api/v2/credential_types/" in said) is not refused, said[-3000:]


def test_the_keys_given_become_credentials_attached_to_the_templates_that_read_them():
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar, trust_as_template

    play = yaml.safe_load((REPO / "awx/configure.yml").read_text())[0]
    templates = awx_task(play, "awx.awx.job_template")["awx.awx.job_template"]
    play["vars"] = {name: trust_as_template(value) if isinstance(value, str) else value for name, value in play["vars"].items()}

    def credentials(item, **given):
        variables = dict(play["vars"], item=item, **given)
        return Templar(loader=DataLoader(), variables=variables).template(trust_as_template(templates["credentials"]))

    assert credentials("deploy") == [] and credentials("status", verl_awx_machine_credential="ssh") == ["ssh"]
    given = {"verl_awx_swanlab_api_key": KEY, "verl_awx_tracker_credentials": {"W&B API key": {"api_key": KEY}}}
    assert credentials("deploy", **given) == ["SwanLab", "W&B API key"] and credentials("status", **given) == []
    made = Templar(loader=DataLoader(), variables=dict(play["vars"], **given)).template(
        play["vars"]["_verl_awx_credentials"])
    assert [(c["name"], c.get("type", c["name"])) for c in made] == [("SwanLab", "SwanLab API key"), ("W&B API key", "W&B API key")]
    assert {c.get("type", c["name"]) for c in made} <= {kind["name"] for kind in CREDENTIAL_TYPES}
    assert awx_task(play, "awx.awx.credential")["no_log"] is True


def awx_task(play, module):
    return next(task for task in play["tasks"] if module in task)


def test_configure_playbook_creates_every_job_template_with_its_survey():
    play = yaml.safe_load((REPO / "awx/configure.yml").read_text())[0]
    modules = [next(key for key in task if "." in key) for task in play["tasks"]]
    for module in ("awx.awx.credential_type", "awx.awx.credential", "awx.awx.project", "awx.awx.inventory",
                   "awx.awx.inventory_source", "awx.awx.job_template", "awx.awx.workflow_job_template", "awx.awx.schedule",
                   "awx.awx.notification_template"):
        assert module in modules, module
    # No second copy of the cluster: no host or group is created one by one, the inventory is the project's folder.
    assert "awx.awx.host" not in modules and "awx.awx.group" not in modules
    source = awx_task(play, "awx.awx.inventory_source")["awx.awx.inventory_source"]
    assert (source["source"], source["source_path"], source["overwrite"], source["update_on_launch"]) == (
        "scm", "{{ verl_awx_inventory_path }}", True, True)
    templates = awx_task(play, "awx.awx.job_template")
    assert templates["loop"] == ["deploy", "check", "status", "stop", "remove", "render", "logs", "compare", "smoke"]
    assert sorted(templates["loop"]) == sorted(TEMPLATES)
    assert all((REPO / "playbooks" / ("%s.yml" % name)).is_file() for name in templates["loop"])
    assert all(play["vars"]["verl_awx_timeouts"][name] > 0 for name in templates["loop"])
    proc = subprocess.run([str(BIN / "ansible-playbook"), "--syntax-check", "awx/configure.yml"],
                          cwd=REPO, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_workflow_checks_asks_for_approval_deploys_and_shows_the_status():
    """awx.awx.workflow_job_template's workflow_nodes: check -> approval (type workflow_approval) -> deploy -> status,
    the deploy given verl_confirm=true by the workflow's own (trusted) extra vars, the survey the deploy's."""
    play = yaml.safe_load((REPO / "awx/configure.yml").read_text())[0]
    workflow = awx_task(play, "awx.awx.workflow_job_template")["awx.awx.workflow_job_template"]
    nodes = {node["identifier"]: node for node in workflow["workflow_nodes"]}
    assert list(nodes) == ["check", "approve", "deploy", "status", "logs"]
    assert nodes["approve"]["unified_job_template"]["type"] == "workflow_approval"
    assert nodes["approve"]["unified_job_template"]["timeout"] == "{{ verl_awx_timeouts.approval }}"
    following = {name: [(how, after["identifier"]) for how, items in node.get("related", {}).items() for after in items]
                 for name, node in nodes.items()}
    assert following == {"check": [("success_nodes", "approve")], "approve": [("success_nodes", "deploy")],
                         "deploy": [("always_nodes", "status"), ("failure_nodes", "logs")], "status": [], "logs": []}
    names = {identifier: SURVEYS[identifier]["name"] for identifier in ("check", "deploy", "status", "logs")}
    for identifier, name in names.items():
        assert nodes[identifier]["unified_job_template"]["name"] == "{{ _verl_awx_surveys.%s.name }}" % identifier, name
    assert workflow["extra_vars"] == {"verl_confirm": True} and workflow["ask_variables_on_launch"] is False
    assert workflow["survey_spec"].startswith("{{ _verl_awx_surveys.deploy")


def test_the_removal_is_behind_awx_approval_too():
    """remove.yml's confirmation under AWX: a workflow approval -> verl remove, the removal given verl_confirm=true by the
    workflow's own extra vars; the remove template asks nothing (AWX refuses a survey without questions)."""
    play = yaml.safe_load((REPO / "awx/configure.yml").read_text())[0]
    workflows = [task["awx.awx.workflow_job_template"] for task in play["tasks"] if "awx.awx.workflow_job_template" in task]
    removal = next(flow for flow in workflows if flow["name"] == "{{ verl_awx_remove_workflow }}")
    nodes = {node["identifier"]: node for node in removal["workflow_nodes"]}
    assert list(nodes) == ["approve", "remove"] and nodes["approve"]["unified_job_template"]["type"] == "workflow_approval"
    assert nodes["approve"]["related"] == {"success_nodes": [{"identifier": "remove"}]}
    assert nodes["remove"]["unified_job_template"]["name"] == "{{ _verl_awx_surveys.remove.name }}"
    assert removal["extra_vars"] == {"verl_confirm": True} and removal["ask_variables_on_launch"] is False
    assert SURVEYS["remove"]["spec"] == []
    templates = awx_task(play, "awx.awx.job_template")["awx.awx.job_template"]
    assert templates["survey_enabled"] == "{{ _verl_awx_surveys[item].spec | length > 0 }}"


def test_an_awx_remove_without_the_approval_fails_in_seconds_naming_the_workflow(tmp_path):
    job = run_job(tmp_path, "playbooks/remove.yml", closed_ports_inventory(), awx_variables(), timeout=300)
    assert job.status == "failed" and job.seconds < 30, job.describe()
    said = " ".join(job.stdout.split())
    assert "verl_confirm is not true and this is an AWX job" in said, job.describe()
    assert 'launch the workflow "verl remove (approve, remove)"' in said, job.describe()
    assert set(job.stats.get("processed", {})) == {"localhost"}, job.stats


def test_a_failing_status_job_on_a_schedule_is_the_alarm():
    play = yaml.safe_load((REPO / "awx/configure.yml").read_text())[0]
    schedule = awx_task(play, "awx.awx.schedule")
    assert schedule["awx.awx.schedule"]["unified_job_template"] == "{{ _verl_awx_surveys.status.name }}"
    assert play["vars"]["verl_awx_status_every_minutes"] > 0
    templates = awx_task(play, "awx.awx.job_template")["awx.awx.job_template"]
    assert templates["notification_templates_error"] == "{{ _verl_awx_notify }}"
    notification = awx_task(play, "awx.awx.notification_template")
    assert notification["no_log"] is True


def workflow_failed(nodes, failed):
    """AWX's rule for a workflow's own status (AWX's WorkflowDAG.has_workflow_failed, awx/main/scheduler/dag_workflow.py):
    failed when a node failed that has neither failure_nodes nor always_nodes. `failed`: the identifiers of failed nodes."""
    return any(not (nodes[name].get("related", {}).get("failure_nodes") or nodes[name].get("related", {}).get("always_nodes"))
               for name in failed)


def test_every_failed_node_of_the_workflows_and_every_waiting_approval_is_notified():
    """A failed deploy goes on to status (always) and logs (failure), so by AWX's own rule the workflow itself does not
    fail and its error notification would never go: every job template the workflows run notifies its own failure, and
    each workflow notifies its approvals (AWX's notification_templates_approvals: waiting, approved, denied, timed out)."""
    play = yaml.safe_load((REPO / "awx/configure.yml").read_text())[0]
    templates = awx_task(play, "awx.awx.job_template")
    assert templates["awx.awx.job_template"]["notification_templates_error"] == "{{ _verl_awx_notify }}"
    flows = [task["awx.awx.workflow_job_template"] for task in play["tasks"] if "awx.awx.workflow_job_template" in task]
    assert len(flows) == 2
    for flow in flows:
        assert flow["notification_templates_error"] == flow["notification_templates_approvals"] == "{{ _verl_awx_notify }}"
        nodes = {node["identifier"]: node for node in flow["workflow_nodes"]}
        for name, node in nodes.items():
            kind = node["unified_job_template"]["type"]
            assert kind in ("job_template", "workflow_approval"), name
            if kind == "job_template":  # its template, among those that notify their failures
                assert re.fullmatch(r"\{\{ _verl_awx_surveys\.(\w+)\.name \}\}", node["unified_job_template"]["name"]).group(1) in templates["loop"]
    deploy = {node["identifier"]: node for node in flows[0]["workflow_nodes"]}
    assert not workflow_failed(deploy, ["deploy"]) and workflow_failed(deploy, ["deploy", "logs"])
    assert workflow_failed(deploy, ["check"])
    # Configured (or under its older name): the notification is attached; not configured: an empty list, AWX's "none".
    from jinja2.nativetypes import NativeEnvironment

    def notify(**given):
        values = dict(play["vars"], **given)  # what -e gives beats the play's vars
        if isinstance(values["verl_awx_notification"], str):
            values["verl_awx_notification"] = NativeEnvironment().from_string(values["verl_awx_notification"]).render(**values)
        return NativeEnvironment().from_string(values["_verl_awx_notify"]).render(**values)

    hook = {"notification_type": "webhook", "notification_configuration": {"url": "https://alerts.example.org/hook"}}
    assert notify() == [] and notify(verl_awx_status_notification=hook) == notify(verl_awx_notification=hook) == ["verl deploy"]


def test_awx_as_code_declares_the_collections_it_uses_and_the_collection_does_not():
    """awx/configure.yml's collections are in awx/requirements.yml (the `ansible` package no longer bundles
    awx.awx from 14 on), never among the collection's own dependencies; docs/awx.md says how to install them."""
    play = yaml.safe_load((REPO / "awx/configure.yml").read_text())[0]
    used = {".".join(key.split(".")[:2]) for task in play["tasks"] for key in task if key.count(".") == 2} - {"ansible.builtin"}
    declared = yaml.safe_load((REPO / "awx/requirements.yml").read_text())["collections"]
    assert used == {"awx.awx"} and [entry["name"] for entry in declared] == ["awx.awx"]
    floor = re.fullmatch(r">=(\d+)\.(\d+)\.(\d+)", declared[0]["version"]).groups()
    listed = subprocess.run([str(BIN / "ansible-galaxy"), "collection", "list", "awx.awx", "--format", "json"],
                            cwd=REPO, capture_output=True, text=True, timeout=120, check=False)
    tested = [info["version"] for found in yaml.safe_load(listed.stdout).values() for info in found.values()]
    assert tested and all(tuple(map(int, version.split("."))) >= tuple(map(int, floor)) for version in tested), tested
    runtime = [yaml.safe_load((REPO / name).read_text()) for name in ("galaxy.yml", "collections/requirements.yml")]
    assert "awx.awx" not in runtime[0]["dependencies"] and "awx.awx" not in [c["name"] for c in runtime[1]["collections"]]
    assert "ansible-galaxy collection install -r awx/requirements.yml" in (REPO / "docs/awx.md").read_text()


def test_an_awx_deploy_without_confirmation_fails_in_seconds_naming_verl_confirm(tmp_path):
    """ansible-runner gives the job a pseudo-terminal: the confirmation must not believe somebody is there."""
    answers = survey_answers("deploy", verl_swanlab_api_key=KEY, **awx_variables())
    assert "verl_confirm" not in answers
    # 4 nodes: the default batch sizes split over 32 NPUs (the settings are checked first, before any node).
    inventory = closed_ports_inventory(workers=3)
    inventory["all"]["vars"] = dict(PATHS)
    job = run_job(tmp_path, "playbooks/deploy.yml", inventory, answers, timeout=300)
    assert job.status == "failed" and job.rc != 0, job.describe()
    assert job.seconds < 30, "the job took %.1f s" % job.seconds
    said = " ".join(job.stdout.split())
    assert "verl_confirm is not true and this is an AWX job" in said, job.describe()
    assert 'launch the workflow "verl deploy (check, approve, deploy, status)"' in said, job.describe()
    # No node was contacted: the recap names only the controller.
    assert set(job.stats.get("processed", {})) == {"localhost"}, job.stats
    assert_key_nowhere(job)


def assert_key_nowhere(job, key=KEY):
    leaks = [str(path) for path in (job.data_dir / "artifacts").rglob("*") if path.is_file() and key in path.read_text(errors="replace")]
    assert not leaks, "the key is in %s" % leaks
    assert key not in job.proc.stdout + job.proc.stderr


def test_an_awx_render_job_returns_the_scripts_as_artifacts(tmp_path):
    """The execution environment's file system is thrown away after the job: the scripts travel in the stats."""
    # The SwanLab and W&B keys as their credentials inject them.
    answers = survey_answers("render", **PATHS, mask="1010000", verl_loggers=["console", "swanlab", "wandb"], verl_swanlab_mode="cloud",
                             verl_swanlab_host="http://10.0.0.9:8000", verl_swanlab_api_key=KEY, verl_wandb_api_key=WANDB_KEY,
                             verl_output_dir=str(tmp_path / "out"), **awx_variables())
    inventory = {"all": {"children": {"ray_head": {"hosts": {"node1": {"ansible_host": "10.0.0.1"}}},
                                      "ray_workers": {"hosts": {"node2": {"ansible_host": "10.0.0.2"}}}}}}
    job = run_job(tmp_path, "playbooks/render.yml", inventory, answers, timeout=300)
    assert job.status == "successful", job.describe()
    rendered = job.artifact_data["verl_rendered"]
    assert sorted(rendered) == ["node1", "node2"]
    for node, scripts in rendered.items():
        assert sorted(scripts) == ["run_training.sh", "start_verl.sh"]
        assert scripts["start_verl.sh"] == (tmp_path / "out" / node / "start_verl.sh").read_text().rstrip("\n")
    # The survey's answers (a string, a multiselect's list) arrived as the settings they stand for.
    training = rendered["node1"]["run_training.sh"]
    assert "\nTRAIN_TP=4\n" in training and "\nUSE_REMOVE_PADDING=True\n" in training, training
    assert """\nLOGGER='["console","swanlab","wandb"]'\n""" in training, training
    assert "for key_name in WANDB_API_KEY; do" in rendered["node1"]["start_verl.sh"]
    assert_key_nowhere(job)
    assert_key_nowhere(job, WANDB_KEY)
    assert not [path for path in (tmp_path / "out").rglob("*") if path.is_file() and WANDB_KEY in path.read_text()]


A3_NPUS = ",".join(str(npu) for npu in range(16))
MIRROR = "registry.cluster.local:5000/verl/verl:8.2.rc1-910c"


def test_the_example_inventory_s_batch_stands_when_the_workflow_s_survey_is_left_unanswered(tmp_path):
    """inventories/example (3 nodes of 8 NPUs, TP 4 x PP 2: 3 data-parallel ranks) holds verl_train_batch_size 48. Its
    workflow launched with nothing typed, through AWX's own rules (awx_launch): every node's job renders 48, where the
    survey's old default 32 replaced it (256 sequences cannot be split over 3 ranks, and the launch was refused)."""
    answers = survey_answers("deploy", verl_confirm=True, verl_output_dir=str(tmp_path / "out"), **awx_variables())
    assert not set(answers) & {q["variable"] for q in SURVEYS["deploy"]["spec"]}, answers
    job = run_job(tmp_path, "playbooks/render.yml", REPO / "inventories" / "example", answers, timeout=300,
                  trusted=("verl_confirm",))
    assert job.status == "successful", job.describe()
    rendered = job.artifact_data["verl_rendered"]
    assert sorted(rendered) == ["npu-node-01", "npu-node-02", "npu-node-03"]
    for scripts in rendered.values():
        assert "\nTRAIN_BATCH_SIZE=48\n" in scripts["run_training.sh"], scripts["run_training.sh"]


def test_an_a3_inventory_s_values_stand_when_the_workflow_s_survey_is_left_unanswered(tmp_path):
    """An A3 cluster's inventory: 16 NPU ids per host (host_vars), an air-gapped site's image, TP 4 x PP 4 and the trackers
    [console, swanlab, tensorboard] with SwanLab offline (group_vars). The workflow's survey (the deploy's) left
    unanswered, through AWX's own rules, plus the workflow's own verl_confirm=true: each value stands. Before, the
    survey's TP/PP defaults 4/2 were sent unasked and refused at every launch, and its "Log to SwanLab" default false
    was sent whatever the inventory said."""
    inventory = tmp_path / "cluster"
    (inventory / "host_vars").mkdir(parents=True)
    (inventory / "group_vars").mkdir()
    (inventory / "hosts.yml").write_text(yaml.safe_dump({"all": {"children": {
        "ray_head": {"hosts": {"node1": {"ansible_host": "10.0.0.1"}}}, "ray_workers": {"hosts": {"node2": {"ansible_host": "10.0.0.2"}}}}}}))
    (inventory / "host_vars" / "node1.yml").write_text(yaml.safe_dump({"verl_npu_devices": A3_NPUS}))
    (inventory / "host_vars" / "node2.yml").write_text(yaml.safe_dump({"verl_npu_devices": A3_NPUS}))
    (inventory / "group_vars" / "all.yml").write_text(yaml.safe_dump(dict(
        PATHS, verl_image=MIRROR, verl_log_dir="/data/verl/logs", verl_output_dir=str(tmp_path / "out"), verl_train_tp=4,
        verl_train_pp=4, verl_loggers=["console", "swanlab", "tensorboard"], verl_swanlab_mode="offline")))
    answers = survey_answers("deploy", verl_confirm=True, **awx_variables())
    assert not set(answers) & {q["variable"] for q in SURVEYS["deploy"]["spec"]}, answers
    job = run_job(tmp_path, "playbooks/render.yml", inventory, answers, timeout=300, trusted=("verl_confirm",))
    assert job.status == "successful", job.describe()
    assert job.artifact_data["verl_render_nodes"] == {node: {"image": MIRROR, "npu_devices": A3_NPUS} for node in ("node1", "node2")}
    start = job.artifact_data["verl_rendered"]["node1"]["start_verl.sh"]
    assert "\nexport NPU_PER_NODE=16\n" in start and "\nexport SWANLAB_MODE=offline\n" in start, start
    training = job.artifact_data["verl_rendered"]["node1"]["run_training.sh"]
    assert "\nTRAIN_TP=4\n" in training and "\nTRAIN_PP=4\n" in training and "/data/verl/logs" in training, training
    assert """\nLOGGER='["console","swanlab","tensorboard"]'\n""" in training, training


def test_the_survey_mask_with_leading_zeros_trains_as_typed(tmp_path):
    """AWX writes the answer 0010000 as `!unsafe '0010000'`, which ansible-core reads as the int 4096: the deploy
    reads the mask typed (Offload, bit 2), not a refusal and not another mask."""
    answers = survey_answers("render", **PATHS, mask="0010000", verl_output_dir=str(tmp_path / "out"), **awx_variables())
    inventory = {"all": {"children": {"ray_head": {"hosts": {"node1": {"ansible_host": "10.0.0.1"}}}, "ray_workers": {"hosts": {}}}}}
    job = run_job(tmp_path, "playbooks/render.yml", inventory, answers, timeout=300)
    assert "mask: !unsafe '0010000'" in (job.data_dir / "env" / "extravars").read_text()
    assert job.status == "successful", job.describe()
    training = job.artifact_data["verl_rendered"]["node1"]["run_training.sh"]
    assert "\nPARAM_OFFLOAD=True\n" in training and "\nUSE_REMOVE_PADDING=False\n" in training, training
    assert "\nUSE_DYNAMIC_BSZ=False\n" in training, training


def test_awx_marks_survey_answers_unsafe_as_awx_does():
    text = awx_job.extravars_text({"verl_experiment_name": "{{ x }}", "verl_train_steps": 4, "verl_extra_env": {"HCCL_X": "{{ y }}"},
                                   "template_var": "{{ z }}"}, trusted=("template_var",))
    assert "verl_experiment_name: !unsafe '{{ x }}'" in text and "HCCL_X: !unsafe '{{ y }}'" in text
    assert "verl_train_steps: 4" in text and "template_var: '{{ z }}'" in text


def test_ansible_core_reads_an_unsafe_number_like_string_as_a_number():
    """Pinned: what AWX writes for the mask answer 0010000 (`!unsafe '0010000'`) is read by ansible-core (2.19 to
    2.21) as the octal int 4096: its YAML constructor resolves an !unsafe scalar as if it were plain. The mask is
    read back from that number (test_the_survey_mask_with_leading_zeros_trains_as_typed)."""
    from ansible.parsing.yaml.loader import AnsibleLoader

    loaded = yaml.load("mask: !unsafe '0010000'\nname: !unsafe 'x{{ y }}'\n", Loader=AnsibleLoader)  # noqa: S506
    assert loaded["mask"] == 4096 and loaded["name"] == "x{{ y }}"


# Jinja in a survey answer: AWX marks it !unsafe, so it stays text and the name rule refuses it; the same text
# as an unmarked extra var (the job template's own extra vars, or ALLOW_JINJA_IN_EXTRA_VARS=always) runs on the
# controller in stage 0, even for render.yml: what docs/awx.md says widens the boundary.
@pytest.mark.parametrize("marked", [True, False], ids=["survey-answer-unsafe", "unmarked-extra-var"])
def test_jinja_in_an_answer_runs_only_when_the_answer_is_not_marked_unsafe(tmp_path, marked):
    ran = tmp_path / "RAN"
    payload = "{{ lookup('ansible.builtin.pipe', 'touch %s') }}" % ran
    answers = survey_answers("render", **PATHS, verl_experiment_name=payload, verl_output_dir=str(tmp_path / "out"), **awx_variables())
    inventory = {"all": {"children": {"ray_head": {"hosts": {"node1": {"ansible_host": "10.0.0.1"}}}, "ray_workers": {"hosts": {}}}}}
    job = run_job(tmp_path, "playbooks/render.yml", inventory, answers, timeout=300, trusted=() if marked else ("verl_experiment_name",))
    if marked:
        assert job.status == "failed" and "verl_experiment_name" in job.stdout, job.describe()
        assert not ran.exists()
    else:
        assert ran.exists(), job.describe()


PROBE = """
- name: Ask
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Ask with a bound
      verl.deploy.confirm:
        prompt: Go on?
        timeout: {timeout}
      register: answer
    - name: Show
      ansible.builtin.debug:
        msg: >-
          RESULT interactive={{{{ answer.interactive }}}} confirmed={{{{ answer.confirmed }}}}
          timed_out={{{{ answer.timed_out }}}} waited={{{{ answer.waited }}}}
"""


def probe_at(tmp_path, timeout=3):
    path = tmp_path / "ask.yml"
    path.write_text(PROBE.format(timeout=timeout))
    return path


@pytest.fixture()
def probe_playbook(tmp_path):
    return probe_at(tmp_path)


def ansible_playbook_argv(playbook):
    return [str(BIN / "ansible-playbook"), "-i", "localhost,", "-c", "local", str(playbook)]


def probe_env():
    return dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(REPO / ".collections"), ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")


@pytest.mark.parametrize("typed, expected", [(None, "confirmed=False timed_out=True"), ("yes", "confirmed=True timed_out=False"),
                                             ("no", "confirmed=False timed_out=False")])
def test_the_terminal_question_is_bounded(tmp_path, typed, expected):
    """At a terminal (a pseudo-terminal here) the question waits for an answer ended with Enter, at most its bound: 3 s
    when nobody types; 30 s when an answer is typed, which ends the wait at once (a loaded machine may take over 3 s from
    the prompt to the answer)."""
    bound = 3 if typed is None else 30
    argv = ansible_playbook_argv(probe_at(tmp_path, bound))
    child = pexpect.spawn(argv[0], argv[1:], env=probe_env(), encoding="utf-8", timeout=60)
    child.expect(r"Go on\? \(%d s\)" % bound)
    if typed:
        child.sendline(typed)
    child.expect(pexpect.EOF)
    child.close()
    result = re.search(r"RESULT interactive=True (confirmed=\w+ timed_out=\w+) waited=([\d.]+)", child.before)
    assert result and result.group(1) == expected, child.before
    waited = float(result.group(2))
    assert 3 <= waited < 4.5 if typed is None else waited < bound, waited


def test_without_a_terminal_nobody_is_asked_and_nothing_waits(probe_playbook):
    proc = subprocess.run(ansible_playbook_argv(probe_playbook), env=probe_env(), stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=60, check=False)
    assert "RESULT interactive=False confirmed=False timed_out=False waited=0.0" in proc.stdout, proc.stdout + proc.stderr


def test_a_deploy_without_a_terminal_fails_in_seconds_naming_verl_confirm(tmp_path):
    """CI or `</dev/null`: nobody can be asked, so the deploy stops before any host is contacted."""
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump(closed_ports_inventory()))
    argv = [str(BIN / "ansible-playbook"), "-i", str(inventory), "playbooks/deploy.yml", "-e", "mask=0000000"]
    argv += [arg for name, value in PATHS.items() for arg in ("-e", "%s=%s" % (name, value))]
    proc = subprocess.run(argv, cwd=REPO, env=probe_env(), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
                          check=False)
    output = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode != 0 and "verl_confirm is not true and there is no terminal to ask on" in output, output
    assert "node1" not in output.rsplit("PLAY RECAP", maxsplit=1)[-1], "no node may be contacted"
