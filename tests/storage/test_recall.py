"""MemRecallAgent through the real AssistantAgent loop: the offline planner and a scripted LLM."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta

import pytest
from autogen_agentchat.messages import HandoffMessage, ToolCallExecutionEvent
from autogen_ext.models.replay import ReplayChatCompletionClient

from agent_memory.recall import (
    MemRecallAgent,
    OfflineRecallPlanner,
    days_to_read,
    format_task,
    parse_task,
    recent_days_told,
)
from agent_memory.search import HybridMemorySearch
from agent_memory.tools import ASSISTANT_SAID, ToolLimits
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
                "report",
                "用户工作压力大，下周要向管理层做季度项目汇报",
                memory_type="event",
                friend_id="mentor",
                created_at=NOW - timedelta(days=2),
            ),
            NewMemory(
                "breakup",
                "用户上个月和女朋友分手了，这几周心情低落，晚上睡不好",
                memory_type="event",
                friend_id="xiaozhu",
                created_at=NOW - timedelta(days=5),
            ),
            NewMemory(
                "job",
                "用户是产品经理，负责数据平台产品，工作压力不小",
                memory_type="profile",
                created_at=NOW - timedelta(days=60),
            ),
            NewMemory(
                "db",
                "MySQL 端口 3306",
                summary="端口",
                memory_type="command_output",
                friend_id="mentor",
                created_at=NOW - timedelta(days=1),
            ),
            # a thin summary over a long output: the search result's preview is cut
            NewMemory(
                "redis",
                "Redis 配置 " + "maxmemory-policy allkeys-lru; " * 10 + "监听端口 6379",
                summary="配置",
                memory_type="command_output",
                friend_id="mentor",
                created_at=NOW - timedelta(days=1),
            ),
        ],
    )
    return engine


def test_task_round_trip() -> None:
    text = format_task(
        "按之前的来", [("user", "a"), ("assistant", "b: c")], iteration=2, max_iterations=3, window_size=10
    )
    task = parse_task(text)
    assert (task.current, task.iteration, task.max_iterations, task.window_size) == ("按之前的来", 2, 3, 10)
    assert task.window == (("user", "a"), ("assistant", "b: c"))


async def test_offline_recall_finds_and_hands_off(search: HybridMemorySearch) -> None:
    events: list[object] = []
    recall = MemRecallAgent(search, scope=Scope.of("u1", "mentor"), on_event=events.append)
    result = await recall.recall([("user", "你好"), ("user", "最近汇报压力好大，怎么办")])
    assert result.handoff is not None and result.handoff.relevant_memory_keys[0] == "report"
    assert 0 < result.handoff.confidence <= 1 and not result.handoff.needs_more_info
    assert result.iterations == 1 and result.window_size == 5
    assert any(isinstance(e, HandoffMessage) for e in events) and isinstance(events[-1], HandoffMessage)
    searches = [e for e in events if isinstance(e, ToolCallExecutionEvent) and e.content[0].name == "search_memories"]
    assert 1 <= len(searches) <= 3


async def test_friend_isolation(search: HybridMemorySearch) -> None:
    question = [("user", "压力大 心情低落 汇报 分手 工作")]
    companion = await MemRecallAgent(search, scope=Scope.of("u1", "xiaozhu")).recall(question)
    mentor = await MemRecallAgent(search, scope=Scope.of("u1", "mentor")).recall(question)
    assert "report" not in companion.ranked_keys and "breakup" in companion.ranked_keys
    assert "breakup" not in mentor.ranked_keys and "report" in mentor.ranked_keys
    # the shared profile reaches both friends
    about_work = [("user", "产品经理 工作压力")]
    for friend in ("xiaozhu", "mentor"):
        result = await MemRecallAgent(search, scope=Scope.of("u1", friend)).recall(about_work)
        assert "job" in result.relevant_memory_keys


def _details(events: list[object]) -> list[ToolCallExecutionEvent]:
    return [e for e in events if isinstance(e, ToolCallExecutionEvent) and e.content[0].name == "get_memory_detail"]


async def test_thin_summary_is_read_in_full(search: HybridMemorySearch) -> None:
    """The best hit's summary says little and its preview was cut: the planner reads the whole memory."""
    events: list[object] = []
    result = await MemRecallAgent(search, scope=Scope.of("u1", "mentor"), on_event=events.append).recall(
        [("user", "Redis 配置")]
    )
    details = _details(events)
    assert result.ranked_keys[0] == "redis"
    assert details and "6379" in json.loads(details[0].content[0].content)["content"]


