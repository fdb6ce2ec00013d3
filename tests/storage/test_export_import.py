"""Export a user to JSON lines and import it into the other backend (SQLite -> PostgreSQL -> SQLite):
the same search results, the same messages, message ids remapped in the memories' sources."""

from __future__ import annotations

import io
import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_memory.cli import app
from agent_memory.settings import load_settings
from agent_memory.system import MemorySystem
from agent_memory.transfer import export_user, import_user
from data_layer import DuplicateError, NewMessage, upgrade

pytestmark = pytest.mark.postgres
T0 = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)
QUERIES = ["杭州", "汇报项目", "吃甜的", "猫", "北京"]


def _system(url: str) -> MemorySystem:
    return MemorySystem.from_settings(load_settings(memory_database_url=url))


async def _fill(system: MemorySystem) -> None:
    layer = system.layer
    await layer.friends.create(user_id="alice", friend_id="mentor", name="导师", system_prompt="你是导师。")
    chat = ["我住在杭州，养了一只猫", "下周五要向导师汇报项目", "我不吃辣，喜欢吃甜的"]
    await layer.messages.append_many(
        user_id="alice",
        messages=[
            NewMessage(
                role="user", content=t, friend_id="mentor", created_at=T0 + timedelta(minutes=i), external_id=f"m{i}"
            )
            for i, t in enumerate(chat)
        ],
    )
    await system.session_archiver.run(user_id="alice", all_friends=True, end_open=True)
    await layer.messages.append(
        user_id="alice", role="user", content="今天好累", friend_id="mentor", created_at=T0 + timedelta(days=1)
    )
    await layer.memory.add(
        user_id="alice", memory_key="tagged", content="我的猫叫团子", memory_type="profile", keywords=["宠物"]
    )
    await layer.memory.add(user_id="alice", memory_key="gone", content="我住在北京", memory_type="profile")
    await layer.memory.delete(user_id="alice", memory_key="gone")
    await layer.settings.update(user_id="alice", patch={"memory": {"rounds": 2}})


async def _view(system: MemorySystem, user: str) -> dict[str, Any]:
    rows = await system.layer.user_rows(user)
    by_id = {m["id"]: m["content"] for m in rows["chat_messages"]}
    memories = {
        r["memory_key"]: (
            r["content"],
            r["is_active"],
            r["friend_id"],
            r["memory_type"],
            r["created_at"],
            [by_id[i] for i in r["content_metadata"].get("source_message_ids", [])],
        )
        for r in rows["agent_memories"]
    }
    return {
        "search": {q: [h.memory_key for h in await system.search.search(q, user_id=user)] for q in QUERIES},
        "messages": sorted(
            (m["friend_id"], m["role"], m["content"], m["created_at"], m["external_id"], m["archived_at"] is not None)
            for m in rows["chat_messages"]
        ),
        "memories": memories,
        "friends": [(f["friend_id"], f["name"]) for f in rows["ai_friends"]],
        "settings": [s["settings"] for s in rows["system_settings"]],
    }


async def _export(system: MemorySystem, user: str) -> list[str]:
    buf = io.StringIO()
    await export_user(system.layer, user_id=user, out=buf)
    return buf.getvalue().splitlines(keepends=True)


async def test_sqlite_to_postgresql_and_back(sqlite_template: Path, fresh_pg_url: str, tmp_path: Path) -> None:
    paths = [tmp_path / "a.db", tmp_path / "b.db"]
    for p in paths:
        shutil.copy(sqlite_template, p)
    first, back = (f"sqlite+aiosqlite:///{p}" for p in paths)
    await upgrade(fresh_pg_url)
    async with _system(first) as source:
        await _fill(source)
        expected = await _view(source, "alice")
        lines = await _export(source, "alice")
    assert all(expected["search"][q] for q in QUERIES[:4]), expected["search"]
    assert any(len(m[5]) > 0 for m in expected["memories"].values())  # gists cite their messages
    header = json.loads(lines[0])
    assert header["kind"] == "header" and header["user_id"] == "alice" and header["format"] == 1
    async with _system(fresh_pg_url) as pg:
        await pg.layer.messages.append(user_id="bob", role="user", content="another user's message first")
        await import_user(pg.layer, lines=lines)
        assert await _view(pg, "alice") == expected
        with pytest.raises(DuplicateError, match="on-conflict"):
            await import_user(pg.layer, lines=lines)
        await import_user(pg.layer, lines=lines, on_conflict="skip")  # nothing repeated
        assert await _view(pg, "alice") == expected
        lines = await _export(pg, "alice")
    async with _system(back) as again:
        await import_user(again.layer, lines=lines, user_id="alice2")
        assert await _view(again, "alice2") == expected


