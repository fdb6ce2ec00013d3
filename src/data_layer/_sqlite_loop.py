"""SQLite connections whose short statements run on the event loop's own thread.

aiosqlite runs every statement on a worker thread of its connection: each call is a queue put, a
thread wake-up, a hand-over of the GIL and a call back into the loop through its self-pipe. A chat
turn reads a handful of rows in a few statements (settings, friend, recent messages, the memories a
search found); for those the hop costs more than the statement, and a chat turn of the web chat
(``ChatService.turn``) spends less CPU with its reads on the loop's thread.

What moves is what cannot wait, and only in WAL mode, where a reader waits for no lock: reads, and
the statements of a short write once its ``BEGIN IMMEDIATE`` holds the write lock. ``BEGIN IMMEDIATE``
may wait for another process's writer (SQLite's busy timeout) and ``COMMIT`` may checkpoint the WAL
(an ``fsync``), so they keep the worker thread; so do large scans (a search index built from 100,000
rows: :meth:`Database.read` with ``bulk=True``) and writes not marked short (an import, a friend's
deletion), whose statements can run for long. A connection's first use after a crash (WAL recovery)
can make readers wait; that is once, at start-up.

>>> creator = sqlite_creator("/path/memory.db", {}, timeout_s=30)  # doctest: +SKIP
>>> engine = create_async_engine(url, async_creator=creator)  # doctest: +SKIP
>>> set_on_loop(driver_connection, on_loop=True)  # doctest: +SKIP
"""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from threading import Thread
from typing import Any

import aiosqlite


