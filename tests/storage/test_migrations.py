"""Migrations: upgrade -> downgrade -> upgrade on a blank database of each backend; models agree."""

from __future__ import annotations

import asyncio
import re
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import inspect, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import create_async_engine

from data_layer import (
    FRIEND_OWNED_TYPES,
    AgentFusionDataLayer,
    InvalidInputError,
    MemoryType,
    StorageError,
    current_revision,
    downgrade,
    head_revision,
    normalize_url,
    schema_differences,
    upgrade,
)
from data_layer._tables import is_engine_object

MEMORY_TYPE_NAMES = tuple(t.value for t in MemoryType)


@pytest.fixture
def blank_url(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if backend == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'blank.db'}"
    return str(request.getfixturevalue("fresh_pg_url"))


async def _all_tables(url: str) -> set[str]:
    engine = create_async_engine(normalize_url(url))
    try:
        async with engine.connect() as conn:
            names = await conn.run_sync(lambda c: inspect(c).get_table_names())
    finally:
        await engine.dispose()
    return set(names)


async def _tables(url: str) -> set[str]:
    return {name for name in await _all_tables(url) if not is_engine_object(name, "table")} - {"alembic_version"}


async def _engine_tables(url: str) -> set[str]:
    return {name for name in await _all_tables(url) if is_engine_object(name, "table")}


EXPECTED = {
    "agent_memories",
    "agent_memory_keywords",
    "keyword_synonyms",
    "chat_messages",
    "chat_search_statistics",
    "memory_search_statistics",
    "memory_term_statistics",
    "tool_result_archive",
    "system_settings",
    "memory_index_state",
    "agent_memory_search_index",
    "session_archive_state",
    "ai_friends",
}


async def test_upgrade_downgrade_upgrade_round_trip(blank_url: str) -> None:
    assert await current_revision(blank_url) is None
    assert await upgrade(blank_url) == head_revision()
    assert await _tables(blank_url) == EXPECTED
    assert await schema_differences(blank_url) == []

    assert await downgrade(blank_url, "base") is None
    assert await _tables(blank_url) == set() and await _engine_tables(blank_url) == set()

    assert await upgrade(blank_url) == head_revision()
    assert await _tables(blank_url) == EXPECTED
    assert await schema_differences(blank_url) == []


async def test_keyword_revision_flags_active_memories_and_downgrades(blank_url: str) -> None:
    await upgrade(blank_url, "0001_base_schema")
    assert await _tables(blank_url) == EXPECTED - {
        "agent_memory_keywords",
        "keyword_synonyms",
        "memory_index_state",
        "agent_memory_search_index",
        "session_archive_state",
        "ai_friends",
        "chat_search_statistics",
        "memory_search_statistics",
        "memory_term_statistics",
    }
    engine = create_async_engine(normalize_url(blank_url))
    insert = text(
        "INSERT INTO agent_memories (id, memory_key, user_id, memory_type, summary, content, content_metadata,"
        " created_at, updated_at, access_count, is_active)"
        " VALUES (:id, :key, 'u1', 'general', 's', 'c', '{}', :now, :now, 0, :active)"
    )
    from datetime import UTC, datetime

    now = datetime.now(UTC).replace(tzinfo=None)
    ids = {"active": uuid.uuid4(), "inactive": uuid.uuid4()}

    def _id(value: uuid.UUID) -> object:
        return value.hex if "sqlite" in blank_url else value

    try:
        async with engine.begin() as conn:
            for key, active in (("active", True), ("inactive", False)):
                await conn.execute(insert, {"id": _id(ids[key]), "key": key, "now": now, "active": active})
        await upgrade(blank_url, "0002_memory_keywords")
        async with engine.connect() as conn:
            rows = dict(
                (await conn.execute(text("SELECT memory_key, needs_keyword_extraction FROM agent_memories"))).all()
            )
        assert {k: bool(v) for k, v in rows.items()} == {"active": True, "inactive": False}

        await downgrade(blank_url, "0001_base_schema")
        async with engine.connect() as conn:
            columns = await conn.run_sync(lambda c: {col["name"] for col in inspect(c).get_columns("agent_memories")})
            kept = (await conn.execute(text("SELECT count(*) FROM agent_memories"))).scalar_one()
        assert "needs_keyword_extraction" not in columns
        assert kept == 2, "downgrading the keyword revision must keep the memories"
    finally:
        await engine.dispose()


