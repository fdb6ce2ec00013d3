"""The source says what and why in its own terms, and every formatter or type-checker exception says why.

Comments and docstrings in ``src`` name no document the repository does not hold (design seeds, a
design file, issue or finding numbers). A ``# fmt: skip`` / ``# fmt: off`` or a ``# type: ignore``
carries a reason: another comment on its line, or a comment line right above the statement.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"

#: References to documents that are not in the repository.
FOREIGN = re.compile(r"seed 0\d\d|DESIGN\.md|issue [0-9]+|finding F[0-9]+", re.IGNORECASE)
FMT_SKIP = re.compile(r"#\s*fmt:\s*skip\s*$")
FMT_OFF = re.compile(r"^\s*#\s*fmt:\s*off\s*$")
TYPE_IGNORE = re.compile(r"#\s*type:\s*ignore(\[[^\]]*\])?")


def _comment_above(lines: list[str], lineno: int) -> bool:
    """Whether the line before ``lineno`` (1-based) is a comment that says something."""
    if lineno < 2:
        return False
    above = lines[lineno - 2].strip()
    return above.startswith("#") and len(above.lstrip("# ")) > 0


def _statement_starts(source: str) -> dict[int, int]:
    """First line of the innermost statement that ends on each line."""
    starts: dict[int, int] = {}
    for node in ast.walk(ast.parse(source)):
        end = getattr(node, "end_lineno", None) if isinstance(node, ast.stmt) else None
        if end is not None and (end not in starts or node.lineno > starts[end]):
            starts[end] = node.lineno
    return starts


def unexplained(source: str) -> list[str]:
    """The formatter and type-checker exceptions in ``source`` that give no reason, as ``line: text``."""
    lines = source.splitlines()
    starts = _statement_starts(source)
    found = []
    for n, line in enumerate(lines, 1):
        if skip := FMT_SKIP.search(line):
            before = line[: skip.start()]
            same_line = "#" in before and before.split("#", 1)[1].strip()
            if not (same_line or _comment_above(lines, n) or _comment_above(lines, starts.get(n, n))):
                found.append(f"{n}: {line.strip()}")
        if FMT_OFF.match(line) and not _comment_above(lines, n):
            found.append(f"{n}: {line.strip()}")
        match = TYPE_IGNORE.search(line)
        if match:
            others = (line[: match.start()].split("#", 1)[1:] or [""])[0] + line[match.end() :]
            if not (others.strip(" #") or _comment_above(lines, n)):
                found.append(f"{n}: {line.strip()}")
    return found


def _sources() -> list[Path]:
    return sorted(p for p in SRC.rglob("*") if p.is_file() and p.suffix in {".py", ".md", ".yaml", ".html", ".js"})


def test_the_source_names_no_document_the_repository_does_not_hold() -> None:
    hits = [
        f"{path.relative_to(SRC)}:{n}: {line.strip()}"
        for path in _sources()
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if FOREIGN.search(line)
    ]
    assert hits == []


def test_the_tests_skip_the_formatter_nowhere_and_name_no_foreign_document() -> None:
    """The tests are formatted as the source is (no ``fmt: skip`` or ``fmt: off`` at all), carry no
    ``type: ignore`` (the type checker reads ``src``; a test's input that is wrong on purpose says so in
    its name) and name no document the repository does not hold."""
    tests = Path(__file__).resolve().parents[1]
    hits = [
        f"{path.relative_to(tests)}:{n}: {line.strip()}"
        for path in sorted(tests.rglob("*.py"))
        if path != Path(__file__).resolve()
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if FMT_SKIP.search(line) or FMT_OFF.match(line) or TYPE_IGNORE.search(line) or FOREIGN.search(line)
    ]
    assert hits == []


def test_every_formatter_and_type_checker_exception_gives_its_reason() -> None:
    missing = {
        str(path.relative_to(SRC)): found
        for path in SRC.rglob("*.py")
        if (found := unexplained(path.read_text(encoding="utf-8")))
    }
    assert missing == {}


@pytest.mark.parametrize(
    ("source", "flagged"),
    [
        ("x = f(1)  # type: ignore[arg-type]\n", ["1: x = f(1)  # type: ignore[arg-type]"]),
        ("x = f(1)  # type: ignore[arg-type]  # f takes a str: checked above\n", []),
        ("# f takes a str: checked above\nx = f(1)  # type: ignore[arg-type]\n", []),
        ("x = [\n    1, 2,\n]  # fmt: skip\n", ["3: ]  # fmt: skip"]),
        ("# a table, several to a line\nx = [\n    1, 2,\n]  # fmt: skip\n", []),
        ("x = [1, 2]  # a table  # fmt: skip\n", []),
        ("# fmt: off\nx = 1\n# fmt: on\n", ["1: # fmt: off"]),
    ],
)
def test_an_exception_without_a_reason_is_found(source: str, flagged: list[str]) -> None:
    assert unexplained(source) == flagged


def test_a_foreign_reference_is_found() -> None:
    assert FOREIGN.search('"""As seed 002 section 3 says."""')
    assert FOREIGN.search("# see DESIGN.md")
    assert FOREIGN.search("(finding F1 of issue 13)")
    assert not FOREIGN.search("# the seed memories of a session")
