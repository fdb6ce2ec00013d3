"""``agent-memory exec --user U [--friend F] CODE``: code with slots from the command line (both backends)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_memory.cli import app
from data_layer import AgentFusionDataLayer
from test_sandbox import ABSENT, require_isolation

runner = CliRunner()


@pytest.fixture
def url(db_url: str) -> str:
    async def seed() -> None:
        async with AgentFusionDataLayer(db_url) as layer:
            await layer.memory.add(
                user_id="u1",
                memory_key="db-config-001",
                friend_id="mentor",
                content='{"host": "localhost", "port": 3306}',
                memory_type="command_output",
            )
            await layer.memory.add(
                user_id="u1",
                memory_key="cmd-001",
                content="echo hello [memory:db-config-001:summary]",
                summary="say hello",
                memory_type="command_output",
                metadata={"language": "shell"},
            )
            await layer.memory.add(user_id="u1", memory_key="health", content="用户确诊了糖尿病")

    asyncio.run(seed())
    return db_url


def test_exec_runs_code_with_slots(url: str) -> None:
    require_isolation()
    code = "cfg = [memory:db-config-001]\nprint('connect', cfg['host'])\n_result = {'port': cfg['port']}"
    out = runner.invoke(app, ["exec", code, "--user", "u1", "--friend", "mentor", "--url", url])
    assert out.exit_code == 0, out.output
    assert out.stdout == 'connect localhost\n{"port": 3306}\n'
    as_json = runner.invoke(app, ["exec", "print(1)", "--user", "u1", "--url", url, "--json"])
    data = json.loads(as_json.stdout)
    assert data["success"] and data["output"] == "1\n" and data["memory_key"].startswith("run-")


def test_exec_reruns_a_remembered_command(url: str) -> None:
    require_isolation()
    out = runner.invoke(app, ["exec", "[memory:cmd-001]", "--command", "--user", "u1", "--url", url])
    assert out.exit_code == 0, out.output
    assert out.stdout.startswith("hello ") and out.stdout.count("\n") == 1  # the output, not the exit code


@pytest.mark.parametrize(
    ("args", "cause"),
    [
        (["print([memory:nope])"], "no memory ['nope']"),
        (["print([memory:bad key])"], "malformed memory placeholder"),
        (["1/0"], "ZeroDivisionError: division by zero"),
        (["print([memory:health])", "--friend", "mentor"], "sensitive (health)"),
    ],
)
def test_exec_errors_are_one_line(url: str, args: list[str], cause: str) -> None:
    require_isolation()
    out = runner.invoke(app, ["exec", *args, "--user", "u1", "--url", url])
    assert out.exit_code == 2, out.output
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and cause in lines[0], out.stderr


def test_exec_allows_a_sensitive_memory_when_asked(url: str) -> None:
    require_isolation()
    args = ["exec", "print([memory:health])", "--user", "u1", "--friend", "mentor", "--url", url, "--allow-sensitive"]
    out = runner.invoke(app, args)
    assert out.exit_code == 0 and out.stdout == "用户确诊了糖尿病\n", out.output


def test_exec_without_isolation_refuses_and_says_how_to_opt_in(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORY_EXEC_BWRAP", ABSENT)
    out = runner.invoke(app, ["exec", "open('x', 'w')", "--user", "u1", "--url", url])
    assert out.exit_code == 2
    lines = out.stderr.strip().splitlines()
    assert (
        len(lines) == 1 and "cannot isolate code runs" in lines[0] and "MEMORY_EXEC_ALLOW_UNISOLATED=true" in lines[0]
    )
    monkeypatch.setenv("MEMORY_EXEC_ALLOW_UNISOLATED", "true")
    opted = runner.invoke(app, ["exec", "_result = 6 * 7", "--user", "u1", "--url", url])
    assert opted.exit_code == 0 and opted.stdout == "42\n", opted.output


def test_exec_help_shows_the_slot_syntax() -> None:
    """``[memory:KEY]`` is rich markup to --help's renderer: written plainly it vanished from the text."""
    result = runner.invoke(app, ["exec", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    text = " ".join(result.output.split())
    assert "with [memory:KEY] slots filled" in text
    assert "Python code with [memory:KEY] slots (with --command: the [memory:KEY] of a remembered command)" in text
