"""Every count and name the documentation states, derived from the code: the AWX job templates and workflows
(awx/configure.yml, awx/surveys.yml), the playbooks (playbooks/), the algorithms (plugins/module_utils/_algorithms.py)
and check.yml's return codes (Ansible's own, for the way its last task fails). A stale claim fails here, naming the
page, the line and the true value (issue 60: "the seven job templates" where configure.yml creates nine)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from ansible.executor.task_queue_manager import TaskQueueManager

from ansible_collections.verl.deploy.plugins.module_utils._algorithms import ALGORITHMS

REPO = Path(__file__).resolve().parent.parent
PAGES = sorted([REPO / "README.md", REPO / "README.zh-CN.md", *(REPO / "docs").rglob("*.md")])
NUMBERS = {word: value for value, word in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen".split())}
NUMBER = r"(\d+|%s)" % "|".join(NUMBERS)


def number(text):
    return int(text) if text.isdigit() else NUMBERS[text.lower()]


def lines_of_pages():
    for page in PAGES:
        for index, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            yield "%s:%d" % (page.relative_to(REPO), index), line


# ------------------------------------------------------------------------------------------------ what the code says

def configure_tasks():
    return yaml.safe_load((REPO / "awx/configure.yml").read_text(encoding="utf-8"))[0]


def job_templates():
    """{survey key: (template name, playbook)} of the job templates awx/configure.yml creates."""
    play = configure_tasks()
    surveys = yaml.safe_load((REPO / "awx/surveys.yml").read_text(encoding="utf-8"))
    [task] = [task for task in play["tasks"] if "awx.awx.job_template" in task]
    assert task["awx.awx.job_template"]["playbook"] == "playbooks/{{ item }}.yml"
    return {key: (surveys[key]["name"], "playbooks/%s.yml" % key) for key in task["loop"]}


def workflows():
    """The names of the workflows awx/configure.yml creates (each a variable of the play)."""
    play = configure_tasks()
    found = []
    for task in play["tasks"]:
        if "awx.awx.workflow_job_template" in task:
            name = task["awx.awx.workflow_job_template"]["name"]
            found.append(play["vars"][re.fullmatch(r"\{\{ (\w+) \}\}", name).group(1)])
    return found


def user_playbooks():
    """The playbooks a user runs: every one in playbooks/ but those only imported by the others."""
    books = {path.name for path in (REPO / "playbooks").glob("*.yml")}
    imported = {task["ansible.builtin.import_playbook"] for path in (REPO / "playbooks").glob("*.yml")
                for task in yaml.safe_load(path.read_text(encoding="utf-8")) or [] if "ansible.builtin.import_playbook" in task}
    return sorted(books - imported)


LABELS = [entry["label"] for entry in ALGORITHMS]


def check_return_codes():
    """check.yml's return codes: Ansible's own for a run that ends well, and for its last task, a fail on the controller
    when a node is not ready (a failed host: TaskQueueManager.RUN_FAILED_HOSTS; a refusal in stage 0 is one as well)."""
    plays = yaml.safe_load((REPO / "playbooks/check.yml").read_text(encoding="utf-8"))
    last = plays[-1]["tasks"][-1]
    assert "ansible.builtin.fail" in last and last["when"] == "not __verl_check.ready", last
    return {int(TaskQueueManager.RUN_OK), int(TaskQueueManager.RUN_FAILED_HOSTS)}


# ------------------------------------------------------------------------------------------------ what the pages say

def test_the_code_has_what_the_pages_are_checked_against():
    assert len(job_templates()) >= 9 and len(workflows()) >= 2
    assert {"deploy.yml", "check.yml", "status.yml", "render.yml"} <= set(user_playbooks())
    assert "preflight.yml" not in user_playbooks() and LABELS[:2] == ["DAPO", "GRPO"]


@pytest.mark.parametrize("what, pattern, truth", [
    ("job templates", r"\bthe %s (?:AWX )?job templates\b" % NUMBER, lambda: len(job_templates())),
    ("workflows", r"\bthe %s (?:AWX )?workflows\b" % NUMBER, lambda: len(workflows())),
    ("playbooks", r"\bthe %s (?:user |day-2 )?playbooks\b" % NUMBER, lambda: len(user_playbooks())),
    ("algorithms", r"\b%s algorithms\b" % NUMBER, lambda: len(ALGORITHMS)),
], ids=["job-templates", "workflows", "playbooks", "algorithms"])
def test_every_count_the_pages_state_is_the_codes(what, pattern, truth):
    stale = ["%s: %r (there are %d %s)" % (where, match.group(0), truth(), what)
             for where, line in lines_of_pages() for match in re.finditer(pattern, line, re.I)
             if number(match.group(1)) != truth()]
    assert not stale, stale


def test_the_awx_guide_lists_every_template_and_workflow_configure_creates():
    text = (REPO / "docs/awx.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (verl [^|]+?) \| `(playbooks/\w+\.yml)` \|", text, re.M)
    assert sorted(rows) == sorted(job_templates().values()), rows
    assert sorted(re.findall(r"^\| \*\*(verl [^|]+?)\*\* \| a workflow", text, re.M)) == sorted(workflows())


def test_a_list_of_the_templates_names_them_all():
    """`the check, deploy, status, stop, render and logs templates`: a list of the templates is all of them."""
    keys = set(job_templates())
    listed = re.compile(r"\bthe ((?:[a-z]+, )+[a-z]+,? and [a-z]+) (?:job )?templates\b")
    stale = []
    for where, line in lines_of_pages():
        for match in listed.finditer(line):
            names = set(re.split(r",? and |, ", match.group(1)))
            if names <= keys | {"smoke", "compare"} and names != keys:
                stale.append("%s: %r misses %s" % (where, match.group(0), ", ".join(sorted(keys - names))))
    assert not stale, stale


def test_every_playbook_a_page_names_exists():
    books = {path.name for path in (REPO / "playbooks").glob("*.yml")}
    missing = ["%s: playbooks/%s" % (where, name) for where, line in lines_of_pages()
               for name in re.findall(r"\bplaybooks/([\w-]+\.yml)\b", line) if name not in books]
    assert not missing, missing


def test_the_algorithms_named_together_are_all_of_them():
    """`DAPO/GRPO` where GSPO is an algorithm too: a list of the algorithms, in the pages or galaxy.yml, is all of them."""
    together = re.compile(r"\b(?:%s)(?:/(?:%s))+\b" % ("|".join(LABELS), "|".join(LABELS)))
    galaxy = (REPO / "galaxy.yml").read_text(encoding="utf-8").splitlines()
    sources = [*lines_of_pages(), *(("galaxy.yml:%d" % index, line) for index, line in enumerate(galaxy, 1))]
    stale = ["%s: %r (the algorithms: %s)" % (where, match.group(0), "/".join(LABELS))
             for where, line in sources for match in together.finditer(line) if sorted(match.group(0).split("/")) != sorted(LABELS)]
    assert not stale, stale
    description = " ".join(yaml.safe_load((REPO / "galaxy.yml").read_text(encoding="utf-8"))["description"].split())
    assert all(label in description for label in LABELS), description


def test_check_yml_says_its_return_codes_as_they_are():
    truth = check_return_codes()
    header = [line for line in (REPO / "playbooks/check.yml").read_text(encoding="utf-8").splitlines() if line.startswith("#")]
    assert {int(code) for code in re.findall(r"\brc (\d+)", "\n".join(header))} == truth, header
    operations = (REPO / "docs/operations.md").read_text(encoding="utf-8")
    section = operations.split("`check.yml`", 1)[1].split("\n## ", 1)[0]
    assert {int(code) for code in re.findall(r"^\| (\d+) \|", section, re.M)} == truth, section
    # Anywhere else a page gives check.yml a return code, it is one of these.
    stale = ["%s: rc %s" % (where, code) for where, line in lines_of_pages() if "check.yml" in line
             for code in re.findall(r"\brc (\d+)", line) if int(code) not in truth]
    assert not stale, stale
