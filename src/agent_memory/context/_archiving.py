"""Big tool results leave the window as they arrive: each is archived and kept as its placeholder."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from autogen_core.models import AssistantMessage, FunctionExecutionResultMessage, LLMMessage

from ..recall import RecallErrorEvent
from ..tool_archive import LOAD_TOOL, ToolResultManager

logger = logging.getLogger(__name__)


async def archive_results(
    archive: ToolResultManager,
    message: FunctionExecutionResultMessage,
    recent: Sequence[LLMMessage],
    *,
    emit: Callable[[Any], Awaitable[None]],
) -> FunctionExecutionResultMessage:
    """``message`` with every result over the archive threshold replaced by its placeholder; the
    calls in ``recent`` give each result's tool input. A result that cannot be archived stays whole."""
    calls = {
        c.id: c for m in recent if isinstance(m, AssistantMessage) and isinstance(m.content, list) for c in m.content
    }
    results = []
    for r in message.content:
        if r.name == LOAD_TOOL or len(r.content) <= archive.threshold:
            results.append(r)
            continue
        call = calls.get(r.call_id)
        try:
            arguments = json.loads(call.arguments) if call and call.arguments else {}
        except ValueError:
            arguments = {}
        try:
            text = await archive.process_tool_result(
                r.name, arguments if isinstance(arguments, dict) else {}, r.content
            )
        except Exception as exc:  # keep the full result rather than lose it
            logger.warning("archiving a tool result failed", exc_info=True)
            await emit(
                RecallErrorEvent(
                    source="memory_context", content=f"archiving failed: {exc}", error_type=type(exc).__name__
                )
            )
            text = r.content
        results.append(r.model_copy(update={"content": text}))
    return FunctionExecutionResultMessage(content=results)
