"""Writers of one SQLite file take turns, within a process and across the processes that share it.

SQLite lets one writer in at a time. A writer that finds the file locked by another process waits in
SQLite's busy handler, which sleeps in growing steps (1, 2, 5, 10 ... 100 ms) and so finds the lock
free late; and a writer whose statements run on a busy event loop holds the lock for whole loop
cycles. Measured with ``agent-memory bench serve --workers 2`` (50 chats): the two workers held the
write lock about 11 ms per transaction and waited up to 0.8 s in ``BEGIN IMMEDIATE``.

A :class:`WriterGate` is one event loop's turn-taking for one file:

- this loop's writers queue on an ``asyncio.Lock`` (first come, first served, no polling);
- the holder then takes an exclusive ``flock`` on a lock file beside the database (``<db>-writer``),
  which the kernel hands to the next waiting process the moment it is let go. Uncontended it is
  taken on the loop's thread without waiting; contended, a daemon thread waits for it;
- the connection lets the gate go on its own thread right after ``COMMIT`` or ``ROLLBACK``
  (:attr:`~data_layer._sqlite_loop.LoopConnection.on_end`), not a loop cycle later.

The gate only orders writers; SQLite's own locks still guard the data. A process that does not take
the gate (another program, the ``sqlite3`` shell), a file system without ``flock`` or a lock file that
cannot be created: writers then meet SQLite's busy timeout, as before.

>>> gate = writer_gate("/data/memory.db", lock_beside="/data/memory.db")  # doctest: +SKIP
>>> async with gate.turn() as release:  # doctest: +SKIP
...     ...  # BEGIN IMMEDIATE ... COMMIT; ``release()`` may be called early, from any thread
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import functools
import logging
import os
import queue
import threading
import weakref
from collections.abc import AsyncIterator, Callable

logger = logging.getLogger(__name__)

#: The lock file's name: the database file's, with this after it (as SQLite's ``-wal`` and ``-shm``).
LOCK_SUFFIX = "-writer"


class WriterGate:
    """One event loop's turn-taking among the writers of one SQLite file (see the module docs)."""

    def __init__(self, path: str, *, lock_beside: str | None) -> None:
        self.path = path
        #: the lock file shared with other processes (``None``: this process's writers only)
        self.lock_path = lock_beside + LOCK_SUFFIX if lock_beside else None
        self._queue = asyncio.Lock()
        self._fd: int | None = None
        self._unusable = False  # the lock file could not be opened or locked: SQLite's busy timeout alone
        self._holder: object | None = None  # the turn that holds the file lock
        self._mutex = threading.Lock()  # the gate is let go on a connection's thread, taken on the loop's
        #: a wait for the file lock whose writer was cancelled: the next writer takes it over
        self._pending: asyncio.Future[None] | None = None
        self._waiter: _Waiter | None = None

    @property
    def shared(self) -> bool:
        """Whether the gate also orders other processes (its lock file is in use)."""
        return self._fd is not None and not self._unusable

    @contextlib.asynccontextmanager
    async def turn(self) -> AsyncIterator[Callable[[], None]]:
        """Wait for this loop's earlier writers, then for the other processes'; yields the function
        that lets the gate go (safe to call early, twice, from any thread, and after the turn: it lets
        go only this turn's hold). Let go at the end in any case."""
        async with self._queue:
            token = object()
            await self._take(token)
            release = functools.partial(self._release, token)
            try:
                yield release
            finally:
                release()

    def _release(self, token: object) -> None:
        with self._mutex:
            if self._holder is not token:
                return
            self._holder = None
            fd = self._fd
        if fd is not None:
            _unlock(fd)

    async def _take(self, token: object) -> None:
        fd = self._open()
        if fd is None:
            return
        if self._pending is None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:  # another process writes: wait off the loop, woken when it lets go
                self._pending = self._wait_thread().wait(fd)
            except OSError as exc:
                self._give_up(exc)
                return
            else:
                self._mark_held(token)
                return
        pending = self._pending
        try:
            await asyncio.shield(pending)
        except asyncio.CancelledError:
            # the lock may still come: then the next writer takes it over, or, if none is waiting,
            # it is let go (a process must not keep the file locked for a writer that left)
            pending.add_done_callback(self._abandoned)
            raise
        self._pending = None
        error = pending.exception()
        if error is not None:
            self._give_up(error)
            return
        self._mark_held(token)

    def _abandoned(self, future: asyncio.Future[None]) -> None:
        if self._pending is not future or self._queue.locked():
            return  # taken over by the writer now waiting on it
        self._pending = None
        if not future.cancelled() and future.exception() is None and self._fd is not None:
            _unlock(self._fd)

    def _mark_held(self, token: object) -> None:
        with self._mutex:
            self._holder = token

    def _open(self) -> int | None:
        if self._unusable or self.lock_path is None:
            return None
        if self._fd is None:
            # whoever may open the database may use its gate: the database's permissions (SQLite's
            # default before it exists); flock needs no write access, so a reader can take part
            try:
                mode = os.stat(self.lock_path.removesuffix(LOCK_SUFFIX)).st_mode & 0o666
            except OSError:
                mode = 0o644
            try:
                self._fd = os.open(self.lock_path, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, mode)
            except OSError as exc:
                self._give_up(exc)
                return None
            weakref.finalize(self, os.close, self._fd)
        return self._fd

    def _give_up(self, exc: BaseException) -> None:
        self._unusable = True
        logger.info("SQLite writers of %s wait in SQLite's busy timeout: no writer lock file (%s)", self.path, exc)

    def _wait_thread(self) -> _Waiter:
        if self._waiter is None:
            self._waiter = _Waiter()
            weakref.finalize(self, self._waiter.stop)
        return self._waiter


class _Waiter:
    """A daemon thread that waits for file locks (one at a time: the gate's queue lets one writer ask)."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[int, asyncio.Future[None]] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="sqlite-writer-gate", daemon=True)
        self._thread.start()

    def wait(self, fd: int) -> asyncio.Future[None]:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._jobs.put((fd, future))
        return future

    def stop(self) -> None:
        self._jobs.put(None)

    def _run(self) -> None:
        while (job := self._jobs.get()) is not None:
            fd, future = job
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
            except OSError as exc:
                _settle(future, exc)
            else:
                _settle(future, None)


def _settle(future: asyncio.Future[None], error: BaseException | None) -> None:
    def done() -> None:
        if future.done():
            return
        if error is None:
            future.set_result(None)
        else:
            future.set_exception(error)

    with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is waiting any more
        future.get_loop().call_soon_threadsafe(done)


def _unlock(fd: int) -> None:
    with contextlib.suppress(OSError):
        fcntl.flock(fd, fcntl.LOCK_UN)


#: One gate per (event loop, SQLite file): asyncio locks and futures belong to the loop they wait on.
_GATES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, WriterGate]] = weakref.WeakKeyDictionary()


def writer_gate(path: str, *, lock_beside: str | None) -> WriterGate:
    """The running event loop's :class:`WriterGate` for the SQLite database ``path`` (a key: its real
    path), with its lock file beside the file ``lock_beside`` (``None``: no lock file)."""
    gates = _GATES.setdefault(asyncio.get_running_loop(), {})
    gate = gates.get(path)
    if gate is None:
        gate = gates[path] = WriterGate(path, lock_beside=lock_beside)
    return gate


__all__ = ["LOCK_SUFFIX", "WriterGate", "writer_gate"]
