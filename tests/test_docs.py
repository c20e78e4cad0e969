"""The repository stands alone: no tracked file cites a document outside it, every docs/ page a file
names exists, and every relative link in docs/*.md, README.md and README.zh-CN.md resolves (its #anchor too).
The first page says what the collection is and how to start on its first screen, and the Chinese quick start
(README.zh-CN.md) stays in step with the English one: only its commands, only names that exist."""
from __future__ import annotations

import re
import shlex
import subprocess
import unicodedata
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
THIS = Path(__file__).resolve().relative_to(REPO).as_posix()

# Documents that live outside the repository (the design's specification and the notes it was built
# from); built from parts so that this file does not cite them itself.
OUTSIDE = [re.compile(pattern) for pattern in (
    r"\bSPEC" + r"\.md\b",
    r"\.\./" + r"shared\b",
    r"/work/" + r"shared\b",
    r"\.\./" + r"notes/",
    r"\b(?:design-" + r"review|verl-" + r"facts|ascend-field-" + r"notes|test-" + r"harness|ansible-" + r"style)\.md\b",
    r"000_959fa677" + r"d4ca6c2e",
)]
DOCS_NAMED = re.compile(r"(?<![\w./-])docs/([\w./-]+?\.md)\b")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def tracked_text_files():
    names = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, names):
        path = REPO / name
        if name == THIS or not path.is_file() or path.is_symlink():
            continue
        data = path.read_bytes()
        if b"\0" in data[:8192]:
            continue
        yield name, data.decode("utf-8", errors="replace")


FILES = dict(tracked_text_files())


def test_no_tracked_file_cites_a_document_outside_the_repository():
    found = ["%s:%d: %s" % (name, text.count("\n", 0, match.start()) + 1, match.group(0))
             for name, text in FILES.items() for pattern in OUTSIDE for match in pattern.finditer(text)]
    assert not found, "move what these cite into docs/ and point there:\n" + "\n".join(found)


def test_every_docs_page_a_file_names_exists():
    missing = sorted({"%s names docs/%s" % (name, page) for name, text in FILES.items() for page in DOCS_NAMED.findall(text)
                      if not (REPO / "docs" / page).is_file()})
    assert not missing, "\n".join(missing)


