"""The event loop of a worker process of ``agent-memory serve --workers N``: the workers share the
browsers out evenly.

The workers share one listening socket, and a browser keeps its connection (HTTP keep-alive), so the
worker that accepts a browser serves its chats for as long as the connection lasts. asyncio's loop
accepts every waiting connection each time the socket is ready, so when 50 browsers connect together
the first worker awake takes most of them, and their users wait on one busy process while the other
has little to do. Two rules share them out:

- **One connection per look** (nginx's default, ``multi_accept off``): the loop accepts one waiting
  connection each time the socket is ready, not all of them.
- **The fewest connections first** (a load balancer's ``least_conn``): each worker posts how many
  connections it holds on a shared :class:`LoadBoard`; a worker holding more than another live
  worker leaves a waiting connection to the others for :data:`DEFER_S` before it takes it itself.
  The wait is bounded, so a connection is never left waiting for a worker that is stuck or gone.

Measured with ``agent-memory bench serve --workers 2`` (50 browsers connecting together, on this
2-core machine): one connection per look alone gave splits of 35/15 and 40/10; with the fewest first
they split 25/25.

It is asyncio's own selector loop with that one method narrowed (uvloop, when installed, is not used
by the workers): ``_accept_connection`` and ``_start_serving`` are asyncio's own (arguments as in
Python 3.11's ``selector_events``), and the count of a server's connections is its
``_active_count``; where those are missing the loop accepts one connection per look, unbalanced.

>>> uvicorn.run(app, workers=2, loop="agent_memory.web._accept:OneAcceptLoop")  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import fcntl
import mmap
import os
import socket
import struct
import time
from pathlib import Path
from typing import Any

#: How long a worker holding more connections than another leaves a waiting connection to the others.
DEFER_S = 0.02
#: How often a worker posts its count (connections also close while no browser connects).
POST_EVERY_S = 0.25
#: A worker whose post is older than this is taken to be gone (stopped, or stuck in a long step).
STALE_S = 1.0
#: How the worker processes find the board: a path in the environment the server gives them.
BOARD_ENV = "AGENT_MEMORY_SERVE_LOAD_BOARD"

_ENTRY = struct.Struct("<qqd")  # connections held, connections accepted so far, time posted (0: a free slot)


class LoadBoard:
    """How many connections each worker holds: a small shared file, one slot per worker.

    >>> board = LoadBoard(path, slots=4)  # doctest: +SKIP
    >>> mine = board.claim()  # doctest: +SKIP
    >>> board.post(mine, 3, 10); board.others(mine)  # held 3, accepted 10 so far  # doctest: +SKIP
    [(5, 12)]
    """

    def __init__(self, path: str | os.PathLike[str], *, slots: int = 32) -> None:
        if not 1 <= slots <= 1024:
            raise ValueError("slots must be 1-1024")
        self.slots = slots
        size = slots * _ENTRY.size
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            if os.fstat(fd).st_size < size:
                os.ftruncate(fd, size)
            self._map = mmap.mmap(fd, size)
            self._fd = os.dup(fd)  # kept for the lock taken while claiming a slot
        finally:
            os.close(fd)

    def claim(self) -> int | None:
        """A free slot (or one whose worker stopped posting) for this worker; ``None`` when all are taken."""
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            now = time.time()
            for slot in range(self.slots):
                _, _, posted = _ENTRY.unpack_from(self._map, slot * _ENTRY.size)
                if posted == 0 or now - posted > STALE_S:
                    self.post(slot, 0, 0)
                    return slot
            return None
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def post(self, slot: int, connections: int, accepted: int) -> None:
        """Post what ``slot``'s worker holds and has accepted so far, with the time."""
        _ENTRY.pack_into(self._map, slot * _ENTRY.size, connections, accepted, time.time())

    def release(self, slot: int) -> None:
        """Free ``slot`` (its worker stops)."""
        _ENTRY.pack_into(self._map, slot * _ENTRY.size, 0, 0, 0.0)

    def others(self, slot: int) -> list[tuple[int, int]]:
        """``(connections held, accepted so far)`` of the other live workers (those that posted within
        :data:`STALE_S`)."""
        now = time.time()
        found = []
        for other in range(self.slots):
            if other != slot:
                connections, accepted, posted = _ENTRY.unpack_from(self._map, other * _ENTRY.size)
                if posted and now - posted <= STALE_S:
                    found.append((connections, accepted))
        return found

    def close(self) -> None:
        self._map.close()
        os.close(self._fd)


def _board_from_env() -> LoadBoard | None:
    path = os.environ.get(BOARD_ENV)
    return LoadBoard(path) if path else None


