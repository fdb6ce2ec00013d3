"""Per-user settings stored in ``system_settings`` (seed 001 section 5): memory recall and chat.

They are validated on every read and write, so a bad value can neither be stored nor loaded.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class MemoryRecallSettings(BaseModel):
    """Seed 001 section 5.1, 记忆设置.

    >>> MemoryRecallSettings(rounds=2).rounds
    2
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = Field(True, description="Recall memories before every reply")
    rounds: int = Field(3, ge=1, le=5, description="Most search rounds the recall agent runs")
    profile_top_k: int = Field(5, ge=1, le=10, description="Most profile memories per recall")
    event_top_k: int = Field(5, ge=1, le=10, description="Most event memories per recall")
    similarity_threshold: float = Field(0.5, ge=0.0, le=1.0, description="Lowest relevance kept")


class ChatSettings(BaseModel):
    """Seed 001 section 5.2, 聊天设置."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    show_tool_calls: bool = Field(False, description="Show tool calls (recall included) in the chat UI")
    show_thinking: bool = Field(False, description="Show the model's thinking (<think> content)")


class UserSettings(BaseModel):
    """All per-user settings. Unknown keys are refused."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    memory: MemoryRecallSettings = Field(default_factory=MemoryRecallSettings)
    chat: ChatSettings = Field(default_factory=ChatSettings)
