"""The migrated schema can be distributed by user: every table of a user's rows has ``user_id``, and its
primary key, unique keys, indexes and foreign keys lead with (or carry) it. Read from the database
itself on both backends, so a migration that forgets the rule fails here."""

from __future__ import annotations

import uuid
import warnings
from typing import Any

import pytest
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, inspect
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import create_async_engine

from data_layer import GLOBAL_TABLES, normalize_url
from data_layer._message_search import owner_token
from data_layer._migrate import MIGRATIONS_DIR
from data_layer._tables import (
    MEMORY_FTS_TABLE,
    MEMORY_SESSION_INDEX,
    MEMORY_VECTOR_COLUMNS,
    MEMORY_VECTOR_INDEX,
    MESSAGE_FTS_TABLE,
    MESSAGE_VECTOR_COLUMN,
    MESSAGE_VECTOR_INDEX,
    Base,
    is_engine_object,
)

#: Shared by every user, no ``user_id``: reference tables when distributed (a copy on every node).
REFERENCE_TABLES = {"keyword_synonyms": "the synonym vocabulary is shared by all users"}
#: SQLite numbers rows only in an ``id INTEGER PRIMARY KEY`` column, and a SQLite file is never
#: distributed: there the messages keep that key (PostgreSQL's is ``(user_id, id)``).
SQLITE_ROWID_KEYS = {"chat_messages": ["id"]}


def _schema(conn: Connection) -> dict[str, dict[str, Any]]:
    found = inspect(conn)
    with warnings.catch_warnings():
        # SQLite's reflection skips expression indexes (the memories' session index): checked on its own
        warnings.filterwarnings("ignore", "Skipped unsupported reflection of expression-based index")
        return _reflected(found)


def _reflected(found: Any) -> dict[str, dict[str, Any]]:
    return {
        name: {
            "columns": {c["name"]: c for c in found.get_columns(name)},
            "pk": found.get_pk_constraint(name)["constrained_columns"],
            "unique": [u["column_names"] for u in found.get_unique_constraints(name)],
            "indexes": [(i["name"], i["column_names"]) for i in found.get_indexes(name)],
            "fks": [
                (f["referred_table"], f["constrained_columns"], f["referred_columns"])
                for f in found.get_foreign_keys(name)
            ],
        }
        for name in found.get_table_names()
        if name != "alembic_version" and not is_engine_object(name, "table")
    }


def _engine_tables(conn: Connection) -> list[str]:
    return sorted(name for name in inspect(conn).get_table_names() if is_engine_object(name, "table"))


@pytest.fixture
async def schema(db_url: str) -> dict[str, dict[str, Any]]:
    engine = create_async_engine(normalize_url(db_url))
    try:
        async with engine.connect() as conn:
            return await conn.run_sync(_schema)
    finally:
        await engine.dispose()


def test_the_reference_tables_are_the_global_ones() -> None:
    assert set(REFERENCE_TABLES) == set(GLOBAL_TABLES)


def _check_reached_through_user_id(schema: dict[str, dict[str, Any]], backend: str) -> None:
    assert set(schema) == set(Base.metadata.tables), "the models and the migrated schema hold other tables"
    per_user = sorted(set(schema) - set(REFERENCE_TABLES))
    assert len(per_user) >= 9
    for name in per_user:
        table = schema[name]
        assert "user_id" in table["columns"], f"{name} has no user_id"
        assert not table["columns"]["user_id"]["nullable"], f"{name}.user_id may be NULL"
        if backend == "sqlite" and name in SQLITE_ROWID_KEYS:
            assert table["pk"] == SQLITE_ROWID_KEYS[name]
        else:
            assert table["pk"][:1] == ["user_id"], f"the primary key of {name} is {table['pk']}"
        for columns in table["unique"]:
            assert columns[:1] == ["user_id"], f"a unique key of {name} is {columns}"
        for index, columns in table["indexes"]:
            if (index, columns) in (
                (MESSAGE_VECTOR_INDEX, [MESSAGE_VECTOR_COLUMN]),
                (MEMORY_VECTOR_INDEX, list(MEMORY_VECTOR_COLUMNS)),
            ):
                # without btree_gin (migration 0009): a GIN index cannot hold user_id; a non-unique index
                # of a distributed table need not lead with it (every query of it names the user)
                continue
            assert columns[:1] == ["user_id"], f"index {index} of {name} is on {columns}"
        for referred, columns, targets in table["fks"]:
            assert referred not in REFERENCE_TABLES
            assert ("user_id", "user_id") in zip(columns, targets, strict=True), (
                f"{name}'s foreign key {columns} -> {referred}{targets} does not carry user_id"
            )


