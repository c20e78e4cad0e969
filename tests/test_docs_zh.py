"""The Chinese guides stay in step with the English ones (issue 60).

docs/zh/operations.md and docs/zh/troubleshooting.md translate docs/operations.md and docs/troubleshooting.md: each
pair has the same commands (`ansible-playbook ...`, `./run.sh ...`, in ```bash blocks or inline), the same
`-e verl_*=...` settings and the same `verl_*` names, both ways, and the same sections in the same order. A failure
says which are missing on which side, so that re-syncing after an English change is a list to work through. Every
link and anchor of the Chinese guides resolves. README.zh-CN.md covers the user's whole day: every user playbook,
the two commands, the log file, the mask table, the loggers and AWX."""
from __future__ import annotations

import re
import shlex

import pytest

from test_docs import REPO, github_anchor

PAIRS = [("docs/operations.md", "docs/zh/operations.md"), ("docs/troubleshooting.md", "docs/zh/troubleshooting.md")]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", flags=re.S | re.M)
NAME = re.compile(r"(?<![\w<])verl_[a-z0-9_]*[a-z0-9]")
SETTING = re.compile(r"""-e\s+['"]?(verl_\w+=[^\s`'"()（）。，；、]+)""")
SPAN = re.compile(r"(`+)(.+?)\1", flags=re.S)


def facts(text):
    """What a translation keeps as written: the commands, the -e settings and the verl_* names of a page."""
    commands = set()
    for language, block in FENCE.findall(text):
        if language == "bash":
            for line in block.replace("\\\n", " ").splitlines():
                words = shlex.split(line, comments=True)
                if words:
                    commands.add(" ".join(words))
    prose = FENCE.sub("", text)
    for _ticks, span in SPAN.findall(prose):
        span = " ".join(span.split())
        if span.startswith(("ansible-playbook ", "./run.sh ")) or " ansible-playbook " in span:
            commands.add(span)
    return {
        "commands": commands,
        "-e settings": {setting.rstrip(".,;:") for setting in SETTING.findall(text)},
        "verl_* names": set(NAME.findall(text)),
    }


def headings(text):
    return [(len(match.group(1)), match.group(2).strip())
            for match in re.finditer(r"^(#+) (.*)$", FENCE.sub("", text), flags=re.M)]


def read(page):
    return (REPO / page).read_text(encoding="utf-8")


def test_the_rule_reads_what_a_page_keeps():
    text = ("Run `ansible-playbook playbooks/stop.yml` (`verl_stop_containers`), then\n```bash\n"
            "./run.sh demo   # 注释\nansible-playbook playbooks/deploy.yml -e verl_confirm=true \\\n  -e verl_restart=true\n```\n"
            "或者（-e verl_resume_mode=disable）。`verl_<model>_*.log`, `_verl_launch`\n")
    assert facts(text) == {
        "commands": {"ansible-playbook playbooks/stop.yml", "./run.sh demo",
                     "ansible-playbook playbooks/deploy.yml -e verl_confirm=true -e verl_restart=true"},
        "-e settings": {"verl_confirm=true", "verl_restart=true", "verl_resume_mode=disable"},
        "verl_* names": {"verl_stop_containers", "verl_confirm", "verl_restart", "verl_resume_mode"},
    }


@pytest.mark.parametrize("english,chinese", PAIRS)
def test_the_chinese_guide_has_the_english_guides_commands_and_settings(english, chinese):
    theirs, ours = facts(read(english)), facts(read(chinese))
    assert all(theirs.values()), "the rule reads the English page"
    problems = []
    for kind in theirs:
        for side, missing in ((chinese, theirs[kind] - ours[kind]), (english, ours[kind] - theirs[kind])):
            if missing:
                source = english if side == chinese else chinese
                problems.append("%s lacks these %s of %s:\n  %s" % (side, kind, source, "\n  ".join(sorted(missing))))
    assert not problems, "re-sync the translation:\n" + "\n".join(problems)


@pytest.mark.parametrize("english,chinese", PAIRS)
def test_the_chinese_guide_has_the_english_guides_sections_in_order(english, chinese):
    theirs, ours = headings(read(english)), headings(read(chinese))
    if [heading[0] for heading in theirs] != [heading[0] for heading in ours]:
        rows = ["%-3s %-70s %s" % (number, "#" * a[0] + " " + a[1] if a else "-", "#" * b[0] + " " + b[1] if b else "-")
                for number, (a, b) in enumerate(zip(theirs + [None] * len(ours), ours + [None] * len(theirs)), 1)
                if a or b]
        pytest.fail("%s and %s have other sections (the first row whose levels differ is where to look):\n%s"
                    % (english, chinese, "\n".join(rows)))


@pytest.mark.parametrize("english,chinese", PAIRS)
def test_the_chinese_guide_links_its_english_original(english, chinese):
    assert "](../%s)" % english.split("/", 1)[1] in read(chinese)


ZH_PAGES = sorted(p.relative_to(REPO).as_posix() for p in (REPO / "docs" / "zh").glob("*.md"))


def test_every_chinese_guide_is_a_translation_of_an_english_one():
    assert ZH_PAGES == sorted(chinese for _english, chinese in PAIRS)


def test_the_anchor_rule_keeps_chinese():
    assert github_anchor(" 收集日志：`logs.yml`") == "收集日志logsyml"
    assert github_anchor(" /dev/shm 太小") == "devshm-太小"


# -- README.zh-CN.md: the user's whole day, in Chinese.

def test_the_chinese_readme_covers_every_user_playbook_and_the_two_commands():
    commands = facts(read("README.zh-CN.md"))["commands"]
    for playbook in ("deploy", "check", "status", "logs", "stop", "remove", "compare", "smoke", "render"):
        assert any("playbooks/%s.yml" % playbook in command for command in commands), playbook
    assert {"./run.sh demo", "./run.sh test"} <= commands


def test_the_chinese_readme_says_where_the_log_goes_and_shows_the_mask_table():
    from ansible_collections.verl.deploy.plugins.module_utils._features import FEATURES

    text = read("README.zh-CN.md")
    for needed in ("~/.ansible/verl-deploy-logs", "VERL_DEPLOY_LOG_DIR", "ANSIBLE_STDOUT_CALLBACK=default",
                   "`verl_loggers`", "](docs/awx.md)", "](docs/zh/operations.md)", "](docs/zh/troubleshooting.md)",
                   "`verl_status_fail_on`", "-e verl_restart=true"):
        assert needed in text, needed
    section = re.search(r"^## [^\n]*mask\n(.*?)(?=^## )", text, flags=re.S | re.M).group(1)  # the mask's own section
    rows = re.findall(r"^\| (\d) \| ([^|]+?) \|", section, flags=re.M)
    assert rows == [(str(feature["bit"]), feature["name"]) for feature in FEATURES]
