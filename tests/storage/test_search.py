"""HybridMemorySearch on a real database (SQLite file and PostgreSQL): scoping, freshness, modes,
filters, synonyms, ranking and bad input."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from agent_memory.bench import synthetic_memories, synthetic_queries
from agent_memory.search import HybridMemorySearch, MemoryModel
from data_layer import AgentFusionDataLayer, InvalidInputError, NewMemory, upgrade
from scripted import engine as make_engine

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)

MEMORIES = [
    NewMemory(
        "db-config",
        "用户的 MySQL 数据库配置: host=10.0.0.5 port=3306",
        summary="MySQL 数据库配置",
        memory_type="command_output",
        friend_id="xiaozhu",
        created_at=NOW - timedelta(days=2),
    ),
    NewMemory(
        "likes-scifi",
        "The user loves science fiction movies, especially Interstellar.",
        memory_type="user_preference",
        friend_id=None,
        created_at=NOW - timedelta(days=40),
    ),
    NewMemory(
        "trip-hangzhou",
        "上周和朋友去杭州西湖徒步，天气很好",
        memory_type="event",
        friend_id="xiaozhu",
        created_at=NOW - timedelta(days=8),
    ),
    NewMemory(
        "mentor-career",
        "Discussed moving from backend work to a data engineering role.",
        memory_type="event",
        friend_id="mentor",
        created_at=NOW - timedelta(days=10),
    ),
    NewMemory(
        "coffee",
        "每天早上喝一杯手冲咖啡",
        memory_type="user_preference",
        friend_id=None,
        created_at=NOW - timedelta(days=100),
    ),
]


@pytest.fixture
async def search(layer: AgentFusionDataLayer) -> HybridMemorySearch:
    engine = make_engine(layer.memory)
    await layer.memory.add_many(user_id="alice", memories=MEMORIES)
    return engine


async def keys(engine: HybridMemorySearch, query: str, **kw: object) -> list[str]:
    kw.setdefault("user_id", "alice")
    kw.setdefault("now", NOW)
    return [h.memory_key for h in await engine.search(query, **kw)]


async def test_finds_chinese_and_english(search: HybridMemorySearch) -> None:
    assert (await keys(search, "数据库配置"))[0] == "db-config"
    assert (await keys(search, "mysql port"))[0] == "db-config"
    assert (await keys(search, "which science fiction films"))[0] == "likes-scifi"
    assert (await keys(search, "西湖徒步"))[0] == "trip-hangzhou"
    assert (await keys(search, "ＭｙＳＱＬ"))[0] == "db-config"  # full-width folds to half-width


async def test_scores_are_between_zero_and_one_and_thresholds_cut(search: HybridMemorySearch) -> None:
    hits = await search.search("MySQL 数据库 配置", user_id="alice", now=NOW)
    assert hits and all(0.0 < h.score <= 1.0 and 0.0 <= h.rank_score <= 1.0 for h in hits)
    best = hits[0].score
    assert best > 0.5
    strict = await search.search("MySQL 数据库 配置", user_id="alice", now=NOW, min_relevance_score=best)
    assert [h.memory_key for h in strict] == ["db-config"]
    weak = await search.search("咖啡 mysql", user_id="alice", now=NOW)
    assert weak and max(h.score for h in weak) < best


async def test_every_memory_gets_keywords_on_write(layer: AgentFusionDataLayer, search: HybridMemorySearch) -> None:
    for memory in MEMORIES:
        kws = await layer.memory.get_keywords(user_id="alice", memory_key=memory.memory_key)
        assert kws, memory.memory_key
    db_kws = {k.keyword for k in await layer.memory.get_keywords(user_id="alice", memory_key="db-config")}
    assert "mysql" in db_kws and "命令" in db_kws  # TF-IDF word and the command_output type rule
    assert await layer.memory.pending_keyword_extraction(user_id="alice") == []


async def test_friend_scope_and_shared_memories(search: HybridMemorySearch) -> None:
    xiaozhu = await keys(search, "data engineering backend role mysql 咖啡", friend_id="xiaozhu", limit=10)
    assert "mentor-career" not in xiaozhu
    assert "db-config" in xiaozhu and "coffee" in xiaozhu  # own and shared
    mentor = await keys(search, "data engineering backend role mysql 咖啡", friend_id="mentor", limit=10)
    assert "mentor-career" in mentor and "db-config" not in mentor and "coffee" in mentor
    only_own = await keys(search, "mysql 咖啡", friend_id="xiaozhu", include_shared=False, limit=10)
    assert only_own == ["db-config"]


async def test_another_user_sees_nothing(search: HybridMemorySearch) -> None:
    assert await keys(search, "mysql 数据库 咖啡", user_id="mallory") == []
    assert await keys(search, "mysql", user_id=42) == []


async def test_a_write_is_visible_to_the_next_search(layer: AgentFusionDataLayer, search: HybridMemorySearch) -> None:
    assert await keys(search, "redis 缓存") == []
    await layer.memory.add(user_id="alice", memory_key="redis", content="Redis 缓存 运行在 6379 端口", created_at=NOW)
    assert await keys(search, "redis 缓存") == ["redis"]  # the recent-search cache did not answer
    await layer.memory.upsert(user_id="alice", memory_key="redis", content="现在改用 memcached 了", created_at=NOW)
    assert await keys(search, "redis 缓存") == []
    assert await keys(search, "memcached") == ["redis"]
    await layer.memory.delete(user_id="alice", memory_key="redis")
    assert await keys(search, "memcached") == []
    await layer.memory.add(user_id="alice", memory_key="redis2", content="memcached again", created_at=NOW)
    await layer.memory.delete(user_id="alice", memory_key="redis2", hard=True)
    assert await keys(search, "memcached") == []


async def test_a_second_engine_sees_writes_made_elsewhere(layer: AgentFusionDataLayer, db_url: str) -> None:
    """Two processes share one database: each engine checks the change counter before searching."""
    reader = make_engine(layer.memory)
    assert await keys(reader, "kubernetes") == []
    async with AgentFusionDataLayer(db_url) as other:
        make_engine(other.memory)
        await other.memory.add(user_id="alice", memory_key="k8s", content="部署在 Kubernetes 集群", created_at=NOW)
    assert await keys(reader, "kubernetes") == ["k8s"]


async def test_synonyms_expand_and_new_synonyms_apply_at_once(
    layer: AgentFusionDataLayer, search: HybridMemorySearch
) -> None:
    assert "coffee" not in await keys(search, "espresso")
    await layer.memory.add_synonym("espresso", "咖啡", similarity_score=0.9)
    hits = await search.search("espresso", user_id="alice", now=NOW)
    assert [h.memory_key for h in hits] == ["coffee"]
    assert hits[0].keyword == pytest.approx(0.7 * 0.9, abs=0.01)


async def test_a_synonym_held_by_a_new_memory_counts_at_once(
    layer: AgentFusionDataLayer, search: HybridMemorySearch
) -> None:
    """Which synonyms of a query word the user's memories hold is kept between searches; a memory
    written later that holds one is found by the next search."""
    await layer.memory.add_synonym("espresso", "拿铁", similarity_score=0.9)
    assert await keys(search, "espresso") == []  # no memory says 拿铁 yet
    await layer.memory.add(user_id="alice", memory_key="latte", content="下午常点一杯拿铁", created_at=NOW)
    assert (await keys(search, "espresso"))[0] == "latte"
    await layer.memory.delete(user_id="alice", memory_key="latte")
    assert await keys(search, "espresso") == []


async def test_a_full_synonym_cache_loses_no_synonym_for_later_searches(layer: AgentFusionDataLayer) -> None:
    """The engine-wide cache of query words' synonyms is full on a busy server (two entries here): a
    search's own words push each other out while it runs, and what the search keeps with the user's
    index must still be built from the synonyms it read."""
    from cachetools import TTLCache

    engine = HybridMemorySearch(layer.memory, thesaurus=None, neighbours=None)
    engine._synonyms = TTLCache(2, 300)
    layer.memory.set_analyzer(engine.analyzer)
    await layer.memory.add(user_id="alice", memory_key="latte", content="下午常点一杯拿铁", created_at=NOW)
    await layer.memory.add(user_id="bob", memory_key="tea", content="喜欢喝绿茶", created_at=NOW)
    await layer.memory.add_synonym("espresso", "拿铁", similarity_score=0.9)
    assert await keys(engine, "espresso", user_id="bob") == []
    await keys(engine, "espresso tea coffee")
    for query in ("espresso", "espresso please"):
        assert await keys(engine, query) == ["latte"]


async def test_a_thesaurus_swapped_on_a_live_engine_applies_to_the_next_search(layer: AgentFusionDataLayer) -> None:
    from agent_memory.text import Thesaurus

    engine = HybridMemorySearch(layer.memory, thesaurus=Thesaurus({}), neighbours=None)
    layer.memory.set_analyzer(engine.analyzer)
    await layer.memory.add(user_id="alice", memory_key="latte", content="下午常点一杯拿铁", created_at=NOW)
    assert await keys(engine, "咖啡") == []
    engine.thesaurus = Thesaurus({"Bp01A01=": ["咖啡", "拿铁"]})
    assert await keys(engine, "咖啡") == ["latte"]


async def test_modes(search: HybridMemorySearch) -> None:
    assert (await keys(search, "mysql", mode="keyword"))[0] == "db-config"
    assert (await keys(search, "science fiction movie", mode="semantic"))[0] == "likes-scifi"
    with pytest.raises(InvalidInputError, match="mode must be one of"):
        await keys(search, "mysql", mode="fuzzy")


async def test_filters(search: HybridMemorySearch) -> None:
    everything = "mysql 咖啡 杭州 science data"
    prefs = await keys(search, everything, memory_types=["user_preference"], limit=10)
    assert set(prefs) == {"coffee", "likes-scifi"}
    recent = await keys(search, everything, time_range_days=9, limit=10)
    assert set(recent) == {"db-config", "trip-hangzhou"}
    window = await keys(search, everything, start=NOW - timedelta(days=50), end=NOW - timedelta(days=8), limit=10)
    assert set(window) == {"likes-scifi", "mentor-career"}
    named = await keys(search, "上周 去了哪里 杭州 mysql", use_time_expressions=True, limit=10)
    assert named == ["trip-hangzhou"]


async def test_recent_memories_rank_higher_at_equal_relevance(layer: AgentFusionDataLayer) -> None:
    engine = make_engine(layer.memory)
    await layer.memory.add(user_id="bob", memory_key="old", content="跑步 训练", created_at=NOW - timedelta(days=90))
    await layer.memory.add(user_id="bob", memory_key="new", content="跑步 训练", created_at=NOW - timedelta(days=1))
    hits = await engine.search("跑步训练", user_id="bob", now=NOW)
    assert [h.memory_key for h in hits] == ["new", "old"]
    assert hits[0].recency > hits[1].recency >= 0.5


async def test_a_time_the_query_names_replaces_recency(layer: AgentFusionDataLayer) -> None:
    """A question naming a time ("上周", "in January", "on 10 January") asks about then: equally matching
    memories are ordered by their distance to it, not to now; "最近" names no time; nothing is filtered."""
    engine = make_engine(layer.memory)
    memories = [("jan", NOW - timedelta(days=50)), ("last-week", NOW - timedelta(days=9)), ("new", NOW)]
    for key, when in memories:
        await layer.memory.add(
            user_id="gus", memory_key=key, content="和朋友去餐厅吃饭 dinner with friends", created_at=when
        )
    assert await keys(engine, "去餐厅吃饭", user_id="gus") == ["new", "last-week", "jan"]
    assert (await keys(engine, "上周去餐厅吃饭", user_id="gus"))[0] == "last-week"
    assert (await keys(engine, "dinner with friends in January", user_id="gus"))[0] == "jan"
    assert (await keys(engine, "dinner with friends on 10 January, 2026", user_id="gus"))[0] == "jan"
    assert await keys(engine, "最近去餐厅吃饭", user_id="gus") == ["new", "last-week", "jan"]
    assert await keys(engine, "最近去餐厅吃饭", user_id="gus", use_time_expressions=True) == ["new"]  # still filters
    named = await engine.search("上周去餐厅吃饭", user_id="gus", now=NOW)
    assert len(named) == 3 and named[0].recency == 1.0 > named[1].recency


async def test_a_date_written_out_outweighs_a_closer_word_match_of_another_time(layer: AgentFusionDataLayer) -> None:
    """ "on 9 February, 2026" says which memories the question is about: the one of that day comes before a
    memory of another day that matches the words better. A span counted from now ("three weeks ago", the
    same week) only re-orders equal matches, so there the better match stays first."""
    engine = make_engine(layer.memory)
    await layer.memory.add(
        user_id="ivy",
        memory_key="that-day",
        content="went out for dinner with friends, then home",
        created_at=datetime(2026, 2, 9, 18, tzinfo=UTC),
    )
    await layer.memory.add(
        user_id="ivy", memory_key="other-day", content="dinner with friends", created_at=NOW - timedelta(days=1)
    )
    assert await keys(engine, "dinner with friends", user_id="ivy") == ["other-day", "that-day"]
    assert await keys(engine, "dinner with friends on 9 February, 2026", user_id="ivy") == ["that-day", "other-day"]
    assert await keys(engine, "2026年2月9日和朋友 dinner with friends", user_id="ivy") == ["that-day", "other-day"]
    assert await keys(engine, "dinner with friends three weeks ago", user_id="ivy") == ["other-day", "that-day"]
    hits = await engine.search("dinner with friends on 9 February, 2026", user_id="ivy", now=NOW)
    assert hits[1].score < 0.8 * hits[0].score  # in the score itself, so a threshold sees it too


async def test_a_date_no_memory_is_from_is_what_they_are_about(layer: AgentFusionDataLayer) -> None:
    """ "1月5日生日的人" names a birthday, not when anything was said: while no related memory is from that
    day the date weighs nothing; once one is, the others are weighed by their distance to it."""
    engine = make_engine(layer.memory)
    for user in ("kim", "lou"):
        await layer.memory.add(
            user_id=user,
            memory_key="birthday",
            content="王静雅的生日是1月5日，她是医生",
            created_at=NOW - timedelta(days=5),
        )
    await layer.memory.add(
        user_id="lou",
        memory_key="that-day",
        content="1月5日和王静雅吃饭",
        created_at=datetime(2026, 1, 5, 19, tzinfo=UTC),
    )
    query = "1月5日生日的人是谁"
    alone = {h.memory_key: h.score for h in await engine.search(query, user_id="kim", now=NOW)}
    beside = {h.memory_key: h.score for h in await engine.search(query, user_id="lou", now=NOW)}
    assert alone["birthday"] > 0.95 > 0.85 > beside["birthday"]  # relevance about halved: 52 days from a one-day span


async def test_a_query_of_nothing_but_a_time_lists_the_memories_of_that_time(layer: AgentFusionDataLayer) -> None:
    """ "最近" or "上周" alone has no word to match: it asks for what was said then. Every memory of that
    time is found (newest first, whatever its words), none from another time; a word beside the time
    ("最近的吉他课") makes it an ordinary search again."""
    engine = make_engine(layer.memory)
    for key, text, days in (
        ("flu", "感冒了，在家休息", 1),
        ("hike", "周六去爬山了", 3),
        ("guitar", "开始学吉他", 5),
        ("trip", "去北京出差", 10),
        ("old", "搬到了上海", 40),
    ):
        await layer.memory.add(user_id="joy", memory_key=key, content=text, created_at=NOW - timedelta(days=days))
    assert await keys(engine, "最近", user_id="joy") == ["flu", "hike", "guitar"]  # the last 7 days
    assert await keys(engine, "recently", user_id="joy") == ["flu", "hike", "guitar"]
    assert await keys(engine, "上周的", user_id="joy") == ["trip"]  # Mon 16 - Sun 22 Feb 2026 (NOW is a Sunday)
    assert await keys(engine, "最近", user_id="joy", memory_types=["event"]) == []  # filters still apply
    with pytest.raises(InvalidInputError, match=r"unknown memory_type 'fact'; use one of: .*event"):
        await keys(engine, "最近", user_id="joy", memory_types=["fact"])  # a typo is no empty result
    hits = await engine.search("这几天", user_id="joy", now=NOW)
    assert [h.memory_key for h in hits] == ["flu", "hike"] and hits[1].score > 0.9 and hits.expanded == ()
    assert hits.period is not None and hits.period.expression == "这几天"  # listed by time, and it says so
    assert await keys(engine, "最近的吉他课", user_id="joy") == ["guitar"]  # words to match: a search
    assert (await engine.search("最近的吉他课", user_id="joy", now=NOW)).period is None
    # a word that holds a time is a word ("五月天" is a band); "最近好吗" is a greeting, not a question about
    # the last days, and a memory's 最近 is the day it was said: nothing to list; a year is too wide to list
    await layer.memory.add(user_id="joy", memory_key="band", content="最喜欢的乐队是五月天", created_at=NOW)
    await layer.memory.add(user_id="joy", memory_key="hello", content="他问我最近好吗", created_at=NOW)
    assert await keys(engine, "五月天", user_id="joy") == ["band"]
    assert await keys(engine, "最近好吗", user_id="joy") == []
    assert (await engine.search("2026年", user_id="joy", now=NOW)).period is None


async def test_a_named_time_is_read_in_the_callers_time_zone(layer: AgentFusionDataLayer) -> None:
    """ "昨天" at one instant is another day in UTC than in +08:00: each gets its own order, and the
    recent-search cache never answers one with the other's."""
    engine = make_engine(layer.memory)
    for key, when in (("a", datetime(2026, 3, 8, 18, tzinfo=UTC)), ("b", datetime(2026, 3, 9, 20, tzinfo=UTC))):
        await layer.memory.add(user_id="hal", memory_key=key, content="和朋友去餐厅吃饭", created_at=when)
    utc = datetime(2026, 3, 10, 2, 0, tzinfo=UTC)  # 10:00 on the 10th in +08:00
    east = utc.astimezone(timezone(timedelta(hours=8)))
    assert await keys(engine, "昨天去餐厅吃饭", user_id="hal", now=utc) == ["b", "a"]  # the 9th, UTC
    assert await keys(engine, "昨天去餐厅吃饭", user_id="hal", now=east) == ["a", "b"]  # the 9th in +08:00


