"""The span helper and its one rule for attributes (see the package docs)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, Status, StatusCode

#: The instrumentation scope of every span of the library.
TRACER_NAME = "agent_memory"
#: The library's spans: one recall (MemRecallAgent), one search of the recall's or an agent's tools,
#: one archiving run (sessions into memories), one web chat request, one MCP tool call.
RECALL_SPAN = "agent_memory.recall"
SEARCH_SPAN = "agent_memory.search"
FORMATION_SPAN = "agent_memory.formation"
WEB_SPAN = "agent_memory.web.request"
MCP_SPAN = "agent_memory.mcp.tool"
#: The attributes whose value may be a string: names the library itself chooses (a search mode, a tool,
#: a route template, an HTTP method), never text a person or a model wrote, nor an id.
LABELS = frozenset(
    {
        "agent_memory.search.mode",
        "agent_memory.mcp.tool",
        "http.request.method",
        "http.route",
        "error.type",
    }
)
#: The most characters of one text a span carries when content is recorded.
CONTENT_LIMIT = 2000
#: The most texts of one list attribute when content is recorded.
_CONTENT_ITEMS = 20

Attribute = bool | int | float | str
_tracer = trace.get_tracer(TRACER_NAME)
_content = False
#: The library's span open in this task (innermost), for :func:`note`.
_open: ContextVar[tuple[str, MemorySpan] | None] = ContextVar("agent_memory_span", default=None)


def record_content(enabled: bool) -> None:
    """Whether spans also carry text (queries, messages, what searches found): process-wide, like the
    tracer provider; :class:`~agent_memory.system.MemorySystem` sets it from ``MEMORY_TELEMETRY_CONTENT``."""
    global _content
    if not isinstance(enabled, bool):
        raise TypeError(f"record_content takes True or False, not {enabled!r}")
    _content = enabled


def content_recorded() -> bool:
    """Whether spans carry text (see :func:`record_content`)."""
    return _content


class MemorySpan:
    """One of the library's spans, open: attributes go through :meth:`set` (the rule) or :meth:`content`."""

    __slots__ = ("_span",)

    def __init__(self, span: Span) -> None:
        self._span = span

    @property
    def recording(self) -> bool:
        """Whether the span is recorded (an application set up an SDK that samples it): work done only
        for a span's attributes can be skipped when it is not."""
        return self._span.is_recording()

    def set(self, key: str, value: Attribute) -> None:
        """Set a number, a boolean or (for a key in :data:`LABELS`) a name; anything else is refused,
        so no text reaches a span by mistake."""
        self._span.set_attribute(key, _checked(key, value))

    def set_many(self, attributes: Mapping[str, Attribute]) -> None:
        """:meth:`set` each of ``attributes``."""
        for key, value in attributes.items():
            self.set(key, value)

    def content(self, key: str, text: str | Sequence[str]) -> None:
        """Set a text (or texts) only when content is recorded (:func:`record_content`), cut to
        :data:`CONTENT_LIMIT` characters each."""
        if not _content or not self._span.is_recording():
            return
        if isinstance(text, str):
            self._span.set_attribute(key, text[:CONTENT_LIMIT])
        else:
            self._span.set_attribute(key, [str(t)[:CONTENT_LIMIT] for t in list(text)[:_CONTENT_ITEMS]])


def _checked(key: str, value: object) -> Attribute:
    if isinstance(value, bool | int | float):
        return value
    if isinstance(value, str) and key in LABELS:
        return value[:100]
    raise TypeError(
        f"span attribute {key!r} takes a number or a boolean, not {type(value).__name__}: "
        "text goes through MemorySpan.content, names the library chooses are listed in LABELS"
    )


@contextmanager
def span(name: str, attributes: Mapping[str, Attribute] | None = None) -> Iterator[MemorySpan]:
    """A span named ``name`` inside the current one, current while the block runs.

    An exception leaves its type (``error.type``) and an error status, never its message (messages
    can quote what a person wrote); a cancelled block (a time budget ran out) is marked
    ``agent_memory.cancelled``.
    """
    with _tracer.start_as_current_span(name, record_exception=False, set_status_on_exception=False) as raw:
        traced = MemorySpan(raw)
        if attributes:
            traced.set_many(attributes)
        token = _open.set((name, traced))
        try:
            yield traced
        except asyncio.CancelledError:
            raw.set_attribute("agent_memory.cancelled", True)
            raise
        except BaseException as exc:
            raw.set_attribute("error.type", type(exc).__name__)
            raw.set_status(Status(StatusCode.ERROR))
            raise
        finally:
            _open.reset(token)


def note(name: str, attributes: Mapping[str, Attribute]) -> None:
    """Add ``attributes`` to the innermost open span of the library when it is a ``name`` span (a stage
    deep inside a search tells its span how many candidates it had); nothing otherwise."""
    current = _open.get()
    if current is not None and current[0] == name:
        current[1].set_many(attributes)


class TracedRequests:
    """ASGI middleware: one span per HTTP request (``name``), with its method, route template (e.g.
    ``/api/friends/{friend_id}/chat``, never the path itself, which holds ids) and status code. A
    streamed response's span lasts until its last byte."""

    def __init__(self, app: Any, *, name: str) -> None:
        self.app = app
        self.name = name

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        method = str(scope.get("method", ""))
        status: list[int] = []

        async def send_status(message: Mapping[str, Any]) -> None:
            if message.get("type") == "http.response.start":
                status.append(int(message.get("status", 0)))
            await send(message)

        with span(self.name, {"http.request.method": method if method.isalpha() else "OTHER"}) as traced:
            try:
                await self.app(scope, receive, send_status)
            finally:
                route = getattr(scope.get("route"), "path", None)
                if isinstance(route, str):
                    traced.set("http.route", route)
                if status:
                    traced.set("http.response.status_code", status[0])
