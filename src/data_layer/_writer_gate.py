"""Writers of one SQLite file take turns, within a process and across the processes that share it.

SQLite lets one writer in at a time. A writer that finds the file locked by another process waits in
SQLite's busy handler, which sleeps in growing steps (1, 2, 5, 10 ... 100 ms) and so finds the lock
free late; and a writer whose statements run on a busy event loop holds the lock for whole loop
cycles (``agent-memory bench serve --workers 2`` shows both: long waits for ``BEGIN IMMEDIATE``, and
writes that hold the lock for many loop cycles).

A :class:`WriterGate` is one event loop's turn-taking for one file:

- this loop's writers queue on an ``asyncio.Lock`` (first come, first served, no polling);
- the holder then takes an exclusive ``flock`` on a lock file beside the database (``<db>-writer``),
  which the kernel hands to the next waiting process the moment it is let go. Uncontended it is
  taken on the loop's thread without waiting; contended, a thread waits for it, at most ``wait_s``
  (SQLite's busy timeout): a process that holds the gate longer (stopped, or stuck in a write) is not
  waited for any more, and SQLite's own lock decides, with its own time-out, as without the gate;
- the connection lets the gate go on its own thread right after ``COMMIT`` or ``ROLLBACK``
  (:attr:`~data_layer._sqlite_loop.LoopConnection.on_end`), not a loop cycle later.

The lock file is opened for each turn and closed when the turn lets it go (closing drops the lock),
so nothing stays open between writes, whatever the number of event loops or databases a process
goes through. A wait whose writer left (cancelled, timed out) is taken over by the gate's next writer,
or let go when it ends; one that ends after its event loop closed is let go by its thread. A child
made by ``fork`` closes the descriptors it inherited, so a killed parent's lock is not kept by it.

The gate only orders writers; SQLite's own locks still guard the data. A process that does not take
the gate (another program, the ``sqlite3`` shell), a system without ``fcntl`` or a lock file that
cannot be created: writers then meet SQLite's busy timeout, as before.

>>> gate = writer_gate("/data/memory.db", lock_beside="/data/memory.db", wait_s=30.0)  # doctest: +SKIP
>>> async with gate.turn() as release:  # doctest: +SKIP
...     ...  # BEGIN IMMEDIATE ... COMMIT; ``release()`` may be called early, from any thread
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import threading
import weakref
from collections.abc import AsyncIterator, Callable
from types import ModuleType

fcntl: ModuleType | None
try:
    import fcntl
except ImportError:  # no flock here: each process's writers take turns among themselves only
    fcntl = None

logger = logging.getLogger(__name__)

#: The lock file's name: the database file's, with this after it (as SQLite's ``-wal`` and ``-shm``).
LOCK_SUFFIX = "-writer"
#: How often a thread that got the lock for a writer that left checks whether its event loop closed.
_DELIVERY_POLL_S = 0.05


class WriterGate:
    """One event loop's turn-taking among the writers of one SQLite file (see the module docs)."""

    def __init__(self, path: str, *, lock_beside: str | None, wait_s: float = 30.0) -> None:
        self.path = path
        #: the lock file shared with other processes (``None``: this process's writers only)
        self.lock_path = lock_beside + LOCK_SUFFIX if lock_beside else None
        self.wait_s = wait_s
        self._queue = asyncio.Lock()
        self._unusable = fcntl is None  # the lock file cannot be used: SQLite's busy timeout alone
        self._mutex = threading.Lock()  # the gate is let go on a connection's thread, taken on the loop's
        self._fd: int | None = None  # open while a turn holds the file lock or a wait for it is pending
        self._holder: object | None = None  # the turn that holds the file lock
        #: a wait for the file lock whose writer left: the next writer takes it over
        self._pending: asyncio.Future[None] | None = None
        self._adopting = False  # a writer is waiting on ``_pending``

    @property
    def shared(self) -> bool:
        """Whether the gate orders other processes too (its lock file can be used)."""
        return self.lock_path is not None and not self._unusable

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
        with self._mutex:  # under it: a next turn of this gate cannot take the file between the two
            if self._holder is not token:
                return
            self._holder = None
            self._close_locked()

    def _close_locked(self) -> None:
        """Close the lock file (which lets its lock go); the caller holds ``_mutex``."""
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)

    async def _take(self, token: object) -> None:
        if self._pending is None:
            fd = self._open()
            if fd is None:
                return
            assert fcntl is not None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:  # another process writes: wait off the loop, woken when it lets go
                self._pending = _wait_in_thread(fd, asyncio.get_running_loop())
            except OSError as exc:
                with self._mutex:
                    self._close_locked()
                self._give_up(exc)
                return
            else:
                with self._mutex:
                    self._holder = token
                return
        pending = self._pending
        self._adopting = True
        try:
            await asyncio.wait_for(asyncio.shield(pending), self.wait_s)
        except TimeoutError:
            # held longer than SQLite's busy timeout: not waited for any more (SQLite's lock decides);
            # the wait goes on for the next writer, or is let go when it ends
            self._adopting = False
            pending.add_done_callback(self._abandoned)
            logger.warning("another process has held the writer gate of %s for over %.0f s", self.path, self.wait_s)
            return
        except asyncio.CancelledError:
            self._adopting = False
            pending.add_done_callback(self._abandoned)
            raise
        self._adopting = False
        self._pending = None
        error = pending.exception()
        with self._mutex:
            if error is None:
                self._holder = token
                return
            self._close_locked()
        self._give_up(error)

    def _abandoned(self, future: asyncio.Future[None]) -> None:
        """A wait whose writer left has ended: let its lock go unless a writer is taking it over."""
        if self._pending is not future or self._adopting:
            return
        self._pending = None
        with self._mutex:
            if self._holder is None:
                self._close_locked()

    def _open(self) -> int | None:
        if self._unusable or self.lock_path is None:
            return None
        # whoever may open the database may use its gate: the database's permissions (SQLite's
        # default before it exists); flock needs no write access, so a reader can take part
        try:
            mode = os.stat(self.lock_path.removesuffix(LOCK_SUFFIX)).st_mode & 0o666
        except OSError:
            mode = 0o644
        try:
            fd = os.open(self.lock_path, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, mode)
        except OSError as exc:
            self._give_up(exc)
            return None
        with self._mutex:
            self._fd = fd
        return fd

    def _give_up(self, exc: BaseException) -> None:
        self._unusable = True
        logger.info("SQLite writers of %s wait in SQLite's busy timeout: no writer lock file (%s)", self.path, exc)

    def _forget_in_child(self) -> None:
        """After ``fork``: the child holds nothing (its copy of the descriptor is closed)."""
        self._mutex = threading.Lock()
        self._holder, self._pending, self._adopting = None, None, False
        self._close_locked()


