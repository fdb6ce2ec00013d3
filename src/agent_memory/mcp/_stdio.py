"""The stdio channel of the MCP server: lines checked before the SDK reads them.

The SDK drops a line that is not a JSON-RPC message without answering it, so a client that sent a
broken request waits for its answer until its own time-out. Here such a line gets the JSON-RPC error
response it is owed (parse error -32700 for text that is not JSON, invalid request -32600 for JSON
that is not a JSON-RPC 2.0 message; the request's ``id`` when one can be read, else ``null``) saying
what to send instead. Both writers share one lock, so response lines never interleave.

>>> out = LockedLines(protocol_file)                  # doctest: +SKIP
>>> async with stdio_server(stdin=CheckedLines(stdin_file, out), stdout=out) as (read, write): ...  # doctest: +SKIP
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, AsyncIterator
from typing import Any

import anyio
from mcp import types
from pydantic import ValidationError

#: Longest part of a bad line quoted back in the error message.
QUOTE_CHARS = 80


class LockedLines:
    """An async text file whose ``write`` calls never interleave (one lock for every writer)."""

    def __init__(self, target: Any) -> None:
        self._target = target
        self._lock = anyio.Lock()

    async def write(self, text: str) -> None:
        async with self._lock:
            await self._target.write(text)

    async def flush(self) -> None:
        async with self._lock:
            await self._target.flush()

    async def write_line(self, text: str) -> None:
        """``text`` and a newline, flushed, in one turn of the lock."""
        async with self._lock:
            await self._target.write(text + "\n")
            await self._target.flush()


class CheckedLines:
    """The JSON-RPC messages among ``source``'s lines; every other non-blank line is answered on ``out``."""

    def __init__(self, source: AsyncIterable[str], out: LockedLines) -> None:
        self._source = source
        self._out = out

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        async for line in self._source:
            if not line.strip():
                continue  # a blank line is no message and owes no answer
            problem = bad_message(line)
            if problem is None:
                yield line
            else:
                await self._out.write_line(json.dumps(problem, ensure_ascii=False))


def bad_message(line: str) -> dict[str, Any] | None:
    """The JSON-RPC error response owed for ``line``, or ``None`` when it is a JSON-RPC message.

    The line is read as the SDK reads it (pydantic's JSON parser), so every line the SDK would drop
    is answered here: besides text that is not JSON, that parser refuses a lone surrogate escape
    (``"\\ud83d"``, what a client sends for an emoji cut in half) and nesting deeper than its limit,
    and Python's own parser fails with ``RecursionError`` on very deep nesting.

    >>> bad_message('{"jsonrpc": "2.0", "id": 1, "method": "ping"}') is None
    True
    >>> bad_message('{"id": 7, "method": "ping"}')["error"]["code"], bad_message("not json")["id"]
    (-32600, None)
    """
    try:
        line.encode("utf-8")
    except UnicodeEncodeError as exc:  # stdin keeps bytes that are not UTF-8 as lone surrogates
        byte = ord(line[exc.start]) - 0xDC00 if 0xDC80 <= ord(line[exc.start]) <= 0xDCFF else None
        where = f"byte 0x{byte:02x}" if byte is not None else repr(line[exc.start])
        what = f"not UTF-8 text ({where} at character {exc.start}): send UTF-8"
        return _error(_request_id(line), types.PARSE_ERROR, what)
    shown = line.strip()[:QUOTE_CHARS]
    try:
        message = types.JSONRPCMessage.model_validate_json(line)
    except ValidationError as exc:
        unreadable = next((e["msg"] for e in exc.errors() if e["type"] == "json_invalid"), None)
    except RecursionError:
        unreadable = "nested too deeply"
    else:
        # a notification carries no id: an "id" the SDK would not take (null, a fraction, true, an object)
        # made a request read as a notification, and its sender waited for an answer that never came
        if isinstance(message.root, types.JSONRPCNotification) and _id_member(line)[0]:
            return _error(None, types.INVALID_REQUEST, f'"id" must be a string or an integer: {shown!r}')
        return None
    request_id = _request_id(line)
    if unreadable is not None:
        return _error(request_id, types.PARSE_ERROR, f"not readable as JSON ({_why(unreadable)}): {shown!r}")
    return _error(request_id, types.INVALID_REQUEST, f"not a JSON-RPC 2.0 message: {shown!r}")


def _why(problem: str) -> str:
    """The parser's complaint, with what to do for the two that well-formed JSON can still meet."""
    what = problem.removeprefix("Invalid JSON: ")
    if "recursion" in what or "nested" in what:
        return f"{what}: nested too deeply, send flatter arguments"
    if "surrogate" in what or "hex escape" in what:
        return f"{what}: a lone surrogate escape such as \\ud83d (half an emoji), send whole characters"
    return what


def _id_member(line: str) -> tuple[bool, object]:
    """Whether ``line`` is a JSON object with an ``id`` member, and its value (Python's parser)."""
    try:
        data = json.loads(line)
    except (ValueError, RecursionError):
        return False, None
    return (True, data["id"]) if isinstance(data, dict) and "id" in data else (False, None)


def _request_id(line: str) -> str | int | None:
    """The ``id`` of ``line`` when it is one a client can match (a string or an integer)."""
    raw_id = _id_member(line)[1]
    return raw_id if isinstance(raw_id, str | int) and not isinstance(raw_id, bool) else None


def _error(request_id: str | int | None, code: int, what: str) -> dict[str, Any]:
    message = (
        f'{what}; send one JSON object per line with "jsonrpc": "2.0", a "method" and, for a request, '
        f'an "id" (see https://www.jsonrpc.org/specification)'
    )
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
