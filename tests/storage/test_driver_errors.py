"""Driver errors: an unreachable server, a terminated backend, a full disk and a missing schema
reach callers as ``StorageError`` (a reason, a message that says what to do, the driver error as
``__cause__``), never as raw SQLAlchemy exceptions, and a failed write stores nothing."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import psycopg
import pytest
from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError

from agent_memory.cli._errors import explain
from data_layer import AgentFusionDataLayer, NewMemory, StorageError, upgrade


def _closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _check(error: StorageError, reason: str, *words: str) -> None:
    assert error.reason == reason, (error.reason, str(error))
    assert isinstance(error.__cause__, SQLAlchemyError | OSError), repr(error.__cause__)
    assert error.hint and error.hint in str(error)
    for word in words:
        assert word in str(error), str(error)
    assert "password" not in str(error)


@pytest.mark.postgres
async def test_unreachable_postgres_server() -> None:
    url = f"postgresql+psycopg://postgres:secret@127.0.0.1:{_closed_port()}/memory"
    async with AgentFusionDataLayer(url) as layer:
        for call in (
            lambda: layer.memory.add(user_id="u1", memory_key="k", content="c"),
            lambda: layer.memory.count(user_id="u1"),
            lambda: layer.memory.index_state(user_id="u1"),
            lambda: layer.messages.append(user_id="u1", role="user", content="hi"),
        ):
            with pytest.raises(StorageError) as caught:
                await call()
            _check(caught.value, "unreachable", "cannot reach PostgreSQL at 127.0.0.1", "server is running")
            assert "secret" not in str(caught.value)
            assert caught.value.retryable is False
    with pytest.raises(StorageError) as caught:
        await upgrade(url)
    _check(caught.value, "unreachable")
    message, hint = explain(caught.value, url=url)
    assert "cannot reach the PostgreSQL server at 127.0.0.1" in message and hint and "start the server" in hint


async def test_unusable_sqlite_path(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(StorageError) as caught:
        AgentFusionDataLayer(f"sqlite+aiosqlite:///{blocker}/memory.db")
    _check(caught.value, "unreachable", "SQLite file")
    message, hint = explain(caught.value, url=f"sqlite:///{blocker}/memory.db")
    assert "cannot create or open" in message and hint


async def test_missing_schema_says_to_upgrade(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    url = (
        f"sqlite+aiosqlite:///{tmp_path / 'new.db'}" if backend == "sqlite" else request.getfixturevalue("fresh_pg_url")
    )
    async with AgentFusionDataLayer(url) as layer:
        for call in (
            lambda: layer.memory.add(user_id="u1", memory_key="k", content="c"),
            lambda: layer.memory.upsert(user_id="u1", memory_key="k", content="c"),
            lambda: layer.memory.list_memories(user_id="u1"),
            lambda: layer.archive.save(user_id="u1", tool_name="t", result_full="r"),
        ):
            with pytest.raises(StorageError) as caught:
                await call()
            _check(caught.value, "schema", "agent-memory db upgrade")


@pytest.mark.parametrize("backend", [pytest.param("postgresql", marks=pytest.mark.postgres)])
async def test_terminated_backend_fails_the_write_and_stores_nothing(db_url: str, pg_admin_url: str) -> None:
    """pg_terminate_backend from a second connection in the middle of an add's transaction."""
    admin = make_url(pg_admin_url).set(drivername="postgresql").render_as_string(hide_password=False)
    async with AgentFusionDataLayer(db_url) as layer:
        await layer.memory.add(user_id="u1", memory_key="before", content="written before")
        seen: list[str] = []

        def _terminate(conn: Any, cursor: Any, statement: str, *_: Any) -> None:
            seen.append(statement)
            if statement.lstrip().upper().startswith("INSERT INTO AGENT_MEMORIES") and len(seen) < 100:
                pid = conn.connection.driver_connection.info.backend_pid
                with psycopg.connect(admin, autocommit=True) as other:
                    other.execute("SELECT pg_terminate_backend(%s)", (pid,))

        event.listen(layer.db.engine.sync_engine, "before_cursor_execute", _terminate)
        with pytest.raises(StorageError) as caught:
            await layer.memory.add_many(user_id="u1", memories=[NewMemory("k1", "one"), NewMemory("k2", "two")])
        _check(caught.value, "terminated", "connection to PostgreSQL", "repeat the call")
        assert caught.value.retryable
        event.remove(layer.db.engine.sync_engine, "before_cursor_execute", _terminate)
        # the pool recovers: the repeated call succeeds, and nothing of the failed one was stored
        assert await layer.memory.count(user_id="u1") == 1
        await layer.memory.add_many(user_id="u1", memories=[NewMemory("k1", "one"), NewMemory("k2", "two")])
        assert await layer.memory.count(user_id="u1") == 3


@pytest.mark.parametrize("backend", ["sqlite"])
async def test_full_disk_fails_the_write_and_stores_nothing(db_url: str) -> None:
    """A full disk, simulated with SQLite's max_page_count (no root, no tmpfs needed)."""
    url = db_url
    async with AgentFusionDataLayer(url) as layer:

        @event.listens_for(layer.db.engine.sync_engine, "connect")
        def _limit(dbapi_connection: Any, _record: Any) -> None:
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA page_count")
            pages = cursor.fetchone()[0]
            cursor.execute(f"PRAGMA max_page_count={pages + 8}")
            cursor.close()

        await layer.memory.add(user_id="u1", memory_key="small", content="fits")
        with pytest.raises(StorageError) as caught:
            await layer.memory.add(user_id="u1", memory_key="big", content="大" * 30_000)
        _check(caught.value, "full", "is full", "free disk space")
        with pytest.raises(StorageError):
            await layer.messages.append(user_id="u1", role="tool", content="x" * 500_000)
    async with AgentFusionDataLayer(url) as fresh:
        assert await fresh.memory.count(user_id="u1") == 1
        assert await fresh.messages.count(user_id="u1") == 0
        message, hint = explain(caught.value, url=url)
        assert "full" in message and hint and "free disk space" in hint
