"""Closing a connection without a trip around the event loop, and still to the end when cancelled;
the quick path of the hot reads.

The first tests drive :func:`data_layer._cleanup.finish` with clean-ups written here: one that waits
for nothing, ones that wait for futures, ones that fail, and a caller cancelled half-way. The last
ones show what it is for on both backends: a read gives its connection back before anything else
runs, so many concurrent readers share a few pooled connections instead of making the engine open
new ones, and a cancelled reader still returns its connection.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest
from sqlalchemy import event, text
from sqlalchemy.exc import SQLAlchemyError

from data_layer import InvalidInputError, StorageError
from data_layer._cleanup import finish
from data_layer._engine import Database


def _loop_passed() -> list[int]:
    """A list that gets an item once the event loop has run what was ready before this call."""
    passed: list[int] = []
    asyncio.get_running_loop().call_soon(passed.append, 1)
    return passed


async def test_a_clean_up_that_waits_for_nothing_runs_in_place() -> None:
    steps: list[str] = []

    async def inner() -> str:
        steps.append("inner")
        return "closed"

    async def close() -> str:
        steps.append("start")
        return await inner()

    passed = _loop_passed()
    assert await finish(close()) == "closed"
    assert steps == ["start", "inner"]
    assert passed == []  # nothing else ran meanwhile: no task of its own, no pass of the loop


async def test_a_clean_up_that_waits_gets_each_result_and_ends() -> None:
    loop = asyncio.get_running_loop()
    first: asyncio.Future[int] = loop.create_future()
    second: asyncio.Future[int] = loop.create_future()
    loop.call_later(0.01, first.set_result, 2)
    loop.call_later(0.02, second.set_result, 3)

    async def close() -> int:
        a = await first
        await asyncio.sleep(0)  # a bare pass of the loop, as asyncio.sleep(0) yields None
        b = await second
        return a * 10 + b

    assert await finish(close()) == 23


async def test_a_failing_clean_up_raises_its_error_before_or_after_a_wait() -> None:
    async def fails_at_once() -> None:
        raise ValueError("at once")

    async def fails_later() -> None:
        await asyncio.sleep(0.01)
        raise ValueError("later")

    with pytest.raises(ValueError, match="at once"):
        await finish(fails_at_once())
    with pytest.raises(ValueError, match="later"):
        await finish(fails_later())


async def test_a_future_that_fails_raises_inside_the_clean_up() -> None:
    loop = asyncio.get_running_loop()
    failing: asyncio.Future[int] = loop.create_future()
    loop.call_later(0.01, failing.set_exception, KeyError("gone"))
    handled: list[str] = []

    async def close() -> str:
        try:
            await failing
        except KeyError:
            handled.append("caught")
        return "after"

    assert await finish(close()) == "after"
    assert handled == ["caught"]


async def test_a_cancelled_caller_still_finishes_its_clean_up_first() -> None:
    ended: list[str] = []
    waiting = asyncio.Event()

    async def close() -> None:
        waiting.set()
        await asyncio.sleep(0.05)
        ended.append("closed")

    async def caller() -> None:
        await finish(close())
        ended.append("caller went on")  # never: the cancellation comes out of finish

    task = asyncio.create_task(caller())
    await waiting.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert ended == ["closed"]  # the close ran to its end before the caller saw the cancellation


async def test_a_read_gives_its_sqlite_connection_back_without_a_pass_of_the_loop(tmp_path: Path) -> None:
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'reads.db'}")
    try:
        async with db.read() as session:
            assert await session.scalar(text("SELECT 2")) == 2
            passed = _loop_passed()
        assert passed == []
        assert db.engine.pool.checkedout() == 0
    finally:
        await db.dispose()


async def test_many_concurrent_sqlite_readers_share_few_connections(tmp_path: Path) -> None:
    """Fifty tasks that read and then let the others run, as fifty chat turns do: before, each read held
    its connection until the loop came round again, the pool ran out and the engine kept opening new
    connections (a thread and five PRAGMAs each) and closing them."""
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'many.db'}")
    opened: list[int] = []
    event.listen(db.engine.sync_engine, "connect", lambda *_: opened.append(1))
    try:
        async with db.read() as session:
            await session.execute(text("SELECT 1"))
        opened.clear()

        async def reader(n: int) -> int:
            total = 0
            for _ in range(5):
                async with db.read() as session:
                    total += await session.scalar(text("SELECT :n"), {"n": n}) or 0
                await asyncio.sleep(0)  # the other turns run here
            return total

        totals = await asyncio.gather(*(reader(n) for n in range(50)))
        assert totals == [5 * n for n in range(50)]
        assert len(opened) == 0, f"{len(opened)} connections opened for 250 reads"
    finally:
        await db.dispose()


@pytest.mark.parametrize("bulk", [False, True])
async def test_a_reader_cancelled_while_closing_returns_its_connection(db_url: str, bulk: bool) -> None:
    """On PostgreSQL (and SQLite's worker thread, ``bulk``) the close waits; a cancellation then must not
    leave the connection out of the pool."""
    db = Database(db_url)
    try:
        async with db.read(bulk=bulk) as session:
            await session.execute(text("SELECT 1"))
        baseline = db.engine.pool.checkedout()

        started = asyncio.Event()

        async def reader() -> None:
            async with db.read(bulk=bulk) as session:
                await session.execute(text("SELECT 1"))
                started.set()
            await asyncio.sleep(10)  # only reached when the cancellation came too late

        for _ in range(20):  # the cancellation arrives at the close's first wait
            started.clear()
            task = asyncio.create_task(reader())
            await started.wait()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert db.engine.pool.checkedout() == baseline
        async with db.read() as session:  # the pool still works
            assert await session.scalar(text("SELECT 3")) == 3
    finally:
        await db.dispose()


async def test_a_quick_read_runs_on_the_loop_and_gives_its_connection_back(tmp_path: Path) -> None:
    """The hot reads' path (friend, settings, history, index state, memories): one pass through the
    async bridge, the statement on the loop's thread on SQLite, the connection back in the pool."""
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'quick.db'}")
    here = threading.get_ident()
    ran_here: list[bool] = []
    try:
        async with db.connection() as conn:
            await conn.execute(text("CREATE TABLE t (x INTEGER)"))
            await conn.execute(text("INSERT INTO t VALUES (1), (2)"))
        async with db.engine.connect() as conn:  # the pool's one connection: trace its statements
            driver = (await conn.get_raw_connection()).driver_connection
            await driver.set_trace_callback(
                lambda sql: ran_here.append(sql.startswith("SELECT") and threading.get_ident() == here)
            )
        ran_here.clear()
        passed = _loop_passed()
        rows = await db.quick_read(lambda c: c.execute(text("SELECT x FROM t ORDER BY x")).all())
        assert [r.x for r in rows] == [1, 2]
        assert passed == []  # nothing else ran meanwhile
        assert True in ran_here
        assert db.engine.pool.checkedout() == 0
    finally:
        await db.dispose()


