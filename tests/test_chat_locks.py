"""``ChatLocks``: one holder per chat within a process and, through a shared lock file, across the
processes of a server (real subprocesses holding real record locks)."""

from __future__ import annotations

import asyncio
import signal
import sys
import textwrap
from pathlib import Path

import pytest

from data_layer import ChatLocks

#: A process that holds alice's chat with f-1 until told (a line on stdin) to let go.
HOLDER = textwrap.dedent(
    """
    import asyncio, sys
    from data_layer import ChatLocks

    async def main():
        locks = ChatLocks(sys.argv[1])
        async with locks.hold("turn", "alice", "f-1"):
            print("held", flush=True)
            sys.stdin.readline()
        print("released", flush=True)
        sys.stdin.readline()

    asyncio.run(main())
    """
)


async def _holder(path: Path) -> asyncio.subprocess.Process:
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-c", HOLDER, str(path), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    assert child.stdout is not None
    assert (await asyncio.wait_for(child.stdout.readline(), 30)).strip() == b"held"
    return child


async def _stop(child: asyncio.subprocess.Process) -> None:
    """End the holder whatever state the test left it in (a failed assertion must not hang the run)."""
    if child.returncode is None:
        child.kill()
    await asyncio.wait_for(child.wait(), 30)


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


async def test_another_process_holding_a_chat_makes_this_one_wait(tmp_path: Path) -> None:
    path = tmp_path / "chats.lock"
    child = await _holder(path)
    assert child.stdin is not None and child.stdout is not None
    locks = ChatLocks(path)
    try:
        assert locks.shared
        assert ChatLocks.slot("turn", "alice", "f-2") != ChatLocks.slot("turn", "alice", "f-1")
        await asyncio.wait_for(_enter(locks, "turn", "alice", "f-2"), 5)  # another chat: at once
        await asyncio.wait_for(_enter(locks, "archive", "alice", "f-1"), 5)  # the chat's archiving lock: its own
        waiting = asyncio.create_task(_enter(locks, "turn", "alice", "f-1"))
        await asyncio.sleep(0.3)
        assert not waiting.done()  # the other process holds it
        child.stdin.write(b"\n")
        await child.stdin.drain()
        assert (await asyncio.wait_for(child.stdout.readline(), 10)).strip() == b"released"
        await asyncio.wait_for(waiting, 5)
    finally:
        await _stop(child)
        locks.close()


async def test_a_killed_holder_leaves_nothing_locked(tmp_path: Path) -> None:
    path = tmp_path / "chats.lock"
    child = await _holder(path)
    locks = ChatLocks(path)
    try:
        child.send_signal(signal.SIGKILL)
        await asyncio.wait_for(child.wait(), 30)
        await asyncio.wait_for(_enter(locks, "turn", "alice", "f-1"), 5)  # the kernel dropped its lock
    finally:
        await _stop(child)
        locks.close()


async def test_a_cancelled_waiter_does_not_keep_the_lock(tmp_path: Path) -> None:
    path = tmp_path / "chats.lock"
    child = await _holder(path)
    assert child.stdin is not None and child.stdout is not None
    locks = ChatLocks(path)
    try:
        waiting = asyncio.create_task(_enter(locks, "turn", "alice", "f-1"))
        await asyncio.sleep(0.1)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        child.stdin.write(b"\n")
        await child.stdin.drain()
        assert (await asyncio.wait_for(child.stdout.readline(), 10)).strip() == b"released"
        await asyncio.wait_for(_enter(locks, "turn", "alice", "f-1"), 5)
    finally:
        await _stop(child)
        locks.close()


def test_an_unknown_kind_of_lock_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown lock kind 'session': use turn or archive"):
        ChatLocks.slot("session", "alice")
    assert ChatLocks.slot("turn", "alice", None) == ChatLocks.slot("turn", "alice", None)
    assert ChatLocks.slot("archive", "alice", "f-1") >= 1 << 16 > ChatLocks.slot("turn", "alice", "f-1")
