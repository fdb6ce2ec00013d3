"""Events that name their own end: times read ahead for a plan, the lapse an archived plan records, and
search and recall that still find it after its time, marked past and ranked below current memories."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from agent_memory.history import PAST_MARK, lapse_of, lapsed, with_lapse
from agent_memory.search import SearchResultRanker
from agent_memory.system import MemorySystem
from agent_memory.text import parse_time_expressions
from agent_memory.tools import MemoryToolbox, SearchMemoriesInput
from data_layer import InvalidInputError, MemoryRecord, NewMemory, NewMessage
from scripted import replay

MONDAY = datetime(2025, 3, 3, 9, 30, tzinfo=UTC)  # a Monday
NEXT_FRIDAY = datetime(2025, 3, 14, tzinfo=UTC)
DECEMBER = datetime(2025, 12, 20, 15, 0, tzinfo=UTC)  # a Saturday
MAY = datetime(2025, 5, 10, 12, tzinfo=UTC)
CST = timezone(timedelta(hours=8))


def _ahead(text: str, now: datetime) -> list[tuple[str, str, str]]:
    return [
        (r.expression, r.start.date().isoformat(), r.end.date().isoformat())
        for r in parse_time_expressions(text, now=now, future=True)
    ]


@pytest.mark.parametrize(
    ("text", "now", "expected"),
    [
        ("下周五要汇报", MONDAY, [("下周五", "2025-03-14", "2025-03-15")]),
        ("下周一开会", MONDAY, [("下周一", "2025-03-10", "2025-03-11")]),
        ("下下周三出差", MONDAY, [("下下周三", "2025-03-19", "2025-03-20")]),
        ("明天去医院", MONDAY, [("明天", "2025-03-04", "2025-03-05")]),
        ("后天考试", MONDAY, [("后天", "2025-03-05", "2025-03-06")]),
        ("下个月搬家", DECEMBER, [("下个月", "2026-01-01", "2026-02-01")]),
        ("下个月3号交房租", DECEMBER, [("下个月3号", "2026-01-03", "2026-01-04")]),
        ("1月5日面试", DECEMBER, [("1月5日", "2026-01-05", "2026-01-06")]),
        ("我6月3日考试", MAY, [("6月3日", "2025-06-03", "2025-06-04")]),
        ("我6月3号考试", datetime(2025, 6, 3, 8, tzinfo=UTC), [("6月3号", "2025-06-03", "2025-06-04")]),
        ("月底交报告", DECEMBER, [("月底", "2025-12-25", "2026-01-01")]),
        ("三天后出发", DECEMBER, [("三天后", "2025-12-23", "2025-12-24")]),
        ("周五见", MONDAY, [("周五", "2025-03-07", "2025-03-08")]),
        ("I'm flying to Tokyo tomorrow", MONDAY, [("tomorrow", "2025-03-04", "2025-03-05")]),
        ("my review is next Friday", MONDAY, [("next friday", "2025-03-14", "2025-03-15")]),
        ("my exam is on June 3", MAY, [("june 3", "2025-06-03", "2025-06-04")]),
        ("the party is on the 5th of January", DECEMBER, [("the 5th of january", "2026-01-05", "2026-01-06")]),
        ("we move next month", DECEMBER, [("next month", "2026-01-01", "2026-02-01")]),
        ("I start the new job in two weeks", DECEMBER, [("in two weeks", "2026-01-03", "2026-01-04")]),
        ("the trip is in three days", DECEMBER, [("in three days", "2025-12-23", "2025-12-24")]),
        ("rent is due at the end of the month", MONDAY, [("at the end of the month", "2025-03-25", "2025-04-01")]),
        # the past still names the past when read ahead
        ("上周五汇报了", MONDAY, [("上周五", "2025-02-28", "2025-03-01")]),
        ("I flew home yesterday", MONDAY, [("yesterday", "2025-03-02", "2025-03-03")]),
    ],
)
def test_a_plan_reads_its_times_ahead(text: str, now: datetime, expected: list[tuple[str, str, str]]) -> None:
    assert _ahead(text, now) == expected


def test_read_as_begun_a_time_stays_in_the_past_and_plan_words_name_nothing() -> None:
    """A question about the past reads as before: a date without a year is the latest one begun, and the
    words only a plan uses (明天, "next month") name no time."""
    past = parse_time_expressions("1月5日面试怎么样", now=DECEMBER)
    assert [(r.start.date().isoformat()) for r in past] == ["2025-01-05"]
    assert parse_time_expressions("下周五要汇报, tomorrow, next month", now=MONDAY) == []
    with pytest.raises(ValueError, match="timezone-aware"):
        parse_time_expressions("明天", now=MONDAY.replace(tzinfo=None), future=True)


def test_days_are_those_of_the_time_zone_the_plan_was_said_in() -> None:
    sunday_night = datetime(2025, 3, 2, 23, 30, tzinfo=CST)  # Monday already in UTC
    assert _ahead("明天", sunday_night) == [("明天", "2025-03-03", "2025-03-04")]


@pytest.mark.parametrize(
    ("text", "said_at", "lapses"),
    [
        ("下周五要汇报", MONDAY, datetime(2025, 3, 15, tzinfo=UTC)),
        ("我6月3日考试", MAY, datetime(2025, 6, 4, tzinfo=UTC)),
        ("my exam is on June 3", MAY, datetime(2025, 6, 4, tzinfo=UTC)),
        ("I'm flying to Tokyo tomorrow", MONDAY, datetime(2025, 3, 5, tzinfo=UTC)),
        ("下个月搬家", DECEMBER, datetime(2026, 2, 1, tzinfo=UTC)),
        ("今天下午要开会", MONDAY, datetime(2025, 3, 4, tzinfo=UTC)),
        ("工作压力好大。下周五要汇报，下个月还要搬家", MONDAY, datetime(2025, 5, 1, tzinfo=UTC)),  # the latest
        # no plan: a finished act, a question, a habit, a state of today, a date already this year
        ("上周五汇报了", MONDAY, None),
        ("我6月3日考完了", MAY, None),
        ("下周五要汇报吗？", MONDAY, None),
        ("What are you doing next month?", MONDAY, None),
        ("I flew to Tokyo yesterday", MONDAY, None),
        ("我每周五都去游泳", MONDAY, None),
        ("今天很累", MONDAY, None),
        ("我6月3日考试", datetime(2025, 6, 10, tzinfo=UTC), None),
    ],
)
def test_lapse_of_a_statement(text: str, said_at: datetime, lapses: datetime | None) -> None:
    assert lapse_of(text, said_at=said_at) == lapses


def test_lapse_of_refuses_a_time_without_a_zone() -> None:
    with pytest.raises(InvalidInputError, match="said_at must be timezone-aware"):
        lapse_of("明天去北京", said_at=MONDAY.replace(tzinfo=None))
    with pytest.raises(InvalidInputError, match="lapses_at must be timezone-aware"):
        with_lapse({}, MONDAY.replace(tzinfo=None))


def test_the_ranker_puts_a_lapsed_memory_below_a_current_one_of_the_same_score() -> None:
    ranker = SearchResultRanker()
    same = {"relevance": 0.8, "access_count": 0, "last_accessed_at": None, "memory_type": "event", "now": MONDAY}
    assert ranker.score(**same, lapsed=True) < ranker.score(**same)
    assert ranker.score(**same, lapsed=True) > ranker.score(**{**same, "relevance": 0.5})  # still above a weak one
    with pytest.raises(ValueError, match="lapsed_weight"):
        SearchResultRanker(lapsed_weight=0)


# -- on both backends --------------------------------------------------------------------------------------


async def _archive(system: MemorySystem, content: str, *, at: datetime, friend: str = "mentor") -> None:
    said = [NewMessage(role="user", content=content, friend_id=friend, created_at=at)]
    await system.layer.messages.append_many(user_id="u1", messages=said)
    await system.session_archiver.run(user_id="u1", friend_id=friend, end_open=True, now=at + timedelta(hours=1))


async def _gist(system: MemorySystem) -> MemoryRecord:
    page = await system.layer.memory.list_memories(user_id="u1", limit=50)
    gists = [m for m in page.items if m.memory_type == "event"]
    assert len(gists) == 1, [m.content for m in page.items]
    return gists[0]


async def test_an_archived_plan_is_current_before_its_day_and_past_after_it(system: MemorySystem) -> None:
    """ "下周五要汇报" said on a Monday (archived much later): current as of that Thursday, found after the
    Friday, marked past in the search, the tool's result and recall_memory's events, as the model reads them."""
    await _archive(system, "下周五要向老板做项目汇报", at=MONDAY)
    gist = await _gist(system)
    assert gist.metadata["lapses_at"] == "2025-03-15T00:00:00+00:00"  # the end of that Friday
    assert not lapsed(gist, NEXT_FRIDAY) and lapsed(gist, NEXT_FRIDAY + timedelta(days=1))

    thursday = NEXT_FRIDAY - timedelta(days=1)
    before = await system.search.search("项目汇报", user_id="u1", friend_id="mentor", as_of=thursday)
    after = await system.search.search("项目汇报", user_id="u1", friend_id="mentor")  # now: years later
    assert gist.memory_key in [h.memory_key for h in before] and gist.memory_key in [h.memory_key for h in after]
    assert not any(h.past for h in before)
    assert [h.past for h in after if h.memory_key == gist.memory_key] == [True]

    mark = PAST_MARK.format(day="2025-03-14")
    toolbox = MemoryToolbox(system.search, scope=system.scope("u1", "mentor"))
    shown = await toolbox.search_memories(SearchMemoriesInput(query="项目汇报"))
    summaries = {r.memory_key: r.summary for r in shown.results}
    assert summaries[gist.memory_key].startswith(mark)
    earlier = MemoryToolbox(system.search, scope=system.scope("u1", "mentor"), as_of=thursday)
    then = await earlier.search_memories(SearchMemoriesInput(query="项目汇报"))
    assert then.results and not any("已过去" in r.summary for r in then.results)

    query = {"query": "项目汇报", "friend_id": "mentor", "similarity_threshold": 0.1}
    now = await system.recall_memory(user_id="u1", request=query)
    assert now.events and all(e.content.startswith(mark) for e in now.events)
    as_of = await system.recall_memory(user_id="u1", request={**query, "as_of": thursday})
    assert as_of.events and not any("已过去" in e.content for e in as_of.events)


async def test_the_recall_block_marks_a_past_plan(system: MemorySystem) -> None:
    """The slot the main model reads says the plan's time has passed."""
    await _archive(system, "下周五要向老板做项目汇报", at=MONDAY)
    context = system.context(user_id="u1", friend_id="mentor")
    from autogen_agentchat.agents import AssistantAgent

    await AssistantAgent("main", model_client=replay(["好的"]), model_context=context).run(task="项目汇报准备得怎么样")
    slots = [line for line in context.last_block.splitlines() if line.startswith("[memory:")]
    assert slots and all("（已过去：2025-03-14）" in line for line in slots), context.last_block
    assert context.last_output is not None and context.last_output.events[0].content.startswith("（已过去")


