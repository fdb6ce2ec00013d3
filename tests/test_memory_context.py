"""MemoryContext under a real main AssistantAgent driven by a scripted model client."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from autogen_agentchat.agents import AssistantAgent
from autogen_core.models import (
    AssistantMessage,
    CreateResult,
    FunctionExecutionResultMessage,
    SystemMessage,
)
from autogen_core.tools import FunctionTool
from autogen_ext.models.replay import ReplayChatCompletionClient

from agent_memory.recall import (
    MemoryContext,
    OfflineRecallPlanner,
    RecallErrorEvent,
    RecallFinishedEvent,
    RecallStartedEvent,
    RecallTimeoutEvent,
    merge_streams,
)
from agent_memory.search import HybridMemorySearch
from agent_memory.tools import MemoryToolbox
from data_layer import AgentFusionDataLayer, NewMemory
from scripted import call, replay

NOW = datetime.now(UTC)


@pytest.fixture
async def search(layer: AgentFusionDataLayer) -> HybridMemorySearch:
    engine = HybridMemorySearch(layer.memory)
    await layer.memory.add_many(
        user_id="u1",
        memories=[
            NewMemory("report", "用户工作压力大，下周要向管理层做季度项目汇报", summary="下周季度项目汇报，压力大",
                      memory_type="event", friend_id="mentor", created_at=NOW - timedelta(days=2)),
            NewMemory("breakup", "用户上个月和女朋友分手了，心情低落", memory_type="event", friend_id="xiaozhu",
                      created_at=NOW - timedelta(days=5)),
        ],
    )  # fmt: skip
    return engine


def _clock() -> str:
    """The time (a tool of the main agent)."""
    return "10:00"


def _main(client: ReplayChatCompletionClient, context: MemoryContext) -> AssistantAgent:
    return AssistantAgent("main", model_client=client, model_context=context, max_tool_iterations=3,
                          tools=[FunctionTool(_clock, description="current time")])  # fmt: skip


def _drain(queue: asyncio.Queue[Any]) -> list[Any]:
    items = []
    while not queue.empty():
        items.append(queue.get_nowait())
    return items


async def test_recall_block_leads_every_model_call_of_a_turn(
    layer: AgentFusionDataLayer, search: HybridMemorySearch
) -> None:
    queue: asyncio.Queue[Any] = asyncio.Queue()
    context = MemoryContext(layer=layer, search=search, user_id="u1", friend_id="mentor", events=queue)
    client = replay([call("_clock", {}, 1), "先列出汇报的结论。", "好的。"])
    agent = _main(client, context)
    result = await agent.run(task="最近汇报压力好大，怎么准备？")
    assert result.messages[-1].content == "先列出汇报的结论。"
    assert len(client.create_calls) == 2  # the tool round and the answer
    for request in client.create_calls:
        msgs = request["messages"]
        recall = [m for m in msgs if isinstance(m, SystemMessage) and m.content.startswith("[记忆召回]")]
        assert len(recall) == 1 and msgs.index(recall[0]) == 1  # right after the agent's own system message
        assert "[memory:report:下周季度项目汇报，压力大]" in recall[0].content
        assert "breakup" not in recall[0].content  # another friend's event
    events = _drain(queue)
    assert sum(isinstance(e, RecallStartedEvent) for e in events) == 1  # once per turn, not per model call
    assert any(isinstance(e, RecallFinishedEvent) and e.memory_keys == ["report"] for e in events)
    # the stored history has no recall messages
    stored = await context.get_messages()
    assert not any(isinstance(m, SystemMessage) for m in context._messages)
    assert isinstance(stored[0], SystemMessage)
    saved = await layer.messages.latest(user_id="u1", friend_id="mentor", limit=10)
    assert [(m.role, m.content) for m in saved] == [
        ("user", "最近汇报压力好大，怎么准备？"),
        ("assistant", "先列出汇报的结论。"),
    ]
    # a new user turn recalls again
    await agent.run(task="谢谢")
    assert sum(isinstance(e, RecallStartedEvent) for e in _drain(queue)) == 1


async def test_tool_call_injection(layer: AgentFusionDataLayer, search: HybridMemorySearch) -> None:
    context = MemoryContext(layer=layer, search=search, user_id="u1", friend_id="mentor", injection="tool_call")
    client = replay(["好的"])
    await _main(client, context).run(task="汇报压力大")
    msgs = client.create_calls[0]["messages"]
    kinds = [type(m).__name__ for m in msgs]
    assert kinds == ["SystemMessage", "AssistantMessage", "FunctionExecutionResultMessage", "UserMessage"]
    assert isinstance(msgs[1], AssistantMessage) and msgs[1].content[0].name == "recall_memory"
    assert isinstance(msgs[2], FunctionExecutionResultMessage) and "[memory:report:" in msgs[2].content[0].content


async def test_nothing_relevant_leaves_messages_unchanged(
    layer: AgentFusionDataLayer, search: HybridMemorySearch
) -> None:
    context = MemoryContext(layer=layer, search=search, user_id="new-user")
    client = replay(["你好！"])
    await _main(client, context).run(task="你好")
    assert [type(m).__name__ for m in client.create_calls[0]["messages"]] == ["SystemMessage", "UserMessage"]


async def test_database_unavailable(tmp_path: Any) -> None:
    queue: asyncio.Queue[Any] = asyncio.Queue()
    context = MemoryContext(database_url="postgresql+psycopg://postgres@127.0.0.1:1/nowhere", user_id="u1",
                            events=queue, time_budget_s=10)  # fmt: skip
    client = replay(["照常回答"])
    result = await _main(client, context).run(task="之前的配置")
    assert result.messages[-1].content == "照常回答"
    assert [type(m).__name__ for m in client.create_calls[0]["messages"]] == ["SystemMessage", "UserMessage"]
    assert any(isinstance(e, RecallErrorEvent) for e in _drain(queue))


async def test_a_raising_tool(
    layer: AgentFusionDataLayer, search: HybridMemorySearch, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def boom(self: MemoryToolbox, data: Any) -> Any:
        raise RuntimeError("index exploded")

    monkeypatch.setattr(MemoryToolbox, "search_memories", boom)
    queue: asyncio.Queue[Any] = asyncio.Queue()
    context = MemoryContext(layer=layer, search=search, user_id="u1", friend_id="mentor", events=queue)
    client = replay(["照常回答"])
    result = await _main(client, context).run(task="汇报压力大")
    assert result.messages[-1].content == "照常回答"
    assert not any(
        isinstance(m, SystemMessage) and "[记忆召回]" in m.content for m in client.create_calls[0]["messages"]
    )
    errors = [e for e in _drain(queue) if isinstance(e, RecallErrorEvent)]
    assert errors and "index exploded" in errors[0].content


class _SlowPlanner(OfflineRecallPlanner):
    async def create(self, messages: Any, **kwargs: Any) -> CreateResult:
        await asyncio.sleep(5)
        return await super().create(messages, **kwargs)


async def test_time_budget(layer: AgentFusionDataLayer, search: HybridMemorySearch) -> None:
    queue: asyncio.Queue[Any] = asyncio.Queue()
    context = MemoryContext(layer=layer, search=search, user_id="u1", friend_id="mentor", events=queue,
                            model_client=_SlowPlanner(), time_budget_s=0.2)  # fmt: skip
    client = replay(["照常回答"])
    loop = asyncio.get_running_loop()
    started = loop.time()
    result = await _main(client, context).run(task="汇报压力大")
    assert loop.time() - started < 3
    assert result.messages[-1].content == "照常回答"
    assert [type(m).__name__ for m in client.create_calls[0]["messages"]] == ["SystemMessage", "UserMessage"]
    assert any(isinstance(e, RecallTimeoutEvent) for e in _drain(queue))


async def test_events_merge_with_the_main_stream(layer: AgentFusionDataLayer, search: HybridMemorySearch) -> None:
    queue: asyncio.Queue[Any] = asyncio.Queue()
    context = MemoryContext(layer=layer, search=search, user_id="u1", friend_id="mentor", events=queue)
    client = replay(["回答"])
    names = [type(e).__name__ async for e in merge_streams(_main(client, context).run_stream(task="汇报压力"), queue)]
    assert names.index("RecallStartedEvent") < names.index("RecallFinishedEvent") < names.index("TaskResult")
    assert "ToolCallRequestEvent" in names and "HandoffMessage" in names


async def test_component_round_trip(tmp_path: Any) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'x.db'}"
    context = MemoryContext(database_url=url, user_id="u1", friend_id="mentor", window_size=7, injection="tool_call")
    dumped = context.dump_component()
    assert dumped.provider == "agent_memory.recall.MemoryContext"
    loaded = MemoryContext.load_component(json.loads(dumped.model_dump_json()))
    assert loaded.config == context.config
    with_secret = MemoryContext(database_url="", user_id="u1")
    assert with_secret.dump_component().config["database_url"] == ""


def test_needs_a_database() -> None:
    with pytest.raises(ValueError, match="layer= or database_url="):
        MemoryContext(user_id="u1")