async def test_a_search_that_gives_up_leaves_the_first_build_running(
    layer: AgentFusionDataLayer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A recall round past its time limit cancels its search, not the cold index's build: the next
    search joins it instead of reading every row again, and a memory written meanwhile is still found."""
    engine = make_engine(layer.memory)
    for user in ("mia", "ned", "oz"):
        await layer.memory.add(user_id=user, memory_key="m", content="去海边看日出", created_at=NOW)
    original, reads = layer.memory.index_rows, []

    async def slow_rows(**kwargs: Any) -> Any:
        rows = await original(**kwargs)
        reads.append(kwargs["user_id"])
        await asyncio.sleep(0.3)  # a big user's rows on a loaded machine
        return rows

    monkeypatch.setattr(layer.memory, "index_rows", slow_rows)
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(engine.search("日出", user_id="mia", now=NOW), timeout=0.05)
    assert await keys(engine, "日出", user_id="mia") == ["m"]
    assert reads == ["mia"]  # one build, joined; not a second read of every row
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(engine.search("日出", user_id="ned", now=NOW), timeout=0.05)
    await layer.memory.add(user_id="ned", memory_key="m2", content="日出很美", created_at=NOW)  # during the build
    assert sorted(await keys(engine, "日出", user_id="ned")) == ["m", "m2"]
    with pytest.raises(TimeoutError):  # a build nobody waits for any more still counts against the cache cap
        await asyncio.wait_for(engine.search("日出", user_id="oz", now=NOW), timeout=0.05)
    building = engine._users["oz"].building
    if building is not None:  # still reading its rows: wait for the build itself, not for a time
        await building
    assert engine._users["oz"].approx_bytes > 0


async def test_ranker_uses_access_counts(layer: AgentFusionDataLayer) -> None:
    engine = make_engine(layer.memory)
    for key in ("a", "b"):
        await layer.memory.add(user_id="carol", memory_key=key, content="周末 爬山 计划", created_at=NOW)
    first = await keys(engine, "爬山", user_id="carol")
    loser = first[-1]
    for _ in range(5):
        await layer.memory.retrieve_memory(user_id="carol", memory_key=loser)
    engine.forget(user_id="carol")  # access counts are cached with the records (10 min) until forgotten
    assert (await keys(engine, "爬山", user_id="carol"))[0] == loser


async def test_changed_analyzer_reanalyses_stored_memories(layer: AgentFusionDataLayer) -> None:
    await layer.memory.add(user_id="dan", memory_key="m", content="项目 周报 模板", created_at=NOW)  # no analyzer yet
    assert await layer.memory.pending_keyword_extraction(user_id="dan")
    engine = make_engine(layer.memory, memory_extraction_max_keywords=3)
    assert await keys(engine, "周报", user_id="dan") == ["m"]
    assert await layer.memory.pending_keyword_extraction(user_id="dan") == []


async def test_memory_model_compat(layer: AgentFusionDataLayer, search: HybridMemorySearch) -> None:
    model = MemoryModel(layer, search=search)
    infos = await model.search_memories("数据库", user_id="alice", limit=3)
    assert infos[0].memory_key == "db-config" and 0 < infos[0].relevance_score <= 1
    assert infos[0].keywords
    adv = await model.search_memories_advanced(user_id="alice", query="数据库", friend_id="mentor")
    assert [i.memory_key for i in adv] == []
    with pytest.raises(InvalidInputError, match="user_id is required"):
        await model.search_memories("数据库")


@pytest.mark.parametrize(
    "query",
    ['"mysql"', "'; DROP TABLE agent_memories; --", "%", "_", "100%_done", "mysql OR 1=1", "😀🔥", "数据库😀"],
)
async def test_odd_queries_are_just_text(layer: AgentFusionDataLayer, search: HybridMemorySearch, query: str) -> None:
    hits = await search.search(query, user_id="alice", now=NOW, keywords=[query])
    found = {h.memory_key for h in hits}
    plain = {h.memory_key for h in await search.search(query, user_id="alice", now=NOW)}
    assert found <= {"db-config"} and plain <= {"db-config"}  # only a real word match, never "everything"
    if "mysql" in query.lower() or "数据库" in query:
        assert plain == {"db-config"}
        # as a filter keyword every term of the string must be held, and db-config holds no "1"
        assert found == (set() if query == "mysql OR 1=1" else {"db-config"})
    assert await layer.memory.count(user_id="alice") == len(MEMORIES)  # nothing dropped


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"query": ""}, "query is empty"),
        ({"query": "   "}, "query is empty"),
        ({"query": None}, "query must be a string"),
        ({"query": "x" * 5000}, "at most 4000"),
        ({"limit": 0}, "limit must be an integer from 1 to 100"),
        ({"limit": 101}, "limit must be an integer from 1 to 100"),
        ({"limit": True}, "limit must be an integer"),
        ({"min_relevance_score": -0.1}, "min_relevance_score must be a number from 0 to 1"),
        ({"min_relevance_score": 1.5}, "min_relevance_score must be a number from 0 to 1"),
        ({"min_relevance_score": float("nan")}, "min_relevance_score must be a number from 0 to 1"),
        ({"min_relevance_score": "high"}, "min_relevance_score must be a number"),
        ({"time_range_days": 0}, "time_range_days must be a whole number of days from 1"),
        ({"now": datetime(2026, 1, 1)}, "timezone-aware"),
        ({"keywords": [3]}, "keywords must be strings"),
        ({"user_id": ""}, "user_id must be a non-empty id"),
        ({"user_id": 1.5}, "user_id must be a str or int id"),
        ({"friend_id": "x" * 200}, "friend_id is 200 characters long"),
    ],
)
async def test_bad_input_is_refused_clearly(
    search: HybridMemorySearch, kwargs: dict[str, object], message: str
) -> None:
    args: dict[str, object] = {"query": "mysql", "user_id": "alice"}
    args.update(kwargs)
    query = args.pop("query")
    with pytest.raises(InvalidInputError, match=message):
        await search.search(query, **args)


@pytest.mark.postgres
async def test_sqlite_and_postgresql_rank_alike(fresh_pg_url: str, tmp_path: Path) -> None:
    """The same memories on both backends give the same top 5, ties included (same tie-break)."""
    sqlite_url = f"sqlite+aiosqlite:///{tmp_path / 'same.db'}"
    for url in (sqlite_url, fresh_pg_url):
        await upgrade(url)
    items = list(synthetic_memories(400, start=NOW))
    results = []
    for url in (sqlite_url, fresh_pg_url):
        async with AgentFusionDataLayer(url) as layer:
            engine = make_engine(layer.memory)
            await layer.memory.add_many(user_id="same", memories=items)
            results.append(
                [
                    [(h.memory_key, h.score) for h in await engine.search(q, user_id="same", now=NOW, limit=5)]
                    for q in synthetic_queries(40)
                ]
            )
    assert all(results[0])
    assert results[0] == results[1]


async def test_odd_user_tags_are_stored_and_matched_as_text(layer: AgentFusionDataLayer) -> None:
    engine = make_engine(layer.memory)
    tags = ["100%_done", "it's", "DROP TABLE x;--", "😀", "配置_v2"]
    await layer.memory.add(user_id="erin", memory_key="tagged", content="季度 总结", keywords=tags, created_at=NOW)
    await layer.memory.add(user_id="erin", memory_key="plain", content="别的 内容", created_at=NOW - timedelta(days=3))
    stored = {k.keyword for k in await layer.memory.get_keywords(user_id="erin", memory_key="tagged")}
    assert {t.lower() for t in tags} <= stored
    assert await keys(engine, "100%", user_id="erin") == ["tagged"]
    assert await keys(engine, "配置_v2", user_id="erin") == ["tagged"]
    assert await keys(engine, "%", user_id="erin") == []
    assert await layer.memory.count(user_id="erin") == 2


class _SlowEmbedder:
    """Embeds like the hashing default, but slowly (a search then waits while others write)."""

    def __init__(self) -> None:
        from agent_memory.search import HashingEmbedder

        self._inner = HashingEmbedder()
        self.name, self.dim = self._inner.name, self._inner.dim

    async def embed(self, texts):
        import asyncio

        await asyncio.sleep(0.3)
        return await self._inner.embed(texts)


async def test_concurrent_writes_never_leak_another_friends_memory(layer: AgentFusionDataLayer) -> None:
    """A search waiting on its embedder while another search applies a delete and an insert (which
    could reuse the freed index slot) still returns only the friend's own memories."""
    import asyncio

    engine = make_engine(layer.memory, embedder=_SlowEmbedder(), memory_search_semantic_share=0.5)
    await layer.memory.add(user_id="f", memory_key="a1", content="项目 预算 会议", friend_id="A", created_at=NOW)
    await engine.refresh(user_id="f")

    async def churn() -> None:
        await asyncio.sleep(0.05)
        await layer.memory.delete(user_id="f", memory_key="a1")
        await layer.memory.add(
            user_id="f", memory_key="b_secret", content="项目 预算 会议 机密", friend_id="B", created_at=NOW
        )
        await engine.search("项目", user_id="f", friend_id="B", now=NOW)

    hits, _ = await asyncio.gather(
        engine.search("项目 预算 会议", user_id="f", friend_id="A", include_shared=False, now=NOW), churn()
    )
    assert all(h.record.friend_id == "A" for h in hits)
    assert await keys(engine, "项目 预算", user_id="f", friend_id="A", include_shared=False) == []


async def test_long_query_words_with_synonyms_present(layer: AgentFusionDataLayer, search: HybridMemorySearch) -> None:
    await layer.memory.add_synonym("database", "db", similarity_score=0.9)
    hits = await search.search("mysql " + "x" * 150, user_id="alice", now=NOW)
    assert [h.memory_key for h in hits][:1] == ["db-config"]


async def test_every_memory_gets_a_keyword_even_without_words(layer: AgentFusionDataLayer) -> None:
    make_engine(layer.memory)
    for key, text in (("stop", "的了吗"), ("emoji", "😀😀"), ("letters", "a b c")):
        await layer.memory.add(user_id="kw", memory_key=key, content=text, created_at=NOW)
        assert await layer.memory.get_keywords(user_id="kw", memory_key=key), key
    assert await layer.memory.pending_keyword_extraction(user_id="kw") == []


async def test_searches_in_one_view_look_at_storage_once(system: Any) -> None:
    """Inside ``one_view`` the user's change counters are read once; each new view reads them again, so
    it sees what was written in between; a whole recall (several rounds) is one view."""
    from sqlalchemy import event

    from agent_memory.recall import MemRecallAgent
    from data_layer import Scope

    engine, layer = system.search, system.layer
    await layer.memory.add(user_id="u1", memory_key="trip", content="下周二去北京出差", memory_type="profile")
    looks: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if "FROM memory_index_state" in statement:
            looks.append(statement)

    await engine.refresh(user_id="u1")  # the index is up to date: one look tells it nothing changed
    event.listen(layer.db.engine.sync_engine, "before_cursor_execute", record)
    with engine.one_view():
        for text in ("北京", "出差", "北京出差"):
            assert await engine.search(text, user_id="u1")
    assert len(looks) == 1
    await layer.memory.add(user_id="u1", memory_key="talk", content="周五给管理层做汇报", memory_type="profile")
    with engine.one_view():
        found = await engine.search("汇报", user_id="u1")
    assert [h.memory_key for h in found][:1] == ["talk"] and len(looks) >= 2  # the new memory is seen
    looks.clear()
    for text in ("北京", "出差"):
        await engine.search(text, user_id="u1")
    assert len(looks) == 2  # outside a view every search looks
    looks.clear()
    result = await MemRecallAgent(engine, scope=Scope.of("u1")).recall([("user", "北京出差的事还记得吗")])
    assert len(result.ledger.searches) >= 2 and len(looks) == 1


class _DateBlindEncoder:
    """A sentence encoder of three directions that, like a real one, does not read dates: the query
    (``happened``) is 0.6 alike to the pottery class and 0.7 to every other memory, whenever written."""

    name, dim, reads_sentences, similarity_floor = "date-blind-test", 3, True, 0.0

    async def embed(self, texts):
        import numpy as np

        def vector(text: str) -> list[float]:
            if "happened" in text:
                return [1.0, 0.0, 0.0]
            return [0.6, 0.8, 0.0] if "pottery" in text else [0.7, 0.0, 0.714]

        return np.asarray([vector(t) for t in texts], dtype=np.float32)


async def test_the_order_by_meaning_weighs_a_written_date_as_the_words_do(layer: AgentFusionDataLayer) -> None:
    """A question that writes out a date, with no word any memory holds, is ordered by meaning and words
    together; the memory of that day comes first, though 35 memories of a year before are nearer in
    meaning (ordered by cosine alone they took every place the meaning gives, and the day's memory fell
    out of the ten)."""
    engine = make_engine(layer.memory, embedder=_DateBlindEncoder(), memory_search_semantic_share=0.3)
    then = datetime(2023, 6, 3, 12, 0, tzinfo=UTC)
    await layer.memory.add(
        user_id="mia", memory_key="pottery", content="Signed up for a pottery class", created_at=then
    )
    await layer.memory.add_many(
        user_id="mia",
        memories=[
            NewMemory(f"before-{i:02d}", f"Walked the dog along route {i}", created_at=then - timedelta(days=365 + i))
            for i in range(35)
        ],
    )
    await engine.settle(user_id="mia")
    hits = await engine.search("What happened on 3 June, 2023?", user_id="mia", now=datetime(2023, 7, 1, tzinfo=UTC))
    assert hits[0].score < 0.5  # no word supports a memory: the meaning takes part in the order
    assert hits[0].memory_key == "pottery"
    await engine.close()
