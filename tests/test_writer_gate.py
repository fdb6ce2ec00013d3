"""The writer gate of a SQLite file: writers of several processes take turns through a lock file.

Two :class:`WriterGate` objects on one file hold separate descriptors of its lock file, and ``flock``
locks belong to an open file, so within one process they stand for two processes; one test uses a
real second process. What must hold: a writer waits while another holds the gate (and its event loop
keeps running), gets in as soon as the gate is let go (from any thread, before the holder's turn
ends), a cancelled waiter never leaves the file locked, and without a usable lock file writes still
work (SQLite's own locks).
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
import threading
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

from data_layer._engine import Database, _opened_file
from data_layer._writer_gate import LOCK_SUFFIX, WriterGate, writer_gate


def _gate(path: Path) -> WriterGate:
    """A gate of its own on ``path``: as another process's would be."""
    return WriterGate(str(path), lock_beside=str(path))


async def _entered(gate: WriterGate, inside: asyncio.Event, leave: asyncio.Event) -> None:
    async with gate.turn():
        inside.set()
        await leave.wait()


async def test_a_writer_waits_for_another_and_gets_in_when_it_is_let_go_from_any_thread(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    first, second = _gate(db), _gate(db)
    inside, leave = asyncio.Event(), asyncio.Event()
    async with first.turn() as release:
        waiter = asyncio.create_task(_entered(second, inside, leave))
        for _ in range(20):  # the loop runs on while the second writer waits for the lock file
            await asyncio.sleep(0.005)
        assert not inside.is_set()
        # a connection's thread lets the gate go right after COMMIT, before the first turn ends
        threading.Thread(target=release).start()
        await asyncio.wait_for(inside.wait(), timeout=10)
    assert first.shared and second.shared and (tmp_path / f"m.db{LOCK_SUFFIX}").exists()
    leave.set()
    await waiter


async def test_a_stale_release_does_not_let_a_later_turn_go(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    gate, other = _gate(db), _gate(db)
    async with gate.turn() as old_release:
        pass
    async with gate.turn():
        old_release()  # a connection that kept the hook of an earlier transaction
        inside, leave = asyncio.Event(), asyncio.Event()
        waiter = asyncio.create_task(_entered(other, inside, leave))
        await asyncio.sleep(0.1)
        assert not inside.is_set()
    await asyncio.wait_for(inside.wait(), timeout=10)
    leave.set()
    await waiter


async def test_a_cancelled_waiter_leaves_the_file_unlocked_or_hands_it_on(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    holder, waiting, third = _gate(db), _gate(db), _gate(db)
    inside, leave = asyncio.Event(), asyncio.Event()
    async with holder.turn():
        gave_up = asyncio.create_task(_entered(waiting, inside, leave))
        await asyncio.sleep(0.05)
        gave_up.cancel()
        with pytest.raises(asyncio.CancelledError):
            await gave_up
    # the abandoned wait gets the lock once the holder lets go (its thread was woken first), and nobody
    # takes it over: it is let go
    await asyncio.sleep(0.2)
    inside3, leave3 = asyncio.Event(), asyncio.Event()
    await asyncio.wait_for(_entered_then(third, inside3, leave3), timeout=10)
    assert not inside.is_set()

    # the same gate's next writer takes over a wait its cancelled writer left
    async with holder.turn():
        gave_up = asyncio.create_task(_entered(waiting, inside, leave))
        await asyncio.sleep(0.05)
        gave_up.cancel()
        with pytest.raises(asyncio.CancelledError):
            await gave_up
        next_inside, next_leave = asyncio.Event(), asyncio.Event()
        successor = asyncio.create_task(_entered(waiting, next_inside, next_leave))
        await asyncio.sleep(0.05)
        assert not next_inside.is_set()
    await asyncio.wait_for(next_inside.wait(), timeout=10)
    blocked_inside = asyncio.Event()
    blocked = asyncio.create_task(_entered(third, blocked_inside, asyncio.Event()))
    await asyncio.sleep(0.1)
    assert not blocked_inside.is_set()  # the successor holds the file lock
    next_leave.set()
    await successor
    await asyncio.wait_for(blocked_inside.wait(), timeout=10)
    blocked.cancel()
    with pytest.raises(asyncio.CancelledError):
        await blocked


async def _entered_then(gate: WriterGate, inside: asyncio.Event, leave: asyncio.Event) -> None:
    leave.set()
    await _entered(gate, inside, leave)
    assert inside.is_set()


_HOLDER = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.readline()
"""


async def test_a_write_waits_for_another_process_holding_the_gate(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    db = Database(f"sqlite+aiosqlite:///{path}")
    try:
        async with db.connection() as conn:
            await conn.execute(text("CREATE TABLE t (x INTEGER)"))
        other = await asyncio.create_subprocess_exec(
            sys.executable, "-c", _HOLDER, f"{path}{LOCK_SUFFIX}",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        )  # fmt: skip
        try:
            assert other.stdout is not None and other.stdin is not None
            assert (await asyncio.wait_for(other.stdout.readline(), timeout=30)).strip() == b"held"

            async def insert() -> None:
                async with db.write(short=True) as session:
                    await session.execute(text("INSERT INTO t VALUES (1)"))

            writer = asyncio.create_task(insert())
            for _ in range(20):
                await asyncio.sleep(0.01)  # the loop keeps running while the write waits
            async with db.read() as session:  # and readers do not wait at all
                assert await session.scalar(text("SELECT count(*) FROM t")) == 0
            assert not writer.done()
            other.stdin.write(b"go\n")
            await other.stdin.drain()
            await asyncio.wait_for(writer, timeout=10)
        finally:
            if other.returncode is None:
                other.kill()
            await other.wait()
        async with db.read() as session:
            assert await session.scalar(text("SELECT count(*) FROM t")) == 1
    finally:
        await db.dispose()


async def test_the_gate_is_let_go_at_commit_on_the_connections_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "m.db"
    db = Database(f"sqlite+aiosqlite:///{path}")
    releases: list[tuple[int, bool]] = []
    turn_open = [False]
    original = WriterGate._release

    def recorded(self: WriterGate, token: object) -> None:
        releases.append((threading.get_ident(), turn_open[0] and self._holder is token))
        original(self, token)

    monkeypatch.setattr(WriterGate, "_release", recorded)
    try:
        async with db.connection() as conn:
            await conn.execute(text("CREATE TABLE t (x INTEGER)"))
        for short in (True, False):
            releases.clear()
            async with db.write(short=short) as session:
                turn_open[0] = True
                await session.execute(text("INSERT INTO t VALUES (1)"))
            turn_open[0] = False
            # the first call let the lock go, on another thread than the loop's (the COMMIT's)
            assert releases and releases[0][1] and releases[0][0] != threading.get_ident(), releases
        gate = writer_gate(db.sqlite_path or "", lock_beside=db.sqlite_file)
        assert gate.shared
        mode = stat.S_IMODE(os.stat(f"{path}{LOCK_SUFFIX}").st_mode)
        assert mode == stat.S_IMODE(os.stat(path).st_mode) & 0o666
    finally:
        await db.dispose()


async def test_a_failed_write_lets_the_gate_go(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    db = Database(f"sqlite+aiosqlite:///{path}")
    try:
        async with db.connection() as conn:
            await conn.execute(text("CREATE TABLE t (x INTEGER)"))

        async def failing() -> None:
            async with db.write(short=True) as session:
                await session.execute(text("INSERT INTO t VALUES (1)"))
                raise RuntimeError("the caller fails inside the write")

        with pytest.raises(RuntimeError):
            await failing()
        inside = asyncio.Event()
        leave = asyncio.Event()
        leave.set()
        await asyncio.wait_for(_entered(_gate(path), inside, leave), timeout=5)
        async with db.read() as session:  # rolled back
            assert await session.scalar(text("SELECT count(*) FROM t")) == 0
    finally:
        await db.dispose()


async def test_without_a_usable_lock_file_writes_still_work(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    (tmp_path / f"m.db{LOCK_SUFFIX}").mkdir()  # cannot be opened as a file
    db = Database(f"sqlite+aiosqlite:///{path}")
    try:
        async with db.connection() as conn:
            await conn.execute(text("CREATE TABLE t (x INTEGER)"))

        async def insert(n: int) -> None:
            async with db.write(short=True) as session:
                await session.execute(text("INSERT INTO t VALUES (:n)"), {"n": n})

        await asyncio.gather(*(insert(n) for n in range(20)))
        async with db.read() as session:
            assert await session.scalar(text("SELECT count(*) FROM t")) == 20
        assert not writer_gate(db.sqlite_path or "", lock_beside=db.sqlite_file).shared
    finally:
        await db.dispose()


def test_the_lock_file_lies_beside_the_file_sqlite_opens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert _opened_file(make_url("sqlite+aiosqlite:///file:shared?mode=memory&cache=shared&uri=true")) is None
    assert _opened_file(make_url("sqlite+aiosqlite:///file::memory:?uri=true")) is None
    named = f"sqlite+aiosqlite:///file:{tmp_path / 'n.db'}?mode=rwc&uri=true"
    assert _opened_file(make_url(named)) == os.path.realpath(tmp_path / "n.db")
    assert _opened_file(make_url("sqlite+aiosqlite:///rel.db")) == os.path.realpath(tmp_path / "rel.db")