async def test_thin_summary_with_whole_preview_is_not_read_again(search: HybridMemorySearch) -> None:
    """A thin summary whose search result already shows the whole content: a detail round would show
    nothing more, so the planner hands off without one (and still reports the memory)."""
    events: list[object] = []
    result = await MemRecallAgent(search, scope=Scope.of("u1", "mentor"), on_event=events.append).recall(
        [("user", "MySQL 端口")]
    )
    searches = [e for e in events if isinstance(e, ToolCallExecutionEvent) and e.content[0].name == "search_memories"]
    best = json.loads(searches[-1].content[0].content)["results"][0]
    assert best["memory_key"] == "db" and "3306" in best["content_preview"]
    assert _details(events) == [] and "db" in result.relevant_memory_keys


async def test_nothing_found_expands_then_asks(search: HybridMemorySearch) -> None:
    history = [("user", f"第{i}条闲聊") for i in range(30)] + [("user", "按之前说的那个方案来")]
    result = await MemRecallAgent(search, scope=Scope.of("u1"), max_iterations=3, window_size=5).recall(history)
    assert result.iterations == 3 and result.window_size == 20  # 5 -> 10 -> 20
    assert result.handoff is not None and result.handoff.needs_more_info and result.handoff.follow_up_question
    assert result.handoff.relevant_memory_keys == [] and result.handoff.confidence == 0.0


async def test_scripted_llm_uses_every_tool_and_restarts_with_more_history(search: HybridMemorySearch) -> None:
    script = [
        call("extract_search_keywords", {"query": "汇报压力"}, 1),
        call("search_memories", {"query": "汇报", "limit": 99}, 2),  # invalid: limit is at most 10
        call("search_memories", {"query": "汇报 压力", "min_relevance_score": 0.1}, 3),
        call("get_memory_detail", {"memory_key": "report"}, 4),
        call("expand_context_window", {"reason": "需要更早的对话", "current_size": 3, "requested_size": 6}, 5),
        # iteration 2 (a new agent, larger window)
        call("search_memories", {"query": "季度项目汇报", "min_relevance_score": 0.1}, 6),
        call(
            "handoff",
            {
                "reason": "找到了",
                "search_summary": "季度汇报压力",
                "relevant_memory_keys": ["report"],
                "confidence": 0.8,
                "iteration_used": 2,
                "context_window_used": 6,
            },
            7,
        ),
        "never used: the handoff ends the recall",
    ]
    client = replay(script)
    events: list[object] = []
    history = [("user", f"消息{i}") for i in range(8)] + [("user", "汇报的事你还记得吗")]
    recall = MemRecallAgent(
        search, scope=Scope.of("u1", "mentor"), model_client=client, window_size=3, on_event=events.append
    )
    result = await recall.recall(history)
    assert result.iterations == 2 and result.window_size == 6
    assert result.handoff is not None and result.handoff.relevant_memory_keys == ["report"]
    assert len(client.create_calls) == 7  # stopped at the handoff
    first_task = client.create_calls[0]["messages"][1].content
    second_task = next(m.content for m in client.create_calls[5]["messages"] if getattr(m, "source", "") == "user")
    assert "窗口: 3 条消息" in first_task and first_task.count("\n- user:") == 2
    assert "迭代: 2/3，窗口: 6 条消息" in second_task and second_task.count("\n- user:") == 5
    outputs = {
        e.content[0].call_id: json.loads(e.content[0].content) for e in events if isinstance(e, ToolCallExecutionEvent)
    }
    assert outputs["c1"]["success"] and outputs["c1"]["keywords"]
    assert outputs["c2"]["success"] is False and "limit" in outputs["c2"]["message"]
    assert outputs["c3"]["results"][0]["memory_key"] == "report"
    assert "季度项目汇报" in outputs["c4"]["content"]
    assert outputs["c5"]["approved"] is True and outputs["c5"]["new_size"] == 6


