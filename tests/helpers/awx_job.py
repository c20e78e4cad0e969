"""An AWX job without AWX: ansible-runner on a private data directory laid out as AWX lays it out.

AWX (through ansible-runner in the execution environment) runs a job from a private data directory:
`project/` (the project's SCM checkout: here a fresh `git clone` of this repository, so only committed
content counts and no setup step has run), `inventory/` (the job's inventory), `env/extravars` (the
survey answers, `text`/`multiplechoice` ones as strings, the credentials' injected extra vars and AWX's
own `awx_*`/`tower_*` variables), `env/envvars` (the fact cache settings) and `env/settings`; runner
writes `artifacts/<ident>/` (stdout, job_events/, the stats) there.

As AWX does (ALLOW_JINJA_IN_EXTRA_VARS at its default, "template"), every string of env/extravars is
marked `!unsafe` (Ansible never templates it) except the extra vars saved in the job template's own
definition (`trusted`): a survey answer holding `{{ ... }}` stays text.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
SURVEYS = yaml.safe_load((REPO / "awx" / "surveys.yml").read_text())


def awx_variables(job_id=4242):
    """What AWX adds to every job's extra vars (a subset)."""
    return {"awx_job_id": job_id, "awx_job_template_name": "verl deploy", "awx_user_name": "admin",
            "tower_job_id": job_id, "awx_execution_node": "awx-task"}


class LaunchRefused(Exception):
    """AWX refuses the launch: its errors, as AWX words them (variables_needed_to_start)."""


# AWX's survey question types and the type of each one's default (awx/main/constants.py SURVEY_TYPE_MAPPING).
SURVEY_TYPES = {"text": str, "textarea": str, "password": str, "multiplechoice": str, "multiselect": str, "integer": int,
                "float": (float, int)}


def spec_errors(survey):
    """What AWX's API refuses in a survey spec when a template is saved with it (ansible/awx, awx/api/views/__init__.py,
    JobTemplateSurveySpec._validate_spec_data): a name, a description and a non-empty list of questions; each with its
    type, question_name, variable and required (a bool), a known type, no variable twice, integer min/max, choices for a
    multiple choice, a default of its type and among the choices (one for a multiplechoice)."""
    errors = []
    if not isinstance(survey.get("name"), str) or not isinstance(survey.get("description"), str):
        errors.append("name and description must be strings")
    if not isinstance(survey.get("spec"), list) or not survey["spec"]:
        return errors + ["'spec' doesn't contain any items."]
    seen = set()
    for index, item in enumerate(survey["spec"]):
        missing = [field for field in ("type", "question_name", "variable", "required") if field not in item]
        if missing or not isinstance(item["required"], bool) or item["type"] not in SURVEY_TYPES:
            errors.append("question %d: %s" % (index, missing or "type or required"))
            continue
        if item["variable"] in seen:
            errors.append("'variable' '%s' duplicated in survey question %d" % (item["variable"], index))
        seen.add(item["variable"])
        if item.get("default", "") != "" and not isinstance(item["default"], SURVEY_TYPES[item["type"]]):
            errors.append("Default value %s in survey question %d expected to be %s." % (item["default"], index, item["type"]))
            continue  # AWX answers at the first error of a question
        errors += ["question %d: %s must be an integer" % (index, key) for key in ("min", "max")
                   if item.get(key) is not None and not isinstance(item[key], int)]
        if item["type"] in ("multiselect", "multiplechoice"):
            if "choices" not in item:
                errors.append("Survey question %d of type %s must specify choices." % (index, item["type"]))
            defaults = item.get("default", "")
            defaults = defaults.splitlines() if isinstance(defaults, str) else defaults
            if item["type"] == "multiplechoice" and len(defaults) > 1:
                errors.append("Multiple Choice (Single Select) can only have one default value.")
            if any(default not in item.get("choices", ()) for default in defaults):
                errors.append("Default choice must be answered from the choices listed.")
    return errors


