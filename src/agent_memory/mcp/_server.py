"""The MCP server: the tools of one user over stdio or streamable HTTP.

>>> async with MemorySystem.from_settings() as system:  # doctest: +SKIP
...     await serve_stdio(system, user_id="alice")         # until the client closes stdin

Built on the SDK's low-level ``Server`` rather than FastMCP so that the tool schemas are the
pydantic models' (ranges, enums, ``additionalProperties: false``) and every bad call is an
``isError`` result written by :class:`MemoryMcpTools`, not an SDK validation text.

Over HTTP the shared access rule of ``agent_memory.serving`` applies: a non-loopback bind needs a
token, and with a token every request must carry ``Authorization: Bearer TOKEN`` (else 401). A
loopback bind also checks the ``Host`` and ``Origin`` headers (DNS rebinding).
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from io import TextIOWrapper
from typing import TYPE_CHECKING, Any

import anyio
from mcp import types
from mcp.server.lowlevel import Server

from ..serving import check_bind, is_loopback, token_matches
from ._stdio import CheckedLines, LockedLines
from ._tools import MCP_TOOLS, McpToolError, MemoryMcpTools

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

    from ..system import MemorySystem

logger = logging.getLogger(__name__)

#: The path of the streamable HTTP endpoint.
MCP_PATH = "/mcp"
#: Largest HTTP request body (a memory holds at most 100 KB; JSON escapes can triple that).
MAX_BODY_BYTES = 2 * 1024 * 1024
#: A body with fewer brackets than this cannot be nested deeper than Python's parser goes (about 1,000
#: levels), so it is not parsed a second time to find out.
NESTING_CHECK = 900

INSTRUCTIONS = (
    "Long-term memory of one user (bound by the server). Call recall_memory with the user's message and "
    "the AI friend's friend_id before answering; search_memories / get_memory_detail look further; "
    "messages_list, lexical_search, semantic_search and neighbors read the chat messages as evidence; "
    "add_memory stores a new memory."
)


def build_server(tools: MemoryMcpTools) -> Server[Any, Any]:
    """A low-level MCP server exposing :data:`MCP_TOOLS` for the user of ``tools``."""
    from .. import __version__

    server: Server[Any, Any] = Server("agent-memory", version=__version__, instructions=INSTRUCTIONS)
    definitions = [
        types.Tool(
            name=t.name,
            description=t.description,
            inputSchema=t.input_schema(),
            outputSchema=t.output_schema(),
            annotations=types.ToolAnnotations(
                readOnlyHint=t.read_only, destructiveHint=t.destructive, openWorldHint=False
            ),
        )
        for t in MCP_TOOLS.values()
    ]

    @server.list_tools()
    async def _list_tools() -> list[types.Tool]:
        return definitions

    @server.call_tool(validate_input=False)  # MemoryMcpTools validates, with messages that say what to do
    async def _call_tool(name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        try:
            result = await tools.call(name, arguments)
        except McpToolError as exc:
            return types.CallToolResult(content=[types.TextContent(type="text", text=str(exc))], isError=True)
        text = json.dumps(result, ensure_ascii=False)  # the same data as structuredContent
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], structuredContent=result)

    return server


async def serve_stdio(system: MemorySystem, *, user_id: str | int) -> None:
    """Serve the tools of ``user_id`` on stdin/stdout until the client closes stdin.

    Standard output is the protocol channel: while serving, ``sys.stdout`` points at stderr, so a
    stray ``print`` cannot corrupt the stream. A line that is not a JSON-RPC message is answered
    with its JSON-RPC error (:mod:`._stdio`), not dropped.
    """
    from mcp.server.stdio import stdio_server

    tools = MemoryMcpTools(system, user_id=user_id)
    server = build_server(tools)
    protocol = LockedLines(anyio.wrap_file(TextIOWrapper(sys.stdout.buffer, encoding="utf-8")))
    # bytes that are not UTF-8 stay visible (as lone surrogates) so the line is answered, not stored as U+FFFD
    stdin = TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="surrogateescape")
    lines = CheckedLines(anyio.wrap_file(stdin), protocol)
    saved, sys.stdout = sys.stdout, sys.stderr
    try:
        # CheckedLines and LockedLines stand in for the anyio text files stdio_server reads and writes
        async with stdio_server(stdin=lines, stdout=protocol) as (read, write):  # type: ignore[arg-type]
            tools.start_warm_up(own_process=True)
            try:
                await server.run(read, write, server.create_initialization_options())
            finally:
                await tools.stop_warm_up()
    finally:
        sys.stdout = saved


class BearerTokenMiddleware:
    """ASGI middleware: with a token, a request without ``Authorization: Bearer TOKEN`` gets 401."""

    def __init__(self, app: ASGIApp, *, token: str) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self.token:
            header = next((v.decode("latin-1") for k, v in scope.get("headers", ()) if k == b"authorization"), None)
            if not token_matches(header, self.token):
                from starlette.responses import JSONResponse

                body = {"error": "unauthorized", "message": "send the header Authorization: Bearer MEMORY_SERVER_TOKEN"}
                response = JSONResponse(body, status_code=401, headers={"WWW-Authenticate": "Bearer"})
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


class CheckedBody:
    """ASGI middleware: a POST body that is not UTF-8, or JSON nested too deeply for Python's parser, gets
    the JSON-RPC parse error (HTTP 400) it is owed; the SDK answered both with a 500 and a traceback in
    the log. Any other body reaches the app unchanged (a body over the SDK's limit is the SDK's 413)."""

    def __init__(self, app: ASGIApp, *, max_bytes: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        messages: list[Message] = []
        size, more = 0, True
        while more and size <= self.max_bytes:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break
            size += len(message.get("body", b""))
            more = message.get("more_body", False)
        problem = None if more else _unreadable(b"".join(m.get("body", b"") for m in messages))
        if problem is not None:
            from starlette.responses import JSONResponse

            error = {"code": types.PARSE_ERROR, "message": f"{problem}; send one JSON-RPC message as UTF-8 JSON"}
            await JSONResponse({"jsonrpc": "2.0", "id": None, "error": error}, status_code=400)(scope, receive, send)
            return

        async def replay() -> Message:
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)


def _unreadable(body: bytes) -> str | None:
    """Why ``body`` cannot be read as JSON text at all (``None``: leave it to the SDK)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"the body is not UTF-8 text (byte 0x{body[exc.start]:02x} at {exc.start})"
    if text.count("[") + text.count("{") < NESTING_CHECK:
        return None  # too few brackets to be nested too deeply: the SDK's parse is the only one
    try:
        json.loads(text)
    except RecursionError:
        return "the body is nested too deeply"
    except ValueError:
        return None  # the SDK's own parse error, which it answers
    return None


