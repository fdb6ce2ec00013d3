"""``MEMORY_SEARCH_INDEX=store``: every search reads its candidates and statistics from the store's engine,
and a process keeps nothing of a user.

The answers are compared with the per-process index's, on both backends: the same memories in the
same order, with the same scores but for the BM25 length normalisation (the store's index knows the
average length of the user's memories, not of their conversation neighbours: scores may differ a little).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta

import pytest

from agent_memory.search import HybridMemorySearch
from agent_memory.settings import load_settings
from agent_memory.system import MemorySystem
from data_layer import SESSION_FIELD, SPEAKER_FIELD, NewMemory

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
TURNS = [
    ("Caroline", "我把 MySQL 数据库的连接池配置改成了 50"),
    ("Mel", "为什么要改这么大？"),
    ("Caroline", "高峰期请求排队太久了"),
    ("Mel", "周末去看了一场科幻电影，星际穿越很好看"),
    ("Caroline", "I switched the kubernetes cluster upgrade to next Tuesday"),
    ("Mel", "How long have you had the cat?"),
    ("Caroline", "about three years, Mochi likes salmon and hates the vacuum cleaner"),
    ("Mel", "咖啡喝多了晚上睡不着，改喝绿茶"),
    ("Caroline", "planning a trip to Kyoto in May, booking the ryokan"),
    ("Mel", "我老公下个月去北京出差"),
]
QUERIES = [
    "MySQL 配置",
    "科幻 电影",
    "kubernetes upgrade",
    "how long has Caroline had the cat",
    "咖啡 绿茶",
    "Kyoto trip",
    "丈夫 出差",
    "database connection pool",
    "zebrafish",
]


async def _fill(system: MemorySystem, user: str = "u1") -> None:
    memories = []
    for n in range(40):
        speaker, text = TURNS[n % len(TURNS)]
        memories.append(
            NewMemory(
                memory_key=f"m{n}",
                content=f"{text} (n{n})",
                friend_id=("f1", "f2")[(n // 10) % 2],
                memory_type="general",
                created_at=T0 - timedelta(days=n // 10, minutes=40 - n),
                metadata={SESSION_FIELD: f"s{n // 10}", SPEAKER_FIELD: speaker},
                keywords=["tagged"] if n % 7 == 0 else None,
            )
        )
    await system.layer.memory.add_many(user_id=user, memories=memories)
    await system.search.settle(user_id=user)


@asynccontextmanager
async def _system(db_url: str, index: str) -> AsyncIterator[MemorySystem]:
    settings = load_settings(
        memory_database_url=db_url, memory_search_index_snapshot_dir="off", memory_search_index=index
    )
    async with MemorySystem.build(settings) as system:
        yield system


async def _answers(engine: HybridMemorySearch, queries: list[str], **options: object) -> list[list[tuple[str, float]]]:
    out = []
    for mode in ("hybrid", "keyword", "semantic"):
        for friend in (None, "f1"):
            for q in queries:
                hits = await engine.search(q, user_id="u1", friend_id=friend, mode=mode, limit=6, now=T0, **options)
                out.append([(h.memory_key, h.score) for h in hits])
    return out


async def test_the_store_index_answers_what_the_process_index_answers(db_url: str) -> None:
    async with _system(db_url, "process") as process, _system(db_url, "store") as store:
        await _fill(process)
        expected = await _answers(process.search, QUERIES)
        got = await _answers(store.search, QUERIES)
        assert sum(len(a) for a in expected) > 100
        for query, (want, have) in enumerate(zip(expected, got, strict=True)):
            assert [k for k, _ in have] == [k for k, _ in want], QUERIES[query % len(QUERIES)]
            assert [s for _, s in have] == pytest.approx([s for _, s in want], abs=0.02)
        assert not store.search._users  # nothing kept of the user


async def test_filters_keep_their_meaning_in_the_store_index(db_url: str) -> None:
    async with _system(db_url, "process") as process, _system(db_url, "store") as store:
        await _fill(process)
        for options in (
            {"keywords": ["tagged"]},
            {"memory_types": ["general"], "keywords": ["Kyoto"]},
            {"time_range_days": 1},
        ):
            want = [[k for k, _ in a] for a in await _answers(process.search, QUERIES[:4], **options)]
            have = [[k for k, _ in a] for a in await _answers(store.search, QUERIES[:4], **options)]
            words = 2 * 2 * 4  # hybrid and keyword, for the user and for f1: the same hits
            assert have[:words] == want[:words], options
            # semantic mode: the engine's candidates nearest in meaning share bucket terms with the query;
            # the process ranks every memory by its cosine. The nearest come first in both.
            for near, every in zip(have[words:], want[words:], strict=True):
                assert near == every[: len(near)] and (near or not every), options
        tagged = await store.search.search("MySQL", user_id="u1", keywords=["tagged"], now=T0)
        assert tagged and {h.memory_key for h in tagged} <= {f"m{n}" for n in range(0, 40, 7)}
        recent = await store.search.search("最近", user_id="u1", now=T0, limit=20)
        assert recent.period is not None and recent


async def test_a_write_is_found_by_the_next_search_of_another_process(db_url: str) -> None:
    async with _system(db_url, "store") as reader, _system(db_url, "store") as writer:
        await _fill(writer)
        assert await reader.search.search("zebrafish", user_id="u1", now=T0) == []
        await writer.layer.memory.add(user_id="u1", memory_key="new", content="zebrafish aquarium heater broke")
        hits = await reader.search.search("zebrafish", user_id="u1", now=T0)
        assert [h.memory_key for h in hits] == ["new"]
        assert await writer.layer.memory.delete(user_id="u1", memory_key="new")
        assert await reader.search.search("zebrafish", user_id="u1", now=T0) == []
        other = await reader.search.search("zebrafish MySQL", user_id="u2", now=T0)
        assert other == []  # another user's search sees none of u1's memories
        assert not reader.search._users


def test_an_unknown_index_kind_is_refused_with_what_to_give() -> None:
    with pytest.raises(ValueError, match="process"):
        load_settings(memory_search_index="disk")
