"""The repository stands alone: no tracked file cites a document outside it, every docs/ page a file
names exists, and every relative link in docs/*.md and README.md resolves (its #anchor too)."""
from __future__ import annotations

import re
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


PAGES = sorted(["README.md"] + [p.relative_to(REPO).as_posix() for p in (REPO / "docs").glob("*.md")])


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
    pages = [REPO / "README.md"] + sorted((REPO / "docs").glob("*.md"))
    said = [(page.name, name, int(port)) for page in pages
            for name, port in re.findall(r"`(verl_\w*port)`\s*\((\d+)", page.read_text())]
    assert said, "the rule reads nothing"
    assert [entry for entry in said if defaults.get(entry[1]) != entry[2]] == []