class _Endpoint:
    """The session manager as an ASGI app (Starlette calls a class instance with the raw scope)."""

    def __init__(self, manager: Any) -> None:
        self.manager = manager

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.manager.handle_request(scope, receive, send)


def http_app(system: MemorySystem, *, user_id: str | int, host: str, token: str) -> ASGIApp:
    """The streamable HTTP app (endpoint :data:`MCP_PATH`) of ``user_id``'s tools, behind the access rule.

    Raises ``InvalidInputError`` for a non-loopback ``host`` without a ``token``.
    """
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.applications import Starlette
    from starlette.routing import Route

    check_bind(host, token=token)
    security = None
    if is_loopback(host):  # a browser page must not reach a loopback server through a rebound DNS name
        security = TransportSecuritySettings(
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
        )
    tools = MemoryMcpTools(system, user_id=user_id)
    manager = StreamableHTTPSessionManager(
        app=build_server(tools),
        security_settings=security,
        max_request_body_size=MAX_BODY_BYTES,
    )

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with manager.run():
            tools.start_warm_up(own_process=True)
            try:
                yield
            finally:
                await tools.stop_warm_up()

    app = Starlette(routes=[Route(MCP_PATH, endpoint=_Endpoint(manager))], lifespan=lifespan)
    return BearerTokenMiddleware(CheckedBody(app), token=token)


class ClientClosedStream(logging.Filter):
    """Drops the SDK's error record for a client that closed its notification stream (``GET /mcp``):
    every client does that when it disconnects, and the SDK logged it as an error with a traceback
    (``anyio.ClosedResourceError`` in its standalone SSE writer), so a normal session looked like a
    failure in the server's log. Any other error of the SDK is kept."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        closed = isinstance(exc, anyio.ClosedResourceError | anyio.BrokenResourceError)
        return not (closed and record.getMessage() == "Error in standalone SSE writer")


#: The SDK's logger of the streamable HTTP transport.
HTTP_TRANSPORT_LOGGER = "mcp.server.streamable_http"


async def serve_http(system: MemorySystem, *, user_id: str | int, host: str, port: int, token: str) -> None:
    """Serve ``user_id``'s tools at ``http://HOST:PORT/mcp`` until interrupted (SIGINT/SIGTERM)."""
    import uvicorn

    transport_log = logging.getLogger(HTTP_TRANSPORT_LOGGER)
    if not any(isinstance(f, ClientClosedStream) for f in transport_log.filters):
        transport_log.addFilter(ClientClosedStream())

    app = http_app(system, user_id=user_id, host=host, token=token)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on", access_log=False)
    await uvicorn.Server(config).serve()