def github_anchor(heading):
    """The id GitHub gives a Markdown heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or "", heading.strip()).lower()
    text = "".join(char for char in text if char in " -_" or unicodedata.category(char)[0] in "LN")
    return text.replace(" ", "-")


def anchors(path):
    found, fence = set(), False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fence = not fence
        elif not fence and line.startswith("#"):
            found.add(github_anchor(line.lstrip("#")))
    return found


# The guides and their Chinese translations (docs/zh/).
PAGES = sorted(["README.md", "README.zh-CN.md"] + [p.relative_to(REPO).as_posix() for p in (REPO / "docs").glob("*.md")]
               + [p.relative_to(REPO).as_posix() for p in (REPO / "docs" / "zh").glob("*.md")])


@pytest.mark.parametrize("page", PAGES)
def test_every_relative_link_resolves(page):
    source = REPO / page
    text = re.sub(r"```.*?```", "", source.read_text(encoding="utf-8"), flags=re.S)
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue  # http(s), mailto: not a file of the repository
        path, _hash, anchor = target.partition("#")
        resolved = (source.parent / path).resolve() if path else source
        if not resolved.exists():
            broken.append("%s: no such file" % target)
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append("%s: no heading with that anchor in %s" % (target, resolved.relative_to(REPO)))
    assert not broken, "%s:\n%s" % (page, "\n".join(broken))


def test_docs_index_lists_every_page_and_the_readme_links_it():
    index = (REPO / "docs" / "README.md").read_text(encoding="utf-8")
    pages = sorted(p.name for p in (REPO / "docs").glob("*.md") if p.name != "README.md")
    assert [page for page in pages if "](%s)" % page not in index] == [], "docs/README.md must list every page of docs/"
    assert "docs/README.md" in (REPO / "README.md").read_text(encoding="utf-8")


def test_the_anchor_rule_is_githubs():
    assert github_anchor(" Collecting the logs: `logs.yml`") == "collecting-the-logs-logsyml"
    assert github_anchor(" 6. What a run shows") == "6-what-a-run-shows"
    assert github_anchor(" /dev/shm too small") == "devshm-too-small"


def test_a_port_the_docs_give_for_a_port_setting_is_its_default():
    """Issue 28: the troubleshooting page told users to open port 6379 for verl_ray_port, whose default is 9182. Every
    "`verl_<...>_port` (N" in README.md and docs/*.md names the setting's default."""
    import yaml

    defaults = yaml.safe_load((REPO / "roles/verl/defaults/main.yml").read_text())
    pages = [REPO / "README.md", REPO / "README.zh-CN.md"] + sorted((REPO / "docs").glob("*.md"))
    said = [(page.name, name, int(port)) for page in pages
            for name, port in re.findall(r"`(verl_\w*port)`\s*\((\d+)", page.read_text())]
    assert said, "the rule reads nothing"
    assert [entry for entry in said if defaults.get(entry[1]) != entry[2]] == []


# -- The first page (issue 31): what it is and how to start on the first screen, and its Chinese quick start.

README = REPO / "README.md"
README_ZH = REPO / "README.zh-CN.md"
FIRST_SCREEN = 30  # lines: what a browser or a terminal shows before any scrolling


def shell_commands(path):
    """Each command of the page's ```bash blocks, as its words (shlex: quotes kept apart, `# comment` dropped), with
    a line continued by a backslash joined to the next."""
    commands = []
    for block in re.findall(r"^```bash\n(.*?)^```", path.read_text(encoding="utf-8"), flags=re.S | re.M):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            if words:
                commands.append(" ".join(words))
    return commands


def test_the_readme_opens_with_the_two_commands_ci_and_the_tests_run():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert lines[2:6] == [
        "```bash",
        "./run.sh demo    # main job: bring up a simulated 3-node Ascend cluster and deploy training to it",
        "./run.sh test    # the whole test suite (unit, 128-mask proof, Hydra schema, Molecule scenarios, lint, sanity)",
        "```"]


def test_the_readmes_first_screen_says_what_it_is_and_how_to_start():
    """Issue 31: the first page opened with test-runner flags and said what the collection is at line 33."""
    screen = "\n".join(README.read_text(encoding="utf-8").splitlines()[:FIRST_SCREEN])
    assert re.search(r"verl-deploy starts \[verl\]\([^)]*\) reinforcement-learning training on a cluster of\s+Huawei Ascend NPU", screen)
    for target in ("README.zh-CN.md", "#requirements", "#the-demo-a-simulated-3-node-cluster", "#deploying-to-a-real-cluster",
                   "docs/README.md"):
        assert "](%s)" % target in screen, "the first screen links %s" % target
    anchors_here = anchors(README)
    assert {"requirements", "the-demo-a-simulated-3-node-cluster", "deploying-to-a-real-cluster", "how-it-works"} <= anchors_here
    # Issue 60: the real-cluster quick start was at line 74; now its commands are on the first screen.
    for step in ("playbooks/check.yml", "playbooks/deploy.yml", "playbooks/status.yml"):
        assert "ansible-playbook -i inventories/mycluster %s" % step in screen, step


def test_the_readme_is_a_users_page_that_fits_250_lines():
    """Issue 60: it grew to 408 lines with a Status paragraph of test details; that material is docs/development.md's."""
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    assert "Molecule scenarios (one node" not in text and "What it guarantees" not in text
    assert "## What is tested, and what is not yet" in (REPO / "docs" / "development.md").read_text(encoding="utf-8")


def test_the_readme_has_a_requirements_table_for_the_controller_the_nodes_and_the_network():
    text = README.read_text(encoding="utf-8")
    table = text[text.index("## Requirements\n"):text.index("\n## ", text.index("## Requirements\n") + 1)]
    rows = [line.split("|")[1].strip() for line in table.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert {"controller", "every node", "storage", "network"} <= set(rows)
    for needed in ("Python 3.11", "ansible-core", "community.docker", "hydra-core", "Docker engine", "`requests`", "npu-smi",
                   "firmware", "shared file system", "ansible_become", "`verl_ray_port` (9182)", "HCCL"):
        assert needed in table, needed


def test_the_stage_diagram_has_the_stages_of_deploy_yml():
    """The Mermaid flowchart of How it works numbers the same stages as playbooks/deploy.yml's plays (0 to 8)."""
    text = README.read_text(encoding="utf-8")
    diagrams = re.findall(r"^```mermaid\n(.*?)^```", text, flags=re.S | re.M)
    assert len(diagrams) == 2, "the stages and the cluster"
    plays = (REPO / "playbooks/deploy.yml").read_text(encoding="utf-8")
    stages = set()
    for first, last in re.findall(r"^- name: (\d)(?:-(\d))?\.", plays, flags=re.M):
        stages |= set(range(int(first), int(last or first) + 1))
    drawn = {int(number) for number in re.findall(r'S\d+[\[{(]+"(\d)\. ', diagrams[0])}
    assert stages == set(range(9)) and drawn == stages


def test_the_layout_names_every_plugin_benchmark_and_playbook():
    # docs/architecture.md's layout is where a newcomer looks for a file's home: a new one appears there.
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    layout = text[text.index("## The repository's layout"):text.index("## Where your change goes")]
    files = [path for folder in ("plugins/modules", "plugins/action", "plugins/module_utils", "benchmarks", "playbooks")
             for path in (REPO / folder).glob("*.py" if folder != "playbooks" else "*.yml") if path.name != "__init__.py"]
    missing = [str(path.relative_to(REPO)) for path in files if not re.search(r"(?<![\w])%s\b" % re.escape(path.stem), layout)]
    assert not missing, "not in docs/architecture.md's layout: %s" % missing


def test_the_readmes_link_each_other():
    assert "](README.zh-CN.md)" in README.read_text(encoding="utf-8")
    assert "](README.md)" in README_ZH.read_text(encoding="utf-8")


def test_every_command_of_the_chinese_quick_start_is_one_of_the_english_readme():
    """README.zh-CN.md translates, it does not diverge: each of its commands (comments aside) is the English page's."""
    english = set(shell_commands(README))
    chinese = shell_commands(README_ZH)
    assert len(chinese) >= 10, "the rule reads the Chinese quick start's commands"
    assert [command for command in chinese if command not in english] == []
    # The quick start for a real cluster is all there: the English page's block under "Deploying to a real cluster".
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Deploying to a real cluster\n"):]
    first_block = re.search(r"^```bash\n(.*?)^```", section, flags=re.S | re.M).group(1)
    quick_start = [" ".join(shlex.split(line, comments=True)) for line in first_block.splitlines() if line.strip()]
    assert [command for command in quick_start if command not in chinese] == []


def known_names():
    """Every variable a page may name: the roles' argument specs (the settings table of docs/settings.md), and the
    variables of awx/configure.yml."""
    import yaml

    names = set()
    for path in REPO.glob("roles/*/meta/argument_specs.yml"):
        for spec in yaml.safe_load(path.read_text(encoding="utf-8"))["argument_specs"].values():
            names |= set(spec.get("options") or {})
    names |= set(yaml.safe_load((REPO / "awx/configure.yml").read_text(encoding="utf-8"))[0]["vars"])
    return names