async def test_every_table_is_reached_through_user_id(schema: dict[str, dict[str, Any]], backend: str) -> None:
    _check_reached_through_user_id(schema, backend)


async def test_reference_tables_hold_no_user(schema: dict[str, dict[str, Any]]) -> None:
    for name in REFERENCE_TABLES:
        assert "user_id" not in schema[name]["columns"]
    referring = [(name, fk[0]) for name, table in schema.items() for fk in table["fks"] if fk[0] in REFERENCE_TABLES]
    assert referring == []


async def test_the_models_name_the_migrated_primary_keys(schema: dict[str, dict[str, Any]], backend: str) -> None:
    """Alembic's comparison of models and database leaves primary keys out: compared here."""
    for name, table in Base.metadata.tables.items():
        model_pk = [c.name for c in table.primary_key.columns]
        if backend == "sqlite" and name in SQLITE_ROWID_KEYS:
            assert model_pk == ["user_id", *SQLITE_ROWID_KEYS[name]]
            continue
        assert schema[name]["pk"] == model_pk, name


async def test_the_message_engine_is_reached_through_user_id(
    db_url: str, backend: str, schema: dict[str, dict[str, Any]]
) -> None:
    """The message search engine: PostgreSQL's GIN index leads with ``user_id``; SQLite's FTS5 table (a
    SQLite file is never distributed) names each message's user by its ``owner`` token, which every
    query of the engine matches."""
    engine = create_async_engine(normalize_url(db_url))
    try:
        async with engine.connect() as conn:
            extra = await conn.run_sync(_engine_tables)
            if backend == "sqlite":
                columns = (
                    await conn.exec_driver_sql(f"SELECT name FROM pragma_table_info('{MESSAGE_FTS_TABLE}')")
                ).all()
    finally:
        await engine.dispose()
    if backend == "postgresql":
        assert extra == []
        indexes = dict(schema["chat_messages"]["indexes"])
        assert indexes[MESSAGE_VECTOR_INDEX] == ["user_id", MESSAGE_VECTOR_COLUMN]
    else:
        assert MESSAGE_FTS_TABLE in extra
        assert [c[0] for c in columns] == ["owner", "terms"]
        assert owner_token("用户1") == "u" + "用户1".encode().hex()


async def test_the_memory_engine_is_reached_through_user_id(
    db_url: str, backend: str, schema: dict[str, dict[str, Any]]
) -> None:
    """The memory engine: PostgreSQL's GIN index over the three vectors leads with ``user_id``; SQLite's
    FTS5 table names each row's user by its ``owner`` token; the session index leads with ``user_id``."""
    engine = create_async_engine(normalize_url(db_url))
    try:
        async with engine.connect() as conn:
            if backend == "sqlite":
                columns = (
                    await conn.exec_driver_sql(f"SELECT name FROM pragma_table_info('{MEMORY_FTS_TABLE}')")
                ).all()
                session = (
                    await conn.exec_driver_sql(f"SELECT sql FROM sqlite_master WHERE name = '{MEMORY_SESSION_INDEX}'")
                ).scalar_one()
            else:
                session = (
                    await conn.exec_driver_sql(
                        f"SELECT indexdef FROM pg_indexes WHERE indexname = '{MEMORY_SESSION_INDEX}'"
                    )
                ).scalar_one()
    finally:
        await engine.dispose()
    assert "(user_id, " in session
    if backend == "postgresql":
        indexes = dict(schema["agent_memory_search_index"]["indexes"])
        assert indexes[MEMORY_VECTOR_INDEX] == ["user_id", *MEMORY_VECTOR_COLUMNS]
    else:
        assert [c[0] for c in columns] == ["owner", "terms", "keywords", "buckets"]