async def test_expansion_refused_at_the_iteration_limit_ends_the_recall(search: HybridMemorySearch) -> None:
    client = replay(
        [call("expand_context_window", {"reason": "更多", "current_size": 5, "requested_size": 10}, 1), "unused"]
    )
    events: list[object] = []
    result = await MemRecallAgent(
        search, scope=Scope.of("u1"), model_client=client, max_iterations=1, on_event=events.append
    ).recall([("user", "之前那个")])
    refused = [e for e in events if isinstance(e, ToolCallExecutionEvent)]
    assert json.loads(refused[0].content[0].content)["approved"] is False
    assert result.iterations == 1 and result.handoff is None and len(client.create_calls) == 1


def test_planner_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="rounds"):
        OfflineRecallPlanner(limits=ToolLimits(rounds=6))
    with pytest.raises(ValueError, match="similarity_threshold"):
        OfflineRecallPlanner(similarity_threshold=1.5)


async def test_a_model_client_from_settings_drives_the_recall(search: HybridMemorySearch) -> None:
    """MEMORY_RECALL_MODEL_CLIENT holds any AutoGen client as component JSON."""
    from agent_memory.settings import SettingsError, load_settings

    handoff = call("handoff", {"reason": "r", "search_summary": "s", "relevant_memory_keys": [], "confidence": 0.1}, 1)
    spec = replay([handoff]).dump_component().model_dump_json()
    client = load_settings(memory_recall_model_client=spec).recall_model_client()
    assert isinstance(client, ReplayChatCompletionClient)
    result = await MemRecallAgent(search, scope=Scope.of("u1"), model_client=client).recall([("user", "你好")])
    assert result.handoff is not None and result.handoff.reason == "r"
    assert load_settings().recall_model_client() is None  # empty: the offline planner
    with pytest.raises(SettingsError, match="MEMORY_RECALL_MODEL_CLIENT"):
        load_settings(memory_recall_model_client="{not json").recall_model_client()


async def test_the_expanded_round_follows_what_the_first_hit_names(layer: AgentFusionDataLayer) -> None:
    """A second fact about something the first round's hit names ("金色家园" for "我住的小区") shares too
    few words with the request to pass the floors; the expanded round adds a strong first hit's own
    keywords, as a model reading the hit would search for the name it found. Without a strong first
    hit nothing is added, and the last round searches the message itself."""
    engine = make_engine(layer.memory)
    engine.neighbours = None  # 小区 and 楼下 are near in meaning (0.62): "pool" would be listed, weakly
    await layer.memory.add_many(
        user_id="u1",
        memories=[
            NewMemory("estate", "我住的小区叫金色家园", memory_type="profile", keywords=["金色家园", "小区"]),
            NewMemory("green", "金色家园的绿化特别好，傍晚适合散步", memory_type="profile"),
            NewMemory("pool", "公司楼下新开了一家游泳馆", memory_type="profile"),
        ],
    )
    result = await MemRecallAgent(engine, scope=Scope.of("u1")).recall([("user", "说说我住的小区")])
    queries = [s.arguments.query for s in result.ledger.searches]
    assert result.ledger.searches[0].output.results[0].memory_key == "estate"
    assert "金色" in queries[1] and "家园" in queries[1] and "画像" not in queries[1] and "profil" not in queries[1]
    assert queries[-1] == "说说我住的小区"
    assert {"estate", "green"} <= {i.memory_key for i in result.ledger.relevant(0.5)}
    assert "pool" not in result.ranked_keys
    # the fee is most of this question and no memory speaks of it: no strong first hit, nothing to follow
    # ("我住的小区环境怎么样？" is no such case: 环境 says little in general, the estate is a strong hit)
    vague = await MemRecallAgent(engine, scope=Scope.of("u1")).recall([("user", "我们小区的物业费是不是涨了？")])
    assert not vague.ledger.searches[0].output.results
    assert all(s.arguments.query == "我们小区的物业费是不是涨了？" for s in vague.ledger.searches)