def test_cli_export_import_and_a_clear_conflict(tmp_path: Path) -> None:
    runner = CliRunner()
    src, dst = (f"sqlite+aiosqlite:///{tmp_path / n}" for n in ("src.db", "dst.db"))
    file = tmp_path / "alice.jsonl"
    assert runner.invoke(app, ["memory", "add", "k1", "我住在杭州", "--user", "alice", "--url", src]).exit_code == 0
    out = runner.invoke(app, ["export", "--user", "alice", "--out", str(file), "--url", src])
    assert out.exit_code == 0, out.output
    assert [json.loads(line)["kind"] for line in file.read_text().splitlines()] == ["header", "memory"]
    assert runner.invoke(app, ["import", str(file), "--url", dst]).exit_code == 0
    again = runner.invoke(app, ["import", str(file), "--url", dst])
    assert again.exit_code == 2 and "already has memory 'k1'" in again.output and "--on-conflict" in again.output
    got = runner.invoke(app, ["memory", "get", "k1", "--user", "alice", "--url", dst, "--json"])
    assert got.exit_code == 0 and "杭州" in got.output


async def _rows(system: MemorySystem, user: str) -> dict[str, list[str]]:
    """Every exported table's rows of ``user``, as the export writes them: without the columns it leaves
    out, message ids (the database's own) replaced by the message they name; sorted."""
    from agent_memory.transfer._jsonl import _DROP, _KINDS

    rows = await system.layer.user_rows(user)
    said = {m["id"]: (m["content"], m["created_at"].isoformat()) for m in rows["chat_messages"]}
    keys = {m["id"]: m["memory_key"] for m in rows["agent_memories"]}
    out: dict[str, list[str]] = {}
    for table, kind in _KINDS.items():
        if kind is None and table != "agent_memory_keywords":
            continue
        shown = []
        for row in rows[table]:
            line = {k: v for k, v in row.items() if k not in _DROP or k == "memory_id"}
            if table == "agent_memory_keywords":
                line = {
                    "memory": keys[row["memory_id"]],
                    "keyword": row["keyword"],
                    "weight": row["weight"],
                    "source": row["extraction_source"],
                }
            if table == "agent_memories" and "source_message_ids" in row["content_metadata"]:
                line["content_metadata"] = {
                    **row["content_metadata"],
                    "source_message_ids": [said[i] for i in row["content_metadata"]["source_message_ids"]],
                }
            if table == "session_archive_state":
                line["last_message_id"] = said[row["last_message_id"]]
            shown.append(json.dumps(line, default=str, ensure_ascii=False, sort_keys=True))
        out[table] = sorted(shown)
    return out


