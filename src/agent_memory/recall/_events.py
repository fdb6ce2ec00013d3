"""Recall events for a UI, as AutoGen event objects, and a merge with the main agent's stream.

The recall agent's own events (``ToolCallRequestEvent``, ``ToolCallExecutionEvent``,
``HandoffMessage``) are passed through unchanged; these add the recall's start, window expansion,
end, time-out and error.

>>> queue: asyncio.Queue = asyncio.Queue()  # doctest: +SKIP
>>> async for event in merge_streams(agent.run_stream(task="你好"), queue):  # doctest: +SKIP
...     print(type(event).__name__)
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any, Literal

from autogen_agentchat.messages import BaseAgentEvent


class RecallStartedEvent(BaseAgentEvent):
    """Recall began for a user turn."""

    content: str
    window_size: int
    type: Literal["RecallStartedEvent"] = "RecallStartedEvent"

    def to_text(self) -> str:
        return f"recall started (window {self.window_size}): {self.content}"


class WindowExpandedEvent(BaseAgentEvent):
    """The recall agent asked for more history; the next iteration starts with ``new_size`` messages."""

    new_size: int
    iteration: int
    content: str = ""
    type: Literal["WindowExpandedEvent"] = "WindowExpandedEvent"

    def to_text(self) -> str:
        return f"window expanded to {self.new_size} messages (iteration {self.iteration})"


class RecallFinishedEvent(BaseAgentEvent):
    """Recall ended; ``content`` is the block the main model receives (empty when nothing was found)."""

    content: str
    memory_keys: list[str]
    confidence: float
    iterations: int
    elapsed_ms: float
    type: Literal["RecallFinishedEvent"] = "RecallFinishedEvent"

    def to_text(self) -> str:
        return f"recall finished: {len(self.memory_keys)} memories, {self.elapsed_ms:.0f} ms"


class RecallTimeoutEvent(BaseAgentEvent):
    """Recall ran out of its time budget; the reply goes on without memories."""

    budget_s: float
    content: str = ""
    type: Literal["RecallTimeoutEvent"] = "RecallTimeoutEvent"

    def to_text(self) -> str:
        return f"recall timed out after {self.budget_s:g} s; replying without memories"


class RecallErrorEvent(BaseAgentEvent):
    """Recall (or saving a message) failed; the reply goes on without memories."""

    content: str
    error_type: str
    type: Literal["RecallErrorEvent"] = "RecallErrorEvent"

    def to_text(self) -> str:
        return f"recall error ({self.error_type}): {self.content}"


async def merge_streams(main: AsyncIterator[Any], queue: asyncio.Queue[Any]) -> AsyncIterator[Any]:
    """Yield the recall events from ``queue`` and the items of ``main`` (an agent's ``run_stream``) in
    the order they arrive; ends when ``main`` ends and the queue is drained."""
    main_next: asyncio.Task[Any] | None = asyncio.ensure_future(anext(main))
    try:
        while main_next is not None:
            queue_next = asyncio.ensure_future(queue.get())
            done, _ = await asyncio.wait({main_next, queue_next}, return_when=asyncio.FIRST_COMPLETED)
            if queue_next in done:
                yield queue_next.result()
            else:
                queue_next.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await queue_next
            if main_next in done:
                try:
                    item = main_next.result()
                except StopAsyncIteration:
                    main_next = None
                    continue
                while not queue.empty():  # events raised before this item come first
                    yield queue.get_nowait()
                yield item
                main_next = asyncio.ensure_future(anext(main))
        while not queue.empty():
            yield queue.get_nowait()
    finally:
        if main_next is not None:
            main_next.cancel()
