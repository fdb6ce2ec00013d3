"""Every entry point bound to a scope refuses a bad user or friend id at once, with the data layer's rules."""

from __future__ import annotations

from typing import Any

import pytest

from agent_memory.archive import ToolResultManager
from agent_memory.recall import MemoryContext, MemRecallAgent
from agent_memory.search import HybridMemorySearch
from agent_memory.slots import CommandExecutor
from agent_memory.tools import MemoryToolbox
from data_layer import AgentFusionDataLayer, InvalidInputError


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"user_id": ""}, "user_id must be a non-empty id"),
        ({"user_id": 1.5}, "user_id must be a str or int id"),
        ({"user_id": True}, "user_id must be a str or int id"),
        ({"user_id": "u1", "friend_id": "a\nb"}, "friend_id must not contain control characters"),
        ({"user_id": "u" * 300}, "user_id is 300 characters long"),
    ],
)
async def test_scope_ids_are_checked(layer: AgentFusionDataLayer, kwargs: dict[str, Any], message: str) -> None:
    search = HybridMemorySearch(layer.memory)
    makers = [
        lambda: MemoryToolbox(search, **kwargs),
        lambda: MemRecallAgent(search, **kwargs),
        lambda: MemoryContext(layer=layer, search=search, **kwargs),
        lambda: CommandExecutor(layer, **kwargs),
        lambda: ToolResultManager(layer, **{k.replace("friend_id", "conversation_id"): v for k, v in kwargs.items()}),
    ]
    for make in makers:
        with pytest.raises(InvalidInputError, match=message.replace("friend_id", "(friend|conversation)_id")):
            make()
