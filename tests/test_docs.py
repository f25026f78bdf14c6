"""The README and the pages under docs/: every link the README makes lands, the README
stays short, and the pages build with mkdocs in strict mode (a broken link or anchor
between pages fails the build: mkdocs.yml's `validation`)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from markdown.extensions.toc import slugify
from mkdocs.commands.build import build
from mkdocs.config import load_config
from mkdocs.exceptions import Abort

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
MAX_README_LINES = 250

# [text](target) and ![alt](target); a target ends at the first space (a title may follow)
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
CODE_SPAN = re.compile(r"(`+).+?\1")   # a link written inside one is text, not a link


def outside_fences(text: str) -> list[str]:
    """The lines of a markdown text that are not inside a fenced code block."""
    lines, fence = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fence = not fence
            continue
        if not fence:
            lines.append(line)
    return lines


def anchors(path: Path) -> set[str]:
    """The ids mkdocs gives the headings of a markdown file: Python-Markdown's toc slugify
    with '-' (markup such as backticks is punctuation to it, and goes), a repeated id
    suffixed `_1`, `_2`... as its toc extension does."""
    seen: set[str] = set()
    for line in outside_fences(path.read_text(encoding="utf-8")):
        match = HEADING.match(line)
        if not match:
            continue
        slug = base = slugify(match.group(2), "-")
        count = 0
        while slug in seen:
            count += 1
            slug = f"{base}_{count}"
        seen.add(slug)
    return seen


def relative_links(path: Path) -> list[str]:
    """The links of a markdown file that point into the repository (not to a web address)."""
    targets = []
    for line in outside_fences(path.read_text(encoding="utf-8")):
        for target in LINK.findall(CODE_SPAN.sub("", line)):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):   # http:, https:, mailto:...
                continue
            targets.append(target)
    return targets


def broken_links(path: Path) -> list[str]:
    """Each relative link of ``path`` whose file does not exist, or whose #anchor is no
    heading of that file, with why."""
    broken = []
    for target in relative_links(path):
        file_part, _, anchor = target.partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path
        if not linked.exists():
            broken.append(f"{target}: no file {linked}")
        elif anchor and (linked.is_dir() or anchor not in anchors(linked)):
            broken.append(f"{target}: no heading of {linked.name} has the id {anchor!r}")
    return broken


def test_every_relative_link_of_the_readme_lands_on_a_file_and_a_heading() -> None:
    links = relative_links(README)
    # the README links to the docs pages, some of them to a section: the check reads them
    assert sum(link.startswith("docs/") for link in links) >= 10, links
    assert any("#" in link for link in links), links
    assert broken_links(README) == []


def test_the_link_check_finds_a_missing_file_and_a_missing_anchor(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text(
        "# A page\n\n## `shadowdiff replay`: the check\n\n## Again\n\n## Again\n")
    readme = tmp_path / "README.md"
    readme.write_text(
        "[ok](docs/page.md) [ok](docs/page.md#shadowdiff-replay-the-check) [ok](docs/page.md#again_1)\n"
        "[web](https://example.com/x.md) `[code](nowhere.md)`\n"
        "```sh\n[in a fence](nowhere.md)\n```\n"
        "[gone](docs/other.md) [no anchor](docs/page.md#the-check) [third](docs/page.md#again_2)\n")
    assert [line.split(":")[0] for line in broken_links(readme)] == [
        "docs/other.md", "docs/page.md#the-check", "docs/page.md#again_2"]


def test_the_readme_stays_short() -> None:
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_README_LINES, f"README.md has {lines} lines; move detail to a page under docs/"


def strict_build(config_file: Path, site: Path) -> None:
    build(load_config(str(config_file), strict=True, site_dir=str(site)))


def test_the_docs_build_in_strict_mode(tmp_path: Path) -> None:
    strict_build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert (tmp_path / "site" / "replay" / "index.html").exists()


@pytest.mark.parametrize("breakage", ["a link to a missing page", "an anchor no heading has"])
def test_the_strict_build_fails_on_a_broken_link(tmp_path: Path, breakage: str) -> None:
    """mkdocs.yml's validation makes a broken link or anchor a warning, and strict mode an
    error: a copy of the docs with one link broken must not build."""
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    page = tmp_path / "docs" / "index.md"
    target = "no-such-page.md" if breakage.startswith("a link") else "replay.md#no-such-heading"
    page.write_text(page.read_text(encoding="utf-8") + f"\n[broken]({target})\n", encoding="utf-8")
    with pytest.raises(Abort, match="strict mode"):
        strict_build(tmp_path / "mkdocs.yml", tmp_path / "site")
