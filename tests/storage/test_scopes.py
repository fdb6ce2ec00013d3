"""Every entry point bound to a scope refuses a bad user or friend id at once, with the data layer's
rules, and the visibility rule is the one of :class:`Scope`."""

from __future__ import annotations

from types import SimpleNamespace as Row
from typing import Any

import numpy as np
import pytest
from sqlalchemy import select

from agent_memory.tool_archive import ToolResultManager
from agent_memory.tools import MemoryToolbox
from data_layer import AgentFusionDataLayer, InvalidInputError, Scope
from data_layer._tables import AgentMemoryTable
from scripted import engine as make_engine

BAD_IDS = [
    ({"user_id": ""}, "user_id must be a non-empty id"),
    ({"user_id": 1.5}, "user_id must be a str or int id"),
    ({"user_id": True}, "user_id must be a str or int id"),
    ({"user_id": "u1", "friend_id": "a\nb"}, "friend_id must not contain control characters"),
    ({"user_id": "u" * 300}, "user_id is 300 characters long"),
]


@pytest.mark.parametrize(("kwargs", "message"), BAD_IDS)
async def test_scope_ids_are_checked(system: Any, kwargs: dict[str, Any], message: str) -> None:
    makers = [
        lambda: Scope.of(**kwargs),
        lambda: system.context(**kwargs),
        lambda: system.executor(**kwargs),
        lambda: system.recall_agent(system.scope(**kwargs)),
        lambda: ToolResultManager(
            system.layer, **{k.replace("friend_id", "conversation_id"): v for k, v in kwargs.items()}
        ),
    ]
    for make in makers:
        with pytest.raises(InvalidInputError, match=message.replace("friend_id", "(friend|conversation)_id")):
            make()


def test_tools_take_only_a_validated_scope(layer: AgentFusionDataLayer) -> None:
    with pytest.raises(TypeError, match=r"Scope\.of"):
        MemoryToolbox(make_engine(layer.memory), scope=("u1", "mentor"))


ROWS = [("u1", None), ("u1", "mentor"), ("u1", "xiaozhu"), ("u2", None), ("u2", "mentor")]


@pytest.mark.parametrize(
    "scope",
    [
        Scope.of("u1"),
        Scope.of("u1", "mentor"),
        Scope.of("u1", "mentor", include_shared=False),
        Scope.of("u2", "xiaozhu"),
    ],
)
async def test_the_rule_is_the_same_for_records_sql_and_the_index(layer: AgentFusionDataLayer, scope: Scope) -> None:
    for n, (user, friend) in enumerate(ROWS):
        await layer.memory.add(user_id=user, memory_key=f"k{n}", content=f"记忆 {n}", friend_id=friend, shared=True)
    rows = [Row(user_id=user, friend_id=friend) for user, friend in ROWS]
    expected = {f"k{n}" for n, row in enumerate(rows) if scope.sees_record(row)}
    async with layer.db.read() as session:
        clause = scope.memory_clause(AgentMemoryTable.user_id, AgentMemoryTable.friend_id)
        by_sql = set(await session.scalars(select(AgentMemoryTable.memory_key).where(clause)))
    assert by_sql == expected
    own = [(n, friend) for n, (user, friend) in enumerate(ROWS) if user == scope.user_id]
    mask = scope.friend_mask(np.array([friend for _, friend in own], dtype=object))
    assert {f"k{n}" for (n, _), keep in zip(own, mask, strict=True) if keep} == expected
    if scope.friend_id == "mentor" and scope.include_shared:
        assert expected == {"k0", "k1"}  # the shared profile and its own event, never xiaozhu's


async def test_an_event_names_its_friend_unless_shared_on_purpose(layer: AgentFusionDataLayer) -> None:
    with pytest.raises(InvalidInputError, match="event memory without friend_id"):
        await layer.memory.add(user_id="u1", memory_key="ev", content="周五汇报", memory_type="event")
    assert await layer.memory.retrieve_memory(memory_key="ev", user_id="u1") is None
    shared = await layer.memory.add(user_id="u1", memory_key="ev", content="周五汇报", memory_type="event", shared=True)
    assert shared.friend_id is None
    owned = await layer.memory.add(
        user_id="u1", memory_key="ev2", content="周五汇报", memory_type="event", friend_id="mentor"
    )
    assert owned.friend_id == "mentor"


@pytest.mark.parametrize("content", ["", "   ", "\n\t"])
async def test_empty_memories_are_refused(layer: AgentFusionDataLayer, content: str) -> None:
    with pytest.raises(InvalidInputError, match="content is empty"):
        await layer.memory.add(user_id="u1", memory_key="blank", content=content)
    assert await layer.memory.count(user_id="u1") == 0