def _element_errors(element, data, validate_required=True):
    """AWX's SurveyJobTemplateMixin._survey_element_validation (awx/main/models/mixins.py), for the types the surveys use:
    a required question missing, a value of the wrong type, out of min/max, or not among the choices."""
    name = element["variable"]
    if name not in data:
        return ["'%s' value missing" % name] if element["required"] and validate_required else []
    value, kind = data[name], element["type"]
    if kind in ("text", "textarea", "password"):
        if not isinstance(value, str):
            return ["Value %s for '%s' expected to be a string." % (value, name)]
        lengths = [(len(value) < int(element["min"])) if element.get("min") not in ("", None) else False,
                   (len(value) > int(element["max"])) if element.get("max") not in ("", None) else False]
        return ["'%s' value %s is out of its length bounds." % (name, value)] if any(lengths) else []
    if kind in ("integer", "float"):
        if type(value) not in ((int,) if kind == "integer" else (float, int)):  # noqa: E721 - AWX compares types exactly
            return ["Value %s for '%s' expected to be %s." % (value, name, "an integer" if kind == "integer" else "a numeric type")]
        bound = int if kind == "integer" else float
        low = element.get("min") not in ("", None) and value < bound(element["min"])
        high = element.get("max") not in ("", None) and value > bound(element["max"])
        return ["'%s' value %s is out of bounds." % (name, value)] if low or high else []
    if kind == "multiselect":
        if not isinstance(value, list):
            return ["'%s' value is expected to be a list." % name]
        return ["Value %s for '%s' expected to be one of %s." % (item, name, element["choices"]) for item in value
                if item not in element["choices"]]
    if kind == "multiplechoice":
        return [] if value in element["choices"] else ["Value %s for '%s' expected to be one of %s." % (value, name, element["choices"])]
    raise AssertionError("survey type %s is not modelled here" % kind)


def awx_launch(spec, typed=None, template_extra_vars=None):
    """The extra vars AWX gives a job whose survey is `spec` (its questions) when the launcher typed `typed`.

    AWX's own rules (ansible/awx, awx/main/models/mixins.py, SurveyJobTemplateMixin): _accept_or_ignore_variables
    validates the answers against each question (_survey_element_validation): a required question without an answer is
    "'<variable>' value missing" and the launch is refused; _update_unified_job_kwargs then builds the extra vars as
    the template's extra vars, then the default of every question (required or not) whose default is not None and
    passes that validation, then the answers typed. So a question with a default sends it whenever nobody typed one,
    and only a question without a default (None) sends nothing."""
    typed = dict(typed or {})
    errors = [error for element in spec for error in _element_errors(element, typed)]
    if errors:
        raise LaunchRefused(errors)
    extra_vars = dict(template_extra_vars or {})
    for element in spec:
        default = element.get("default")
        if default is not None and not _element_errors(element, {element["variable"]: default}):
            extra_vars[element["variable"]] = default
    extra_vars.update(typed)
    return extra_vars


def survey_answers(template, **answers):
    """What AWX sends for the survey of `template` with these answers typed (awx_launch); the rest of `answers`
    (AWX's own awx_* variables, a credential's injected extra vars, a test's settings) is added as it is."""
    asked = {element["variable"] for element in SURVEYS[template]["spec"]}
    values = awx_launch(SURVEYS[template]["spec"], {k: v for k, v in answers.items() if k in asked})
    values.update({k: v for k, v in answers.items() if k not in asked})
    return values


class Job:
    """A finished job: rc, status, stdout, the events, the stats (set_stats) and the artifact folder."""

    def __init__(self, data_dir, ident, proc, seconds):
        self.data_dir = data_dir
        self.artifacts = data_dir / "artifacts" / ident
        self.proc = proc
        self.seconds = seconds
        self.rc = int((self.artifacts / "rc").read_text()) if (self.artifacts / "rc").is_file() else proc.returncode
        self.status = (self.artifacts / "status").read_text().strip() if (self.artifacts / "status").is_file() else "?"
        self.stdout = (self.artifacts / "stdout").read_text() if (self.artifacts / "stdout").is_file() else ""
        self.events = sorted((json.loads(path.read_text()) for path in (self.artifacts / "job_events").glob("*.json")),
                             key=lambda event: event["counter"])
        stats = [event for event in self.events if event["event"] == "playbook_on_stats"]
        self.stats = stats[-1]["event_data"] if stats else {}

    @property
    def artifact_data(self):
        """What the playbook handed back with set_stats (AWX shows it as the job's artifacts)."""
        return self.stats.get("artifact_data", {})

    def every_file(self):
        """Every file the job left behind: artifacts (stdout, events, fact cache), env, inventory."""
        return [path for path in self.data_dir.rglob("*") if path.is_file() and "project" not in path.relative_to(self.data_dir).parts[:1]]

    def describe(self):
        return "rc=%s status=%s after %.1f s\n%s\n%s" % (self.rc, self.status, self.seconds, self.stdout[-6000:], self.proc.stderr[-2000:])


