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


class MemoryForgottenEvent(BaseAgentEvent):
    """The user asked to forget something and it was forgotten: ``content`` says what and how much,
    ``forgetting_key`` undoes it (``MemorySystem.unforget``, ``agent-memory memory unforget``)."""

    content: str
    subject: str
    forgetting_key: str
    memory_keys: list[str]
    message_ids: list[int]
    type: Literal["MemoryForgottenEvent"] = "MemoryForgottenEvent"

    def to_text(self) -> str:
        return self.content


class MemoryNotForgottenEvent(BaseAgentEvent):
    """The user asked to forget something so broad that it matched most of the memories (``matches`` of
    ``total``, "用户", "the user"): nothing was set aside; ``content`` asks the user to name it precisely."""

    content: str
    subject: str
    matches: int
    total: int
    type: Literal["MemoryNotForgottenEvent"] = "MemoryNotForgottenEvent"

    def to_text(self) -> str:
        return self.content


class MemoryUnforgottenEvent(BaseAgentEvent):
    """The user took back a request to forget (in the chat, right after it): what it set aside is back."""

    content: str
    subject: str
    forgetting_key: str
    memory_keys: list[str]
    type: Literal["MemoryUnforgottenEvent"] = "MemoryUnforgottenEvent"

    def to_text(self) -> str:
        return self.content


async def merge_streams(main: AsyncIterator[Any], queue: asyncio.Queue[Any]) -> AsyncIterator[Any]:
    """Yield the recall events from ``queue`` and the items of ``main`` (an agent's ``run_stream``) in
    the order they arrive; ends when ``main`` ends and the queue is drained.

    ``main`` is read by one task for its whole life (a generator resumed from a new task each time
    loses its context: OpenTelemetry spans opened in it fail to close), and ``queue`` by another.
    """
    merged: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()

    async def pump_main() -> None:
        try:
            async for item in main:
                while not queue.empty():  # events raised before this item come first
                    merged.put_nowait(("event", queue.get_nowait()))
                merged.put_nowait(("item", item))
        except Exception as exc:  # re-raised in the consumer
            merged.put_nowait(("error", exc))
        else:
            merged.put_nowait(("end", None))

    async def pump_events() -> None:
        while True:
            merged.put_nowait(("event", await queue.get()))

    main_task = asyncio.create_task(pump_main())
    event_task = asyncio.create_task(pump_events())
    try:
        while True:
            kind, value = await merged.get()
            if kind == "error":
                raise value
            if kind == "end":
                break
            yield value
        event_task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await event_task
        while not merged.empty():
            yield merged.get_nowait()[1]
        while not queue.empty():
            yield queue.get_nowait()
    finally:
        for task in (main_task, event_task):
            task.cancel()