class LoopConnection(aiosqlite.Connection):
    """An aiosqlite connection that runs its statements on the calling thread while ``on_loop`` is set.

    ``wal`` records whether the database answered ``journal_mode=WAL`` (set when the engine
    configures a new connection); without it, statements always take the worker thread.
    """

    def __init__(self, connector: Callable[[], sqlite3.Connection], iter_chunk_size: int) -> None:
        super().__init__(connector, iter_chunk_size)
        self.on_loop = False
        self.wal = False
        #: Called once, on the thread that ran it, right after the current transaction's ``COMMIT`` or
        #: ``ROLLBACK``: a writer gate lets the next writer in then, not when the loop next resumes
        #: the writer (a busy loop's cycle is milliseconds).
        self.on_end: Callable[[], None] | None = None

    async def _execute(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if self.on_loop and self._running and self._connection is not None:
            return fn(*args, **kwargs)
        return await super()._execute(fn, *args, **kwargs)

    @property
    def raw(self) -> sqlite3.Connection:
        """The ``sqlite3`` connection (open: see :func:`_running`)."""
        assert self._connection is not None
        return self._connection

    async def commit(self) -> None:
        await self._execute(self._end, self._conn.commit)

    async def rollback(self) -> None:
        await self._execute(self._end, self._conn.rollback)

    def _end(self, end: Callable[[], None]) -> None:
        try:
            end()
        finally:
            raw = self._connection
            if raw is None or not raw.in_transaction:  # a COMMIT that failed leaves it open: its ROLLBACK ends it
                hook, self.on_end = self.on_end, None
                if hook is not None:
                    hook()


def begin_on_loop(driver_connection: object, mode: str) -> bool:
    """Send ``BEGIN {mode}`` straight to SQLite when ``driver_connection`` runs its statements on the
    loop's thread and the mode takes no lock (``DEFERRED``: a read's snapshot starts at its first
    statement). Returns whether it did; otherwise the caller sends it the usual way.

    A read's ``BEGIN`` through SQLAlchemy's statement path costs more than the read's own ``SELECT``
    on a chat turn's small queries; straight to the driver it costs microseconds.
    """
    conn = _running(driver_connection)
    if mode != "DEFERRED" or conn is None or not conn.on_loop:
        return False
    try:
        conn.raw.execute("BEGIN DEFERRED")
    except sqlite3.Error:  # the usual way raises it as SQLAlchemy's error, which callers translate
        return False
    return True


def sqlite_creator(
    database: str, options: Mapping[str, Any], *, timeout_s: float
) -> Callable[[], Awaitable[LoopConnection]]:
    """The ``async_creator`` of an engine on SQLite ``database`` (a :class:`LoopConnection` each).

    ``database`` and ``options`` are what SQLAlchemy's dialect makes of the URL
    (``create_connect_args``: the absolute path, or ``uri=True`` for a ``file:`` URI); the URL's own
    ``timeout`` wins over ``timeout_s``.
    """
    kwargs = {"timeout": timeout_s, **options, "check_same_thread": False}

    async def connect() -> LoopConnection:
        connection = LoopConnection(partial(sqlite3.connect, database, **kwargs), 64)
        # the worker thread must not keep the interpreter alive at exit (aiosqlite < 0.22 is the thread)
        worker = connection if isinstance(connection, Thread) else connection._thread
        worker.daemon = True
        await connection  # starts the worker thread and opens the database on it
        return connection

    return connect


def begin_immediate_on_loop(driver_connection: object, *, busy_timeout_ms: int) -> bool:
    """Send ``BEGIN IMMEDIATE`` straight to SQLite on the loop's thread if the write lock is free now
    (a busy timeout of zero for this statement). Returns whether it did; otherwise the caller sends it
    the usual way, on the worker thread, where it may wait.

    For a writer that holds the file's writer gate (:mod:`~data_layer._writer_gate`) the lock is free
    unless a program outside the gate writes. Sent from the loop, the writer's statements follow at
    once: through the worker thread they waited for the loop to resume the writer, holding the lock.
    """
    conn = _running(driver_connection)
    if conn is None or not conn.wal:
        return False
    raw = conn.raw
    try:
        raw.execute("PRAGMA busy_timeout=0")
    except sqlite3.Error:
        return False
    try:
        raw.execute("BEGIN IMMEDIATE")
        began = True
    except sqlite3.Error:  # locked by a writer outside the gate, or anything else: the usual way
        began = False
    # the connection's busy timeout is back before anything else runs on it (an error here is the
    # caller's: a transaction begun is rolled back when the connection goes back to the pool)
    raw.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
    return began


def _running(driver_connection: object) -> LoopConnection | None:
    """``driver_connection`` if it is an open :class:`LoopConnection` (``None``: another driver's
    connection, or one not open): its ``sqlite3`` connection may then be used directly."""
    if not isinstance(driver_connection, LoopConnection) or not driver_connection._running:
        return None
    return driver_connection if driver_connection._connection is not None else None


def set_on_end(driver_connection: object, hook: Callable[[], None] | None) -> None:
    """Have ``hook`` called right after the connection's current transaction ends (see
    :attr:`LoopConnection.on_end`); other connections call nothing."""
    if isinstance(driver_connection, LoopConnection):
        driver_connection.on_end = hook


def set_on_loop(driver_connection: object, *, on_loop: bool) -> bool:
    """Let ``driver_connection`` run statements on the loop's thread (when it is a WAL-mode
    :class:`LoopConnection`; anything else is left alone). Returns whether they now run there."""
    if not isinstance(driver_connection, LoopConnection):
        return False
    driver_connection.on_loop = on_loop and driver_connection.wal
    return driver_connection.on_loop


def mark_wal(driver_connection: object, journal_mode: object) -> None:
    """Record the journal mode a new connection reported (see :class:`LoopConnection`)."""
    if isinstance(driver_connection, LoopConnection):
        driver_connection.wal = str(journal_mode).lower() == "wal"


__all__ = [
    "LoopConnection",
    "begin_immediate_on_loop",
    "begin_on_loop",
    "mark_wal",
    "set_on_end",
    "set_on_loop",
    "sqlite_creator",
]