async def test_a_past_statement_and_a_question_get_no_lapse(system: MemorySystem) -> None:
    await _archive(system, "上周五向老板做了项目汇报", at=MONDAY)
    await _archive(system, "下周五的项目汇报要准备什么？", at=MONDAY + timedelta(days=1), friend="xiaozhu")
    page = await system.layer.memory.list_memories(user_id="u1", limit=50)
    assert page.items and not [m.memory_key for m in page.items if "lapses_at" in m.metadata]
    hits = await system.search.search("项目汇报", user_id="u1")
    assert hits and not any(h.past for h in hits)


async def test_an_english_plan_lapses_the_day_after(system: MemorySystem) -> None:
    await _archive(system, "I'm flying to Tokyo tomorrow for the conference", at=MONDAY)
    gist = await _gist(system)
    assert gist.metadata["lapses_at"] == "2025-03-05T00:00:00+00:00"
    turn = await system.search.search(
        "Tokyo conference", user_id="u1", friend_id="mentor", memory_types=["conversation"]
    )
    assert [h.past for h in turn] == [True]  # the user's own words are a plan too
    then = await system.search.search(
        "Tokyo conference", user_id="u1", friend_id="mentor", as_of=MONDAY + timedelta(hours=2)
    )
    assert then and not any(h.past for h in then)


