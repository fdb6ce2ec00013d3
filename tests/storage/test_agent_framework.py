"""The Agent Framework context provider under a real ``Agent`` with a scripted chat client: the recall
block of the user's memories reaches every model call of a run, and the turn is saved."""

from __future__ import annotations

from typing import Any

import pytest
from agent_framework import Agent, AgentSession, tool

import test_memory_context
from agent_memory.context import SLOT_HEADER, RecallOptions
from agent_memory.integrations.agent_framework import MemoryContextProvider
from agent_memory.system import MemorySystem
from data_layer import InvalidInputError
from scripted_agent_framework import ScriptedChatClient

#: The AutoGen tests' memories, the same fixture: mentor's work report, xiaozhu's breakup.
memory = test_memory_context.memory


@tool
def clock() -> str:
    """The time."""
    return "10:00"


def _instructions(request: dict[str, Any]) -> str:
    return str(request["options"].get("instructions") or "")


async def test_the_recall_block_reaches_every_model_call_and_the_turn_is_saved(memory: MemorySystem) -> None:
    client = ScriptedChatClient([("clock", {}), "先把结论写在第一页。"])
    provider = MemoryContextProvider(memory, user_id="u1", friend_id="mentor")
    agent = Agent(client, "你是职场导师。", name="mentor", tools=[clock], context_providers=[provider])
    response = await agent.run("汇报越来越近了，该怎么准备？")
    assert response.text == "先把结论写在第一页。"
    assert len(client.requests) == 2  # the tool round and the answer
    for request in client.requests:
        instructions = _instructions(request)
        assert instructions.startswith("你是职场导师。")  # the agent's own instructions stay first
        assert SLOT_HEADER in instructions
        assert "[memory:report:下周季度项目汇报，压力大]" in instructions
        assert "breakup" not in instructions  # another friend's event
    stored = await memory.layer.messages.latest(user_id="u1", friend_id="mentor", limit=10)
    assert [(m.role, m.content) for m in stored] == [
        ("user", "汇报越来越近了，该怎么准备？"),
        ("assistant", "先把结论写在第一页。"),
    ]


async def test_each_run_recalls_anew_and_the_next_turn_reads_the_stored_chat(memory: MemorySystem) -> None:
    client = ScriptedChatClient(["你最近在忙什么？", "那就先列提纲。"])
    provider = MemoryContextProvider(memory, user_id="u1", friend_id="mentor", options=RecallOptions(window_size=3))
    agent = Agent(client, "你是职场导师。", name="mentor", context_providers=[provider])
    session = AgentSession()
    await agent.run("你好", session=session)
    assert SLOT_HEADER not in _instructions(client.requests[0])  # nothing about a greeting
    await agent.run("还是那个季度汇报的事", session=session)
    assert "[memory:report:" in _instructions(client.requests[1])
    # the framework's own history gives the model the first turn; the block is not part of it
    assert [m.text for m in client.requests[1]["messages"]] == ["你好", "你最近在忙什么？", "还是那个季度汇报的事"]
    stored = await memory.layer.messages.latest(user_id="u1", friend_id="mentor", limit=10)
    assert [m.content for m in stored] == ["你好", "你最近在忙什么？", "还是那个季度汇报的事", "那就先列提纲。"]


async def test_another_users_provider_recalls_none_of_these_memories(memory: MemorySystem) -> None:
    client = ScriptedChatClient(["好的。"])
    agent = Agent(
        client, "你是职场导师。", context_providers=[MemoryContextProvider(memory, user_id="u2", friend_id="mentor")]
    )
    await agent.run("汇报越来越近了，该怎么准备？")
    assert _instructions(client.requests[0]) == "你是职场导师。"
    assert await memory.layer.messages.latest(user_id="u1", friend_id="mentor", limit=10) == []
    assert [m.role for m in await memory.layer.messages.latest(user_id="u2", friend_id="mentor", limit=10)] == [
        "user",
        "assistant",
    ]


def test_bad_arguments_are_refused_with_what_to_pass(memory: MemorySystem) -> None:
    with pytest.raises(TypeError, match="options must be a RecallOptions"):
        MemoryContextProvider(memory, user_id="u1", options={"window_size": 3})
    with pytest.raises(TypeError, match=r"system must be a MemorySystem \(MemorySystem.open"):
        MemoryContextProvider("sqlite+aiosqlite:///memory.db", user_id="u1")
    with pytest.raises(InvalidInputError, match="user_id"):
        MemoryContextProvider(memory, user_id="")
