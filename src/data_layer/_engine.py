"""Async engines for the two supported backends and the sessions the repositories use.

``sqlite+aiosqlite`` is the embedded default (WAL, foreign keys on, writers start with
``BEGIN IMMEDIATE`` so concurrent writers never dead-lock); ``postgresql+psycopg`` is the production
backend.

SQLite lets one writer in at a time. Writers queue at the file's writer gate before they take a
connection (:mod:`~data_layer._writer_gate`: an ``asyncio.Lock`` within the process, a lock file
across processes; SQLite's busy timeout sleeps in growing steps and made the tail latency of 32
in-process writers seconds long), and the gate opens for the next writer as soon as ``COMMIT`` ends.
Reads and short writes run their statements on the event loop's own thread (WAL mode: a reader never
waits; a short write's ``BEGIN IMMEDIATE`` too, when the write lock is free); ``COMMIT``, a ``BEGIN
IMMEDIATE`` that must wait, other writes and large scans run on aiosqlite's worker thread
(:mod:`~data_layer._sqlite_loop`). Every session helper turns driver and
OS errors into the project's errors (:func:`~data_layer._storage_errors.translate`), keeping the
original as ``__cause__``.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager, nullcontext
from pathlib import Path
from typing import Any, Literal, TypeVar
from urllib.parse import unquote, urlsplit

from sqlalchemy import event
from sqlalchemy.dialects.sqlite.aiosqlite import SQLiteDialect_aiosqlite
from sqlalchemy.engine import URL, Connection, make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession, create_async_engine
from sqlalchemy.util import asbool, greenlet_spawn

from ._cleanup import finish
from ._errors import AgentMemoryError, InvalidInputError, UnsupportedDatabaseURLError
from ._sqlite_loop import begin_immediate_on_loop, begin_on_loop, mark_wal, set_on_end, set_on_loop, sqlite_creator
from ._storage_errors import translate
from ._writer_gate import writer_gate

Backend = Literal["sqlite", "postgresql"]
_T = TypeVar("_T")

SUPPORTED = "sqlite+aiosqlite:///PATH (embedded) or postgresql+psycopg://USER@HOST:PORT/DB"
SQLITE_BUSY_TIMEOUT_MS = 30_000
_BEGIN_OPTION = "agent_memory_sqlite_begin"
#: Execution option of a short write: once its ``BEGIN IMMEDIATE`` holds the write lock, its statements
#: run on the loop's thread (nothing waits for a lock then); its ``COMMIT`` goes back to the worker.
_LOOP_WRITES_OPTION = "agent_memory_sqlite_loop_writes"
#: Execution option of a write: the function that opens the writer gate, called when it commits.
_GATE_OPTION = "agent_memory_sqlite_writer_gate"


def normalize_url(url: str | URL) -> URL:
    """Parse a database URL and pick the async driver this library uses.

    ``sqlite:///x.db`` becomes ``sqlite+aiosqlite:///x.db`` and ``postgresql://`` (or
    ``postgres://``) becomes ``postgresql+psycopg://``. Anything else is refused with
    :class:`UnsupportedDatabaseURLError`.

    >>> str(normalize_url("sqlite:///memory.db"))
    'sqlite+aiosqlite:///memory.db'
    """
    if isinstance(url, str):
        if not url.strip():
            raise UnsupportedDatabaseURLError(f"the database URL is empty; use {SUPPORTED}")
        if url.startswith("postgres://"):
            url = "postgresql://" + url.removeprefix("postgres://")
        try:
            parsed = make_url(url)
        except (ArgumentError, ValueError) as exc:
            raise UnsupportedDatabaseURLError(f"malformed database URL ({exc}); use {SUPPORTED}") from None
    elif isinstance(url, URL):
        parsed = url
    else:
        raise UnsupportedDatabaseURLError(f"the database URL must be a str, got {type(url).__name__}")
    backend, _, driver = parsed.drivername.partition("+")
    if backend == "sqlite" and driver in ("", "aiosqlite"):
        if not parsed.database or parsed.database == ":memory:":
            raise UnsupportedDatabaseURLError(
                "in-memory SQLite is not supported (each connection would see its own database); "
                "give a file path: sqlite+aiosqlite:///path/to/memory.db"
            )
        return parsed.set(drivername="sqlite+aiosqlite")
    if backend == "postgresql" and driver in ("", "psycopg"):
        if not parsed.database:
            raise UnsupportedDatabaseURLError(f"the PostgreSQL URL names no database; use {SUPPORTED}")
        return parsed.set(drivername="postgresql+psycopg")
    raise UnsupportedDatabaseURLError(f"unsupported database driver {parsed.drivername!r}; use {SUPPORTED}")


def _opened_file(url: URL) -> str | None:
    """The real path of the file SQLite opens for ``url`` (``None``: an in-memory database).

    >>> _opened_file(make_url("sqlite+aiosqlite:///file:/data/m.db?mode=rwc&uri=true"))
    '/data/m.db'
    """
    database = url.database or ""
    if asbool(url.query.get("uri", False)) and database.startswith("file:"):
        parts = urlsplit(database)
        if parts.path in ("", ":memory:") or url.query.get("mode") == "memory" or "mode=memory" in parts.query:
            return None
        return os.path.realpath(unquote(parts.path))
    return os.path.realpath(Path(database).expanduser()) if database and database != ":memory:" else None


def describe(url: URL) -> str:
    """Where a URL points, for messages: ``SQLite file PATH`` or ``PostgreSQL at HOST:PORT/DB`` (no password)."""
    if url.drivername.startswith("sqlite"):
        return f"SQLite file {url.database}"
    return f"PostgreSQL at {url.host or 'localhost'}:{url.port or 5432}/{url.database}"


@contextmanager
def translated_errors(where: str) -> Iterator[None]:
    """Raise driver and OS errors of the block as the project's errors (``__cause__``: the original).

    ``TimeoutError`` passes unchanged: it is how a caller's own time budget (``asyncio.timeout``)
    ends a call, not a storage failure.
    """
    try:
        yield
    except (AgentMemoryError, TimeoutError):
        raise
    except (SQLAlchemyError, OSError, UnicodeError) as exc:
        raise translate(exc, where=where) from exc


@asynccontextmanager
async def storage_errors(where: str) -> AsyncIterator[None]:
    """:func:`translated_errors` for an ``async with`` block."""
    with translated_errors(where):
        yield


def backend_of(url: URL) -> Backend:
    """``"sqlite"`` or ``"postgresql"`` for a normalised URL."""
    return "sqlite" if url.drivername.startswith("sqlite") else "postgresql"


def create_engine(url: str | URL, *, echo: bool = False, sqlite_foreign_keys: bool = True) -> AsyncEngine:
    """Create the async engine for a supported URL (see :func:`normalize_url`).

    For SQLite the parent folder of the file is created when missing.
    """
    parsed = normalize_url(url)
    if backend_of(parsed) == "postgresql":
        return create_async_engine(parsed, echo=echo, pool_pre_ping=True, pool_size=10, max_overflow=10)
    assert parsed.database is not None
    (database, *_), options = SQLiteDialect_aiosqlite().create_connect_args(parsed)  # as SQLAlchemy would open it
    if not options.get("uri"):  # a file: URI names its file inside; it is not a folder to make
        try:
            Path(parsed.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise translate(exc, where=describe(parsed)) from exc
    creator = sqlite_creator(database, options, timeout_s=SQLITE_BUSY_TIMEOUT_MS / 1000)
    engine = create_async_engine(parsed, echo=echo, async_creator=creator)
    _configure_sqlite(engine, foreign_keys=sqlite_foreign_keys)
    return engine


def _configure_sqlite(engine: AsyncEngine, *, foreign_keys: bool) -> None:
    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, record: Any) -> None:
        # Take transaction control away from the driver; "begin" below issues BEGIN itself.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        mark_wal(record.driver_connection, (cursor.fetchone() or ("",))[0])
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute(f"PRAGMA foreign_keys={'ON' if foreign_keys else 'OFF'}")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        # the WAL is checkpointed every 1000 pages (the default) and truncated back to 64 MB after
        cursor.execute(f"PRAGMA journal_size_limit={64 * 1024 * 1024}")
        cursor.close()

    @event.listens_for(engine.sync_engine.pool, "checkout")
    def _on_checkout(_dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        set_on_loop(record.driver_connection, on_loop=False)  # the worker thread unless a reader asks otherwise

    @event.listens_for(engine.sync_engine.pool, "checkin")
    def _on_checkin(_dbapi_connection: Any, record: Any) -> None:
        set_on_loop(record.driver_connection, on_loop=False)  # closing the last connection checkpoints

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(conn: Any) -> None:
        options = conn.get_execution_options()
        mode = options.get(_BEGIN_OPTION, "DEFERRED")
        driver = conn.connection.driver_connection
        if mode != "IMMEDIATE":
            set_on_end(driver, None)  # no writer's gate to open when a read ends
            if not begin_on_loop(driver, mode):
                conn.exec_driver_sql(f"BEGIN {mode}")
            return
        release = options.get(_GATE_OPTION)
        set_on_end(driver, release)  # the next writer gets in as soon as this one commits
        short = options.get(_LOOP_WRITES_OPTION)
        if not (
            short and release is not None and begin_immediate_on_loop(driver, busy_timeout_ms=SQLITE_BUSY_TIMEOUT_MS)
        ):
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        if short:
            set_on_loop(driver, on_loop=True)

    @event.listens_for(engine.sync_engine, "commit")
    def _on_commit(conn: Any) -> None:
        set_on_loop(conn.connection.driver_connection, on_loop=False)  # a commit may checkpoint the WAL (fsync)

    @event.listens_for(engine.sync_engine.pool, "reset")
    def _on_reset(_dbapi_connection: Any, record: Any, _state: Any) -> None:
        set_on_loop(record.driver_connection, on_loop=True)  # the rollback on return waits for nothing


@asynccontextmanager
async def _session(conn: AsyncConnection) -> AsyncIterator[AsyncSession]:
    """An ORM session on ``conn``, closed as :meth:`Database._connected` closes its connection."""
    session = AsyncSession(bind=conn, expire_on_commit=False)
    try:
        yield session
    finally:
        await finish(session.close())


class Database:
    """An engine plus the kinds of session the repositories use; every one raises the project's errors.

    >>> db = Database("sqlite+aiosqlite:///./memory.db")  # doctest: +SKIP
    >>> async with db.write() as session: ...  # doctest: +SKIP
    """

    def __init__(self, url: str | URL, *, echo: bool = False) -> None:
        self.url = normalize_url(url)
        self.backend: Backend = backend_of(self.url)
        self.where = describe(self.url)
        self.engine = create_engine(self.url, echo=echo)
        #: The SQLite file's real path (``None`` on PostgreSQL): writers of one file queue together.
        self.sqlite_path = (
            os.path.realpath(Path(self.url.database).expanduser())
            if self.backend == "sqlite" and self.url.database
            else None
        )
        #: The file SQLite opens (a ``file:`` URI's path; ``None`` for an in-memory one), whose writer
        #: gate's lock file lies beside it.
        self.sqlite_file = _opened_file(self.url) if self.backend == "sqlite" else None

    @property
    def one_writer(self) -> bool:
        """Whether the database lets one writer in at a time (SQLite). There, writes of several callers
        that run at the same time may share a transaction (group commit): they would queue anyway. On
        PostgreSQL a shared transaction would hold every row lock of every caller in it, so one
        caller's long write would hold up the others."""
        return self.backend == "sqlite"

    @property
    def writer_key(self) -> str:
        """Names the database for queues of writers: the SQLite file, or the URL without password."""
        return self.sqlite_path or self.url.render_as_string(hide_password=True)

    def _writer_turn(self) -> AbstractAsyncContextManager[Callable[[], None] | None]:
        """Wait for the earlier writers of the same SQLite file, in this process and others; yields
        the function that opens the gate again (PostgreSQL: no wait, ``None``)."""
        if self.sqlite_path is None:
            return nullcontext()
        return writer_gate(self.sqlite_path, lock_beside=self.sqlite_file, wait_s=SQLITE_BUSY_TIMEOUT_MS / 1000).turn()

    @asynccontextmanager
    async def read(self, *, bulk: bool = False) -> AsyncIterator[AsyncSession]:
        """A session for reads; its transaction is rolled back at the end.

        On SQLite its statements run on the event loop's thread, ``bulk`` (a scan of many rows, which
        would hold the loop) on the connection's worker thread.
        """
        async with storage_errors(self.where), self._connected() as conn:
            if not bulk:
                await self._on_loop(conn)
            async with _session(conn) as session:
                yield session

    async def quick_read(self, fn: Callable[[Connection], _T], *, bulk: bool = False) -> _T:
        """``fn(connection)``: a short read on a bare connection (no ORM session; on SQLite on the
        loop's thread, unless ``bulk``: a scan of many rows, on the connection's worker thread), with its
        rows fetched inside ``fn``.

        The checkout, the statements and the close make one pass through SQLAlchemy's async bridge
        (one greenlet) instead of one each, as an ``async with`` connection makes; a chat turn makes
        about eight such reads (its friend, settings, history, index state, memories). A cancellation
        (a recall's time budget) reaches the statement that waits, and the close still runs inside the
        same pass, so the connection goes back to the pool before the caller sees the
        ``CancelledError`` or ``TimeoutError``.

        >>> rows = await db.quick_read(lambda conn: conn.execute(statement, params).all())  # doctest: +SKIP
        """
        if not callable(fn):
            raise InvalidInputError(f"quick_read takes a function of a connection, not {type(fn).__name__}")
        with translated_errors(self.where):
            return await greenlet_spawn(self._quick_read, fn, bulk)

    def _quick_read(self, fn: Callable[[Connection], _T], bulk: bool) -> _T:
        with self.engine.sync_engine.connect() as conn:
            if self.backend == "sqlite" and not bulk:
                set_on_loop(conn.connection.driver_connection, on_loop=True)
            return fn(conn)

    @asynccontextmanager
    async def _connected(self) -> AsyncIterator[AsyncConnection]:
        """A pooled connection, closed with :func:`~data_layer._cleanup.finish`: without a task and a
        trip around the event loop when the close waits for nothing (``async with engine.connect()``
        pays both on every use, and under load held the connection that long)."""
        conn = await self.engine.connect()
        try:
            yield conn
        finally:
            await finish(conn.close())

    async def _on_loop(self, conn: AsyncConnection) -> None:
        """Let a SQLite connection's statements run on the loop's thread until it is returned."""
        if self.backend == "sqlite":
            set_on_loop((await conn.get_raw_connection()).driver_connection, on_loop=True)

    @asynccontextmanager
    async def write(self, *, short: bool = False) -> AsyncIterator[AsyncSession]:
        """A session whose transaction commits at the end (``BEGIN IMMEDIATE`` on SQLite).

        An error inside rolls everything back; driver errors come out as :class:`StorageError`.
        ``short``: a few rows (a chat's messages, access counts); on SQLite its statements run on the
        loop's thread once the write lock is held. Other writes may run for long (a friend's deletion,
        an import), so their statements stay on the worker thread.
        """
        async with self._writer_turn() as release, storage_errors(self.where), self._connected() as conn:
            if self.backend == "sqlite":
                await conn.execution_options(
                    **{_BEGIN_OPTION: "IMMEDIATE", _LOOP_WRITES_OPTION: short, _GATE_OPTION: release}
                )
            async with _session(conn) as session, session.begin():
                yield session

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[AsyncConnection]:
        """A raw connection in a committing transaction (bulk statements)."""
        async with self._writer_turn() as release, storage_errors(self.where), self._connected() as conn:
            if self.backend == "sqlite":
                await conn.execution_options(**{_BEGIN_OPTION: "IMMEDIATE", _GATE_OPTION: release})
            async with conn.begin():
                yield conn

    async def dispose(self) -> None:
        """Close every pooled connection."""
        async with storage_errors(self.where):
            await self.engine.dispose()
