"""``ChatLocks``: one holder per chat within a process and, through a shared lock file, across the
processes of a server (real subprocesses holding real record locks); on PostgreSQL, through the
database's advisory locks, across every process on the database (subprocesses with their own
connections, as app servers on other machines have)."""

from __future__ import annotations

import asyncio
import signal
import sys
import textwrap
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from data_layer import ChatLocks

#: A process that holds alice's chat with f-1 until told (a line on stdin) to let go.
HOLDER = textwrap.dedent(
    """
    import asyncio, sys
    from data_layer import ChatLocks

    async def main():
        where = sys.argv[1]
        locks = ChatLocks(database=where) if where.startswith("postgresql") else ChatLocks(where)
        async with locks.hold("turn", "alice", "f-1"):
            print("held", flush=True)
            sys.stdin.readline()
        print("released", flush=True)
        sys.stdin.readline()

    asyncio.run(main())
    """
)


class _Holder:
    """Another process holding alice's chat with f-1, and this process's locks on the same file."""

    def __init__(self, child: asyncio.subprocess.Process, locks: ChatLocks) -> None:
        assert child.stdin is not None and child.stdout is not None
        self.child, self.locks, self._stdin, self._stdout = child, locks, child.stdin, child.stdout

    async def release(self) -> None:
        self._stdin.write(b"\n")
        await self._stdin.drain()
        assert (await asyncio.wait_for(self._stdout.readline(), 10)).strip() == b"released"


@asynccontextmanager
async def _held(path: Path | str) -> AsyncIterator[_Holder]:
    """Start the holder (on a lock file, or a PostgreSQL URL); end it however the test ends (a failed
    assertion must not hang the run)."""
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-c", HOLDER, str(path), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    locks = ChatLocks(database=path) if isinstance(path, str) else ChatLocks(path)
    try:
        assert child.stdout is not None
        assert (await asyncio.wait_for(child.stdout.readline(), 30)).strip() == b"held"
        yield _Holder(child, locks)
    finally:
        if child.returncode is None:
            child.kill()
        await asyncio.wait_for(child.wait(), 30)
        await locks.aclose()


async def _enter(locks: ChatLocks, *key: str) -> None:
    async with locks.hold(*key):
        pass


async def test_turns_of_one_chat_take_turns_within_a_process() -> None:
    locks, order = ChatLocks(), []

    async def turn(name: str, *key: str) -> None:
        async with locks.hold("turn", *key):
            order.append(f"{name}+")
            await asyncio.sleep(0.01)
            order.append(f"{name}-")

    await asyncio.gather(turn("a", "u1", "f-1"), turn("b", "u1", "f-1"), turn("c", "u1", "f-2"))
    assert order.index("a-") < order.index("b+")  # the same chat: one after the other
    assert order.index("c+") < order.index("a-")  # another chat does not wait
    assert not locks.shared


@pytest.fixture(params=["file", pytest.param("postgresql", marks=pytest.mark.postgres)])
def shared(request: pytest.FixtureRequest, tmp_path: Path) -> Path | str:
    """Where processes share their locks: a lock file, or a PostgreSQL database."""
    if request.param == "file":
        return tmp_path / "chats.lock"
    return str(request.getfixturevalue("pg_session_url"))


async def test_another_process_holding_a_chat_makes_this_one_wait(shared: Path | str) -> None:
    async with _held(shared) as holder:
        locks = holder.locks
        assert locks.shared
        assert ChatLocks.slot("turn", "alice", "f-2") != ChatLocks.slot("turn", "alice", "f-1")
        await asyncio.wait_for(_enter(locks, "turn", "alice", "f-2"), 5)  # another chat: at once
        await asyncio.wait_for(_enter(locks, "archive", "alice", "f-1"), 5)  # the chat's archiving lock: its own
        waiting = asyncio.create_task(_enter(locks, "turn", "alice", "f-1"))
        await asyncio.sleep(0.3)
        assert not waiting.done()  # the other process holds it
        await holder.release()
        await asyncio.wait_for(waiting, 5)


async def test_a_killed_holder_leaves_nothing_locked(shared: Path | str) -> None:
    async with _held(shared) as holder:
        holder.child.send_signal(signal.SIGKILL)
        await asyncio.wait_for(holder.child.wait(), 30)
        # the kernel dropped its record lock; PostgreSQL, its session's locks when the connection ended
        await asyncio.wait_for(_enter(holder.locks, "turn", "alice", "f-1"), 30)


async def test_a_cancelled_waiter_does_not_keep_the_lock(shared: Path | str) -> None:
    async with _held(shared) as holder:
        waiting = asyncio.create_task(_enter(holder.locks, "turn", "alice", "f-1"))
        await asyncio.sleep(0.1)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        await holder.release()
        await asyncio.wait_for(_enter(holder.locks, "turn", "alice", "f-1"), 5)


def test_an_unknown_kind_of_lock_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown lock kind 'session': use turn or archive"):
        ChatLocks.slot("session", "alice")
    assert ChatLocks.slot("turn", "alice", None) == ChatLocks.slot("turn", "alice", None)
    assert ChatLocks.slot("archive", "alice", "f-1") >= 1 << 16 > ChatLocks.slot("turn", "alice", "f-1")


async def test_a_system_on_postgresql_orders_chats_across_machines_and_on_sqlite_within_its_process(
    db_url: str, backend: str
) -> None:
    from agent_memory.settings import load_settings
    from agent_memory.system import MemorySystem

    async with MemorySystem.from_settings(load_settings(memory_database_url=db_url)) as system:
        assert system.locks.across_machines is (backend == "postgresql")
        assert system.locks.shared is (backend == "postgresql")
        async with _held(db_url) if backend == "postgresql" else _nothing() as holder:
            if holder is not None:  # another process on the database holds alice's chat with f-1
                waiting = asyncio.create_task(_enter(system.locks, "turn", "alice", "f-1"))
                await asyncio.sleep(0.3)
                assert not waiting.done()
                await holder.release()
                await asyncio.wait_for(waiting, 30)
            await asyncio.wait_for(_enter(system.locks, "turn", "alice", "f-1"), 30)


@asynccontextmanager
async def _nothing() -> AsyncIterator[None]:
    yield None


async def test_an_unreachable_database_says_so_when_a_chat_is_locked() -> None:
    from data_layer import StorageError

    locks = ChatLocks(database="postgresql+psycopg://postgres@127.0.0.1:9/nowhere")  # a closed port
    with pytest.raises(StorageError, match=r"could not lock the chat on PostgreSQL at .*127\.0\.0\.1:9.*retry"):
        await _enter(locks, "turn", "alice", "f-1")
    await locks.aclose()
    # a SQLite URL is a file of one machine: the locks stay this process's
    assert not ChatLocks(database="sqlite+aiosqlite:///memory.db").shared
