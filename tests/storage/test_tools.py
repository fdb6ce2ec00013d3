"""The MemRecallAgent tools on a real database, called directly and by a real AssistantAgent."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime, timedelta

import pytest
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.messages import ToolCallExecutionEvent

from agent_memory.search import HybridMemorySearch
from agent_memory.tools import (
    MEMRECALL_TOOLS,
    ExpandContextWindowInput,
    ExtractKeywordsInput,
    GetMemoryDetailInput,
    HandoffInput,
    MemoryToolbox,
    RecallLedger,
    SearchMemoriesInput,
)
from data_layer import AgentFusionDataLayer, NewMemory, Scope
from scripted import call, replay
from scripted import engine as make_engine

NOW = datetime.now(UTC)


@pytest.fixture
async def search(layer: AgentFusionDataLayer) -> HybridMemorySearch:
    engine = make_engine(layer.memory)
    await layer.memory.add_many(
        user_id="u1",
        memories=[
            NewMemory(
                "db-config",
                "MySQL 数据库配置: port 3306, user report",
                summary="MySQL 数据库配置",
                memory_type="command_output",
                friend_id="mentor",
                created_at=NOW - timedelta(days=1),
            ),
            NewMemory(
                "breakup",
                "上个月和女朋友分手了，心情低落",
                memory_type="event",
                friend_id="xiaozhu",
                created_at=NOW - timedelta(days=3),
            ),
            NewMemory(
                "movies", "喜欢科幻电影，不喜欢恐怖片", memory_type="profile", created_at=NOW - timedelta(days=30)
            ),
        ],
    )
    await layer.memory.add(user_id="u2", memory_key="other", content="MySQL 别人的配置", created_at=NOW)
    return engine


async def test_search_is_bound_to_the_scope(search: HybridMemorySearch) -> None:
    mentor = MemoryToolbox(search, scope=Scope.of("u1", "mentor"))
    out = await mentor.search_memories(SearchMemoriesInput(query="MySQL 数据库配置", min_relevance_score=0.1))
    assert out.success and [r.memory_key for r in out.results] == ["db-config"]
    assert out.results[0].content_preview.startswith("MySQL") and 0 < out.results[0].relevance_score <= 1
    assert "mysql" in out.results[0].keywords and out.search_query_expanded
    companion = MemoryToolbox(search, scope=Scope.of("u1", "xiaozhu"))
    out = await companion.search_memories(SearchMemoriesInput(query="MySQL 分手 电影", min_relevance_score=0.0))
    assert {r.memory_key for r in out.results} == {"breakup", "movies"}  # not the mentor's, not u2's


async def test_at_most_three_searches_in_a_row(search: HybridMemorySearch) -> None:
    box = MemoryToolbox(search, scope=Scope.of("u1"))
    for _ in range(3):
        assert (await box.search_memories(SearchMemoriesInput(query="电影"))).success
    blocked = await box.search_memories(SearchMemoriesInput(query="电影"))
    assert not blocked.success and "handoff" in (blocked.message or "")
    await box.get_memory_detail(GetMemoryDetailInput(memory_key="movies"))
    assert (await box.search_memories(SearchMemoriesInput(query="电影"))).success


async def test_memory_detail_respects_friend_and_user(layer: AgentFusionDataLayer, search: HybridMemorySearch) -> None:
    mentor = MemoryToolbox(search, scope=Scope.of("u1", "mentor"))
    ok = await mentor.get_memory_detail(GetMemoryDetailInput(memory_key="db-config"))
    assert ok.success and ok.content and "3306" in ok.content and ok.memory_type == "command_output"
    assert (await mentor.get_memory_detail(GetMemoryDetailInput(memory_key="movies"))).success  # shared profile
    hidden = await mentor.get_memory_detail(GetMemoryDetailInput(memory_key="breakup"))
    assert not hidden.success and hidden.content is None and "未找到记忆" in (hidden.message or "")
    other_user = MemoryToolbox(search, scope=Scope.of("u2"))
    assert not (await other_user.get_memory_detail(GetMemoryDetailInput(memory_key="db-config"))).success
    bad = await mentor.get_memory_detail(GetMemoryDetailInput(memory_key="no such key!"))
    assert not bad.success and "参数无效" in (bad.message or "")
    breakup = await layer.memory.retrieve_memory(memory_key="breakup", user_id="u1", touch=False)
    assert breakup is not None and breakup.access_count == 0  # the hidden read was not counted


async def test_a_refused_argument_is_logged_as_one_line_not_a_failure(
    search: HybridMemorySearch, caplog: pytest.LogCaptureFixture
) -> None:
    """A bad key or an empty query is the model's mistake, answered in the tool's output: an info line,
    not a warning with a traceback (a server's log filled with those for normal refusals)."""
    box = MemoryToolbox(search, scope=Scope.of("u1", "mentor"))
    with caplog.at_level(logging.INFO, logger="agent_memory.tools._toolbox"):
        bad = await box.get_memory_detail(GetMemoryDetailInput(memory_key="no such key!"))
        blank = await box.search_memories(SearchMemoriesInput.model_construct(query="   "))
    assert not bad.success and not blank.success and "参数无效" in (blank.message or "")
    mine = [r for r in caplog.records if r.name == "agent_memory.tools._toolbox"]
    assert [r.levelno for r in mine] == [logging.INFO, logging.INFO]
    assert all(r.exc_info is None and "refused" in r.getMessage() for r in mine)


async def test_keywords_offline_and_by_model(search: HybridMemorySearch) -> None:
    offline = await MemoryToolbox(search, scope=Scope.of("u1")).extract_search_keywords(
        ExtractKeywordsInput(query="上周部署 nginx 的配置", max_keywords=4)
    )
    assert offline.success and len(offline.keywords) <= 4
    assert {k.type for k in offline.keywords} >= {"entity", "time"}
    answer = json.dumps({"keywords": [{"keyword": "nginx", "weight": 0.9, "type": "entity"}], "expanded_query": "q"})
    client = replay([answer, "not json"])
    box = MemoryToolbox(search, scope=Scope.of("u1"), model_client=client)
    by_model = await box.extract_search_keywords(ExtractKeywordsInput(query="nginx 配置", context="运维"))
    assert [k.keyword for k in by_model.keywords] == ["nginx"] and by_model.expanded_query == "q"
    assert "上下文: 运维" in client.create_calls[0]["messages"][0].content
    fallback = await box.extract_search_keywords(ExtractKeywordsInput(query="nginx 配置"))
    assert fallback.success and fallback.keywords and "离线" in (fallback.message or "")


async def test_window_expansion_and_handoff(search: HybridMemorySearch) -> None:
    box = MemoryToolbox(search, scope=Scope.of("u1"), iteration=1, max_iterations=2)
    smaller = await box.expand_context_window(ExpandContextWindowInput(reason="r", current_size=5, requested_size=3))
    assert not smaller.approved and box.expansion is None
    ok = await box.expand_context_window(ExpandContextWindowInput(reason="r", current_size=5, requested_size=10))
    assert ok.approved and ok.new_size == 10 and ok.iteration == 2 and box.expansion == ok
    last = MemoryToolbox(search, scope=Scope.of("u1"), iteration=2, max_iterations=2)
    refused = await last.expand_context_window(ExpandContextWindowInput(reason="r", current_size=5, requested_size=10))
    assert not refused.approved and "最大迭代次数" in refused.message
    out = await box.handoff(
        HandoffInput(
            reason="找到了",
            search_summary="用户的数据库配置",
            relevant_memory_keys=["db-config"],
            confidence=0.9,
            needs_more_info=True,
            follow_up_question="是哪个环境？",
        )
    )
    assert out.success and "90%" in out.message and "- db-config" in out.message and "是哪个环境？" in out.message
    assert box.handoff_input is not None and box.handoff_input.relevant_memory_keys == ["db-config"]


async def test_an_assistant_agent_uses_the_tools(search: HybridMemorySearch) -> None:
    """The real AutoGen loop: a bad argument comes back as the output model, then a good search works."""
    box = MemoryToolbox(search, scope=Scope.of("u1", "mentor"))
    client = replay(
        [
            call("search_memories", {"query": "数据库", "limit": 50}),
            call("search_memories", {"query": "MySQL 数据库配置", "min_relevance_score": 0.1}),
            call("get_memory_detail", {"memory_key": "db-config"}),
            "done",
        ],
    )
    agent = AssistantAgent("recall", model_client=client, tools=box.tools(), max_tool_iterations=4)
    result = await agent.run(task="我之前的数据库配置是什么？")
    executions = [m for m in result.messages if isinstance(m, ToolCallExecutionEvent)]
    outputs = [json.loads(e.content[0].content) for e in executions]
    assert outputs[0]["success"] is False and "limit" in outputs[0]["message"]
    assert not executions[0].content[0].is_error  # a model-readable answer, not a crash
    assert outputs[1]["success"] is True and outputs[1]["results"][0]["memory_key"] == "db-config"
    assert "3306" in outputs[2]["content"]
    assert "数据库" in executions[1].content[0].content  # UTF-8, not \\u escapes
    offered = {t.name for t in box.tools()}
    assert offered == set(MEMRECALL_TOOLS) - {"handoff"}


async def test_the_recall_keeps_the_engines_order_of_a_search(layer: AgentFusionDataLayer) -> None:
    """The engine ranks a two-part question so both parts come first (coverage): the ledger hands on that
    order, not the results re-sorted by score, which would put the second 乌龙茶 memory before 跑步."""
    engine = make_engine(layer.memory)
    when = NOW - timedelta(days=2)
    await layer.memory.add_many(
        user_id="u9",
        memories=[
            NewMemory(
                "tea",
                "每天下午喝一杯乌龙茶，茶叶是朋友从福建寄来的乌龙茶",
                memory_type="event",
                friend_id="f",
                created_at=when,
            ),
            NewMemory("tea-sleep", "乌龙茶喝多了晚上睡不着", memory_type="event", friend_id="f", created_at=when),
            NewMemory("run", "周末去公园跑步", memory_type="event", friend_id="f", created_at=when),
            *(
                NewMemory(f"run-{i}", f"跑步第{i}天 膝盖有点酸", memory_type="event", friend_id="g", created_at=when)
                for i in range(6)
            ),
        ],
    )
    ledger = RecallLedger()
    box = MemoryToolbox(engine, scope=Scope.of("u9", "f"), ledger=ledger)
    out = await box.search_memories(SearchMemoriesInput(query="乌龙茶 跑步", min_relevance_score=0.0))
    keys = [r.memory_key for r in out.results]
    scores = {r.memory_key: r.relevance_score for r in out.results}
    assert keys == ["tea", "run", "tea-sleep"] and scores["tea-sleep"] > scores["run"]
    assert [r.memory_key for r in ledger.found()] == keys
    # a later search leads: its results first, in its order, then what only the earlier one found
    await box.search_memories(SearchMemoriesInput(query="睡不着", min_relevance_score=0.0))
    assert [r.memory_key for r in ledger.found()] == ["tea-sleep", "tea", "run"]


def test_a_content_preview_is_the_whole_content_or_its_head_marked_as_cut() -> None:
    from agent_memory.tools import PREVIEW_CHARS, MemorySearchResultItem, content_preview

    whole, cut = content_preview("MySQL 端口 3306"), content_preview("字" * (PREVIEW_CHARS + 1))
    assert whole == "MySQL 端口 3306" and cut == "字" * PREVIEW_CHARS + "..."
    assert content_preview("字" * PREVIEW_CHARS) == "字" * PREVIEW_CHARS  # exactly the limit: whole

    def item(preview: str) -> MemorySearchResultItem:
        return MemorySearchResultItem(
            memory_key="k",
            summary="s",
            content_preview=preview,
            relevance_score=0.9,
            created_at="2026-01-01T00:00:00+00:00",
        )

    assert item(whole).preview_is_whole and not item(cut).preview_is_whole
    with pytest.raises(TypeError, match="must be a str"):
        content_preview(None)
