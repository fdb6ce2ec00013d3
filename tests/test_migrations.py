"""Migrations: upgrade -> downgrade -> upgrade on a blank database of each backend; models agree."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from sqlalchemy import inspect, text
from sqlalchemy.ext.asyncio import create_async_engine

from data_layer import current_revision, downgrade, head_revision, normalize_url, schema_differences, upgrade


@pytest.fixture
def blank_url(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if backend == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'blank.db'}"
    return str(request.getfixturevalue("fresh_pg_url"))


async def _tables(url: str) -> set[str]:
    engine = create_async_engine(normalize_url(url))
    try:
        async with engine.connect() as conn:
            names = await conn.run_sync(lambda c: inspect(c).get_table_names())
    finally:
        await engine.dispose()
    return set(names) - {"alembic_version"}


EXPECTED = {
    "agent_memories",
    "agent_memory_keywords",
    "keyword_synonyms",
    "chat_messages",
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
    assert await _tables(blank_url) == set()

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
