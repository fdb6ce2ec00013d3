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
  connections it holds, and how many it has accepted so far, on a shared :class:`LoadBoard`. A worker
  holding more than another live worker leaves a waiting connection to the others and looks again
  every :data:`LOOK_S`; it takes the connection once it holds no more than the others, or when they
  took none for :data:`DEFER_S` (stuck in a long step, or gone): then it goes on taking until they
  take one again. So a waiting connection goes to the worker holding fewer at its next look at the
  socket, and a worker that is stuck delays it by :data:`DEFER_S`.

Measured with ``agent-memory bench serve --workers 2`` (50 browsers connecting together, on this
2-core machine): one connection per look alone gave splits of 35/15 and 40/10; with the fewest first
they split 25/25. 40 connections arriving at once on an idle ``serve --workers 2`` were all accepted
within 11-47 ms (5-10 ms without the board).

It is asyncio's own selector loop with its accepting narrowed (uvloop, when installed, is not used
by the workers): ``_start_serving``, ``_accept_connection``, ``_accept_connection2`` and
``_stop_serving`` are asyncio's own (arguments as in Python 3.11's ``selector_events``), and the count
of a server's connections is its ``_active_count``; where that is missing the loop accepts one
connection per look, unbalanced.

>>> uvicorn.run(app, workers=2, loop="agent_memory.web._accept:OneAcceptLoop")  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import mmap
import os
import socket
import struct
import time
from pathlib import Path
from typing import Any

#: How long the others may take no connection before a worker holding more takes them itself.
DEFER_S = 0.02
#: How often a worker holding more connections looks again at a connection it left to the others.
LOOK_S = 0.002
#: How often a worker posts its count (connections also close while no browser connects).
POST_EVERY_S = 0.25
#: A worker whose post is older than this is taken to be gone (stopped, or stuck in a long step).
STALE_S = 1.0
#: How the worker processes find the board: a path in the environment the server gives them.
BOARD_ENV = "AGENT_MEMORY_SERVE_LOAD_BOARD"

_ENTRY = struct.Struct("<qqd")  # connections held, accepted so far, time posted (monotonic; 0: free)


