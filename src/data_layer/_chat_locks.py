"""``ChatLocks``: one holder at a time per chat, within a process and across the processes of one server
or, on PostgreSQL, of every machine.

>>> locks = ChatLocks()                          # this process only
>>> locks = ChatLocks("/tmp/serve-3f2a.lock")    # every process that opens the same file  # doctest: +SKIP
>>> locks = ChatLocks(database=layer.url)         # every process on the same PostgreSQL  # doctest: +SKIP
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

On PostgreSQL (``database=``) the record locks are advisory locks of the database instead
(:mod:`._advisory_locks`): processes on several machines that share the database order each other's
chats, as the workers of one server do with a file. A waiter polls them the same way; a lock that a
cancelled waiter's last try took is let go at once.
"""

from __future__ import annotations

import asyncio
import errno
import os
import zlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from sqlalchemy.engine import URL

from ._advisory_locks import AdvisoryLocks, advisory_key
from ._engine import backend_of, normalize_url

#: Bytes per kind of lock; each kind has its own range, so holding one kind never blocks taking another.
SLOTS = 1 << 16
#: The kinds of lock, in the order of their byte ranges.
KINDS = ("turn", "archive")


class ChatLocks:
    """Per-chat locks (see the module docs). ``path``: a lock file shared by the processes of one server
    (created when missing); ``database``: a PostgreSQL URL whose advisory locks every process using the
    database shares (taken instead of the file's; a SQLite URL adds nothing: its database is a file of
    one machine); with neither the locks hold within this process only.

    Keep one instance per process for the file: closing any descriptor of a file drops every record
    lock the process holds on it, so the file is opened once and kept open until :meth:`close`.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, *, database: str | URL | None = None) -> None:
        url = normalize_url(database) if database is not None else None
        self._advisory = AdvisoryLocks(url) if url is not None and backend_of(url) == "postgresql" else None
        self.path = os.fspath(path) if path is not None and self._advisory is None else None
        self._fd: int | None = None
        if self.path is not None:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        self._local: dict[int, asyncio.Lock] = {}

    @property
    def shared(self) -> bool:
        """Whether the locks also hold across processes."""
        return self._fd is not None or self._advisory is not None

    @property
    def across_machines(self) -> bool:
        """Whether the locks also hold across machines (PostgreSQL's advisory locks)."""
        return self._advisory is not None

    @staticmethod
    def slot(kind: str, *key: str | None) -> int:
        """The byte a key locks: its kind's range, then the key's CRC-32 within it."""
        if kind not in KINDS:
            raise ValueError(f"unknown lock kind {kind!r}: use {' or '.join(KINDS)}")
        return KINDS.index(kind) * SLOTS + zlib.crc32(_text(key).encode("utf-8", "surrogatepass")) % SLOTS

    @asynccontextmanager
    async def hold(self, kind: str, *key: str | None) -> AsyncIterator[None]:
        """Hold the lock of ``key`` (e.g. ``"turn", user_id, friend_id``) while the block runs."""
        slot = self.slot(kind, *key)
        local = self._local.setdefault(slot, asyncio.Lock())
        async with local:
            if self._advisory is not None:
                async with self._held_in_database(advisory_key(KINDS.index(kind), _text(key))):
                    yield
                return
            if self._fd is None:
                yield
                return
            await self._acquire(self._fd, slot)
            try:
                yield
            finally:
                import fcntl

                fcntl.lockf(self._fd, fcntl.LOCK_UN, 1, slot)

    @asynccontextmanager
    async def _held_in_database(self, key: tuple[int, int]) -> AsyncIterator[None]:
        advisory = self._advisory
        assert advisory is not None
        delay = 0.002
        while True:
            trying = asyncio.ensure_future(advisory.try_lock(key))
            try:
                taken = await asyncio.shield(trying)
            except asyncio.CancelledError:  # a try that takes the lock after its waiter gave up lets go
                trying.add_done_callback(lambda done: _let_go(advisory, key, done))
                raise
            if taken:
                break
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.05)
        try:
            yield
        finally:
            await asyncio.shield(advisory.unlock(key))

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

    async def aclose(self) -> None:
        """:meth:`close`, and close the connection of the database's locks (which drops them)."""
        self.close()
        if self._advisory is not None:
            await self._advisory.close()


def _text(key: tuple[str | None, ...]) -> str:
    return "\x1f".join("\x00" if part is None else str(part) for part in key)


#: Releases started by a done-callback, kept until they finish (the loop holds tasks only weakly).
_RELEASES: set[asyncio.Future[None]] = set()


def _let_go(advisory: AdvisoryLocks, key: tuple[int, int], done: asyncio.Future[bool]) -> None:
    if not done.cancelled() and done.exception() is None and done.result():
        release = asyncio.ensure_future(advisory.unlock(key))
        _RELEASES.add(release)
        release.add_done_callback(_RELEASES.discard)