class OneAcceptLoop(asyncio.SelectorEventLoop):
    """A selector event loop that accepts at most one connection each time a listening socket is ready,
    and, with a :class:`LoadBoard` (``board``; default: the one the server names in
    :data:`BOARD_ENV`), leaves it to a worker holding fewer connections first (see the module docs).
    The listen backlog itself is unchanged: connections wait in the kernel, never refused."""

    def __init__(self, selector: Any = None, *, board: LoadBoard | None = None) -> None:
        super().__init__(selector)
        self._board = board if board is not None else _board_from_env()
        self._slot: int | None = None
        self._accepted = 0  # connections this loop accepted so far (another worker sees it is awake)
        self._waited_at: int | None = None  # the others' accepted total when this loop began to wait
        self._posting: asyncio.TimerHandle | None = None

    def _start_serving(  # type: ignore[override]
        self,
        protocol_factory: Any,
        sock: socket.socket,
        sslcontext: Any = None,
        server: Any = None,
        *args: Any,
    ) -> None:
        """asyncio's start of a server's accepting: the worker claims its slot on the board here, so the
        others count it from the moment it listens."""
        if isinstance(getattr(server, "_active_count", None), int):
            self._on_board(server)
        super()._start_serving(protocol_factory, sock, sslcontext, server, *args)  # type: ignore[misc]

    def _accept_connection(  # type: ignore[override]
        self,
        protocol_factory: Any,
        sock: socket.socket,
        sslcontext: Any = None,
        server: Any = None,
        backlog: int = 100,
        *args: Any,
    ) -> None:
        count = getattr(server, "_active_count", None)
        if isinstance(count, int) and self._on_board(server):
            assert self._board is not None and self._slot is not None
            self._board.post(self._slot, count, self._accepted)
            others = self._board.others(self._slot)
            taken = sum(accepted for _, accepted in others)
            # another worker holds fewer, and (when this worker already waited) has taken connections
            # meanwhile: it is awake, leave this one to it; one that took nothing is stuck, take it
            if (
                others
                and count > min(held for held, _ in others)
                and (self._waited_at is None or taken > self._waited_at)
            ):
                self._waited_at = taken
                self._remove_reader(sock.fileno())
                self.call_later(DEFER_S, self._look_again, protocol_factory, sock, sslcontext, server, backlog, *args)
                return
            self._waited_at = None
        super()._accept_connection(protocol_factory, sock, sslcontext, server, 1, *args)  # type: ignore[misc]

    def _accept_connection2(self, *args: Any) -> Any:
        """asyncio's set-up of a connection just accepted (a coroutine it runs as a task): counted and
        posted at once, so a worker waiting for this one sees it is awake."""
        self._accepted += 1
        server = args[4] if len(args) > 4 else None  # (protocol_factory, conn, extra, sslcontext, server, ...)
        if self._board is not None and self._slot is not None and server is not None:
            self._board.post(self._slot, server._active_count, self._accepted)
        return super()._accept_connection2(*args)  # type: ignore[misc]

    def _look_again(self, protocol_factory: Any, sock: socket.socket, sslcontext: Any, server: Any, *args: Any) -> None:
        if server is not None and server.is_serving() and sock.fileno() != -1:
            self._start_serving(protocol_factory, sock, sslcontext, server, *args)  # type: ignore[attr-defined]

    def _on_board(self, server: Any) -> bool:
        """Whether this loop posts on a board (claiming its slot and starting its posts the first time)."""
        if self._board is None:
            return False
        if self._slot is None:
            self._slot = self._board.claim()
            if self._slot is None:  # more workers than slots: this one accepts unbalanced
                self._board = None
                return False
            self._post_regularly(server)
        return True

    def _post_regularly(self, server: Any) -> None:
        if self._board is not None and self._slot is not None and server.is_serving():
            self._board.post(self._slot, server._active_count, self._accepted)
            self._posting = self.call_later(POST_EVERY_S, self._post_regularly, server)

    def close(self) -> None:
        if self._posting is not None:
            self._posting.cancel()
        if self._board is not None:
            if self._slot is not None:
                self._board.release(self._slot)
            self._board.close()
            self._board = None
        super().close()


def new_board(folder: str | os.PathLike[str]) -> str:
    """Create the board file of a server's workers in ``folder``; returns its path (for :data:`BOARD_ENV`)."""
    path = Path(folder) / "load-board"
    LoadBoard(path).close()
    return str(path)


__all__ = ["BOARD_ENV", "LoadBoard", "OneAcceptLoop", "new_board"]