async def test_a_round_trip_keeps_every_column_the_export_writes(
    sqlite_template: Path, fresh_pg_url: str, tmp_path: Path
) -> None:
    """SQLite -> PostgreSQL -> SQLite: the rows of every exported table are as they were, times and counts
    the repositories stamp on a write included (a memory's updated_at, last use and use count, an AI
    friend's times, when messages were archived, the archiving marks, the settings' time) and the id of
    an archived tool result, which the chat's placeholders name."""
    paths = [tmp_path / "a.db", tmp_path / "b.db"]
    for p in paths:
        shutil.copy(sqlite_template, p)
    first, back = (f"sqlite+aiosqlite:///{p}" for p in paths)
    await upgrade(fresh_pg_url)
    async with _system(first) as source:
        await _fill(source)
        layer = source.layer
        await layer.memory.upsert(
            user_id="alice", memory_key="tagged", content="我的猫叫团子，三岁了", memory_type="profile"
        )
        for _ in range(3):
            await layer.memory.retrieve_memory(user_id="alice", memory_key="tagged")  # used: counted
        await layer.archive.save(
            user_id="alice", tool_name="search", result_full="x" * 20_000, conversation_id="alice/mentor", created_at=T0
        )
        await layer.friends.update(user_id="alice", friend_id="mentor", name="导师", system_prompt="你是严格的导师。")
        expected = await _rows(source, "alice")
        lines = await _export(source, "alice")
    assert any('"access_count": 3' in r for r in expected["agent_memories"])
    assert any('"archived_at": null' not in r for r in expected["chat_messages"])
    assert expected["tool_result_archive"] and expected["session_archive_state"]
    async with _system(fresh_pg_url) as pg:
        await import_user(pg.layer, lines=lines)
        assert await _rows(pg, "alice") == expected
        lines = await _export(pg, "alice")
    async with _system(back) as again:
        await import_user(again.layer, lines=lines)
        assert await _rows(again, "alice") == expected
        await import_user(again.layer, lines=lines, user_id="alice2")  # alice holds the tool result's id here
        (kept,) = (await again.layer.user_rows("alice"))["tool_result_archive"]
        (copy,) = (await again.layer.user_rows("alice2"))["tool_result_archive"]
        # ids are per user: the copy keeps the id its chat's placeholders name, alice's stays hers
        assert copy["uuid"] == kept["uuid"] and copy["result_full"] == "x" * 20_000
        placeholder = await again.layer.archive.get(user_id="alice2", archive_uuid=kept["uuid"])
        assert placeholder is not None and placeholder.user_id == "alice2"


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("access_count", "lots", "access_count must be a whole number"),
        ("access_count", 10**30, "access_count must be a whole number"),
        ("access_count", -5, "access_count must be a whole number"),
        ("access_count", True, "access_count must be a whole number"),
        ("updated_at", 12345, "updated_at must be an ISO-8601 time as text"),
        ("updated_at", "not a date", "updated_at is no ISO-8601 time"),
        ("updated_at", None, "updated_at must be an ISO-8601 time"),
        ("last_accessed_at", ["x"], "last_accessed_at must be an ISO-8601 time as text"),
    ],
)
async def test_a_hostile_file_is_refused_with_its_line_and_nothing_is_imported(
    system: MemorySystem, field: str, value: Any, said: str
) -> None:
    layer = system.layer
    await layer.friends.create(user_id="alice", friend_id="mentor", name="导师", system_prompt="你是导师。")
    await layer.messages.append(user_id="alice", role="user", content="你好", friend_id="mentor")
    await layer.memory.add(user_id="alice", memory_key="k1", content="我住在杭州", memory_type="profile")
    lines = []
    for line in await _export(system, "alice"):
        data = json.loads(line)
        if data["kind"] == "memory":
            data[field] = value
        lines.append(json.dumps(data) + "\n")
    with pytest.raises(ValueError, match=said) as caught:
        await import_user(layer, lines=lines, user_id="bob")
    assert str(caught.value).startswith("line ") and "\n" not in str(caught.value)
    assert not any((await layer.user_rows("bob")).values())  # no friend, message or memory of the file


async def test_a_time_without_a_zone_in_the_file_is_utc(system: MemorySystem) -> None:
    await system.layer.memory.add(user_id="alice", memory_key="k1", content="我住在杭州", memory_type="profile")
    lines = []
    for line in await _export(system, "alice"):
        data = json.loads(line)
        if data["kind"] == "memory":
            data["updated_at"] = "2024-05-01T09:00:00"
        lines.append(json.dumps(data) + "\n")
    await import_user(system.layer, lines=lines, user_id="bob")
    [row] = (await system.layer.user_rows("bob"))["agent_memories"]
    assert row["updated_at"] == datetime(2024, 5, 1, 9, 0, tzinfo=UTC)
