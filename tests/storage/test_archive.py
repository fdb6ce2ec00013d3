"""The tool-result archive in a real AssistantAgent turn, and its manager on its own."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncGenerator, Callable, Sequence
from typing import Any

import pytest
from autogen_agentchat.agents import AssistantAgent
from autogen_core import FunctionCall
from autogen_core.models import (
    ChatCompletionClient,
    CreateResult,
    FunctionExecutionResultMessage,
    LLMMessage,
    ModelInfo,
    RequestUsage,
)
from autogen_core.tools import FunctionTool

from agent_memory.context import MemoryContext
from agent_memory.system import MemorySystem
from agent_memory.tool_archive import ToolResultManager, extract_sources, summarize
from data_layer import AgentFusionDataLayer, Scope
from scripted import MODEL_INFO, USAGE, call

BIG = (
    "永策Pro 权限管理配置步骤：第一步创建角色。第二步分配权限。第三步绑定用户组。来源: docs/yongce/permissions.md\n"
    + "细节说明。" * 10_000
)


def search_docs(query: str) -> str:
    """Search the product docs (returns a very long text)."""
    return BIG


class _Scripted(ChatCompletionClient):
    """A scripted model: each step sees the messages and returns the next answer."""

    def __init__(self, steps: Sequence[Callable[[Sequence[LLMMessage]], CreateResult | str]]) -> None:
        self._steps = list(steps)
        self.seen: list[list[LLMMessage]] = []

    async def create(self, messages: Sequence[LLMMessage], **kwargs: Any) -> CreateResult:
        self.seen.append(list(messages))
        out = self._steps[len(self.seen) - 1](messages)
        if isinstance(out, str):
            return CreateResult(finish_reason="stop", content=out, usage=USAGE, cached=False)
        return out

    async def create_stream(self, messages: Sequence[LLMMessage], **kwargs: Any) -> AsyncGenerator[Any, None]:
        yield await self.create(messages)

    async def close(self) -> None:
        pass

    def actual_usage(self) -> RequestUsage:
        return USAGE

    def total_usage(self) -> RequestUsage:
        return USAGE

    def count_tokens(self, messages: Sequence[LLMMessage], **kwargs: Any) -> int:
        return 0

    def remaining_tokens(self, messages: Sequence[LLMMessage], **kwargs: Any) -> int:
        return 10**9

    @property
    def capabilities(self) -> Any:
        return MODEL_INFO

    @property
    def model_info(self) -> ModelInfo:
        return MODEL_INFO


def _tool_texts(messages: Sequence[LLMMessage]) -> list[str]:
    return [r.content for m in messages if isinstance(m, FunctionExecutionResultMessage) for r in m.content]


async def test_agent_sees_placeholder_loads_full_text_then_placeholder_again(
    layer: AgentFusionDataLayer, system: MemorySystem
) -> None:
    manager = ToolResultManager(layer, user_id="u1", conversation_id="conv-1")
    context = MemoryContext(system, scope=Scope.of("u1"), archive=manager)

    def load_from_placeholder(messages: Sequence[LLMMessage]) -> CreateResult:
        text = _tool_texts(messages)[-1]
        assert text.startswith("📎 [工具结果存档:") and len(text) < 2_000  # not the 50,000 characters
        assert "原始长度: 50" in text and "docs/yongce/permissions.md" in text and "load_tool_history" in text
        uuid = re.search(r'load_tool_history\(uuid="([^"]+)"\)', text)
        assert uuid is not None
        return call("load_tool_history", {"uuid": uuid.group(1)}, 2)

    def answer_with_full_text(messages: Sequence[LLMMessage]) -> str:
        texts = _tool_texts(messages)
        assert texts[-1].endswith(BIG)  # the full text, in this round
        return "第三步是绑定用户组。"

    def next_round(messages: Sequence[LLMMessage]) -> str:
        texts = _tool_texts(messages)
        assert len(texts) == 2 and all(t.startswith("📎 [工具结果存档:") for t in texts)  # folded back
        assert sum(len(t) for t in texts) < 4_000
        return "不客气。"

    client = _Scripted(
        [
            lambda m: call("search_docs", {"query": "权限管理"}, 1),
            load_from_placeholder,
            answer_with_full_text,
            next_round,
        ]
    )
    tools = [FunctionTool(search_docs, description="search docs"), manager.load_tool()]
    agent = AssistantAgent("main", model_client=client, model_context=context, max_tool_iterations=3, tools=tools)
    first = await agent.run(task="永策Pro 的权限管理怎么配置？第三步是什么？")
    assert first.messages[-1].content == "第三步是绑定用户组。"
    second = await agent.run(task="谢谢")
    assert second.messages[-1].content == "不客气。" and len(client.seen) == 4
    archived = await layer.archive.list_results(user_id="u1", conversation_id="conv-1")
    assert len(archived) == 1 and archived[0].result_full == BIG and archived[0].tool_name == "search_docs"
    assert archived[0].tool_input == {"query": "权限管理"}


async def test_short_results_stay_and_scope_is_enforced(layer: AgentFusionDataLayer) -> None:
    mine = ToolResultManager(layer, user_id="u1", conversation_id="c1")
    assert await mine.process_tool_result("t", {}, "short") == "short"
    placeholder = await mine.process_tool_result("t", {"q": 1}, BIG)
    uuid = re.search(r"存档: ([0-9a-f-]+)\]", placeholder).group(1)
    assert (await mine.load_tool_result(uuid)).endswith(BIG)
    for other in (
        ToolResultManager(layer, user_id="u2", conversation_id="c1"),
        ToolResultManager(layer, user_id="u1", conversation_id="c2"),
    ):
        with pytest.raises(LookupError, match="no archived tool result"):
            await other.load_tool_result(uuid)
        result = await other.load_tool().run_json({"uuid": uuid}, cancellation_token=None)
        assert result.success is False
    bad = await mine.load_tool().run_json({"uuid": "not-a-uuid"}, cancellation_token=None)
    assert bad.success is False


def test_summary_and_sources() -> None:
    text = (
        "无关的开场白。永策Pro 权限管理需要先创建角色。然后分配权限给角色。\n"
        "来源: 内部文档A\n参见 https://example.com/doc?id=1 。"
    )
    summary = summarize(text * 3, limit=60)
    assert "权限" in summary and len(summary) <= 60
    assert extract_sources(text) == ["内部文档A", "https://example.com/doc?id=1"]


async def test_a_purged_archive_does_not_break_the_next_turn(layer: AgentFusionDataLayer, system: MemorySystem) -> None:
    manager = ToolResultManager(layer, user_id="u1", conversation_id="c1")
    placeholder = await manager.process_tool_result("t", {}, BIG)
    uuid = re.search(r"存档: ([0-9a-f-]+)\]", placeholder).group(1)
    loaded = await manager.load_tool_result(uuid)
    await layer.archive.delete(user_id="u1", archive_uuid=uuid)
    fresh = ToolResultManager(layer, user_id="u1", conversation_id="c1")  # e.g. after a restart
    context = MemoryContext(system, scope=Scope.of("u1"), archive=fresh)
    call = FunctionCall(id="l1", name="load_tool_history", arguments=json.dumps({"uuid": uuid}))
    from autogen_core.models import AssistantMessage, FunctionExecutionResult, UserMessage

    await context.add_message(UserMessage(content="第一轮", source="user"))
    await context.add_message(AssistantMessage(content=[call], source="main"))
    await context.add_message(
        FunctionExecutionResultMessage(
            content=[FunctionExecutionResult(content=loaded, name="load_tool_history", call_id="l1")]
        )
    )
    await context.add_message(AssistantMessage(content="第一轮的回答", source="main"))  # an answered turn's tool round
    await context.add_message(UserMessage(content="第二轮", source="user"))
    texts = _tool_texts(await context.get_messages())
    assert len(texts) == 1 and len(texts[0]) < 500 and "不可用" in texts[0]
