"""Every relative link in README.md and docs/*.md reaches a file that exists, and every #anchor a heading there.

Anchors are GitHub's: the heading's text, lower-cased, markup and punctuation dropped, spaces as hyphens, a
repeated heading numbered (-1, -2 ...). Code blocks are left out (a `# comment` in bash is no heading).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```.*?^```[^\n]*$", re.S | re.M)
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def prose(text: str) -> str:
    """The page without its fenced code blocks and inline code spans."""
    return re.sub(r"`[^`\n]*`", "", FENCE.sub("", text))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading (github-slugger's rule)."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading keeps its text
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for heading in HEADING.findall(FENCE.sub("", page.read_text(encoding="utf-8"))):
        base = slug(heading)
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return found


def test_slugs_are_githubs() -> None:
    """Worked examples from GitHub's rendering of these pages' own headings."""
    assert slug("Where C-STS text lands, and what you may share") == "where-c-sts-text-lands-and-what-you-may-share"
    assert slug("Expected-score scoring (`--scoring expected`)") == "expected-score-scoring---scoring-expected"
    assert slug("Runs as files: `--config` and the paper's tables") == "runs-as-files---config-and-the-papers-tables"
    assert slug("Packaged models (`smollm2-135m`)") == "packaged-models-smollm2-135m"


def test_a_repeated_heading_gets_a_number(tmp_path: Path) -> None:
    page = tmp_path / "p.md"
    page.write_text("# A\n\n## Notes\n\n```bash\n# Notes\n```\n\n## Notes\n")
    assert anchors(page) == {"a", "notes", "notes-1"}


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_relative_link_and_anchor_resolves(page: Path) -> None:
    broken = []
    for target in LINK.findall(prose(page.read_text(encoding="utf-8"))):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto: ... are not ours to check
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: no such file")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{target}: no heading with that anchor in {file.name}")
    assert broken == [], f"{page.name}: " + "; ".join(broken)
