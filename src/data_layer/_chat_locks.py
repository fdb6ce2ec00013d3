"""``ChatLocks``: one holder at a time per chat, within a process and across the processes of one server.

>>> locks = ChatLocks()                          # this process only
>>> locks = ChatLocks("/tmp/serve-3f2a.lock")    # every process that opens the same file  # doctest: +SKIP
>>> async with locks.hold("turn", "alice", "f-1"):  # doctest: +SKIP
...     ...  # the only turn of alice's chat with f-1 in any of those processes

A chat's turns must run one at a time, or the stored history interleaves (two user messages, then two
replies, each written without the other); an AI friend must not be deleted while an archiving run is
still writing its memories. One process orders its own coroutines with ``asyncio.Lock``; the worker
processes of one web server also share a lock file and take POSIX record locks (``fcntl.lockf``) on one
byte per chat, so they order each other too (on one machine, as the workers of a server are). The kernel
drops a dead process's record locks, so a killed worker never leaves a chat locked.

A key is hashed (CRC-32, the same in every process) to one of :data:`SLOTS` bytes of its kind's range:
two chats that share a byte only wait for each other, which is rare and harmless. Record locks belong to
the process, not the coroutine, so within a process each byte has one ``asyncio.Lock`` and only its
holder takes or drops the record lock. A lock that another process holds is polled (2 ms doubling to
50 ms), which a cancelled waiter simply stops doing: it never ends up holding a lock it gave up on.
"""

from __future__ import annotations

import asyncio
import errno
import os
import zlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

#: Bytes per kind of lock; each kind has its own range, so holding one kind never blocks taking another.
SLOTS = 1 << 16
#: The kinds of lock, in the order of their byte ranges.
KINDS = ("turn", "archive")


class ChatLocks:
    """Per-chat locks (see the module docs). ``path``: a lock file shared by the processes of one server
    (created when missing); without it the locks hold within this process only.

    Keep one instance per process for the file: closing any descriptor of a file drops every record
    lock the process holds on it, so the file is opened once and kept open until :meth:`close`.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = os.fspath(path) if path is not None else None
        self._fd: int | None = None
        if self.path is not None:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        self._local: dict[int, asyncio.Lock] = {}

    @property
    def shared(self) -> bool:
        """Whether the locks also hold across processes."""
        return self._fd is not None

    @staticmethod
    def slot(kind: str, *key: str | None) -> int:
        """The byte a key locks: its kind's range, then the key's CRC-32 within it."""
        if kind not in KINDS:
            raise ValueError(f"unknown lock kind {kind!r}: use {' or '.join(KINDS)}")
        text = "\x1f".join("\x00" if part is None else str(part) for part in key)
        return KINDS.index(kind) * SLOTS + zlib.crc32(text.encode("utf-8", "surrogatepass")) % SLOTS

    @asynccontextmanager
    async def hold(self, kind: str, *key: str | None) -> AsyncIterator[None]:
        """Hold the lock of ``key`` (e.g. ``"turn", user_id, friend_id``) while the block runs."""
        slot = self.slot(kind, *key)
        local = self._local.setdefault(slot, asyncio.Lock())
        async with local:
            if self._fd is None:
                yield
                return
            await self._acquire(self._fd, slot)
            try:
                yield
            finally:
                import fcntl

                fcntl.lockf(self._fd, fcntl.LOCK_UN, 1, slot)

    @staticmethod
    async def _acquire(fd: int, slot: int) -> None:
        import fcntl

        delay = 0.002
        while True:
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, slot)
                return
            except OSError as exc:
                if exc.errno not in (errno.EACCES, errno.EAGAIN):
                    raise
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.05)

    def close(self) -> None:
        """Close the lock file (dropping every record lock of this process on it)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
