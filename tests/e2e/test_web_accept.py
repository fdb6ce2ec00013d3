"""The event loop of ``serve --workers N``: a worker takes one waiting connection each time it looks at
the shared socket, and leaves it to a worker holding fewer connections, so browsers are shared out
evenly rather than the first worker awake taking most of them."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agent_memory.web._accept import OneAcceptLoop


def _listening() -> socket.socket:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    server.setblocking(False)
    return server


def _accepted_per_look(loop: asyncio.AbstractEventLoop, waiting: int) -> list[int]:
    """How many of ``waiting`` connections each look at the listening socket accepted."""
    server = _listening()
    clients = [socket.create_connection(server.getsockname()) for _ in range(waiting)]
    accepted: list[socket.socket] = []
    looks: list[int] = []
    real_accept = server.accept

    class Counting:
        def __getattr__(self, name: str) -> object:
            return getattr(server, name)

        def accept(self) -> tuple[socket.socket, object]:
            conn, addr = real_accept()
            accepted.append(conn)
            return conn, addr

    transports: list[asyncio.BaseTransport] = []

    class Kept(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            transports.append(transport)

    try:
        while len(accepted) < waiting:
            before = len(accepted)
            loop._accept_connection(Kept, Counting(), backlog=64)
            looks.append(len(accepted) - before)
        loop.run_until_complete(asyncio.sleep(0.05))  # the accepted connections are set up
        assert len(transports) == waiting
        for transport in transports:
            transport.close()
        loop.run_until_complete(asyncio.sleep(0))
    finally:
        for s in [*clients, server]:
            s.close()
    return looks


def test_one_connection_per_look_where_asyncio_takes_all() -> None:
    plain, one = asyncio.SelectorEventLoop(), OneAcceptLoop()
    try:
        assert _accepted_per_look(plain, 5) == [5]  # asyncio's own loop: every waiting browser at once
        assert _accepted_per_look(one, 5) == [1, 1, 1, 1, 1]  # the rest wait in the kernel's queue
    finally:
        plain.close()
        one.close()


def test_a_server_on_it_serves_every_connection() -> None:
    async def main() -> list[bytes]:
        async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            writer.write(await reader.readline())
            await writer.drain()
            writer.close()

        server = await asyncio.start_server(echo, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]

        async def client(n: int) -> bytes:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(f"{n}\n".encode())
            line = await reader.readline()
            writer.close()
            return line

        async with server:
            return await asyncio.gather(*(client(n) for n in range(40)))

    runner = asyncio.Runner(loop_factory=OneAcceptLoop)
    try:
        assert runner.run(main()) == [f"{n}\n".encode() for n in range(40)]
        assert isinstance(runner.get_loop(), OneAcceptLoop)
    finally:
        runner.close()


def test_the_load_board_gives_each_worker_a_slot_and_counts_the_live_others(tmp_path: Path) -> None:
    import time as clock

    from agent_memory.web._accept import STALE_S, LoadBoard

    path = tmp_path / "board"
    first, second, third = LoadBoard(path, slots=2), LoadBoard(path, slots=2), LoadBoard(path, slots=2)
    try:
        a, b = first.claim(), second.claim()
        assert {a, b} == {0, 1} and third.claim() is None  # two slots, two workers
        assert a is not None and b is not None
        assert third.live() == [0, 0]  # a worker claims its slot once it listens: /healthz's workers serving
        first.post(a, 7, 9)
        second.post(b, 3, 4)
        assert first.others(a) == [(3, 4)] and second.others(b) == [(7, 9)]
        second.release(b)  # a worker that stops frees its slot ...
        assert first.others(a) == [] and first.live() == [7] and third.claim() == b
        third.post(b, 0, 0)
        clock.sleep(STALE_S + 0.1)  # ... one that stops posting is no longer counted, but keeps its slot
        assert first.others(a) == [] and second.claim() is None
        assert first.live() == []
        third.close()  # closing a board frees its slot
        assert second.claim() == b
    finally:
        for board in (first, second, third):
            board.close()
    for bad in (0, 1025, True, 2.0):
        with pytest.raises(ValueError, match="slots must be a whole number"):
            LoadBoard(path, slots=bad)


def test_a_worker_that_dies_frees_its_slot_at_once(tmp_path: Path) -> None:
    """However a worker ends (here: killed), the system drops its lock, so a worker started in its place
    gets its slot, and no two live workers ever share one."""
    import signal
    import subprocess
    import sys

    from agent_memory.web._accept import LoadBoard

    path = tmp_path / "board"
    code = (
        "import sys, time; from agent_memory.web._accept import LoadBoard; "
        f"b = LoadBoard({str(path)!r}, slots=1); print(b.claim(), flush=True); time.sleep(60)"
    )
    worker = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    board = LoadBoard(path, slots=1)
    try:
        assert worker.stdout is not None and worker.stdout.readline().strip() == "0"
        assert board.claim() is None  # held by the live worker
        worker.send_signal(signal.SIGKILL)
        worker.wait(10)
        assert board.claim() == 0
    finally:
        worker.kill()
        board.close()


class _Worker:
    """An OneAcceptLoop on a thread of its own, serving a copy of a shared listening socket and keeping
    every connection it accepts, as a worker process keeps its browsers."""

    def __init__(self, listening: socket.socket, board_path: Path) -> None:
        import threading

        from agent_memory.web._accept import LoadBoard

        self.loop = OneAcceptLoop(board=LoadBoard(board_path))
        self.transports: list[asyncio.BaseTransport] = []
        started = threading.Event()
        transports = self.transports

        class Kept(asyncio.Protocol):
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                transports.append(transport)

        async def serve() -> None:
            self.server = await asyncio.get_running_loop().create_server(Kept, sock=listening.dup())
            started.set()

        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        asyncio.run_coroutine_threadsafe(serve(), self.loop).result(5)
        started.wait(5)

    def stall(self, seconds: float) -> None:
        import time as clock

        self.loop.call_soon_threadsafe(clock.sleep, seconds)  # a long step: the loop looks at nothing

    def stop(self) -> None:
        async def close() -> None:
            for transport in self.transports:
                transport.close()
            self.server.close()

        asyncio.run_coroutine_threadsafe(close(), self.loop).result(5)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()


class _Server:
    """One listening socket and one board shared by the workers a test starts (all stopped, every
    socket closed, at the end), and the browsers it connects."""

    def __init__(self, board_path: Path) -> None:
        self.listening = _listening()
        self.board_path = board_path
        self.workers: list[_Worker] = []
        self.clients: list[socket.socket] = []

    def worker(self) -> _Worker:
        self.workers.append(_Worker(self.listening, self.board_path))
        return self.workers[-1]

    def connect(self, n: int, *, pause: float = 0.0) -> None:
        """``n`` browsers connect and keep their connections (``pause`` seconds apart)."""
        import time as clock

        for _ in range(n):
            self.clients.append(socket.create_connection(self.listening.getsockname()))
            clock.sleep(pause)

    def close(self) -> None:
        for worker in self.workers:
            worker.stop()
        for s in [*self.clients, self.listening]:
            s.close()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[_Server]:
    shared = _Server(tmp_path / "board")
    try:
        yield shared
    finally:
        shared.close()


def _wait_for(condition: Callable[[], bool], seconds: float = 5.0) -> bool:
    import time as clock

    deadline = clock.monotonic() + seconds
    while clock.monotonic() < deadline:
        if condition():
            return True
        clock.sleep(0.005)
    return False


def test_new_browsers_go_to_the_worker_holding_fewer(server: _Server) -> None:
    """A worker holding ten browsers leaves the next ten to the worker that holds none (one connection
    per look alone let the first worker awake take most of them)."""
    busy = server.worker()
    server.connect(10, pause=0.01)
    assert _wait_for(lambda: len(busy.transports) == 10)
    idle = server.worker()
    server.connect(10, pause=0.01)
    assert _wait_for(lambda: len(busy.transports) + len(idle.transports) == 20)
    assert len(idle.transports) >= 9, (len(busy.transports), len(idle.transports))


def test_a_stuck_worker_does_not_keep_browsers_waiting(server: _Server) -> None:
    """The worker holding fewer connections is stuck in a long step: the other takes the browsers after
    one short wait (not one wait for each), rather than leaving them to the stuck one."""
    import time as clock

    from agent_memory.web._accept import DEFER_S

    loaded = server.worker()
    server.connect(3, pause=0.01)
    assert _wait_for(lambda: len(loaded.transports) == 3)
    stuck = server.worker()
    stuck.stall(0.8)
    clock.sleep(0.05)
    started = clock.monotonic()
    server.connect(5)
    assert _wait_for(lambda: len(loaded.transports) == 8, seconds=0.6)
    assert clock.monotonic() - started < DEFER_S + 0.06 and not stuck.transports  # one wait: 5 took 100 ms


def test_a_burst_is_accepted_at_once_and_shared(server: _Server) -> None:
    """40 browsers at once on two awake workers: all accepted within a short time (two workers each
    waiting the other out took about 200 ms) and shared about evenly."""
    import time as clock

    workers = [server.worker(), server.worker()]
    clock.sleep(0.05)
    started = clock.monotonic()
    server.connect(40)
    assert _wait_for(lambda: sum(len(w.transports) for w in workers) == 40, seconds=2)
    took = clock.monotonic() - started
    split = sorted(len(w.transports) for w in workers)
    assert took < 0.1 and split[0] >= 15, (took, split)


def _crowded(worker: _Worker) -> bool:
    async def ask() -> bool:
        return worker.loop.crowded()

    return asyncio.run_coroutine_threadsafe(ask(), worker.loop).result(5)


def test_a_worker_holding_more_than_one_over_another_is_crowded(server: _Server) -> None:
    busy = server.worker()
    server.connect(6, pause=0.01)
    assert _wait_for(lambda: len(busy.transports) == 6)
    assert not _crowded(busy)  # alone: nowhere to send a browser
    idle = server.worker()
    assert _wait_for(lambda: _crowded(busy), seconds=2)  # 6 against 0
    assert not _crowded(idle)
    server.connect(2, pause=0.01)  # new browsers go to the idle one: 6 against 2 is still crowded
    assert _wait_for(lambda: len(idle.transports) == 2) and _crowded(busy)
    server.connect(3, pause=0.01)  # 6 against 5: level enough
    assert _wait_for(lambda: len(idle.transports) == 5)
    assert _wait_for(lambda: not _crowded(busy), seconds=2)


@pytest.mark.parametrize("crowded", [False, True])
def test_a_crowded_workers_responses_close_the_browsers_connection(crowded: bool) -> None:
    """Through uvicorn: a crowded worker's response carries ``Connection: close`` and the connection
    ends after it (the browser's next request connects anew); otherwise the connection stays."""
    import http.client
    import threading

    import uvicorn
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    from agent_memory.web._accept import ShareOutMiddleware

    app = Starlette(routes=[Route("/", lambda request: PlainTextResponse("ok"))])
    listening = _listening()
    port = listening.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(ShareOutMiddleware(app, crowded=lambda: crowded), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listening]}, daemon=True)
    thread.start()
    try:
        assert _wait_for(lambda: server.started)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        conn.request("GET", "/")
        first = conn.getresponse()
        assert first.read() == b"ok" and first.status == 200
        assert (first.getheader("connection") == "close") is crowded
        sock = conn.sock
        assert (sock is None) is crowded  # told to close, the client dropped the connection
        conn.request("GET", "/")  # and connects anew for the next request
        again = conn.getresponse()
        assert again.read() == b"ok" and again.status == 200
        assert crowded or conn.sock is sock  # otherwise the same connection carried it
        conn.close()
    finally:
        server.should_exit = True
        thread.join(10)
        listening.close()
