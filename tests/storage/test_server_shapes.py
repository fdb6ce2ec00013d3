"""What strict local servers accept, end to end: the real AssistantAgent, MemoryContext and AutoGen's
OpenAI client against the strict test server on loopback, which refuses what llama-cpp-python refuses
(``null`` content on any message, also on a tool call; roles out of turn; tool messages without their
call), on SQLite and PostgreSQL.

And a model-driven recall that always delivers: a recall model that never searches, names only
memories no search returned, fails, runs past its time or answers with the legacy ``function_call``
field still leaves the reply with the memories the deterministic first round finds.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import Any

import pytest
from autogen_agentchat.messages import TextMessage

from agent_memory.clients import TolerantOpenAIChatCompletionClient
from agent_memory.recall import RecallErrorEvent, RecallTimeoutEvent
from agent_memory.settings import load_settings
from agent_memory.system import MemorySystem
from builders import AgentBuilder
from strict_server import DEFAULT_MODEL_INFO, MODEL, Reply, StrictServer
from test_real_server import _system

QUESTION = "季度项目汇报压力好大，怎么准备？"


def _system_text(body: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content")) for m in body["messages"] if m["role"] == "system")


def _recall_of(body: dict[str, Any]) -> str:
    """The recall the main model got: the block (system) or the simulated call's result (tool_call)."""
    tools = [m["content"] for m in body["messages"] if m["role"] == "tool"]
    return _system_text(body) + "\n".join(tools)


@pytest.mark.parametrize("injection", ["system", "tool_call"])
async def test_a_tool_round_a_failed_turn_and_the_next_turn_pass_the_strict_server(db_url: str, injection: str) -> None:
    """One agent, three turns: the main model reads a memory with a tool (its call goes out with ""
    text), the next turn's model call fails (500), and the turn after it still alternates: the failed
    turn's message is joined to the new one, never left as a second user message in a row."""
    system = await _system(db_url, memory_recall_injection=injection)
    with StrictServer(context_tokens=4096) as server:
        client = server.client()
        try:
            agent = AgentBuilder(system).build(
                name="mentor", model_client=client, user_id="u1", friend_id="mentor", system_message="你是职场导师。"
            )
            server.script(
                Reply(tool_calls=[("get_memory_detail", '{"memory_key": "report"}')]),
                Reply(text="先把结论写在第一页。"),
            )
            first = await agent.run(task=QUESTION)
            server.script(Reply(status=500, text="model crashed"))
            with pytest.raises(Exception, match="model crashed"):
                await agent.run(task="那我明天先做哪一步？")
            server.script(Reply(text="先列提纲。"))
            third = await agent.run(task="还有别的建议吗？")
        finally:
            await client.close()
            await system.close()
    assert server.errors == [(500, "model crashed")]  # nothing the library sent was refused
    assert first.messages[-1].content == "先把结论写在第一页。"
    assert third.messages[-1].content == "先列提纲。"
    every_message = [m for body in server.requests for m in body["messages"]]
    assert all(m.get("content") is not None for m in every_message)
    calls = [m for m in every_message if m.get("tool_calls")]
    assert {c["tool_calls"][0]["function"]["name"] for c in calls} >= {"get_memory_detail"}
    assert all(c["content"] == "" for c in calls)
    if injection == "tool_call":
        assert any(c["tool_calls"][0]["function"]["name"] == "recall_memory" for c in calls)
    last = server.requests[-1]["messages"]
    users = [m["content"] for m in last if m["role"] == "user"]
    assert users[-1] == "那我明天先做哪一步？\n\n还有别的建议吗？"
    roles = [m["role"] for m in last if m["role"] != "system"]
    assert all(a != b or a == "tool" for a, b in itertools.pairwise(roles))
    assert "季度项目汇报" in _recall_of(server.requests[0])  # the recall reached the first turn's model


async def _run_with_recall_model(
    db_url: str, server: StrictServer, *recall: Reply, **settings: Any
) -> tuple[dict[str, Any], list[Any]]:
    """A turn whose recall model is ``server`` answering ``recall``, then the main reply; returns the
    main model's request and the recall's events."""
    system = await _system(db_url, **settings)
    recall_client = server.client()
    system.recall_client = recall_client
    main = server.client()
    queue: asyncio.Queue[Any] = asyncio.Queue()
    try:
        agent = AgentBuilder(system).build(
            name="mentor", model_client=main, user_id="u1", friend_id="mentor", events=queue
        )
        server.script(*recall, Reply(text="按结论先行准备。"))
        result = await agent.run(task=QUESTION)
    finally:
        await recall_client.close()
        await main.close()
        await system.close()
    assert isinstance(result.messages[-1], TextMessage) and result.messages[-1].content == "按结论先行准备。"
    events = []
    while not queue.empty():
        events.append(queue.get_nowait())
    return server.requests[-1], events


INVENTED = {"reason": "r", "search_summary": "无", "relevant_memory_keys": ["invented"], "confidence": 0.9}