async def test_archived_mark_revision_marks_what_the_old_progress_covered(blank_url: str) -> None:
    await upgrade(blank_url, "0006_ai_friends")
    engine = create_async_engine(normalize_url(blank_url))
    from datetime import UTC, datetime

    now = datetime(2026, 1, 2, tzinfo=UTC)
    add = text(
        "INSERT INTO chat_messages (id, user_id, friend_id, role, content, created_at)"
        " VALUES (:id, :user, :friend, 'user', 'hi', :now)"
    )
    rows = [(1, "u1", "f1"), (2, "u1", "f1"), (3, "u1", "f1"), (4, "u1", None), (5, "u2", "f1")]
    try:
        async with engine.begin() as conn:
            for mid, user, friend in rows:
                await conn.execute(add, {"id": mid, "user": user, "friend": friend, "now": now})
            await conn.execute(
                text(
                    "INSERT INTO session_archive_state (user_id, friend_key, last_message_id, last_message_at,"
                    " updated_at) VALUES ('u1', 'f1', 2, :now, :now), ('u1', '', 4, :now, :now)"
                ),
                {"now": now},
            )
        await upgrade(blank_url)
        async with engine.connect() as conn:
            marked = dict((await conn.execute(text("SELECT id, archived_at FROM chat_messages"))).all())
        assert {mid for mid, at in marked.items() if at is not None} == {1, 2, 4}
        await downgrade(blank_url, "0006_ai_friends")
        async with engine.connect() as conn:
            columns = await conn.run_sync(lambda c: {col["name"] for col in inspect(c).get_columns("chat_messages")})
            kept = (await conn.execute(text("SELECT count(*) FROM chat_messages"))).scalar_one()
        assert "archived_at" not in columns and kept == 5
    finally:
        await engine.dispose()


INDEX = "agent_memory_search_index"