def test_every_playbook_and_variable_the_chinese_quick_start_names_exists():
    text = README_ZH.read_text(encoding="utf-8")
    prose = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)  # the commands are the English page's (test above)
    variables = set(re.findall(r"`(verl_[a-z0-9_]+)`", prose))
    assert len(variables) >= 10, "the rule reads the names"
    assert sorted(variables - known_names()) == []
    playbooks = set(re.findall(r"\b(?:playbooks/)?([a-z]+\.yml)\b", text)) - {"hosts.yml"}
    assert {"deploy.yml", "check.yml", "status.yml", "stop.yml", "logs.yml"} <= playbooks
    assert sorted(name for name in playbooks if not (REPO / "playbooks" / name).is_file()) == []
    assert "docs/settings.md" in text


# -- docs/awx.md against awx/ and the execution environment (issue 31: it named stale EE packages and algorithm choices).

AWX_MD = REPO / "docs" / "awx.md"


def _configure_vars():
    import yaml

    return yaml.safe_load((REPO / "awx/configure.yml").read_text(encoding="utf-8"))[0]["vars"]


def _surveys():
    import yaml

    return yaml.safe_load((REPO / "awx/surveys.yml").read_text(encoding="utf-8"))


def test_the_awx_guides_template_table_is_what_configure_creates():
    text = AWX_MD.read_text(encoding="utf-8")
    configure, surveys = _configure_vars(), _surveys()
    rows = {}
    for line in text.splitlines():
        match = re.match(r"\| (verl [\w ]+?) \| `playbooks/(\w+)\.yml` \| `(\w+)` \| ([^|]+) \| (\d+) s[^|]*\|$", line)
        if match:
            rows[match.group(2)] = match.groups()
    trackers = configure["_verl_awx_tracker_templates"]
    assert sorted(rows) == sorted(configure["verl_awx_timeouts"].keys() - {"approval"})
    for template, (name, playbook, survey, credentials, timeout) in rows.items():
        assert (playbook, survey) == (template, template) and surveys[survey]["name"] == name, template
        assert int(timeout) == configure["verl_awx_timeouts"][template], template
        assert credentials.startswith("Machine"), "configure.yml attaches the Machine credential to every template"
        assert ("the trackers'" in credentials) == (template in trackers), template
    assert "approval: %d s" % configure["verl_awx_timeouts"]["approval"] in text
    assert "**%s**" % configure["verl_awx_workflow"] in text


