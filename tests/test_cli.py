"""The ``agent-memory`` command: db, memory, messages import, demo, bench ingest (SQLite files)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_memory.cli import app

runner = CliRunner()


@pytest.fixture
def url(tmp_path: Path) -> str:
    url = f"sqlite+aiosqlite:///{tmp_path / 'cli.db'}"
    result = runner.invoke(app, ["db", "upgrade", "--url", url])
    assert result.exit_code == 0, result.output
    return url


def test_db_current_and_downgrade(url: str) -> None:
    out = runner.invoke(app, ["db", "current", "--url", url])
    assert out.exit_code == 0 and "up to date" in out.output
    out = runner.invoke(app, ["db", "downgrade", "base", "--url", url, "--yes"])
    assert out.exit_code == 0 and "base" in out.output
    out = runner.invoke(app, ["db", "current", "--url", url])
    assert "current: none" in out.output and "agent-memory db upgrade" in out.output


def test_memory_add_get_list_delete(url: str) -> None:
    add = runner.invoke(
        app,
        [
            "memory",
            "add",
            "db-config-001",
            '{"host": "localhost"}',
            "--user",
            "u1",
            "--summary",
            "MySQL 配置",
            "--type",
            "command_output",
            "--friend",
            "mentor",
            "--tag",
            "mysql",
            "--url",
            url,
        ],
    )
    assert add.exit_code == 0, add.output
    got = runner.invoke(app, ["memory", "get", "db-config-001", "--user", "u1", "--json", "--url", url])
    assert got.exit_code == 0, got.output
    data = json.loads(got.output)
    assert data["summary"] == "MySQL 配置" and data["friend_id"] == "mentor" and data["keywords"] == ["mysql"]
    other = runner.invoke(app, ["memory", "get", "db-config-001", "--user", "u2", "--url", url])
    assert other.exit_code == 1 and "has no memory" in other.output
    listed = runner.invoke(app, ["memory", "list", "--user", "u1", "--url", url])
    assert "db-config-001" in listed.output
    dup = runner.invoke(app, ["memory", "add", "db-config-001", "x", "--user", "u1", "--url", url])
    assert dup.exit_code == 2 and "use upsert" in dup.output
    rep = runner.invoke(app, ["memory", "add", "db-config-001", "new", "--user", "u1", "--replace", "--url", url])
    assert rep.exit_code == 0 and "replaced" in rep.output
    gone = runner.invoke(app, ["memory", "delete", "db-config-001", "--user", "u1", "--url", url])
    assert gone.exit_code == 0
    assert runner.invoke(app, ["memory", "get", "db-config-001", "--user", "u1", "--url", url]).exit_code == 1


def test_memory_add_bad_type_is_a_clear_error(url: str) -> None:
    out = runner.invoke(app, ["memory", "add", "k", "x", "--user", "u1", "--type", "nonsense", "--url", url])
    assert out.exit_code == 2
    assert "unknown memory_type 'nonsense'" in out.output
    assert "Traceback" not in out.output


def test_messages_import(url: str, tmp_path: Path) -> None:
    good = tmp_path / "good.jsonl"
    lines = [
        {
            "user_id": "u1",
            "role": "user",
            "content": f"消息 {i}",
            "friend_id": "A",
            "created_at": f"2025-01-01T10:{i:02d}:00+00:00",
        }
        for i in range(30)
    ]
    good.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in lines) + "\n", encoding="utf-8")
    out = runner.invoke(app, ["messages", "import", str(good), "--url", url])
    assert out.exit_code == 0, out.output
    assert "imported 30 messages for 1 user(s)" in out.output


def test_messages_import_bad_line_imports_nothing(url: str, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"user_id": "u1", "role": "user", "content": "ok"}\n{"user_id": "u1", "role": "robot", "content": "x"}\n',
        encoding="utf-8",
    )
    out = runner.invoke(app, ["messages", "import", str(bad), "--url", url])
    assert out.exit_code == 2
    assert "line 2" in out.output and "robot" in out.output
    ok = tmp_path / "ok.jsonl"
    ok.write_text('{"user_id": "u1", "role": "user", "content": "only"}\n', encoding="utf-8")
    assert runner.invoke(app, ["messages", "import", str(ok), "--url", url]).exit_code == 0
    # Had the first good line of bad.jsonl been imported, u1 would have 2 messages now.
    import asyncio

    from data_layer import AgentFusionDataLayer

    async def count() -> int:
        async with AgentFusionDataLayer(url) as layer:
            return await layer.messages.count(user_id="u1")

    assert asyncio.run(count()) == 1


def test_demo_runs_offline_and_shows_isolation(tmp_path: Path) -> None:
    out = runner.invoke(app, ["demo", "--db", str(tmp_path / "demo.db")])
    assert out.exit_code == 0, out.output
    assert "loaded 10 memories and 8 messages" in out.output
    assert "another user sees 0 of these memories" in out.output
    # The mentor's table must not list the companion's private events.
    mentor_part = out.output.split("what mentor")[1].split("latest messages")[0]
    assert "profile-job" in mentor_part and "event-report-pressure" in mentor_part
    assert "event-breakup" not in mentor_part and "分手" not in mentor_part


def test_bench_ingest_prints_one_json_object() -> None:
    out = runner.invoke(app, ["bench", "ingest", "--memories", "300", "--backend", "sqlite"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["results"]["sqlite"]["memories"] == 300
    assert data["results"]["sqlite"]["rows_per_s"] > 0
