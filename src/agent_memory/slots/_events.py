"""Events of a code run for a UI, as AutoGen event objects (like the recall events).

The agent's ``run_code`` tool puts them on the builder's ``events`` queue as the run goes:
:class:`CodeRunStartedEvent`, then a :class:`CodeRunOutputEvent` for each piece of printed output
(every 0.1 s at most), then :class:`CodeRunFinishedEvent`.
"""

from __future__ import annotations

from typing import Literal

from autogen_agentchat.messages import BaseAgentEvent


class CodeRunStartedEvent(BaseAgentEvent):
    """A run began; ``content`` is the code (placeholders still in it)."""

    content: str
    mode: str
    memory_refs: list[str]
    isolated: bool
    type: Literal["CodeRunStartedEvent"] = "CodeRunStartedEvent"

    def to_text(self) -> str:
        refs = f" with {', '.join(self.memory_refs)}" if self.memory_refs else ""
        return f"code run started ({self.mode}{refs}, {'isolated' if self.isolated else 'NOT isolated'})"


class CodeRunOutputEvent(BaseAgentEvent):
    """A piece of the run's standard output, as it was printed."""

    content: str
    type: Literal["CodeRunOutputEvent"] = "CodeRunOutputEvent"

    def to_text(self) -> str:
        return self.content


class CodeRunFinishedEvent(BaseAgentEvent):
    """The run ended (or was refused before it started: ``duration_ms`` 0)."""

    content: str
    success: bool
    error: str | None = None
    timed_out: bool = False
    duration_ms: float = 0.0
    memory_key: str | None = None
    type: Literal["CodeRunFinishedEvent"] = "CodeRunFinishedEvent"

    def to_text(self) -> str:
        state = "succeeded" if self.success else f"failed: {self.error}"
        return f"code run {state} ({self.duration_ms:.0f} ms)"
