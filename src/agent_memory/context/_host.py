"""What a :class:`~agent_memory.context.MemoryContext` uses of the memory system it belongs to.

The context is built by the system (``MemorySystem.context``) and handed the system itself; it is
typed by this protocol, so the context depends on what it uses, not on the composition root above it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

from autogen_core.models import ChatCompletionClient

from data_layer import AgentFusionDataLayer, MemoryRecallSettings, Scope

from ..forgetting import Forgetting
from ..formation import SessionArchiver
from ..recall import MemRecallAgent
from ._options import RecallOptions


class MemoryHost(Protocol):
    """The memory system of a context: its data layer, recall, forgetting and session archiving."""

    @property
    def layer(self) -> AgentFusionDataLayer: ...

    @property
    def recall_options(self) -> RecallOptions: ...

    @property
    def recall_client(self) -> ChatCompletionClient | None: ...

    @property
    def session_archiver(self) -> SessionArchiver: ...

    @property
    def background_archiving(self) -> bool: ...

    @property
    def shareable_url(self) -> str: ...

    def recall_agent(
        self,
        scope: Scope,
        *,
        settings: MemoryRecallSettings | None = None,
        options: RecallOptions | None = None,
        on_event: Any = None,
        model_client: ChatCompletionClient | None = None,
        as_of: datetime | None = None,
        now: datetime | None = None,
    ) -> MemRecallAgent: ...

    async def forget(
        self,
        scope: Scope,
        subject: str,
        *,
        request_message_id: int | None = None,
        now: datetime | None = None,
        broad: bool = False,
    ) -> Forgetting: ...

    async def unforget(self, user_id: str | int, *, key: str | None = None) -> Forgetting: ...

    async def close(self) -> None: ...
