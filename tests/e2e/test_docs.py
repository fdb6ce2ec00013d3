"""The documentation holds together: the settings reference is what the settings class gives, every
relative link between the pages (and to files of the repository) resolves, and the README stays short."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from agent_memory.settings import AgentMemorySettings, settings_reference

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
SETTINGS_PAGE = DOCS / "settings.md"
_FENCE = re.compile(r"^(```|~~~)")
_LINK = re.compile(r"(?<!!)\[(?:[^\]\\]|\\.)*\]\(([^)\s]+)\)")
_INLINE_CODE = re.compile(r"`[^`]*`")


def _pages() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]


def _prose(page: Path) -> list[str]:
    """The page's lines outside fenced code blocks."""
    out, fenced = [], False
    for line in page.read_text(encoding="utf-8").splitlines():
        if _FENCE.match(line.lstrip()):
            fenced = not fenced
        elif not fenced:
            out.append(line)
    return out


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found: set[str] = set()
    for line in _prose(page):
        if heading := re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line):
            slug = _slug(heading[1])
            n, candidate = 0, slug
            while candidate in found:
                n += 1
                candidate = f"{slug}-{n}"
            found.add(candidate)
    return found


def broken_links(page: Path) -> list[str]:
    problems = []
    for line in _prose(page):
        for target in _LINK.findall(_INLINE_CODE.sub("", line)):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                continue
            path_part, _, anchor = target.partition("#")
            dest = (page.parent / path_part).resolve() if path_part else page
            if not dest.exists():
                problems.append(f"{page.name}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                problems.append(f"{page.name}: {target} (no such heading in {dest.name})")
    return problems


def test_the_settings_reference_is_up_to_date() -> None:
    assert SETTINGS_PAGE.read_text(encoding="utf-8") == settings_reference(), (
        "docs/settings.md is out of date: run python -m agent_memory.settings.reference --write docs/settings.md"
    )


def test_the_reference_names_every_setting_with_its_default_and_comment() -> None:
    text = settings_reference()
    for name, field in AgentMemorySettings.model_fields.items():
        row = next(line for line in text.splitlines() if line.startswith(f"| `{name.upper()}` |"))
        assert f"`{name}`" in row
        if isinstance(field.default, bool):
            assert f"`{str(field.default).lower()}`" in row
        elif isinstance(field.default, int | float) and not isinstance(field.default, bool):
            assert f"`{field.default}`" in row
    assert "Spans also carry text" in text  # a `#:` comment
    assert "`MEMORY_RECALL_ROUNDS` | `memory_recall_rounds` | int, >= 1 and <= 5 | `3`" in text


def test_check_fails_on_a_stale_reference_and_passes_on_a_fresh_one(tmp_path: Path) -> None:
    page = tmp_path / "settings.md"
    command = [sys.executable, "-m", "agent_memory.settings.reference"]
    written = subprocess.run([*command, "--write", str(page)], capture_output=True, text=True, check=False)
    assert written.returncode == 0, written.stderr
    assert page.read_text(encoding="utf-8") == settings_reference()
    fresh = subprocess.run([*command, "--check", str(page)], capture_output=True, text=True, check=False)
    assert fresh.returncode == 0, fresh.stderr
    page.write_text(settings_reference().replace("`0.5`", "`0.6`"), encoding="utf-8")
    stale = subprocess.run([*command, "--check", str(page)], capture_output=True, text=True, check=False)
    assert stale.returncode == 1 and "out of date" in stale.stderr


@pytest.mark.parametrize("page", _pages(), ids=lambda p: p.name)
def test_relative_links_resolve(page: Path) -> None:
    assert broken_links(page) == []


def test_the_link_check_sees_a_broken_link_and_a_missing_heading(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# A page\n\n## Two words\n", encoding="utf-8")
    page = tmp_path / "b.md"
    page.write_text(
        "[ok](a.md#two-words) [gone](c.md) [no heading](a.md#three) `[code](d.md)`\n"
        "```\n[fenced](e.md)\n```\n[web](https://example.org/x)\n",
        encoding="utf-8",
    )
    assert broken_links(page) == ["b.md: c.md (no such file)", "b.md: a.md#three (no such heading in a.md)"]


def test_the_readme_is_short_and_every_docs_page_is_linked_from_it() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 250
    for page in sorted(DOCS.glob("*.md")):
        assert f"](docs/{page.name})" in readme, page.name
