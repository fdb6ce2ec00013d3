"""Forgetting beyond the main loop, on both backends: crash safety (the record and the setting aside
commit together), the recall's window over the stored chat, the chat-level undo, and MCP's tools."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from autogen_agentchat.agents import AssistantAgent

from agent_memory.system import MemorySystem
from data_layer import NewMessage
from scripted import replay

EX = "我前任叫林小美，我们去年分手了"


def _drain(queue: asyncio.Queue[Any]) -> list[Any]:
    items = []
    while not queue.empty():
        items.append(queue.get_nowait())
    return items


async def _general(system: MemorySystem, user: str) -> list[Any]:
    page = await system.layer.memory.list_memories(user_id=user, memory_types=["general"], include_inactive=True,
                                                   limit=100)  # fmt: skip
    return page.items


# -- crash safety ------------------------------------------------------------------------------------


async def test_a_forgetting_that_fails_midway_leaves_no_record_and_nothing_forgotten(
    system: MemorySystem, monkeypatch: pytest.MonkeyPatch
) -> None:
    layer = system.layer
    await layer.memory.add(user_id="u1", memory_key="ex", memory_type="profile", content=EX)
    await layer.messages.append(user_id="u1", role="user", content=EX, friend_id="xiaozhu")
    import data_layer._memory_repo as repo

    real_update = repo.update
    calls = {"n": 0}

    def failing_update(*args: Any, **kwargs: Any) -> Any:  # the setting aside, after the record is written
        calls["n"] += 1
        raise RuntimeError("the database went away")

    monkeypatch.setattr(repo, "update", failing_update)
    with pytest.raises(RuntimeError, match="went away"):
        await system.forget(system.scope("u1", "xiaozhu"), "前任")
    assert calls["n"] >= 1  # it failed in the second step, not before
    monkeypatch.setattr(repo, "update", real_update)

    assert await system.forgettings("u1") == []
    assert not any(r.memory_key.startswith("forgetting-") for r in await _general(system, "u1"))
    kept = await layer.memory.retrieve_memory(memory_key="ex", user_id="u1", touch=False)
    assert kept is not None and "forgotten" not in kept.metadata
    hits = await system.search.search("前任", user_id="u1", friend_id="xiaozhu", limit=10)
    assert [h.memory_key for h in hits] == ["ex"]  # no active "forgetting: 前任" record is searched

    done = await system.forget(system.scope("u1", "xiaozhu"), "前任")  # asked again, it is carried out
    assert "ex" in done.memory_keys
    [record] = [r for r in await _general(system, "u1") if r.memory_key == done.key]
    assert not record.is_active
    assert await layer.memory.retrieve_memory(memory_key="ex", user_id="u1", touch=False) is None
