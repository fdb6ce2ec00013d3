"""The event loop of a worker process of ``agent-memory serve --workers N``: one connection per accept.

The workers share one listening socket. asyncio's loop accepts every waiting connection at once
(up to the listen backlog) each time the socket is ready, so when 50 browsers connect together one
worker takes most of them, and since a browser keeps its connection, that worker serves most of the
chats for as long as they last (measured: 35 and 15 of 50 connections). Accepting one connection per
readiness, as nginx does by default (``multi_accept off``), lets the workers take turns: a worker
busy with its chats comes back to the socket later and so takes fewer.

It is asyncio's own selector loop with that one change (uvloop, when installed, is not used by the
workers): the method it narrows, ``_accept_connection``, is asyncio's own (the backlog its fifth
parameter, as read in Python 3.11's ``selector_events``); its retry after a resource error goes through
the same method, so it stays narrowed.

>>> uvicorn.run(app, workers=2, loop="agent_memory.web._accept:OneAcceptLoop")  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import socket
from typing import Any


class OneAcceptLoop(asyncio.SelectorEventLoop):
    """A selector event loop that accepts at most one connection each time a listening socket is ready
    (the listen backlog itself is unchanged: connections wait in the kernel, not refused)."""

    def _accept_connection(  # type: ignore[override]
        self,
        protocol_factory: Any,
        sock: socket.socket,
        sslcontext: Any = None,
        server: Any = None,
        backlog: int = 100,
        *args: Any,
    ) -> None:
        super()._accept_connection(protocol_factory, sock, sslcontext, server, 1, *args)  # type: ignore[misc]


__all__ = ["OneAcceptLoop"]
