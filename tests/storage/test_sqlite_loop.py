"""Which thread runs a SQLite statement: short reads on the event loop's, whatever may wait on the worker's.

A statement's thread is read from SQLite itself (a trace callback runs in the thread that executes the
statement). The rule that matters to a server is the second test: a write that waits for another
process's lock must not stop the event loop, and a read must not wait for it at all.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Connection

from data_layer import upgrade
from data_layer._engine import Database
from data_layer._sqlite_loop import LoopConnection, mark_wal, set_on_loop, sqlite_creator


async def _traced(db: Database) -> list[tuple[str, bool]]:
    """``(statement, ran on this thread)`` of every statement of the pool's one connection from now on."""
    seen: list[tuple[str, bool]] = []
    here = threading.get_ident()
    async with db.engine.connect() as conn:
        driver = (await conn.get_raw_connection()).driver_connection
        assert isinstance(driver, LoopConnection)
        await driver.set_trace_callback(
            lambda sql: seen.append((sql.split()[0].upper(), threading.get_ident() == here))
        )
    assert db.engine.pool.checkedin() == 1  # used one at a time, every session below gets this connection
    return seen


async def test_reads_run_on_the_loop_and_waits_on_the_worker(tmp_path: Path) -> None:
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'loop.db'}")
    try:
        async with db.connection() as conn:
            await conn.execute(text("CREATE TABLE t (x INTEGER)"))
        seen = await _traced(db)

        async with db.read() as session:
            assert await session.scalar(text("SELECT count(*) FROM t")) == 0
        assert ("SELECT", True) in seen and ("BEGIN", True) in seen, seen
        assert all(on_loop for _, on_loop in seen), seen

        seen.clear()
        async with db.write(short=True) as session:
            await session.execute(text("INSERT INTO t VALUES (1)"))
        ran = dict(seen)
        # the write lock is free (this writer holds the file's writer gate): a short write's BEGIN
        # IMMEDIATE and statements run on the loop; COMMIT may checkpoint (an fsync): the worker thread
        assert ran["BEGIN"] is True and ran["COMMIT"] is False and ran["INSERT"] is True, seen

        seen.clear()
        async with db.write() as session:  # any other write may run long (a deletion, an import)
            await session.execute(text("INSERT INTO t VALUES (2)"))
        assert ("INSERT", False) in seen and ("INSERT", True) not in seen, seen

        seen.clear()
        async with db.read(bulk=True) as session:
            assert await session.scalar(text("SELECT count(*) FROM t")) == 2
        assert ("SELECT", False) in seen and ("SELECT", True) not in seen, seen
    finally:
        await db.dispose()


async def test_a_write_waiting_for_another_writer_leaves_the_loop_running(tmp_path: Path) -> None:
    path = tmp_path / "wait.db"
    url = f"sqlite+aiosqlite:///{path}"
    await upgrade(url)
    db = Database(url)
    other = sqlite3.connect(path, isolation_level=None)  # another process's connection, as far as SQLite knows
    try:
        async with db.connection() as conn:
            await conn.execute(text("CREATE TABLE t (x INTEGER)"))
        other.execute("BEGIN IMMEDIATE")
        other.execute("INSERT INTO t VALUES (7)")

        async def insert() -> None:
            async with db.write(short=True) as session:
                await session.execute(text("INSERT INTO t VALUES (1)"))

        writer = asyncio.create_task(insert())
        started = time.monotonic()
        for _ in range(20):  # the loop keeps turning while the write waits for the lock
            await asyncio.sleep(0.01)
        async with db.read() as session:  # WAL: a reader does not wait for the writer's lock
            assert await session.scalar(text("SELECT count(*) FROM t")) == 0
        assert time.monotonic() - started < 2.0 and not writer.done()  # a stalled loop: 30 s (busy timeout)

        other.execute("COMMIT")
        await asyncio.wait_for(writer, timeout=10)
        async with db.read() as session:
            assert sorted(await session.scalars(text("SELECT x FROM t"))) == [1, 7]
    finally:
        other.close()
        await db.dispose()


async def test_without_wal_every_statement_stays_on_the_worker(tmp_path: Path) -> None:
    connection = await sqlite_creator(str(tmp_path / "plain.db"), {}, timeout_s=1.0)()
    seen: list[bool] = []
    here = threading.get_ident()
    try:
        await connection.set_trace_callback(lambda _sql: seen.append(threading.get_ident() == here))
        mark_wal(connection, "delete")
        assert set_on_loop(connection, on_loop=True) is False
        await connection.execute("SELECT 1")
        mark_wal(connection, "wal")
        assert set_on_loop(connection, on_loop=True) is True
        await connection.execute("SELECT 2")
        assert seen == [False, True]
        assert set_on_loop(object(), on_loop=True) is False  # another driver's connection is left alone
    finally:
        await connection.close()


async def test_the_urls_options_still_reach_sqlite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``file:`` URI with ``uri=true`` opens the file it names (not a file called ``file:...``)."""
    monkeypatch.chdir(tmp_path)
    target = tmp_path / "named.db"
    db = Database(f"sqlite+aiosqlite:///file:{target}?mode=rwc&uri=true")
    try:
        async with db.connection() as conn:
            await conn.execute(text("CREATE TABLE t (x INTEGER)"))
    finally:
        await db.dispose()
    assert target.exists()
    assert [name for name in os.listdir(tmp_path) if name.startswith("file:")] == []


async def test_a_read_on_the_loop_sees_one_snapshot(tmp_path: Path) -> None:
    """A quick read's BEGIN, sent straight to SQLite on the loop's thread, still opens a transaction: a
    row another connection commits between two of the read's statements is not seen until the next read."""
    path = tmp_path / "snapshot.db"
    db = Database(f"sqlite+aiosqlite:///{path}")
    try:
        async with db.connection() as conn:
            await conn.execute(text("CREATE TABLE t (x INTEGER)"))
        seen = await _traced(db)
        other = sqlite3.connect(path)
        try:

            def counts_with_a_commit_between(conn: Connection) -> tuple[int, int]:
                before = conn.scalar(text("SELECT count(*) FROM t"))
                other.execute("INSERT INTO t VALUES (1)")
                other.commit()
                return before, conn.scalar(text("SELECT count(*) FROM t"))  # the read's own snapshot

            assert await db.quick_read(counts_with_a_commit_between) == (0, 0)
            assert await db.quick_read(lambda conn: conn.scalar(text("SELECT count(*) FROM t"))) == 1
        finally:
            other.close()
        assert [s for s, _ in seen].count("BEGIN") == 2 and all(on_loop for _, on_loop in seen), seen
    finally:
        await db.dispose()