async def test_a_quick_read_raises_the_projects_error_and_returns_its_connection(db_url: str) -> None:
    db = Database(db_url)
    try:
        with pytest.raises(StorageError) as caught:
            await db.quick_read(lambda c: c.execute(text("SELECT * FROM no_such_table")).all())
        assert isinstance(caught.value.__cause__, SQLAlchemyError)
        assert db.engine.pool.checkedout() == 0
        with pytest.raises(KeyError):  # the caller's own error passes unchanged
            await db.quick_read(lambda c: {}["missing"])
        assert db.engine.pool.checkedout() == 0
        assert await db.quick_read(lambda c: c.scalar(text("SELECT 5"))) == 5
        with pytest.raises(InvalidInputError, match="function of a connection"):
            await db.quick_read("SELECT 1")
        assert db.engine.pool.checkedout() == 0
    finally:
        await db.dispose()


@pytest.mark.postgres
async def test_a_quick_read_cut_short_by_a_time_limit_returns_its_connection(pg_session_url: str) -> None:
    """A recall's time budget cancels a read that waits for the server: the caller gets its
    ``TimeoutError`` at once, and the connection is rolled back and back in the pool."""
    db = Database(pg_session_url)
    try:
        for _ in range(3):
            started = asyncio.get_running_loop().time()
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(0.1):
                    await db.quick_read(lambda c: c.execute(text("SELECT pg_sleep(2)")).all())
            assert asyncio.get_running_loop().time() - started < 1.5
            assert db.engine.pool.checkedout() == 0
        assert await db.quick_read(lambda c: c.scalar(text("SELECT 7"))) == 7
    finally:
        await db.dispose()