def test_the_awx_guide_names_the_surveys_algorithm_choices_and_variables_that_exist():
    text = " ".join(AWX_MD.read_text(encoding="utf-8").split())
    choices = _surveys()["questions"]["algorithm"]["choices"]
    said = re.search(r"the algorithm \(`verl_algorithm`: ([a-z, ]+?) or ([a-z]+),", text)
    assert said, "the guide names the algorithm choices"
    assert [name.strip() for name in said.group(1).split(",")] + [said.group(2)] == choices
    assert sorted(set(re.findall(r"`(verl_awx_\w+)`", text)) - set(_configure_vars())) == []
    asked = {question["variable"] for question in _surveys()["questions"].values()}
    for sentence in re.findall(r"[^.]*\bsurvey's `verl_\w+`[^.]*", text):
        assert set(re.findall(r"survey's `(verl_\w+)`", sentence)) <= asked, sentence


def test_the_awx_guide_names_the_execution_environments_packages():
    text = AWX_MD.read_text(encoding="utf-8")
    import yaml

    definition = yaml.safe_load((REPO / "execution-environment.yml").read_text(encoding="utf-8"))
    deps = definition["dependencies"]
    assert definition["images"]["base_image"]["name"] == "quay.io/centos/centos:stream9" and "CentOS Stream 9" in text
    assert deps["python_interpreter"]["package_system"] == "python3.11" and "Python 3.11" in text
    assert "ansible-runner %s" % deps["ansible_runner"]["package_pip"].split("==")[1] in text
    for name in ("meta/ee-requirements.txt", "meta/ee-bindep.txt"):
        assert name in text
    wanted = [line.split("==")[0] for line in (REPO / "meta/ee-requirements.txt").read_text().splitlines()
              if line.strip() and not line.startswith("#")]
    assert wanted and all(package in text for package in wanted), wanted