async def test_user_leading_keys_revision_keeps_the_rows_and_fills_their_users(blank_url: str, backend: str) -> None:
    from datetime import UTC, datetime

    from data_layer import AgentFusionDataLayer

    await upgrade(blank_url, "0007_message_archived_mark")
    now = datetime(2026, 1, 2, tzinfo=UTC)
    memories = {uuid.uuid4(): ("u1", "k1"), uuid.uuid4(): ("u1", "k2"), uuid.uuid4(): ("u2", "k1")}
    keywords = [(mid, word) for mid in memories for word in ("猫", "cat")]
    gone = uuid.uuid4()  # a keyword row whose memory is gone (a SQLite connection without foreign keys)
    engine = create_async_engine(normalize_url(blank_url))
    try:
        async with engine.begin() as conn:
            for mid, (user, key) in memories.items():
                await conn.execute(
                    text(
                        "INSERT INTO agent_memories (id, memory_key, user_id, memory_type, summary, content,"
                        " content_metadata, created_at, updated_at, access_count, is_active)"
                        " VALUES (:id, :key, :user, 'general', 's', 'c', '{}', :now, :now, 0, true)"
                    ),
                    {"id": mid.hex if backend == "sqlite" else mid, "key": key, "user": user, "now": now},
                )
                await conn.execute(
                    text(
                        "INSERT INTO agent_memory_search_index (memory_id, analyzer, tokens, updated_at)"
                        " VALUES (:id, 'a1', :tokens, :now)"
                    ),
                    {"id": mid.hex if backend == "sqlite" else mid, "tokens": f"{user} {key}", "now": now},
                )
            orphans = [(gone, "孤")] if backend == "sqlite" else []
            for mid, word in keywords + orphans:
                await conn.execute(
                    text("INSERT INTO agent_memory_keywords (memory_id, keyword, weight) VALUES (:id, :word, 0.5)"),
                    {"id": mid.hex if backend == "sqlite" else mid, "word": word},
                )
            for mid, user in ((1, "u1"), (2, "u2"), (3, "u1")):
                await conn.execute(
                    text(
                        "INSERT INTO chat_messages (id, user_id, role, content, created_at)"
                        " VALUES (:id, :user, 'user', 'hi', :now)"
                    ),
                    {"id": mid, "user": user, "now": now},
                )
            await conn.execute(
                text(
                    "INSERT INTO tool_result_archive (uuid, user_id, conversation_id, tool_name, query_summary,"
                    " result_summary, result_full, result_length, created_at)"
                    " VALUES ('t-1', 'u2', 'u2/f', 'search', '', '', 'x', 1, :now)"
                ),
                {"now": now},
            )

        assert await upgrade(blank_url) == head_revision()
        async with engine.connect() as conn:
            kw_rows = (await conn.execute(text("SELECT user_id, memory_id, keyword FROM agent_memory_keywords"))).all()
            ix_rows = (await conn.execute(text(f"SELECT user_id, memory_id, tokens FROM {INDEX}"))).all()
            messages = (await conn.execute(text("SELECT user_id, id FROM chat_messages ORDER BY id"))).all()
            results = (await conn.execute(text("SELECT user_id, uuid FROM tool_result_archive"))).all()

        def _id(value: object) -> uuid.UUID:
            return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))

        assert sorted((u, _id(m), w) for u, m, w in kw_rows) == sorted(
            (memories[mid][0], mid, word) for mid, word in keywords
        )
        assert sorted((u, _id(m), t) for u, m, t in ix_rows) == sorted(
            (user, mid, f"{user} {key}") for mid, (user, key) in memories.items()
        )
        assert [tuple(r) for r in messages] == [("u1", 1), ("u2", 2), ("u1", 3)]
        assert [tuple(r) for r in results] == [("u2", "t-1")]
        assert await schema_differences(blank_url) == []

        # the library reads and writes the migrated rows through the new keys
        (u1_k1,) = [mid for mid, owner in memories.items() if owner == ("u1", "k1")]
        async with AgentFusionDataLayer(blank_url) as layer:
            found = await layer.memory.get_keywords(user_id="u1", memory_key="k1")
            assert sorted(k.keyword for k in found) == ["cat", "猫"] and {k.memory_id for k in found} == {u1_k1}
            assert await layer.memory.add_keywords(user_id="u1", memory_key="k1", keywords=["狗"]) == 1
            assert [r.memory_key for r in await layer.memory.get_by_ids(user_id="u2", ids=[u1_k1])] == []

        assert await downgrade(blank_url, "0007_message_archived_mark") == "0007_message_archived_mark"
        async with engine.connect() as conn:
            columns = await conn.run_sync(
                lambda c: {
                    t: {col["name"] for col in inspect(c).get_columns(t)} for t in ("agent_memory_keywords", INDEX)
                }
            )
            ids = (await conn.execute(text("SELECT id, memory_id, keyword FROM agent_memory_keywords"))).all()
            index_count = (await conn.execute(text("SELECT count(*) FROM agent_memory_search_index"))).scalar_one()
        async with engine.begin() as conn:  # 0007's writers leave the id to the database
            await conn.execute(
                text("INSERT INTO agent_memory_keywords (memory_id, keyword) VALUES (:id, '新')"),
                {"id": u1_k1.hex if backend == "sqlite" else u1_k1},
            )
            numbered = (await conn.execute(text("SELECT id FROM agent_memory_keywords WHERE keyword = '新'"))).scalar()
        assert numbered is not None and numbered not in {r[0] for r in ids}
        assert "user_id" not in columns["agent_memory_keywords"] | columns["agent_memory_search_index"]
        numbers = {r[0] for r in ids}
        assert len(ids) == len(keywords) + 1 and len(numbers) == len(ids) and None not in numbers
        assert index_count == len(memories)
        assert await upgrade(blank_url) == head_revision()
    finally:
        await engine.dispose()


_T0 = datetime(2026, 1, 2, tzinfo=UTC)
#: (user, friend, role, content) of messages written at 0008 and at the head.
_CHAT = [
    ("u1", "mentor", "user", "我不吃辣，太辣的菜受不了"),
    ("u1", "mentor", "assistant", "好的，记住了：你不吃辣。"),
    ("u2", "mentor", "user", "我不吃辣，也不吃香菜"),
    ("u1", "xiaozhu", "user", "其实最爱麻辣火锅"),
    ("u1", None, "user", "Last week I went hiking in the Alps, e-mail me"),
    ("u1", "mentor", "user", "周末想吃火锅，但要微辣的 hiking"),
]
_QUERIES = ['"不吃辣"', "火锅 周末", "hiking", '"last week"', "e-mail 火锅"]


async def _search_results(url: str) -> list[list[tuple[int, float | None]]]:
    """u1 with mentor: each query's hits (message id, score)."""
    from agent_memory.evidence import EvidenceToolbox, MessageIndex
    from data_layer import AgentFusionDataLayer, Scope

    async with AgentFusionDataLayer(url) as layer:
        box = EvidenceToolbox(layer, MessageIndex(layer), scope=Scope.of("u1", "mentor"))
        found = []
        for q in _QUERIES:
            out = await box.lexical_search(q)
            assert out.success, out.message
            found.append([(m.message_id, m.score) for m in out.messages])
        return found