def _migration_0009() -> Any:
    return ScriptDirectory(str(MIGRATIONS_DIR)).get_revision("0009_message_search_engine").module


@pytest.mark.postgres
async def test_without_btree_gin_the_vector_index_finds_the_same_messages(fresh_pg_url: str) -> None:
    """A server without ``btree_gin`` gets the GIN index on ``search_vector`` alone: the searches find the
    same messages with the same scores, and the schema still passes the distribution checks."""
    from agent_memory.evidence import EvidenceToolbox, MessageIndex
    from data_layer import AgentFusionDataLayer, NewMessage, Scope, upgrade

    migration = _migration_0009()
    await upgrade(fresh_pg_url)
    queries = ['"不吃辣"', "火锅 周末", "hiking", "e-mail 火锅"]
    chat = ["我不吃辣，太辣的菜受不了", "周末想吃火锅 hiking", "Last week I went hiking, e-mail me", "其实最爱麻辣火锅"]

    async def results(layer: AgentFusionDataLayer, index: MessageIndex) -> list[list[tuple[int, float | None]]]:
        found = []
        for q in queries:
            out = await EvidenceToolbox(layer, index, scope=Scope.of("u1", "mentor")).lexical_search(q)
            found.append([(m.message_id, m.score) for m in out.messages])
        return found

    async with AgentFusionDataLayer(fresh_pg_url) as layer:
        index = MessageIndex(layer)
        for user in ("u1", "u2"):
            for friend in ("mentor", "xiaozhu"):
                await layer.messages.append_many(
                    user_id=user, messages=[NewMessage(role="user", content=c, friend_id=friend) for c in chat]
                )
        with_user = await results(layer, index)
        engine = create_async_engine(normalize_url(fresh_pg_url))
        try:
            async with engine.begin() as conn:
                await conn.exec_driver_sql(f"DROP INDEX {MESSAGE_VECTOR_INDEX}")
                await conn.run_sync(lambda c: migration.create_vector_index(c, btree_gin=False))
            async with engine.connect() as conn:
                schema = await conn.run_sync(_schema)
        finally:
            await engine.dispose()
        assert dict(schema["chat_messages"]["indexes"])[MESSAGE_VECTOR_INDEX] == [MESSAGE_VECTOR_COLUMN]
        assert await results(layer, index) == with_user
    assert [len(r) for r in with_user] == [1, 2, 2, 3]  # u1 and mentor only
    _check_reached_through_user_id(schema, "postgresql")


@pytest.mark.postgres
def test_a_refused_btree_gin_leaves_the_migration_going(fresh_pg_url: str) -> None:
    """A role that may not create the extension gets ``False``, and its transaction goes on (the try ran
    in a SAVEPOINT); where the extension is installed the answer is ``True`` without creating it."""
    migration = _migration_0009()
    role = f"afm_test_nogin_{uuid.uuid4().hex[:8]}"
    engine = create_engine(normalize_url(fresh_pg_url))
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql(f"CREATE ROLE {role} NOLOGIN")
            conn.commit()
            try:
                with conn.begin():
                    conn.exec_driver_sql(f"SET LOCAL ROLE {role}")
                    assert migration.btree_gin_ready(conn) is False
                    assert conn.exec_driver_sql("SELECT 1").scalar_one() == 1  # the transaction is not aborted
                    conn.exec_driver_sql("RESET ROLE")
                    installed = conn.exec_driver_sql("SELECT count(*) FROM pg_extension WHERE extname = 'btree_gin'")
                    assert installed.scalar_one() == 0
                    if conn.exec_driver_sql("SELECT 1 FROM pg_available_extensions WHERE name = 'btree_gin'").first():
                        assert migration.btree_gin_ready(conn) is True  # this role may: created now
                        assert migration.btree_gin_ready(conn) is True  # installed
            finally:
                conn.exec_driver_sql(f"DROP ROLE {role}")
                conn.commit()
    finally:
        engine.dispose()