@pytest.mark.parametrize(("role", "followed"), [("user", True), ("assistant", False)])
async def test_the_expanded_round_follows_what_the_user_said_not_the_assistant(
    layer: AgentFusionDataLayer, role: str, followed: bool
) -> None:
    """A strong first hit is followed when the user said it; what the assistant said is its own subject
    ("换气" in its reply to "想放松一下"), and its words are not searched for. Its search result says
    who said it, for the planner and for any model reading the results."""
    engine = make_engine(layer.memory)
    engine.neighbours = None
    await layer.memory.add_many(
        user_id="u1",
        memories=[
            NewMemory(
                "estate",
                "你住的小区叫金色家园吧",
                memory_type="conversation",
                keywords=["金色家园", "小区"],
                metadata={"role": role},
            ),
            NewMemory("green", "金色家园的绿化特别好，傍晚适合散步", memory_type="profile"),
        ],
    )
    result = await MemRecallAgent(engine, scope=Scope.of("u1")).recall([("user", "说说我住的小区")])
    first = result.ledger.searches[0].output.results[0]
    assert first.memory_key == "estate" and first.relevance_score >= 0.7
    assert first.summary.startswith(ASSISTANT_SAID) is (role == "assistant")
    second = result.ledger.searches[1].arguments.query
    assert ("金色" in second and "家园" in second) is followed
    assert ("green" in {i.memory_key for i in result.ledger.relevant(0.5)}) is followed


@pytest.mark.parametrize(
    ("message", "told"),
    [
        ("最近睡眠不好，有点焦虑", "最近"),
        ("这几天好累，什么都不想做", "这几天"),  # 什么都: no question
        ("最近怎么都睡不着", "最近"),
        ("最近不知道为什么总是很烦", "最近"),  # 不知道为什么 tells
        ("这周一直在加班", "这周"),  # 一直: not Monday
        ("今天好开心", None),  # one day: today's messages are in the chat window anyway
        ("今天天气真好", None),
        ("I've been feeling down lately", "lately"),
        ("最近有什么好看的电影？", None),  # a request for suggestions
        ("这几天有什么新闻", None),  # a question
        ("What have I been doing lately?", None),
        ("上周去爬山了", None),  # a closed week: an event, not the last days
        ("这个月压力很大", None),  # longer than two weeks, also on the 2nd of a month
        ("I've been so stressed this month", None),
        ("你好呀", None),
        ("今天天气真好，我想问一下我朋友的生日是哪天？", None),
    ],
)
def test_what_tells_of_the_users_last_days(message: str, told: str | None) -> None:
    assert recent_days_told(message) == told


@pytest.mark.parametrize(
    ("message", "days"),
    [
        ("我们上周聊了什么？", "上周"),
        ("我最近都在忙什么", "最近"),
        ("昨天发生了什么事", "昨天"),
        ("What did we talk about last week?", "last week"),
        ("What have I been up to lately?", "lately"),
        ("最近睡眠不好，有点焦虑", "最近"),  # a statement about the last days counts too
        ("上周说的那个方案呢？", None),  # names something: searched by its words
        ("最近有什么好看的电影？", None),
        ("去年发生了什么", None),  # a year is too long to read newest first
        ("聊了什么", None),  # no time
    ],
)
def test_what_makes_the_recall_read_the_days_first(message: str, days: str | None) -> None:
    assert days_to_read(message) == days


