"""PostgreSQL advisory locks for :class:`~data_layer.ChatLocks`: one holder per chat in every process on
every machine that shares the database.

A lock file orders the processes of one machine; app servers on several machines share only the
database. Each :class:`AdvisoryLocks` keeps one connection of its own (autocommit, outside the data
layer's pool, so a turn waiting for a chat never holds a connection the turn's queries need) and takes
session-level ``pg_try_advisory_lock(class, key)`` on it: the class names this library and the kind of
lock, the key is the chat's CRC-32. PostgreSQL drops a session's locks when its connection ends, so a
killed process never leaves a chat locked.

A lost connection loses the locks it held: the next lock opens a new connection, and a release that
finds its connection gone says so in the log (the chat may have had two holders meanwhile).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import zlib
from typing import Any

from sqlalchemy.engine import URL

from ._errors import StorageError

logger = logging.getLogger(__name__)

#: The first lock class of this library ("AFM" and a kind's number): other applications' advisory locks
#: on the same database use other classes, so they never wait for a chat.
LOCK_CLASS = 0x41464D00


def advisory_key(kind_index: int, text: str) -> tuple[int, int]:
    """``(class, key)`` of ``pg_try_advisory_lock(int4, int4)`` for a lock kind's number and a chat's key text.

    >>> advisory_key(0, "alice\\x1ff-1")[0] == LOCK_CLASS
    True
    """
    crc = zlib.crc32(text.encode("utf-8", "surrogatepass"))
    return LOCK_CLASS + kind_index, crc - (1 << 32) if crc >= 1 << 31 else crc


class AdvisoryLocks:
    """Session-level advisory locks on one connection to the database at ``url`` (opened when first used,
    and again after it was lost or when used from another event loop)."""

    def __init__(self, url: URL) -> None:
        self.conninfo = url.set(drivername="postgresql").render_as_string(hide_password=False)
        self.where = url.render_as_string(hide_password=True)
        self._connection: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._statement: asyncio.Lock | None = None

    async def try_lock(self, key: tuple[int, int]) -> bool:
        """Take the lock if no session holds it; returns whether this one now does."""
        return bool(await self._run("SELECT pg_try_advisory_lock(%s, %s)", key))

    async def unlock(self, key: tuple[int, int]) -> None:
        """Let go of a lock :meth:`try_lock` took (logged, not raised, when the connection is gone)."""
        try:
            released = await self._run("SELECT pg_advisory_unlock(%s, %s)", key)
        except StorageError:
            logger.warning("the connection holding a chat lock was lost before its release; the lock went with it")
            return
        if not released:
            logger.warning("a chat lock was no longer held at its release (its connection was replaced)")

    async def close(self) -> None:
        """Close the connection (PostgreSQL drops every lock it held)."""
        connection, self._connection = self._connection, None
        if connection is not None and not connection.closed:
            with contextlib.suppress(RuntimeError):  # its event loop has ended: the socket goes with the process
                await connection.close()

    async def _run(self, sql: str, key: tuple[int, int]) -> object:
        import psycopg

        try:
            connection = await self._open()
            assert self._statement is not None
            async with self._statement:  # one statement at a time on the shared connection
                cursor = await connection.execute(sql, key)
                row = await cursor.fetchone()
        except psycopg.Error as exc:
            said = " ".join(str(exc).split())[:200]  # one line
            raise StorageError(
                f"could not lock the chat on PostgreSQL at {self.where} ({type(exc).__name__}: {said})",
                reason="unreachable",
                hint="check that the database is up and reachable, then retry",
                retryable=True,
            ) from exc
        return row[0] if row is not None else None

    async def _open(self) -> Any:
        import psycopg

        loop = asyncio.get_running_loop()
        if self._connection is None or self._connection.closed or self._loop is not loop:
            if self._loop is not loop:
                self._connection = None  # a connection of an ended loop cannot be used from this one
            self._connection = await psycopg.AsyncConnection.connect(self.conninfo, autocommit=True)
            self._loop, self._statement = loop, asyncio.Lock()
        return self._connection