class LoadBoard:
    """How many connections each worker holds: a small shared file, one slot per worker.

    A worker owns its slot by an exclusive ``flock`` on a lock file of that slot, held as long as the
    board is open: the system drops it when the worker ends, however it ends, so a slot is never given
    to two workers and a dead worker's slot is free at once. Whether a worker is live (counted by the
    others) is whether it posted within :data:`STALE_S`, on the system's monotonic clock (the same for
    every process; a change of the wall clock does not move it).

    >>> board = LoadBoard(path, slots=4)  # doctest: +SKIP
    >>> mine = board.claim()  # doctest: +SKIP
    >>> board.post(mine, 3, 10); board.others(mine)  # held 3, accepted 10 so far  # doctest: +SKIP
    [(5, 12)]
    """

    def __init__(self, path: str | os.PathLike[str], *, slots: int = 32) -> None:
        if isinstance(slots, bool) or not isinstance(slots, int) or not 1 <= slots <= 1024:
            raise ValueError(f"slots must be a whole number 1-1024, got {slots!r}")
        self.slots = slots
        self.path = Path(path)
        size = slots * _ENTRY.size
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            if os.fstat(fd).st_size < size:
                os.ftruncate(fd, size)
            self._map = mmap.mmap(fd, size)
        finally:
            os.close(fd)
        self._owned: dict[int, int] = {}  # slot -> the descriptor holding its lock

    def claim(self) -> int | None:
        """A slot no running worker holds, now this board's (its lock held until :meth:`release` or
        :meth:`close`); ``None`` when every slot is held."""
        import fcntl  # POSIX only, as the workers' chat locks (imported here: the web app imports this module)

        for slot in range(self.slots):
            if slot in self._owned:
                continue
            fd = os.open(f"{self.path}.{slot}", os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            self._owned[slot] = fd
            self.post(slot, 0, 0)
            return slot
        return None

    def post(self, slot: int, connections: int, accepted: int) -> None:
        """Post what ``slot``'s worker holds and has accepted so far, with the time."""
        _ENTRY.pack_into(self._map, slot * _ENTRY.size, connections, accepted, time.monotonic())

    def release(self, slot: int) -> None:
        """Free ``slot`` (its worker stops): cleared, and its lock given up."""
        _ENTRY.pack_into(self._map, slot * _ENTRY.size, 0, 0, 0.0)
        fd = self._owned.pop(slot, None)
        if fd is not None:
            os.close(fd)

    def others(self, slot: int) -> list[tuple[int, int]]:
        """``(connections held, accepted so far)`` of the other live workers (those that posted within
        :data:`STALE_S`)."""
        now = time.monotonic()
        found = []
        for other in range(self.slots):
            if other != slot:
                connections, accepted, posted = _ENTRY.unpack_from(self._map, other * _ENTRY.size)
                if posted and now - posted <= STALE_S:
                    found.append((connections, accepted))
        return found

    def live(self) -> list[int]:
        """The connections each serving worker holds (one entry per worker that posted within
        :data:`STALE_S`; a worker posts from the moment it listens, after its warm-up)."""
        now = time.monotonic()
        entries = (_ENTRY.unpack_from(self._map, slot * _ENTRY.size) for slot in range(self.slots))
        return [held for held, _, posted in entries if posted and now - posted <= STALE_S]

    def close(self) -> None:
        """Release this board's slots and unmap the file."""
        for slot in list(self._owned):
            self.release(slot)
        self._map.close()


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
        self._others_took: int | None = None  # the others' accepted total when they last took one
        self._others_took_at = 0.0  # and when this loop saw it
        self._looked_at = 0.0  # when this loop last looked at a waiting connection
        self._posting: asyncio.TimerHandle | None = None
        self._server: Any = None  # the server whose connections this loop counts (once on the board)

    def _start_serving(
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
        # asyncio's private selector-loop method: typeshed's stubs do not declare it
        super()._start_serving(protocol_factory, sock, sslcontext, server, *args)  # type: ignore[misc]

    def _accept_connection(
        self,
        protocol_factory: Any,
        sock: socket.socket,
        sslcontext: Any = None,
        server: Any = None,
        backlog: int = 100,
        *args: Any,
    ) -> None:
        count = getattr(server, "_active_count", None)
        if isinstance(count, int) and self._on_board(server) and self._leave(count):
            self._remove_reader(sock.fileno())  # type: ignore[attr-defined]  # asyncio private: not in the stubs
            self.call_later(LOOK_S, self._look_again, protocol_factory, sock, sslcontext, server, backlog, *args)
            return
        # asyncio's private selector-loop method: typeshed's stubs do not declare it
        super()._accept_connection(protocol_factory, sock, sslcontext, server, 1, *args)  # type: ignore[misc]

    def _leave(self, count: int) -> bool:
        """Whether to leave the waiting connection to the others for now (this worker holds ``count``)."""
        assert self._board is not None and self._slot is not None
        self._board.post(self._slot, count, self._accepted)
        others = self._board.others(self._slot)
        now = time.monotonic()
        if now - self._looked_at > DEFER_S:  # a new burst: what the last one showed says nothing now
            self._others_took = None
        self._looked_at = now
        if not others or count <= min(held for held, _ in others):
            self._others_took = None
            return False
        took = sum(accepted for _, accepted in others)
        if took != self._others_took:  # they took one since (or this wait begins): they are awake
            self._others_took, self._others_took_at = took, now
        # they took none for DEFER_S: stuck in a long step or gone; take it (and the next ones, until
        # they take one again)
        return now - self._others_took_at < DEFER_S

    def _look_again(self, protocol_factory: Any, sock: socket.socket, sslcontext: Any, server: Any, *args: Any) -> None:
        if server is not None and server.is_serving() and sock.fileno() != -1:
            self._start_serving(protocol_factory, sock, sslcontext, server, *args)

    def _accept_connection2(self, *args: Any) -> Any:
        """asyncio's set-up of a connection just accepted (a coroutine it runs as a task): counted and
        posted at once, so a worker waiting for this one sees it is awake."""
        self._accepted += 1
        server = args[4] if len(args) > 4 else None  # (protocol_factory, conn, extra, sslcontext, server, ...)
        if self._board is not None and self._slot is not None and server is not None:
            self._board.post(self._slot, server._active_count + 1, self._accepted)  # attached in the task
        return super()._accept_connection2(*args)  # type: ignore[misc]  # asyncio private: not in the stubs

    def _on_board(self, server: Any) -> bool:
        """Whether this loop posts on a board (claiming its slot and starting its posts the first time)."""
        if self._board is None:
            return False
        if self._slot is None:
            self._slot = self._board.claim()
            if self._slot is None:  # more workers than slots: this one accepts unbalanced
                self._board.close()
                self._board = None
                return False
            self._server = server
            self._post_regularly(server)
        return True

    def crowded(self) -> bool:
        """Whether this worker holds more than one connection more than the live worker holding fewest
        (see :class:`ShareOutMiddleware`); ``False`` off a board or with no other live worker."""
        if self._board is None or self._slot is None or self._server is None:
            return False
        others = self._board.others(self._slot)
        return bool(others) and self._server._active_count > min(held for held, _ in others) + 1

    def _post_regularly(self, server: Any) -> None:
        if self._board is not None and self._slot is not None and server.is_serving():
            self._board.post(self._slot, server._active_count, self._accepted)
            self._posting = self.call_later(POST_EVERY_S, self._post_regularly, server)

    def _stop_serving(self, sock: socket.socket) -> None:
        """asyncio's stop of a server's accepting (``Server.close``): the slot is freed here, since
        uvicorn's worker ends by raising SIGTERM again and never reaches :meth:`close`."""
        self._leave_board()
        super()._stop_serving(sock)  # type: ignore[misc]  # asyncio private: not in the stubs

    def _leave_board(self) -> None:
        if self._posting is not None:
            self._posting.cancel()
            self._posting = None
        if self._board is not None:
            self._board.close()  # releases the slot
            self._board = None

    def close(self) -> None:
        super().close()  # raises on a running loop: then the board stays as it is
        self._leave_board()


class ShareOutMiddleware:
    """ASGI middleware of a worker of ``serve --workers N``: while its worker is crowded (it holds more
    than one connection more than the live worker holding fewest, :meth:`OneAcceptLoop.crowded`), each
    response asks the browser to close its connection (``Connection: close``), so the browser's next
    request connects anew and goes to the worker holding fewer.

    The rules above only place new connections, and the server keeps idle ones for a while (75 s), so
    without this the browsers that came while a worker was restarting (after a crash) or still warming
    up stayed with the other worker for as long as their people kept talking: 20 of 20, against 10 and
    10 once they reconnect. Only the crowded worker's responses close connections, and only until it is
    level, so a chat keeps its worker otherwise. ``crowded`` may be given for tests (default: the
    running loop's, when it is an :class:`OneAcceptLoop`).
    """

    def __init__(self, app: Any, *, crowded: Any = None) -> None:
        self.app = app
        self._crowded = crowded

    def _is_crowded(self) -> bool:
        if self._crowded is not None:
            return bool(self._crowded())
        check = getattr(asyncio.get_running_loop(), "crowded", None)
        return bool(check()) if callable(check) else False

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def sending(message: Any) -> None:
            if message["type"] == "http.response.start" and self._is_crowded():
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"connection"]
                message = {**message, "headers": [*headers, (b"connection", b"close")]}
            await send(message)

        await self.app(scope, receive, sending)


def new_board(folder: str | os.PathLike[str]) -> str:
    """Create the board file of a server's workers in ``folder``; returns its path (for :data:`BOARD_ENV`)."""
    path = Path(folder) / "load-board"
    LoadBoard(path).close()
    return str(path)


__all__ = ["BOARD_ENV", "LoadBoard", "OneAcceptLoop", "ShareOutMiddleware", "new_board"]