@pytest.mark.parametrize(
    "recall",
    [
        pytest.param([Reply(text="我觉得不需要查记忆。")], id="never-calls-a-tool"),
        pytest.param(
            [
                Reply(tool_calls=[("search_memories", json.dumps({"query": "天气"}, ensure_ascii=False))]),
                Reply(tool_calls=[("handoff", json.dumps(INVENTED))]),
            ],
            id="hands-off-an-invented-key",
        ),
        pytest.param([Reply(status=500, text="recall model crashed")], id="errs"),
    ],
)
async def test_a_recall_model_that_finds_nothing_still_gives_the_first_rounds_memories(
    db_url: str, recall: list[Reply]
) -> None:
    with StrictServer(context_tokens=4096) as server:
        body, events = await _run_with_recall_model(db_url, server, *recall, memory_recall_time_budget_s=30.0)
    assert "[memory:report:下周季度项目汇报，压力大]" in _system_text(body)
    assert "找到 1 条相关记忆" in _system_text(body)  # not the model's "无"
    failed = [e for e in events if isinstance(e, RecallErrorEvent)]
    assert bool(failed) == (recall[0].status == 500)


async def test_a_recall_model_past_its_time_is_cancelled_and_the_first_round_still_counts(db_url: str) -> None:
    """The model's part ends at 70 % of the budget: its request is cancelled (the server sees the hang-up,
    so a one-slot server is free for the reply), and the first round's memory reaches the reply."""
    with StrictServer(context_tokens=4096) as server:
        body, events = await _run_with_recall_model(
            db_url, server, Reply(text="too late", delay_s=120), memory_recall_time_budget_s=6.0
        )
        assert await asyncio.to_thread(server.wait_cancelled, 1, 30.0)
    assert "[memory:report:" in _system_text(body)
    timeouts = [e for e in events if isinstance(e, RecallTimeoutEvent)]
    assert timeouts and timeouts[0].budget_s == pytest.approx(0.7 * 6.0)


async def test_a_recall_model_from_settings_takes_answers_with_the_legacy_function_call(db_url: str) -> None:
    """MEMORY_RECALL_MODEL_CLIENT naming AutoGen's OpenAI client against a server whose answers carry
    ``function_call`` beside ``tool_calls`` (llama-cpp-python's function-calling format): the recall
    model's own search and handoff are used (a plain OpenAIChatCompletionClient raises on the first)."""
    with StrictServer(context_tokens=4096, legacy_function_call=True) as server:
        spec = {
            "provider": "OpenAIChatCompletionClient",
            "config": {
                "model": MODEL,
                "base_url": server.base_url,
                "api_key": "x",
                "max_retries": 0,
                "model_info": DEFAULT_MODEL_INFO,
            },
        }
        client = load_settings(memory_recall_model_client=json.dumps(spec)).recall_model_client()
        assert isinstance(client, TolerantOpenAIChatCompletionClient)
        system = await _system(db_url, memory_recall_time_budget_s=30.0)
        system.recall_client = client
        main = server.client()
        handoff = {
            "reason": "找到",
            "search_summary": "模型找到了季度汇报",
            "relevant_memory_keys": ["report"],
            "confidence": 0.8,
        }
        search = json.dumps({"query": "季度项目汇报", "min_relevance_score": 0.3}, ensure_ascii=False)
        server.script(
            Reply(tool_calls=[("search_memories", search)]),
            Reply(tool_calls=[("handoff", json.dumps(handoff, ensure_ascii=False))]),
            Reply(text="按结论先行准备。"),
        )
        try:
            agent = AgentBuilder(system).build(name="mentor", model_client=main, user_id="u1", friend_id="mentor")
            result = await agent.run(task=QUESTION)
        finally:
            await client.close()
            await main.close()
            await system.close()
    assert server.errors == []
    assert result.messages[-1].content == "按结论先行准备。"
    recall_requests = server.requests[:-1]
    assert len(recall_requests) == 2  # the search, then the handoff: the model drove the recall
    assert recall_requests[1]["messages"][2]["content"] == ""  # its own tool call went back with "" text
    assert "模型找到了季度汇报" in _system_text(server.requests[-1])


async def test_memory_system_loads_the_recall_client_as_the_tolerant_one(tmp_path: Any) -> None:
    spec = {
        "provider": "autogen_ext.models.openai.OpenAIChatCompletionClient",
        "config": {
            "model": MODEL,
            "base_url": "http://127.0.0.1:9/v1",
            "api_key": "x",
            "model_info": DEFAULT_MODEL_INFO,
        },
    }
    settings = load_settings(
        memory_database_url=f"sqlite+aiosqlite:///{tmp_path / 'm.db'}", memory_recall_model_client=json.dumps(spec)
    )
    async with MemorySystem.from_settings(settings) as system:
        assert isinstance(system.recall_client, TolerantOpenAIChatCompletionClient)
        agent = system.recall_agent(system.scope("u1"))
        await system.recall_client.close()
    assert agent.model_driven
    assert agent.model_time_budget_s == pytest.approx(0.7 * settings.memory_recall_time_budget_s)


def test_a_legacy_function_call_alone_becomes_the_tool_call() -> None:
    from agent_memory.clients import without_legacy_function_call

    alone = {
        "choices": [
            {
                "message": {
                    "role": "assistant",
                    "content": None,
                    "function_call": {"name": "add", "arguments": '{"a": 1}'},
                },
                "finish_reason": "function_call",
            }
        ]
    }
    assert without_legacy_function_call(alone)
    choice = alone["choices"][0]
    assert choice["finish_reason"] == "tool_calls" and "function_call" not in choice["message"]
    assert choice["message"]["tool_calls"] == [
        {"id": "call_legacy_0", "type": "function", "function": {"name": "add", "arguments": '{"a": 1}'}}
    ]
    plain = {"choices": [{"message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}]}
    assert not without_legacy_function_call(plain)