def _wait_in_thread(fd: int, loop: asyncio.AbstractEventLoop) -> asyncio.Future[None]:
    """A future that ends once ``fd`` holds the exclusive lock (or failed to), waited for in a daemon
    thread of its own (it ends with the wait, so none outlives it)."""
    future: asyncio.Future[None] = loop.create_future()
    threading.Thread(target=_wait, args=(fd, future, loop), name="sqlite-writer-gate", daemon=True).start()
    return future


def _wait(fd: int, future: asyncio.Future[None], loop: asyncio.AbstractEventLoop) -> None:
    assert fcntl is not None
    error: OSError | None = None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except OSError as exc:
        error = exc
    delivered = threading.Event()

    def settle() -> None:
        delivered.set()
        if future.done():
            return
        if error is None:
            future.set_result(None)
        else:
            future.set_exception(error)

    try:
        loop.call_soon_threadsafe(settle)
    except RuntimeError:  # the loop is closed: nobody will take the lock over
        pass
    else:
        while not delivered.wait(_DELIVERY_POLL_S):
            if loop.is_closed():
                break
        else:
            return
    if error is None:  # got for a writer whose loop is gone: let it go now, or it is held for good
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)


#: One gate per (event loop, SQLite file): asyncio locks and futures belong to the loop they wait on.
_GATES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, WriterGate]] = weakref.WeakKeyDictionary()


def writer_gate(path: str, *, lock_beside: str | None, wait_s: float = 30.0) -> WriterGate:
    """The running event loop's :class:`WriterGate` for the SQLite database ``path`` (a key: its real
    path), with its lock file beside the file ``lock_beside`` (``None``: no lock file); a writer waits
    for another process's turn at most ``wait_s`` seconds."""
    gates = _GATES.setdefault(asyncio.get_running_loop(), {})
    gate = gates.get(path)
    if gate is None:
        gate = gates[path] = WriterGate(path, lock_beside=lock_beside, wait_s=wait_s)
    return gate


def _forget_in_child() -> None:
    for gates in list(_GATES.values()):
        for gate in gates.values():
            gate._forget_in_child()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)


__all__ = ["LOCK_SUFFIX", "WriterGate", "writer_gate"]
