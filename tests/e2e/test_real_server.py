"""End to end against a strict OpenAI-compatible server on loopback, through AutoGen's real
``OpenAIChatCompletionClient``: the README's paths, on SQLite and PostgreSQL.

The server refuses what strict local servers refuse (a second system message, roles out of turn,
null content, a prompt over its context size), so every case here fails if the memory layer sends
what such a server would reject.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from autogen_agentchat.messages import ModelClientStreamingChunkEvent, TextMessage

from agent_memory.recall import RecallFinishedEvent, RecallStartedEvent, merge_streams
from agent_memory.settings import load_settings
from agent_memory.system import MemorySystem
from builders import AgentBuilder
from data_layer import NewMemory
from strict_server import Reply, StrictServer, prompt_tokens

NOW = datetime.now(UTC)


@pytest.fixture
def server() -> Iterator[StrictServer]:
    with StrictServer(context_tokens=4096) as running:
        yield running


async def _system(db_url: str, **settings: Any) -> MemorySystem:
    system = MemorySystem.from_settings(load_settings(memory_database_url=db_url, **settings))
    await system.layer.memory.add_many(
        user_id="u1",
        memories=[
            NewMemory(
                "report",
                "用户工作压力大，下周要向管理层做季度项目汇报",
                summary="下周季度项目汇报，压力大",
                memory_type="event",
                friend_id="mentor",
                created_at=NOW - timedelta(days=2),
            ),
            NewMemory(
                "movies",
                "喜欢科幻电影和悬疑小说，不喜欢恐怖片",
                summary="喜欢科幻电影，不喜欢恐怖片",
                memory_type="profile",
                created_at=NOW - timedelta(days=9),
            ),
        ],
    )
    return system


def _system_text(body: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content")) for m in body["messages"] if m["role"] == "system")


@pytest.mark.parametrize("injection", ["system", "tool_call"])
async def test_a_turn_with_recall_passes_a_strict_server(db_url: str, server: StrictServer, injection: str) -> None:
    system = await _system(db_url, memory_recall_injection=injection)
    client = server.client()
    try:
        agent = AgentBuilder(system).build(
            name="mentor", model_client=client, user_id="u1", friend_id="mentor", system_message="你是职场导师。"
        )
        server.script(Reply(text="先把结论写在第一页。"))
        result = await agent.run(task="季度项目汇报压力好大，怎么准备？")
    finally:
        await client.close()
        await system.close()
    assert server.errors == []
    assert result.messages[-1].content == "先把结论写在第一页。"
    body = server.requests[-1]
    if injection == "system":
        assert server.roles() == ["system", "user"]
        assert "[memory:report:下周季度项目汇报，压力大]" in _system_text(body)
    else:
        assert server.roles() == ["system", "user", "assistant", "tool"]
        assert body["messages"][2]["tool_calls"][0]["function"]["name"] == "recall_memory"
        assert "季度项目汇报" in json.loads(body["messages"][3]["content"])["events"][0]["content"]


async def test_the_second_turn_still_alternates(db_url: str, server: StrictServer) -> None:
    system = await _system(db_url, memory_recall_injection="tool_call")
    client = server.client()
    try:
        agent = AgentBuilder(system).build(name="mentor", model_client=client, user_id="u1", friend_id="mentor")
        await agent.run(task="季度项目汇报怎么准备？")
        await agent.run(task="推荐个科幻电影放松一下")
    finally:
        await client.close()
        await system.close()
    assert server.errors == []
    assert server.roles() == ["system", "user", "assistant", "user", "assistant", "tool"]


async def test_a_turn_ending_on_tool_calls_answers_in_words_and_is_saved(db_url: str, server: StrictServer) -> None:
    system = await _system(db_url)
    client = server.client()
    try:
        agent = AgentBuilder(system).build(name="mentor", model_client=client, user_id="u1", friend_id="mentor")
        server.script(
            Reply(tool_calls=[("get_memory_detail", '{"memory_key": "report"}')]),
            Reply(text="你下周要做季度汇报。"),
        )
        result = await agent.run(task="我下周要做什么？")
        saved = await system.layer.messages.latest(user_id="u1", friend_id="mentor", limit=5)
    finally:
        await client.close()
        await system.close()
    assert server.errors == []
    assert result.messages[-1].content == "你下周要做季度汇报。"
    assert not result.messages[-1].content.lstrip().startswith(("{", "["))
    assert [m.role for m in saved] == ["user", "assistant"] and saved[-1].content == "你下周要做季度汇报。"


async def test_empty_and_malformed_answers(db_url: str, server: StrictServer) -> None:
    system = await _system(db_url)
    client = server.client()
    try:
        agent = AgentBuilder(system).build(name="mentor", model_client=client, user_id="u1", friend_id="mentor")
        server.script(Reply(text=""))
        await agent.run(task="在吗")
        server.script(Reply(tool_calls=[("search_memories", '{"query": "汇报", ')]), Reply(text="好的"))
        result = await agent.run(task="汇报的事呢")
        saved = await system.layer.messages.latest(user_id="u1", friend_id="mentor", limit=10)
    finally:
        await client.close()
        await system.close()
    assert [(m.role, m.content) for m in saved][:2] == [("user", "在吗"), ("user", "汇报的事呢")]  # "" not stored
    assert result.messages[-1].content == "好的"
    assert server.errors == []


async def test_a_message_the_database_refuses_is_stored_as_a_copy_and_later_turns_alternate(
    db_url: str, server: StrictServer
) -> None:
    """A NUL in the user's message: the model got it, so the history stores a copy (U+FFFD for the NUL)
    rather than the reply alone. A reply that said nothing is not stored: the user message left without
    its reply is not shown to the model again. Each turn resumes the stored chat, as an app serving a
    new request does."""
    system = await _system(db_url)
    client = server.client()
    sent: list[list[str]] = []
    try:
        for task, reply in [("第一句话", "回复一"), ("第二句\x00话", "回复二"), ("在吗", ""), ("第三句话", "回复三")]:
            agent = AgentBuilder(system).build(
                name="mentor", model_client=client, user_id="u1", friend_id="chat", system_message="你是职场导师。"
            )
            await agent.model_context.resume(limit=40)
            server.script(Reply(text=reply))
            await agent.run(task=task)
            sent.append(server.roles())
        saved = await system.layer.messages.latest(user_id="u1", friend_id="chat", limit=20)
    finally:
        await client.close()
        await system.close()
    assert server.errors == []
    assert [(m.role, m.content) for m in saved] == [
        ("user", "第一句话"),
        ("assistant", "回复一"),
        ("user", "第二句\ufffd话"),
        ("assistant", "回复二"),
        ("user", "在吗"),
        ("user", "第三句话"),
        ("assistant", "回复三"),
    ]
    assert sent[-1] == ["system", "user", "assistant", "user", "assistant", "user"]
    contents = [m["content"] for m in server.requests[-1]["messages"]]
    assert contents[-1] == "第三句话" and "在吗" not in contents


async def test_history_stays_within_the_servers_context(db_url: str) -> None:
    with StrictServer(context_tokens=2500) as server:
        system = await _system(db_url, memory_context_token_budget=1200)
        client = server.client()
        try:
            agent = AgentBuilder(system).build(name="mentor", model_client=client, user_id="u1", friend_id="mentor")
            for turn in range(6):
                server.script(Reply(text=f"第{turn}轮的长回答：" + "细节" * 400))
                await agent.run(task=f"第{turn}个问题")
            stored = await system.layer.messages.latest(user_id="u1", friend_id="mentor", limit=20)
        finally:
            await client.close()
            await system.close()
    assert server.errors == []  # no request exceeded the context
    assert len(stored) == 12  # every turn stayed stored
    assert max(prompt_tokens(body) for body in server.requests) <= 2500


async def test_streaming_with_merge_streams(db_url: str, server: StrictServer) -> None:
    system = await _system(db_url)
    client = server.client()
    queue: asyncio.Queue[Any] = asyncio.Queue()
    try:
        agent = AgentBuilder(system).build(
            name="mentor", model_client=client, user_id="u1", friend_id="mentor", events=queue, model_client_stream=True
        )
        server.script(Reply(text="先列出汇报的结论，再准备数据。"))
        items = [item async for item in merge_streams(agent.run_stream(task="季度项目汇报怎么准备"), queue)]
    finally:
        await client.close()
        await system.close()
    kinds = [type(i).__name__ for i in items]
    first_chunk = kinds.index("ModelClientStreamingChunkEvent")
    assert kinds.index("RecallStartedEvent") < kinds.index("RecallFinishedEvent") < first_chunk
    chunks = "".join(i.content for i in items if isinstance(i, ModelClientStreamingChunkEvent))
    assert chunks == "先列出汇报的结论，再准备数据。"
    final = [i for i in items if isinstance(i, TextMessage)]
    assert final and final[-1].content == chunks
    assert server.requests[-1]["stream"] is True and server.errors == []


async def test_the_server_drives_the_recall(db_url: str, server: StrictServer) -> None:
    recall_client = server.client()
    system = await _system(db_url)
    system.recall_client = recall_client
    main = server.client()
    queue: asyncio.Queue[Any] = asyncio.Queue()
    try:
        agent = AgentBuilder(system).build(
            name="mentor", model_client=main, user_id="u1", friend_id="mentor", events=queue
        )
        handoff = {
            "reason": "找到",
            "search_summary": "季度汇报",
            "relevant_memory_keys": ["report"],
            "confidence": 0.8,
        }
        server.script(
            Reply(tool_calls=[("search_memories", json.dumps({"query": "季度项目汇报", "min_relevance_score": 0.3}))]),
            Reply(tool_calls=[("handoff", json.dumps(handoff, ensure_ascii=False))]),
            Reply(text="按结论先行准备。"),
        )
        result = await agent.run(task="季度项目汇报怎么准备？")
    finally:
        await recall_client.close()
        await main.close()
        await system.close()
    assert server.errors == []
    assert result.messages[-1].content == "按结论先行准备。"
    first_recall_request = server.requests[0]
    assert {t["function"]["name"] for t in first_recall_request["tools"]} >= {"search_memories", "handoff"}
    assert prompt_tokens(first_recall_request) <= 1500  # short enough for a small local model
    assert "[memory:report:" in _system_text(server.requests[-1])
    finished = [e for e in _drain(queue) if isinstance(e, RecallFinishedEvent)]
    assert finished and finished[0].memory_keys == ["report"]


async def test_a_slow_recall_model_is_cancelled_and_the_reply_goes_on(db_url: str, server: StrictServer) -> None:
    recall_client = server.client()
    system = await _system(db_url, memory_recall_time_budget_s=0.5)
    system.recall_client = recall_client
    main = server.client()
    queue: asyncio.Queue[Any] = asyncio.Queue()
    try:
        agent = AgentBuilder(system).build(
            name="mentor", model_client=main, user_id="u1", friend_id="mentor", events=queue
        )
        server.script(Reply(text="too late", delay_s=5), Reply(text="照常回答"))
        result = await agent.run(task="季度项目汇报怎么准备？")
        assert server.wait_cancelled(1, timeout=3)  # the recall's request was abandoned, not left running
    finally:
        await recall_client.close()
        await main.close()
        await system.close()
    assert result.messages[-1].content == "照常回答"
    assert any(type(e).__name__ == "RecallTimeoutEvent" for e in _drain(queue))
    assert any(isinstance(e, RecallStartedEvent) for e in queue._queue) is False  # drained


def _drain(queue: asyncio.Queue[Any]) -> list[Any]:
    items = []
    while not queue.empty():
        items.append(queue.get_nowait())
    return items