@pytest.mark.parametrize("lapsed_key", ["a-plan", "b-plan"])
async def test_a_past_event_ranks_below_a_current_one_of_equal_relevance(system: MemorySystem, lapsed_key: str) -> None:
    """Two events of the same words and score: whichever key would win the tie, the past one is second;
    as of a time before its end it is current and the tie is the keys' again."""
    current_key = "b-plan" if lapsed_key == "a-plan" else "a-plan"
    text = "周五去杭州参加项目评审会"
    await system.layer.memory.add_many(
        user_id="u1",
        memories=[
            NewMemory(
                lapsed_key,
                text,
                memory_type="event",
                friend_id="mentor",
                created_at=MONDAY,
                metadata=with_lapse({}, NEXT_FRIDAY),
            ),
            NewMemory(current_key, text, memory_type="event", friend_id="mentor", created_at=MONDAY),
        ],
    )
    hits = await system.search.search("杭州项目评审会", user_id="u1", now=NEXT_FRIDAY + timedelta(days=2))
    assert [h.memory_key for h in hits] == [current_key, lapsed_key]
    assert hits[0].score == hits[1].score and [h.past for h in hits] == [False, True]
    then = await system.search.search(
        "杭州项目评审会", user_id="u1", as_of=NEXT_FRIDAY - timedelta(days=1), now=NEXT_FRIDAY + timedelta(days=2)
    )
    assert [h.memory_key for h in then] == ["a-plan", "b-plan"] and not any(h.past for h in then)