async def test_a_message_about_the_last_days_reads_those_days(layer: AgentFusionDataLayer) -> None:
    """ "这几天好累，什么都不想做" shares no word with what the user told of those days: the first round lists
    this friend's events of the last days by the time words alone, the word rounds still run (the listed
    events, all of score ~1, neither end them early nor lend their words to the next query), and the
    word matches rank first. An event of another friend or from before those days is not listed."""
    engine = make_engine(layer.memory)
    await layer.memory.add_many(
        user_id="u1",
        memories=[
            NewMemory(
                "move",
                "周二搬家，搬了一整天",
                memory_type="event",
                friend_id="xiaozhu",
                created_at=NOW - timedelta(days=1),
            ),
            NewMemory(
                "exam",
                "周一考完试，复习到半夜",
                memory_type="event",
                friend_id="xiaozhu",
                created_at=NOW - timedelta(days=2),
            ),
            NewMemory(
                "tired",
                "用户说一累就什么都不想做，只想躺着",
                memory_type="event",
                friend_id="xiaozhu",
                created_at=NOW - timedelta(days=30),
            ),
            NewMemory(
                "other", "加班到凌晨", memory_type="event", friend_id="mentor", created_at=NOW - timedelta(days=1)
            ),
            NewMemory(
                "long-ago",
                "去年夏天去海边",
                memory_type="event",
                friend_id="xiaozhu",
                created_at=NOW - timedelta(days=200),
            ),
        ],
    )
    recall = MemRecallAgent(engine, scope=Scope.of("u1", "xiaozhu"))
    result = await recall.recall([("user", "这几天好累，什么都不想做")])
    searches = result.ledger.searches
    assert searches[0].arguments.query == "这几天" and searches[0].arguments.memory_types == ["event"]
    assert [r.memory_key for r in searches[0].output.results] == ["move", "exam"]
    assert "按时间列出" in (searches[0].output.message or "")  # a model reading it knows why they are there
    assert len(searches) == 3 and all(s.arguments.query == "这几天好累，什么都不想做" for s in searches[1:])
    assert result.ranked_keys[:3] == ["tired", "move", "exam"]
    asked = await MemRecallAgent(engine, scope=Scope.of("u1", "xiaozhu")).recall([("user", "这几天有什么新闻？")])
    assert asked.ledger.searches[0].arguments.query == "这几天有什么新闻？"  # a question: no listing
    talked = await MemRecallAgent(engine, scope=Scope.of("u1", "xiaozhu")).recall([("user", "我们这几天聊了什么？")])
    assert talked.ledger.searches[0].arguments.query == "这几天"  # asks only what was said then
    assert {"move", "exam"} <= set(talked.ranked_keys) and "other" not in talked.ranked_keys


async def test_a_round_that_runs_out_of_time_is_searched_again(
    search: HybridMemorySearch, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cold index refresh can outlast round 1's 0.5 s (a loaded machine, a big user): the recall searches
    again within the next round's longer limit instead of handing off with nothing."""
    real_run = search.run
    slow = [True]

    async def first_run_slow(query: object, **options: object) -> object:
        if slow.pop() if slow else False:
            await asyncio.sleep(0.7)  # over round 1's 0.5 s, as a cold refresh under load was on CI
        return await real_run(query, **options)

    monkeypatch.setattr(search, "run", first_run_slow)
    recall = MemRecallAgent(search, scope=Scope.of("u1", "mentor"))
    result = await recall.recall([("user", "最近汇报压力好大，怎么办")])
    outputs = [s.output for s in recall.ledger.searches]
    assert not outputs[0].success and "超过时间上限" in (outputs[0].message or "")
    assert any(o.success for o in outputs[1:])
    assert result.handoff is not None and result.handoff.relevant_memory_keys[0] == "report"