class _Unsafe(str):
    """A string written with the !unsafe tag."""


class _ExtravarsDumper(yaml.SafeDumper):
    pass


_ExtravarsDumper.add_representer(_Unsafe, lambda dumper, value: dumper.represent_scalar("!unsafe", str(value), style="'"))


def mark_unsafe(value):
    """Every string in `value` (nested ones too) marked !unsafe, as AWX writes them. ansible-core then reads a marked
    string that looks like a YAML 1.1 number or boolean as one (`!unsafe '0010000'` is the octal int 4096): the
    collection reads its settings from what arrives (the mask: _features.mask_from_number)."""
    if isinstance(value, str):
        return _Unsafe(value)
    if isinstance(value, list):
        return [mark_unsafe(item) for item in value]
    if isinstance(value, dict):
        return {key: mark_unsafe(item) for key, item in value.items()}
    return value


def extravars_text(extravars, trusted=()):
    """env/extravars as AWX writes it: strings !unsafe, but those of the job template's own extra vars (`trusted`)."""
    marked = {name: (value if name in trusted else mark_unsafe(value)) for name, value in extravars.items()}
    return yaml.dump(marked, Dumper=_ExtravarsDumper, default_flow_style=False)


def run_job(root, playbook, inventory, extravars, ident="1", timeout=1800, trusted=()):
    """Run `playbook` (a path inside the project) as an AWX job; returns the finished Job.

    `inventory`: a dict (written as the job's inventory) or a folder (copied, group_vars included).
    `trusted`: the names among `extravars` that the job template's own definition holds (templated; the rest
    is marked !unsafe, as AWX marks survey answers, prompted extra vars and injected credentials)."""
    data_dir = Path(root) / ("job-%s" % ident)
    (data_dir / "env").mkdir(parents=True)
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(data_dir / "project")], check=True, timeout=120)
    if isinstance(inventory, dict):
        (data_dir / "inventory").mkdir()
        (data_dir / "inventory" / "hosts.yml").write_text(yaml.safe_dump(inventory))
    else:  # an inventory folder (hosts and group_vars), copied as AWX would sync it
        shutil.copytree(inventory, data_dir / "inventory", symlinks=False)
    (data_dir / "env" / "extravars").write_text(extravars_text(extravars, trusted))
    (data_dir / "env" / "envvars").write_text(yaml.safe_dump({
        "ANSIBLE_CACHE_PLUGIN": "jsonfile",
        "ANSIBLE_CACHE_PLUGIN_CONNECTION": str(data_dir / "artifacts" / ident / "fact_cache"),
        "ANSIBLE_NOCOLOR": "1", "ANSIBLE_FORCE_COLOR": "0",
    }))
    (data_dir / "env" / "settings").write_text(yaml.safe_dump({"job_timeout": timeout, "suppress_ansible_output": True}))
    env = {key: value for key, value in os.environ.items() if not key.startswith(("ANSIBLE_", "MOLECULE_"))}
    env["PATH"] = "%s:%s" % (BIN, env.get("PATH", ""))
    start = time.monotonic()
    proc = subprocess.run([str(BIN / "ansible-runner"), "run", str(data_dir), "-p", playbook, "--ident", ident],
                          env=env, capture_output=True, text=True, timeout=timeout + 120, check=False)
    return Job(data_dir, ident, proc, time.monotonic() - start)


def closed_ports_inventory(workers=1):
    """Nodes on 127.0.0.1 ports nothing listens on: a job that contacted them would fail naming them."""
    hosts = {"all": {"children": {"ray_head": {"hosts": {"node1": {"ansible_host": "127.0.0.1", "ansible_port": 9}}},
                                  "ray_workers": {"hosts": {}}}}}
    for number in range(2, workers + 2):
        hosts["all"]["children"]["ray_workers"]["hosts"]["node%d" % number] = {"ansible_host": "127.0.0.1", "ansible_port": 9}
    return hosts