async def _write_at_0008(url: str) -> None:
    """The chat as revision 0008 stores it (no search terms)."""
    await upgrade(url, "0008_user_leading_keys")
    engine = create_async_engine(normalize_url(url))
    try:
        async with engine.begin() as conn:
            for i, (user, friend, role, content) in enumerate(_CHAT, start=1):
                await conn.execute(
                    text(
                        "INSERT INTO chat_messages (id, user_id, friend_id, role, content, created_at)"
                        " VALUES (:id, :user, :friend, :role, :content, :at)"
                    ),
                    {
                        "id": i,
                        "user": user,
                        "friend": friend,
                        "role": role,
                        "content": content,
                        "at": _T0 + timedelta(hours=i),
                    },
                )
    finally:
        await engine.dispose()


async def _results_written_at_head(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> list[Any]:
    """:func:`_search_results` of the chat written at the head through the analyzer."""
    from agent_memory.evidence import MessageIndex
    from data_layer import AgentFusionDataLayer

    if backend == "sqlite":
        head_url = f"sqlite+aiosqlite:///{tmp_path / 'head.db'}"
    else:
        from conftest import create_pg_database, drop_pg_database

        head_url = create_pg_database(request.getfixturevalue("pg_admin_url"))
    try:
        await upgrade(head_url)
        async with AgentFusionDataLayer(head_url) as layer:
            MessageIndex(layer)  # its analyzer writes the terms with the messages
            for i, (user, friend, role, content) in enumerate(_CHAT, start=1):
                await layer.messages.append(
                    user_id=user, friend_id=friend, role=role, content=content, created_at=_T0 + timedelta(hours=i)
                )
        return await _search_results(head_url)
    finally:
        if backend != "sqlite":
            drop_pg_database(request.getfixturevalue("pg_admin_url"), head_url)


async def _unanalysed(url: str) -> int:
    engine = create_async_engine(normalize_url(url))
    try:
        async with engine.connect() as conn:
            query = text("SELECT count(*) FROM chat_messages WHERE search_terms IS NULL")
            return int((await conn.execute(query)).scalar_one())
    finally:
        await engine.dispose()


async def test_message_search_engine_revision_finds_the_stored_messages(
    blank_url: str, backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Messages written at 0008 (no terms, no engine) are found after the upgrade exactly as messages
    written at the head through the analyzer (the search analyses them first); the downgrade drops the
    engine and keeps the messages."""
    await _write_at_0008(blank_url)
    assert await upgrade(blank_url) == head_revision()
    assert await schema_differences(blank_url) == []
    assert await _unanalysed(blank_url) == len(_CHAT)
    upgraded = await _search_results(blank_url)
    assert upgraded == await _results_written_at_head(backend, tmp_path, request)
    assert [len(r) for r in upgraded] == [2, 1, 2, 1, 2]  # mentor's and the shared messages, not xiaozhu's

    assert await downgrade(blank_url, "0008_user_leading_keys") == "0008_user_leading_keys"
    assert await _engine_tables(blank_url) == set()
    engine = create_async_engine(normalize_url(blank_url))
    try:
        async with engine.connect() as conn:
            columns = await conn.run_sync(lambda c: {col["name"] for col in inspect(c).get_columns("chat_messages")})
            count = (await conn.execute(text("SELECT count(*) FROM chat_messages"))).scalar_one()
    finally:
        await engine.dispose()
    assert not {"search_terms", "search_length", "search_vector"} & columns and count == len(_CHAT)
    assert await upgrade(blank_url) == head_revision()
    assert await _search_results(blank_url) == upgraded


def test_db_upgrade_analyses_the_stored_messages(
    blank_url: str, backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """``agent-memory db upgrade`` of a database at 0008 with messages leaves none without terms, finds what
    the chat written at the head finds, and a second run has nothing to do."""
    from typer.testing import CliRunner

    from agent_memory.cli import app

    asyncio.run(_write_at_0008(blank_url))
    runner = CliRunner()
    out = runner.invoke(app, ["db", "upgrade", "--url", blank_url], env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    assert f"analysed {len(_CHAT)} chat messages of 2 users" in out.output
    assert asyncio.run(_unanalysed(blank_url)) == 0
    assert asyncio.run(_search_results(blank_url)) == asyncio.run(_results_written_at_head(backend, tmp_path, request))
    again = runner.invoke(app, ["db", "upgrade", "--url", blank_url], env={"COLUMNS": "200"})
    assert again.exit_code == 0 and "every chat message has its search terms" in again.output


# -- the memory types in the schema ------------------------------------------------------------------------


async def _sql(url: str, statement: str, **params: Any) -> Any:
    engine = create_async_engine(normalize_url(url))
    try:
        async with engine.begin() as conn:
            result = await conn.execute(text(statement), params)
            return result.all() if result.returns_rows else None
    finally:
        await engine.dispose()


async def _checked_types(url: str) -> list[str]:
    """The memory types the migrated database's CHECK constraint names, in its order."""
    engine = create_async_engine(normalize_url(url))
    try:
        async with engine.connect() as conn:
            checks = await conn.run_sync(lambda c: inspect(c).get_check_constraints("agent_memories"))
    finally:
        await engine.dispose()
    (check,) = [c for c in checks if c["name"] == "ck_agent_memories_memory_type"]
    return re.findall(r"'([a-z_]+)'", check["sqltext"])


async def test_the_schema_allows_the_memory_types_of_the_table_and_no_other(blank_url: str) -> None:
    """The migrated constraint names exactly the table's types: each is stored, any other is refused
    by the database itself (a write past the library's validation). A new type fails here until a
    revision replaces the constraint."""
    await upgrade(blank_url)
    assert await _checked_types(blank_url) == list(MEMORY_TYPE_NAMES)
    async with AgentFusionDataLayer(blank_url) as layer:
        for kind in MEMORY_TYPE_NAMES:
            owner = "mentor" if kind in FRIEND_OWNED_TYPES else None
            await layer.memory.add(
                user_id="u1", memory_key=f"k-{kind}", content=kind, memory_type=kind, friend_id=owner
            )
        with pytest.raises(InvalidInputError) as refused:  # a caller still gets the one-line message
            await layer.memory.add(user_id="u1", memory_key="k-diary", content="x", memory_type="diary")
    assert str(refused.value) == f"unknown memory_type 'diary'; use one of: {', '.join(MEMORY_TYPE_NAMES)}"
    with pytest.raises(IntegrityError):
        await _sql(blank_url, "UPDATE agent_memories SET memory_type = 'diary' WHERE memory_key = 'k-general'")
    rows = await _sql(blank_url, "SELECT memory_type FROM agent_memories ORDER BY memory_type")
    assert [r[0] for r in rows] == sorted(MEMORY_TYPE_NAMES)


async def test_the_type_check_revision_stops_at_unknown_types_and_names_them(blank_url: str) -> None:
    """Rows of a type the table does not know stop the upgrade with one line naming each type and its
    rows; nothing is changed. Once they are changed, the upgrade runs; the downgrade drops the check."""
    await upgrade(blank_url)
    async with AgentFusionDataLayer(blank_url) as layer:
        for n in range(4):
            await layer.memory.add(user_id="u1", memory_key=f"k{n}", content=f"记忆 {n}")
    assert await downgrade(blank_url, "0009_message_search_engine") == "0009_message_search_engine"
    await _sql(blank_url, "UPDATE agent_memories SET memory_type = 'diary' WHERE memory_key IN ('k0', 'k1')")
    await _sql(blank_url, "UPDATE agent_memories SET memory_type = 'note' WHERE memory_key = 'k2'")
    with pytest.raises(StorageError) as stopped:
        await upgrade(blank_url)
    message = str(stopped.value)
    assert "\n" not in message and stopped.value.reason == "schema"
    assert message.startswith(
        "agent_memories holds memory types this version does not know: 'diary' (2 rows), 'note' (1 row)"
    )
    assert await current_revision(blank_url) == "0009_message_search_engine"
    rows = await _sql(blank_url, "SELECT memory_key, memory_type FROM agent_memories ORDER BY memory_key")
    assert [tuple(r) for r in rows] == [("k0", "diary"), ("k1", "diary"), ("k2", "note"), ("k3", "general")]

    await _sql(blank_url, "UPDATE agent_memories SET memory_type = 'general' WHERE memory_type IN ('diary', 'note')")
    assert await upgrade(blank_url) == head_revision()
    assert await schema_differences(blank_url) == []
    assert await _checked_types(blank_url) == list(MEMORY_TYPE_NAMES)
