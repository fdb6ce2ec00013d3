"""``MEMORY_SEARCH_INDEX=store``: every search reads its candidates and statistics from the store's engine,
and a process keeps nothing of a user.

The answers are compared with the per-process index's, on both backends: the same scores place by
place and the same memories over the recall's threshold. They may differ a little: the store's index
holds the query's candidates only, so the average length BM25 normalises by and the feedback of the
best matches are the candidates', and in semantic mode the memories nearest in meaning are those that
share bucket terms with the query.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import numpy as np
import pytest

from agent_memory.search import HybridMemorySearch, fill_vector_terms, query_vector_terms
from agent_memory.search._analyzer import INLINE_VECTORS
from agent_memory.settings import load_settings
from agent_memory.system import MemorySystem
from data_layer import SESSION_FIELD, SPEAKER_FIELD, InvalidInputError, NewMemory, Scope

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
        words = 2 * 2 * len(QUERIES)  # hybrid and keyword, for the user and for f1
        for query, (want, have) in enumerate(zip(expected[:words], got[:words], strict=True)):
            _alike(have, want, QUERIES[query % len(QUERIES)])
        _nearest_among(got[words:], expected[words:])
        f2 = {f"m{n}" for n in range(40) if (n // 10) % 2 == 1}  # the other friend's memories
        for mode in range(3):  # f1's searches, in each mode, list none of them
            for hits in got[mode * 2 * len(QUERIES) + len(QUERIES) : (mode + 1) * 2 * len(QUERIES)]:
                assert not {k for k, _ in hits} & f2
        assert not store.search._users  # nothing kept of the user


def _alike(have: list[tuple[str, float]], want: list[tuple[str, float]], label: object) -> None:
    """The same scores place by place, and the same memories over the recall's threshold (the feedback
    of the best matches reaches the candidates only: a near tie may swap)."""
    scored = [s for _, s in have if s > 0], [s for _, s in want if s > 0]  # a 0 fills the list only
    assert scored[0] == pytest.approx(scored[1], abs=0.03), label
    for mine, theirs in ((have, want), (want, have)):
        keys = {k for k, _ in mine}
        assert {k for k, s in theirs if s >= 0.55} <= keys, label


def _nearest_among(got: list[list[tuple[str, float]]], expected: list[list[tuple[str, float]]]) -> None:
    """Semantic mode: the store's candidates nearest in meaning are those sharing bucket terms with the
    query, where the process ranks every memory by its cosine: a memory both list has the same score, and
    the store lists some when the process does."""
    for have, want in zip(got, expected, strict=True):
        assert bool(have) == bool(want)
        listed = dict(want)
        both = [(score, listed[key]) for key, score in have if key in listed]
        assert both and all(mine == pytest.approx(theirs, abs=0.03) for mine, theirs in both)


async def test_filters_keep_their_meaning_in_the_store_index(db_url: str) -> None:
    async with _system(db_url, "process") as process, _system(db_url, "store") as store:
        await _fill(process)
        for options in ({"keywords": ["tagged"]}, {"memory_types": ["general"], "keywords": ["Kyoto"]}):
            want = await _answers(process.search, QUERIES[:4], **options)
            have = await _answers(store.search, QUERIES[:4], **options)
            words = 2 * 2 * 4  # hybrid and keyword, for the user and for f1
            for mine, theirs in zip(have[:words], want[:words], strict=True):
                _alike(mine, theirs, options)
            _nearest_among(have[words:], want[words:])
        for hits in await _answers(store.search, QUERIES[:4], time_range_days=1):
            assert {k for k, _ in hits} <= {f"m{n}" for n in range(10)}  # written within the day before T0
        day = await store.search.search("Kyoto trip", user_id="u1", time_range_days=1, now=T0)
        assert [h.memory_key for h in day][:1] == ["m8"]
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


async def test_stored_vectors_carry_their_bucket_terms_inline_and_from_the_background_pass(db_url: str) -> None:
    """The engine finds a memory nearest in meaning by the bucket terms stored with its vector: written by
    an ``add`` (analysed in place) and by an ``add_many`` (embedded later by the background pass)."""
    async with _system(db_url, "store") as system:
        memory, engine = system.layer.memory, system.search
        await _fill(system)  # a bulk write: the background pass embeds it
        single = await memory.add(user_id="u1", memory_key="alone", content="我的猫咪今天打了疫苗")
        rows = {r.memory_key: r for r in await memory.memory_rows(user_id="u1", ids=[single.id])}
        bulk = {r.memory_key: r for r in await memory.index_rows(user_id="u1")}
        for key, row in (("alone", rows["alone"]), ("m3", bulk["m3"]), ("m7", bulk["m7"])):
            assert row.embedding is not None and row.embedder == engine.embedder.name, key
            vector = np.frombuffer(row.embedding, dtype=np.float32)
            buckets = query_vector_terms(vector, embedder=row.embedder, collection_size=41, probes=0)
            found = await memory.memory_vector_candidates(user_id="u1", vector_terms=buckets, limit=3)
            assert found[:1] == [row.id], key


async def test_vectors_stored_without_bucket_terms_get_them_once_and_are_found_again(db_url: str) -> None:
    """A database written before the bucket terms were stored with the vectors: the engine finds none of
    its memories near in meaning until ``fill_vector_terms`` (run by ``db upgrade``) stores them."""
    from sqlalchemy import text

    async with _system(db_url, "store") as system:
        memory = system.layer.memory
        await _fill(system)
        await memory.add(user_id="u2", memory_key="other", content="另一个用户的咖啡")
        async with system.layer.db.engine.begin() as conn:  # as an older version left them
            await conn.execute(text("UPDATE agent_memory_search_index SET vector_terms = NULL"))
        row = {r.memory_key: r for r in await memory.index_rows(user_id="u1")}["m3"]
        assert row.embedding is not None and row.embedder is not None
        vector = np.frombuffer(row.embedding, dtype=np.float32)
        buckets = query_vector_terms(vector, embedder=row.embedder, collection_size=40, probes=0)
        assert await memory.memory_vector_candidates(user_id="u1", vector_terms=buckets, limit=3) == []
        assert await fill_vector_terms(memory, batch=7) == (41, 2)  # batches smaller than a user
        assert (await memory.memory_vector_candidates(user_id="u1", vector_terms=buckets, limit=3))[:1] == [row.id]
        assert await fill_vector_terms(memory) == (0, 0)
        hits = await system.search.search("数据库 连接池", user_id="u1", mode="semantic", now=T0)
        assert hits and hits[0].memory_key in {"m0", "m10", "m20", "m30"}


async def test_a_search_starts_the_vectors_a_bulk_write_left_to_the_background(db_url: str) -> None:
    """A memory a search reads without its vector starts the pass that embeds the user's memories (the
    store index has no first build that would)."""
    async with _system(db_url, "store") as system:
        memory, engine = system.layer.memory, system.search
        await memory.add_many(
            user_id="u1",
            memories=[NewMemory(memory_key=f"b{n}", content=f"咖啡豆第{n}批到货了") for n in range(INLINE_VECTORS + 5)],
        )
        assert engine.embedding is not None
        pending = await memory.pending_embedding(user_id="u1", embedder=engine.embedder.name, limit=100)
        assert len(pending) == INLINE_VECTORS + 5 and "u1" not in engine.embedding._tasks
        assert await engine.search("咖啡豆", user_id="u1", now=T0)
        task = engine.embedding._tasks.get("u1")
        assert task is not None
        await task
        assert await memory.pending_embedding(user_id="u1", embedder=engine.embedder.name, limit=10) == []


async def test_bad_input_to_the_engine_reads_is_refused_in_one_line(db_url: str) -> None:
    async with _system(db_url, "store") as system:
        memory = system.layer.memory
        with pytest.raises(InvalidInputError, match="previous page"):
            await memory.vector_terms_pending(after=cast(Any, "u1"))
        with pytest.raises(InvalidInputError, match="memory ids"):
            await memory.vector_terms_pending(after=cast(Any, ("u1", "not-an-id")))
        with pytest.raises(InvalidInputError, match="memory ids"):
            await memory.memory_revisions(user_id="u1", ids=cast(Any, "abc"))
        with pytest.raises(InvalidInputError, match="scope names another user"):
            await memory.memory_ids_in_range(user_id="u1", scope=Scope.of("u2"), start=T0, end=T0, limit=5)
    with pytest.raises(ValueError, match="index must be one of process, store"):
        HybridMemorySearch(memory, index=cast(Any, "disk"))
