"""OpenTelemetry spans of the library: every recall, search, archiving run, web request and MCP tool call.

The spans come from the tracer ``agent_memory`` of the application's tracer provider (none set up: they
cost next to nothing), inside the current span, so a recall nests under AutoGen's ``invoke_agent``
span of the turn. What a span may carry is one rule, in :func:`span`: numbers, booleans and names the
library chooses; no user id, no memory or message text, unless :func:`record_content` (the
``MEMORY_TELEMETRY_CONTENT`` setting) asks for the text too.

>>> with span("agent_memory.example", {"agent_memory.example.count": 3}) as traced:
...     traced.set("agent_memory.example.found", True)
"""

from ._spans import (
    CONTENT_LIMIT,
    FORMATION_SPAN,
    LABELS,
    MCP_SPAN,
    RECALL_SPAN,
    SEARCH_SPAN,
    TRACER_NAME,
    WEB_SPAN,
    MemorySpan,
    TracedRequests,
    content_recorded,
    note,
    record_content,
    span,
)

__all__ = [
    "CONTENT_LIMIT",
    "FORMATION_SPAN",
    "LABELS",
    "MCP_SPAN",
    "RECALL_SPAN",
    "SEARCH_SPAN",
    "TRACER_NAME",
    "WEB_SPAN",
    "MemorySpan",
    "TracedRequests",
    "content_recorded",
    "note",
    "record_content",
    "span",
]
