"""What the CLI prints: user data never read as rich markup, search results in score order, and a
command module that imports nothing heavy (``agent-memory --help`` starts fast)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_memory.cli import app

runner = CliRunner()

MARKUP = "[bold]x[/bold] and [red]"


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite+aiosqlite:///{tmp_path / 'cli.db'}"


def _ok(args: list[str]) -> str:
    out = runner.invoke(app, args)
    assert out.exit_code == 0, out.output
    assert "Traceback" not in out.output
    return out.output


def test_markup_in_user_data_is_printed_literally(url: str) -> None:
    user, friend = "[red]alice", "[/bold]bot"
    _ok(
        [
            "memory",
            "add",
            "markup-1",
            f"咖啡 {MARKUP} coffee",
            "--user",
            user,
            "--friend",
            friend,
            "--summary",
            f"咖啡 {MARKUP}",
            "--url",
            url,
        ]
    )
    got = _ok(["memory", "get", "markup-1", "--user", user, "--url", url])
    assert f"咖啡 {MARKUP} coffee" in got and f"summary:  咖啡 {MARKUP}" in got and f"friend: {friend}" in got
    listed = _ok(["memory", "list", "--user", user, "--url", url])
    # the table may wrap the summary: look for each piece
    assert f"memories of {user}" in listed and "[bold]x[/bold]" in listed and "[red]" in listed and friend in listed
    found = _ok(["memory", "search", "咖啡", "--user", user, "--url", url])
    assert MARKUP in found and friend in found
    missing = _ok(["memory", "delete", "markup-1", "--user", user, "--url", url])
    assert "deleted markup-1" in missing
    gone = runner.invoke(app, ["memory", "get", "markup-1", "--user", user, "--url", url])
    assert gone.exit_code == 1 and f"user '{user}' has no memory 'markup-1'" in gone.output


def test_markup_in_the_recall_is_printed_literally(url: str) -> None:
    _ok(
        [
            "memory",
            "add",
            "markup-2",
            f"MySQL 端口 3306 {MARKUP}",
            "--user",
            "u1",
            "--summary",
            f"MySQL 端口 {MARKUP}",
            "--url",
            url,
        ]
    )
    out = _ok(["recall", "MySQL 端口 [/red] [bold]", "--user", "u1", "--url", url])
    assert "recall started, window 5: MySQL 端口 [/red] [bold]" in out  # the question, as typed
    assert "[memory:markup-2:MySQL 端口" in out  # the block is text, never markup


def test_imported_markup_is_shown_literally_by_the_demo_panels(tmp_path: Path) -> None:
    # the demo prints the latest messages through rich; its own sample has none, so check the escaping helper
    from agent_memory.cli._common import esc

    assert esc(MARKUP) == r"\[bold]x\[/bold] and \[red]"


def _rows(output: str) -> list[tuple[str, float]]:
    """``(key, score)`` of each row of the search table."""
    rows = []
    for line in output.splitlines():
        m = re.match(r"^\s*[│|]\s*(\S+)\s*[│|]\s*([0-9.]+)\s*[│|]", line)
        if m:
            rows.append((m.group(1), float(m.group(2))))
    return rows


def test_memory_search_prints_results_in_score_order(url: str) -> None:
    memories = [
        ("g1", "general", "每天早上喝手冲咖啡，周末去咖啡馆"),
        ("p1", "profile", "用户喜欢咖啡"),
        ("u1", "user_preference", "偏好: 喝茶"),
        ("g2", "general", "MySQL 数据库端口是 3306"),
        ("p2", "profile", "用户是数据库管理员"),
    ]
    for key, kind, content in memories:
        _ok(["memory", "add", key, content, "--user", "u1", "--type", kind, "--url", url])
    for query in ("手冲咖啡 早上", "咖啡馆 周末", "数据库 端口 3306", "喝 咖啡"):
        table = _rows(_ok(["memory", "search", query, "--user", "u1", "--limit", "10", "--url", url]))
        assert len(table) >= 3, table
        scores = [s for _, s in table]
        assert scores == sorted(scores, reverse=True), (query, table)
        hits = json.loads(_ok(["memory", "search", query, "--user", "u1", "--limit", "10", "--json", "--url", url]))
        assert [h["memory_key"] for h in hits] == [k for k, _ in table]
        assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)


HEAVY = ("autogen_agentchat", "autogen_core", "sklearn", "numpy", "sqlalchemy", "jieba", "pydantic_settings")


def test_importing_the_cli_imports_nothing_heavy() -> None:
    code = f"import sys, agent_memory.cli; print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "", f"imported at start: {done.stdout.strip()}"


def test_the_command_modules_add_nothing_heavy_to_the_package() -> None:
    # what the CLI's own modules import, beyond the package's __init__
    code = (
        "import sys, agent_memory; before = set(sys.modules); import agent_memory.cli; "
        f"print(','.join(m for m in set(sys.modules) - before if m.split('.')[0] in {HEAVY!r} + ('data_layer',)))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "", f"imported by agent_memory.cli: {done.stdout.strip()}"


def test_help_runs_and_names_the_global_debug_option() -> None:
    out = _ok(["--help"])
    for word in ("--debug", "memory", "messages", "recall", "demo", "db"):
        assert word in out
