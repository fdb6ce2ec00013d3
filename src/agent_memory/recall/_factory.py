"""Build a :class:`MemoryContext` from :class:`AgentMemorySettings`.

>>> context = memory_context(layer, user_id="u1", friend_id="mentor")  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
from typing import Any

from data_layer import AgentFusionDataLayer

from ..archive import ToolResultManager
from ..search import HybridMemorySearch
from ..settings import AgentMemorySettings, get_settings
from ._context import MemoryContext


def memory_context(
    layer: AgentFusionDataLayer,
    *,
    user_id: str | int,
    friend_id: str | int | None = None,
    thread_id: str | int | None = None,
    search: HybridMemorySearch | None = None,
    events: asyncio.Queue[Any] | None = None,
    archive: ToolResultManager | None = None,
    settings: AgentMemorySettings | None = None,
) -> MemoryContext:
    """A MemoryContext with the ``MEMORY_RECALL_*`` settings (window, iterations, time and token
    budgets, injection mode, recall model client); ``archive`` archives big tool results."""
    s = settings or get_settings()
    return MemoryContext(
        layer=layer,
        search=search,
        user_id=user_id,
        friend_id=friend_id,
        thread_id=thread_id,
        model_client=s.recall_model_client(),
        window_size=s.memory_recall_window_size,
        max_iterations=s.memory_recall_max_iterations,
        time_budget_s=s.memory_recall_time_budget_s,
        token_budget=s.memory_recall_token_budget,
        injection=s.memory_recall_injection,
        events=events,
        archive=archive,
    )
