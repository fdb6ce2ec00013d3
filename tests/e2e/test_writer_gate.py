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
import fcntl
import gc
import os
import signal
import stat
import subprocess
import sys
import threading
import time
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


async def _cancelled_while_waiting(gate: WriterGate, inside: asyncio.Event, leave: asyncio.Event) -> None:
    """A writer of ``gate`` that waits for the file lock (another gate holds it) and is cancelled."""
    gave_up = asyncio.create_task(_entered(gate, inside, leave))
    await asyncio.sleep(0.05)
    gave_up.cancel()
    with pytest.raises(asyncio.CancelledError):
        await gave_up


async def test_a_cancelled_waiter_leaves_the_file_unlocked_or_hands_it_on(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    holder, waiting, third = _gate(db), _gate(db), _gate(db)
    inside, leave = asyncio.Event(), asyncio.Event()
    async with holder.turn():
        await _cancelled_while_waiting(waiting, inside, leave)
    # the abandoned wait gets the lock once the holder lets go (its thread was woken first), and nobody
    # takes it over: it is let go
    await asyncio.sleep(0.2)
    inside3, leave3 = asyncio.Event(), asyncio.Event()
    await asyncio.wait_for(_entered_then(third, inside3, leave3), timeout=10)
    assert not inside.is_set()

    # the same gate's next writer takes over a wait its cancelled writer left
    async with holder.turn():
        await _cancelled_while_waiting(waiting, inside, leave)
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
            sys.executable,
            "-c",
            _HOLDER,
            f"{path}{LOCK_SUFFIX}",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
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
    on = f"sqlite+aiosqlite:///file:{tmp_path / 'y.db'}?uri=yes"  # SQLAlchemy's words for true count too
    assert _opened_file(make_url(on)) == os.path.realpath(tmp_path / "y.db")


# -- what an adversarial review found (each test failed on the first version of the gate) ----------


def _make_table(url: str) -> None:
    async def setup() -> None:
        db = Database(url)
        async with db.connection() as conn:
            await conn.execute(text("CREATE TABLE IF NOT EXISTS t (x INT)"))
        await db.dispose()

    asyncio.run(setup())


def _lock_file_free(path: str) -> bool:
    fd = os.open(path + LOCK_SUFFIX, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


def _hold_in_subprocess(lock_path: str, seconds: float) -> subprocess.Popen[bytes]:
    """Another process that holds the lock file for ``seconds``."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl,os,sys,time; fd=os.open(sys.argv[1], os.O_RDONLY|os.O_CREAT); fcntl.flock(fd, fcntl.LOCK_EX);"
            "print('held', flush=True); time.sleep(float(sys.argv[2]))",
            lock_path,
            str(seconds),
        ],
        stdout=subprocess.PIPE,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == b"held"
    return holder


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_a_wait_pending_when_its_loop_closes_does_not_keep_the_lock_file(tmp_path: Path) -> None:
    path = str(tmp_path / "m.db")
    url = f"sqlite+aiosqlite:///{path}"
    _make_table(url)
    holder = _hold_in_subprocess(path + LOCK_SUFFIX, 0.7)

    async def first() -> None:
        db = Database(url)

        async def insert() -> None:
            async with db.write(short=True) as session:
                await session.execute(text("INSERT INTO t VALUES (1)"))

        waiting = asyncio.ensure_future(insert())  # waits for the other process's gate; the loop ends first
        await asyncio.sleep(0.2)
        assert not waiting.done()

    asyncio.run(first())
    holder.wait()
    time.sleep(0.5)  # the waiting thread gets the lock after the loop closed: it must let it go
    assert _lock_file_free(path)


def test_a_writer_waits_for_another_process_at_most_the_busy_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process holding the gate for long (stopped, stuck) is not waited for longer than SQLite's
    busy timeout: the write goes on without the gate, and SQLite's lock decides."""
    import data_layer._engine as engine_module

    monkeypatch.setattr(engine_module, "SQLITE_BUSY_TIMEOUT_MS", 1000)
    path = str(tmp_path / "m.db")
    url = f"sqlite+aiosqlite:///{path}"
    _make_table(url)
    holder = _hold_in_subprocess(path + LOCK_SUFFIX, 8)
    try:

        async def write() -> float:
            db = Database(url)
            started = time.monotonic()
            try:
                async with db.write(short=True) as session:
                    await session.execute(text("INSERT INTO t VALUES (1)"))
            finally:
                await db.dispose()
            return time.monotonic() - started

        assert 0.9 < asyncio.run(write()) < 4  # the gate's wait, then the write (SQLite's lock is free)
    finally:
        holder.kill()
        holder.wait()


def test_finished_loops_and_disposed_databases_keep_no_descriptor_or_thread(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'm.db'}"
    path = str(tmp_path / "m.db")
    _make_table(url)
    other = os.open(path + LOCK_SUFFIX, os.O_RDONLY)  # another process's gate (an open file of its own)

    async def once(contended: bool) -> None:
        db = Database(url)
        if contended:
            fcntl.flock(other, fcntl.LOCK_EX)
            threading.Timer(0.01, fcntl.flock, (other, fcntl.LOCK_UN)).start()

        async def insert() -> None:
            async with db.write(short=True) as session:
                await session.execute(text("INSERT INTO t VALUES (1)"))

        await asyncio.gather(insert(), insert())  # two writers of this loop at once
        await db.dispose()

    def threads() -> int:
        return sum(t.name == "sqlite-writer-gate" for t in threading.enumerate())

    gc.collect()
    fds, waiting = _fds(), threads()
    for n in range(40):
        asyncio.run(once(contended=n % 2 == 0))

    async def many_files() -> None:
        for i in range(40):
            db = Database(f"sqlite+aiosqlite:///{tmp_path / f'u{i}.db'}")
            async with db.write(short=True) as session:
                await session.execute(text("CREATE TABLE t (x INT)"))
            await db.dispose()

    asyncio.run(many_files())
    gc.collect()
    time.sleep(0.1)
    os.close(other)
    assert _fds() - (fds - 1) < 3 and threads() - waiting < 2, (_fds() - fds, threads() - waiting)


def test_a_failed_commit_keeps_the_gate_until_the_transaction_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from data_layer import StorageError
    from data_layer._sqlite_loop import LoopConnection

    path = str(tmp_path / "m.db")
    seen: list[tuple[bool, bool]] = []
    original = LoopConnection.rollback

    async def rollback(self: LoopConnection) -> None:
        seen.append((_lock_file_free(path), self._conn.in_transaction))
        await original(self)

    monkeypatch.setattr(LoopConnection, "rollback", rollback)

    async def main() -> None:
        db = Database(f"sqlite+aiosqlite:///{path}")
        async with db.connection() as conn:
            await conn.execute(text("CREATE TABLE p (id INT PRIMARY KEY)"))
            await conn.execute(text("CREATE TABLE c (p INT REFERENCES p(id) DEFERRABLE INITIALLY DEFERRED)"))
        seen.clear()

        async def orphan() -> None:
            async with db.write(short=True) as session:
                await session.execute(text("INSERT INTO c VALUES (42)"))  # COMMIT fails: FOREIGN KEY

        with pytest.raises(StorageError):
            await orphan()
        await db.dispose()

    asyncio.run(main())
    open_then = [free for free, in_transaction in seen if in_transaction]
    assert open_then and not any(open_then), seen


_FORKING_HOLDER = r"""
import asyncio, os, sys, time
from sqlalchemy import text
from data_layer._engine import Database
async def main():
    db = Database(sys.argv[1])
    async with db.connection() as conn:
        await conn.execute(text("CREATE TABLE IF NOT EXISTS t (x INT)"))
    async with db.write(short=True) as session:
        await session.execute(text("INSERT INTO t VALUES (99)"))
        if os.fork() == 0:  # a child made while the gate is held (multiprocessing's fork start method)
            time.sleep(8)
            os._exit(0)
        print("inside", flush=True)
        await asyncio.sleep(60)
asyncio.run(main())
"""


def test_a_killed_holder_lets_others_in_although_it_had_forked(tmp_path: Path) -> None:
    path = str(tmp_path / "m.db")
    url = f"sqlite+aiosqlite:///{path}"
    holder = subprocess.Popen([sys.executable, "-c", _FORKING_HOLDER, url], stdout=subprocess.PIPE)
    assert holder.stdout is not None and holder.stdout.readline().strip() == b"inside"
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()

    async def write() -> None:
        db = Database(url)
        try:
            async with asyncio.timeout(3), db.write(short=True) as session:
                await session.execute(text("INSERT INTO t VALUES (1)"))
        finally:
            await db.dispose()

    asyncio.run(write())  # the child's copy of the lock file was closed: the kill let the lock go


def test_the_data_layer_works_without_fcntl(tmp_path: Path) -> None:
    code = (
        "import sys, asyncio; sys.modules['fcntl'] = None\n"
        "from sqlalchemy import text\nfrom data_layer._engine import Database\n"
        "async def main():\n"
        "    db = Database(sys.argv[1])\n"
        "    async with db.write(short=True) as s:\n"
        "        await s.execute(text('CREATE TABLE t (x INT)'))\n"
        "    await db.dispose()\n"
        "asyncio.run(main()); print('ok')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, f"sqlite+aiosqlite:///{tmp_path / 'n.db'}"], capture_output=True, text=True
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]
    assert not (tmp_path / f"n.db{LOCK_SUFFIX}").exists()
