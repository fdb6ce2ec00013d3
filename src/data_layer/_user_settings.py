"""Per-user settings stored in ``system_settings``: memory recall and chat.

They are validated on every read and write, so a bad value can neither be stored nor loaded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


@dataclass(frozen=True, slots=True)
class Bound:
    """A setting's default and range (``ge``/``gt`` below, ``le`` above; ``None``: open), stated once
    for every model that holds the setting (the stored user settings, the environment's settings, the
    options of a ``MemoryContext``)."""

    default: float
    ge: float | None = None
    gt: float | None = None
    le: float | None = None

    def field(self, **extra: Any) -> Any:
        """A pydantic ``Field`` with this default and range (``extra``: description and the like)."""
        return Field(self.default, ge=self.ge, gt=self.gt, le=self.le, **extra)


#: The per-user recall settings' defaults and ranges (the environment's ``MEMORY_RECALL_*`` defaults too).
RECALL_BOUNDS: dict[str, Bound] = {
    "rounds": Bound(3, ge=1, le=5),
    "profile_top_k": Bound(5, ge=1, le=10),
    "event_top_k": Bound(5, ge=1, le=10),
    "similarity_threshold": Bound(0.5, ge=0.0, le=1.0),
}


class MemoryRecallSettings(BaseModel):
    """记忆设置: how and whether memories are recalled.

    >>> MemoryRecallSettings(rounds=2).rounds
    2
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = Field(True, description="Recall memories before every reply")
    rounds: int = RECALL_BOUNDS["rounds"].field(description="Most search rounds the recall agent runs")
    profile_top_k: int = RECALL_BOUNDS["profile_top_k"].field(description="Most profile memories per recall")
    event_top_k: int = RECALL_BOUNDS["event_top_k"].field(description="Most event memories per recall")
    similarity_threshold: float = RECALL_BOUNDS["similarity_threshold"].field(description="Lowest relevance kept")


class ChatSettings(BaseModel):
    """聊天设置: how the chat shows what the agent does."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    show_tool_calls: bool = Field(False, description="Show tool calls (recall included) in the chat UI")
    show_thinking: bool = Field(False, description="Show the model's thinking (<think> content)")


class UserSettings(BaseModel):
    """All per-user settings. Unknown keys are refused."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    memory: MemoryRecallSettings = Field(default_factory=MemoryRecallSettings)
    chat: ChatSettings = Field(default_factory=ChatSettings)