def test_the_cli_and_mcp_listings_show_the_past_mark(db_url: str) -> None:
    """`memory list`, `memory get`, `memory search` and MCP list_memories say a memory's time has passed."""
    import asyncio
    import json

    from typer.testing import CliRunner

    from agent_memory.cli import app
    from agent_memory.mcp import MemoryMcpTools
    from agent_memory.settings import load_settings

    ended = datetime.now(UTC) - timedelta(days=3)
    mark = PAST_MARK.format(day=(ended - timedelta(microseconds=1)).date().isoformat())

    async def write_and_list() -> list[dict[str, object]]:
        async with MemorySystem.from_settings(load_settings(memory_database_url=db_url)) as system:
            await system.layer.memory.add_many(
                user_id="u1",
                memories=[
                    NewMemory(
                        "trip",
                        "下周去北京出差",
                        memory_type="event",
                        friend_id="mentor",
                        metadata=with_lapse({}, ended),
                    ),
                    NewMemory(
                        "plan",
                        "下个月去成都出差",
                        memory_type="event",
                        friend_id="mentor",
                        metadata=with_lapse({}, datetime.now(UTC) + timedelta(days=20)),
                    ),
                ],
            )
            listed = await MemoryMcpTools(system, user_id="u1").call("list_memories", {"friend_id": "mentor"})
            return listed["items"]

    items = {i["memory_key"]: i["summary"] for i in asyncio.run(write_and_list())}
    assert str(items["trip"]).startswith(mark) and "已过去" not in str(items["plan"])

    runner = CliRunner()
    page = runner.invoke(app, ["memory", "list", "--user", "u1", "--db", db_url, "--json"])
    assert page.exit_code == 0, page.output
    rows = {r["memory_key"]: r for r in json.loads(page.stdout)["items"]}
    assert rows["trip"]["past"] == mark and rows["plan"]["past"] == ""
    table = runner.invoke(app, ["memory", "list", "--user", "u1", "--db", db_url])
    assert "已过去" in table.stdout
    got = runner.invoke(app, ["memory", "get", "trip", "--user", "u1", "--db", db_url])
    assert got.exit_code == 0 and mark in got.stdout
    current = runner.invoke(app, ["memory", "get", "plan", "--user", "u1", "--db", db_url, "--json"])
    assert json.loads(current.stdout)["past"] == ""
    found = runner.invoke(app, ["memory", "search", "出差", "--user", "u1", "--db", db_url, "--json"])
    assert {h["memory_key"]: h["past"] for h in json.loads(found.stdout)} == {"trip": mark, "plan": ""}


def test_said_at_none_is_a_clear_error() -> None:
    with pytest.raises(InvalidInputError, match="said_at must be the time the text was said"):
        lapse_of("明天要去", said_at=None)


@pytest.mark.parametrize(
    "text",
    [
        "2月30日要考试",
        "我13月要去旅行",
        "下周要在32号开会",
        "明天" * 5000,
        "9999年12月31日要去",
        "\x00\x01明天要去",
        "我要在" + "，".join(f"{m}月{d}日" for m in range(1, 13) for d in range(1, 29)) + "出差",
    ],
)
@pytest.mark.parametrize("hours", [-12, 0, 14])
def test_odd_text_in_any_zone_gives_a_time_or_none(text: str, hours: int) -> None:
    said = datetime(2026, 3, 9, 10, tzinfo=UTC).astimezone(timezone(timedelta(hours=hours)))
    end = lapse_of(text, said_at=said)
    assert end is None or end > said
