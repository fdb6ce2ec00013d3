"""The event loop of ``serve --workers N``: a worker takes one waiting connection each time it looks at
the shared socket, so the workers take turns rather than the first awake taking every browser."""

from __future__ import annotations

import asyncio
import socket

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
            loop._accept_connection(Kept, Counting(), backlog=64)  # type: ignore[attr-defined]
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
