"""Erasing a user removes every row of the user in every table, on both backends; other users stay.

The tables are listed from the SQLAlchemy metadata and by reflecting the live (migrated) database: a
table added later with user data must be covered here, or this test fails.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import MetaData, create_engine, func, select, text
from sqlalchemy.engine import make_url

from data_layer import GLOBAL_TABLES, AgentFusionDataLayer, NewMessage
from data_layer._message_search import owner_token
from data_layer._tables import MESSAGE_FTS_TABLE, Base, is_engine_object

#: Tables without a user_id column whose rows belong to a user through a memory id (a foreign key to
#: agent_memories.id): erased with the user's memories.
MEMORY_KEYED = {
    "agent_memory_keywords": "memory_id",  # a memory's keywords
    "agent_memory_search_index": "memory_id",  # a memory's analysed tokens and embedding
}
#: Tables of the live database that hold no user's data.
GLOBAL = {
    "keyword_synonyms",  # the synonym vocabulary, shared by every user
    "alembic_version",  # the schema's migration revision
}


def _sync_url(url: str) -> str:
    parsed = make_url(url)
    driver = "sqlite" if parsed.get_backend_name() == "sqlite" else "postgresql+psycopg"
    return parsed.set(drivername=driver).render_as_string(hide_password=False)


def _live_tables(url: str) -> dict[str, set[str]]:
    engine = create_engine(_sync_url(url))
    try:
        meta = MetaData()
        meta.reflect(engine, only=lambda name, _: not is_engine_object(name, "table"))
        return {name: set(table.c.keys()) for name, table in meta.tables.items()}
    finally:
        engine.dispose()


def _rows_of(url: str, user: str) -> dict[str, int]:
    """Rows of ``user`` per table of the live database (user_id, or the memory id for memory-keyed tables)."""
    engine = create_engine(_sync_url(url))
    counts: dict[str, int] = {}
    try:
        meta = MetaData()
        meta.reflect(engine, only=lambda name, _: not is_engine_object(name, "table"))
        with engine.connect() as conn:
            memories = meta.tables["agent_memories"]
            for name, table in meta.tables.items():
                if "user_id" in table.c:
                    stmt = select(func.count()).select_from(table).where(table.c.user_id == user)
                elif name in MEMORY_KEYED:
                    own = select(memories.c.id).where(memories.c.user_id == user)
                    stmt = select(func.count()).select_from(table).where(table.c[MEMORY_KEYED[name]].in_(own))
                else:
                    continue
                counts[name] = int(conn.execute(stmt).scalar_one())
    finally:
        engine.dispose()
    return counts


def _engine_rows(url: str, user: str) -> int:
    """The user's rows in SQLite's message engine (the FTS5 table, fed by triggers on ``chat_messages``; on
    PostgreSQL the engine is a column of ``chat_messages``, counted with it)."""
    if make_url(url).get_backend_name() != "sqlite":
        return 0
    engine = create_engine(_sync_url(url))
    try:
        with engine.connect() as conn:
            query = text(f"SELECT count(*) FROM {MESSAGE_FTS_TABLE} WHERE {MESSAGE_FTS_TABLE} MATCH :q")
            return int(conn.execute(query, {"q": f'owner : "{owner_token(user)}"'}).scalar_one())
    finally:
        engine.dispose()


def test_every_table_of_the_schema_has_an_erasure_rule(db_url: str) -> None:
    """Metadata and the live database agree, and each table is keyed by user_id, by a memory id or global."""
    live = _live_tables(db_url)
    declared = {t.name: set(t.c.keys()) for t in Base.metadata.sorted_tables}
    assert set(declared) == set(live) - {"alembic_version"}
    for name, columns in live.items():
        covered = "user_id" in columns or name in MEMORY_KEYED or name in GLOBAL
        assert covered, f"table {name} holds no user_id: add it to MEMORY_KEYED or GLOBAL with a comment"
    assert GLOBAL_TABLES <= GLOBAL
    for name, column in MEMORY_KEYED.items():
        assert column in live[name]


async def _fill(layer: AgentFusionDataLayer, user: str) -> None:
    """One row of ``user`` in every table that can hold one."""
    await layer.friends.create(user_id=user, friend_id="mentor", name="导师", system_prompt="你是导师。")
    await layer.memory.add(
        user_id=user, memory_key="p1", content="我住在杭州", memory_type="profile", keywords=["杭州"]
    )
    await layer.memory.add(user_id=user, memory_key="e1", content="周五汇报", memory_type="event", friend_id="mentor")
    messages = await layer.messages.append_many(
        user_id=user,
        messages=[
            NewMessage(role="user", content="你好", friend_id="mentor", external_id="x1"),
            NewMessage(role="assistant", content="你好呀", friend_id="mentor"),
        ],
    )
    await layer.archive_state.mark_archived(user_id=user, friend_id="mentor", message_ids=[messages[0].id])
    await layer.archive.save(
        user_id=user,
        tool_name="search_docs",
        result_full="x" * 100,
        conversation_id=f"{user}/mentor",
        created_at=datetime(2024, 5, 1, tzinfo=UTC),
    )
    await layer.settings.update(user_id=user, patch={"memory": {"rounds": 2}})
    await layer.memory.add_synonyms([("杭州", "临安", 0.7)])


async def test_erase_user_leaves_no_row_of_the_user_and_the_others_untouched(db_url: str, system: Any) -> None:
    layer = system.layer  # with the search analyzer: memories get their search-index rows
    await _fill(layer, "alice")
    await _fill(layer, "bob")
    before_bob = _rows_of(db_url, "bob")
    before_alice = _rows_of(db_url, "alice")
    # every table that can hold user data holds some of alice's: the check below is not vacuous
    assert all(n > 0 for n in before_alice.values()), before_alice
    engine_alice, engine_bob = _engine_rows(db_url, "alice"), _engine_rows(db_url, "bob")
    assert engine_alice == engine_bob == (2 if layer.backend == "sqlite" else 0)
    erased = await layer.erase_user("alice")
    assert erased.total == sum(before_alice.values())
    assert (_engine_rows(db_url, "alice"), _engine_rows(db_url, "bob")) == (0, engine_bob)
    assert _rows_of(db_url, "alice") == dict.fromkeys(before_alice, 0)
    assert _rows_of(db_url, "bob") == before_bob
    assert (await layer.memory.synonyms_for(["杭州"]))["杭州"]  # the shared vocabulary stays
    assert await layer.memory.retrieve_memory(user_id="bob", memory_key="p1") is not None


def test_a_table_without_a_rule_is_refused() -> None:
    """A table added to the schema with neither user_id nor a memory id stops erase_user from running."""
    from sqlalchemy import Column, Integer, Table

    from data_layer._erase import _rule

    table = Table("future_user_things", MetaData(), Column("id", Integer, primary_key=True))
    with pytest.raises(RuntimeError, match="future_user_things"):
        _rule(table)


def test_cli_user_delete_erases_the_user_after_confirmation(tmp_path: Any) -> None:
    from typer.testing import CliRunner

    from agent_memory.cli import app

    runner = CliRunner()
    url = f"sqlite+aiosqlite:///{tmp_path / 'cli.db'}"
    for user in ("alice", "bob"):
        out = runner.invoke(app, ["memory", "add", "k1", "我住在杭州", "--user", user, "--url", url])
        assert out.exit_code == 0, out.output
    refused = runner.invoke(app, ["user", "delete", "alice", "--url", url], input="n\n")
    assert refused.exit_code == 1 and _rows_of(url, "alice")["agent_memories"] == 1
    out = runner.invoke(app, ["user", "delete", "alice", "--url", url, "--yes", "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["rows"]["agent_memories"] == 1
    assert _rows_of(url, "alice") == dict.fromkeys(_rows_of(url, "alice"), 0)
    assert _rows_of(url, "bob")["agent_memories"] == 1
