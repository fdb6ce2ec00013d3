"""Memories in the store's own engine (migration 0010): the collection statistics the triggers keep equal
a count recomputed from the rows after any mix of writes, and the candidate reads return what a plain scan
of the rows says. Real SQLite files and a real PostgreSQL server."""

from __future__ import annotations

import math
import random
import uuid
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import text

from data_layer import AgentFusionDataLayer, MemoryAnalysis, MemoryDraft, MemoryRecord, NewMemory, Scope
from data_layer._memory_search import prefix_bounds

T0 = datetime(2026, 1, 1, tzinfo=UTC)
WORDS = [f"w{i}" for i in range(40)] + ["火锅", "爬山", "c++", 'q"t', "back\\slash"]


class WordsAnalyzer:
    """Tokens are the content's words as they are; keyword terms the keywords' words; vector terms given in
    the metadata (``buckets``)."""

    name = "words-1"

    async def analyze(self, drafts: Sequence[MemoryDraft]) -> list[MemoryAnalysis]:
        return [
            MemoryAnalysis(
                analyzer=self.name,
                tokens=" ".join(d.content.split()),
                vector_terms=d.metadata.get("buckets"),
            )
            for d in drafts
        ]

    async def analyze_records(self, records: Sequence[MemoryRecord]) -> list[MemoryAnalysis]:
        return [MemoryAnalysis(analyzer=self.name, tokens=" ".join(r.content.split())) for r in records]

    def keyword_terms(self, keywords: Sequence[str]) -> str:
        return " ".join(dict.fromkeys(w for k in keywords for w in k.split()))


async def _recounted(layer: AgentFusionDataLayer, uid: str) -> tuple[int, int, dict[str, int]]:
    """(memories, total length, document frequencies) recomputed from the rows."""
    async with layer.db.read() as session:
        rows = (
            await session.execute(
                text(
                    "SELECT ix.tokens FROM agent_memory_search_index ix JOIN agent_memories m "
                    "ON m.user_id = ix.user_id AND m.id = ix.memory_id WHERE ix.user_id = :u AND m.is_active"
                ),
                {"u": uid},
            )
        ).all()
    df: Counter[str] = Counter()
    total = 0
    for (tokens,) in rows:
        terms = [t for t in tokens.split(" ") if t]
        total += len(terms)
        df.update(set(terms))
    return len(rows), total, dict(df)


async def _stored(layer: AgentFusionDataLayer, uid: str) -> tuple[int, int, dict[str, int]]:
    collection = await layer.memory.memory_collection(user_id=uid)
    async with layer.db.read() as session:
        rows = (
            await session.execute(
                text("SELECT term, memories FROM memory_term_statistics WHERE user_id = :u"), {"u": uid}
            )
        ).all()
    return collection.memories, collection.total_length, {str(t): int(n) for t, n in rows}


def _content(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 12)))


async def test_the_statistics_follow_every_kind_of_write(layer: AgentFusionDataLayer) -> None:
    layer.memory.set_analyzer(WordsAnalyzer())
    rng = random.Random(7)
    keys: list[str] = []
    for step in range(120):
        action = rng.choice(["add", "add_many", "soft", "hard", "reactivate", "upsert", "keep", "reanalyse"])
        uid = rng.choice(["u1", "u1", "u2"])
        mine = [k for k in keys if k.startswith(uid + "-")]
        if action == "add" or not mine:
            key = f"{uid}-{step}"
            await layer.memory.add(user_id=uid, memory_key=key, content=_content(rng))
            keys.append(key)
        elif action == "add_many":
            batch = [NewMemory(memory_key=f"{uid}-{step}-{i}", content=_content(rng)) for i in range(rng.randint(1, 5))]
            await layer.memory.add_many(user_id=uid, memories=batch)
            keys.extend(m.memory_key for m in batch)
        elif action == "soft":
            await layer.memory.delete(user_id=uid, memory_key=rng.choice(mine))
        elif action == "hard":
            key = rng.choice(mine)
            await layer.memory.delete(user_id=uid, memory_key=key, hard=True)
            keys.remove(key)
        elif action == "reactivate":
            await layer.memory.set_active(user_id=uid, changes={rng.choice(mine): (True, {})})
        elif action == "upsert":
            await layer.memory.upsert(user_id=uid, memory_key=rng.choice(mine), content=_content(rng))
        elif action == "keep":
            key = rng.choice(mine)
            await layer.memory.upsert(
                user_id=uid,
                memory_key=key,
                content=_content(rng),
                keep=NewMemory(memory_key=f"{key}-v{step}", content=_content(rng)),
            )
            keys.append(f"{key}-v{step}")
        else:
            records = await layer.memory.get_many(user_id=uid, memory_keys=mine[:3], include_inactive=True)
            await layer.memory.store_analysis(
                user_id=uid,
                analyses=[(r.id, MemoryAnalysis(analyzer="words-1", tokens=_content(rng))) for r in records.values()],
            )
        if step % 20 == 19:
            for user in ("u1", "u2"):
                assert await _stored(layer, user) == await _recounted(layer, user), (step, action)
    for user in ("u1", "u2"):
        assert await _stored(layer, user) == await _recounted(layer, user)
    assert (await _recounted(layer, "u1"))[0] > 0
    await layer.erase_user("u1")
    assert await _stored(layer, "u1") == (0, 0, {})
    assert await _stored(layer, "u2") == await _recounted(layer, "u2")


async def test_keyword_terms_follow_the_keywords_the_memory_holds(layer: AgentFusionDataLayer) -> None:
    layer.memory.set_analyzer(WordsAnalyzer())
    rec = await layer.memory.add(user_id="u1", memory_key="k", content="a b", keywords=["machine learning"])
    rows = await layer.memory.memory_rows(user_id="u1", ids=[rec.id])
    assert rows[0].keyword_terms == "machine learning"
    await layer.memory.add_keywords(user_id="u1", memory_key="k", keywords=["deep"])
    rows = await layer.memory.memory_rows(user_id="u1", ids=[rec.id])
    assert rows[0].keyword_terms == "deep machine learning"
    # a re-analysis keeps the user tags, and their terms
    await layer.memory.store_analysis(user_id="u1", analyses=[(rec.id, MemoryAnalysis(analyzer="x", tokens="c"))])
    rows = await layer.memory.memory_rows(user_id="u1", ids=[rec.id])
    assert rows[0].keyword_terms == "deep machine learning"
    assert await layer.memory.memory_candidates(user_id="u1", terms=[], keyword_terms=["deep"], limit=5) == [rec.id]
    # without an analyzer that gives keyword terms, a keyword edit leaves them to be analysed
    layer.memory.set_analyzer(None)
    await layer.memory.remove_keywords(user_id="u1", memory_key="k", keywords=["deep"])
    rows = await layer.memory.memory_rows(user_id="u1", ids=[rec.id])
    assert rows[0].keyword_terms is None


async def _corpus(layer: AgentFusionDataLayer, rng: random.Random, count: int) -> list[NewMemory]:
    layer.memory.set_analyzer(WordsAnalyzer())
    memories = []
    for i in range(count):
        kind = rng.choice(["general", "event", "profile"])
        friend = rng.choice(["f1", "f2"]) if kind == "event" else None
        memories.append(
            NewMemory(
                memory_key=f"m{i}",
                content=_content(rng),
                memory_type=kind,
                friend_id=friend,
                created_at=T0 + timedelta(hours=i),
                keywords=[rng.choice(WORDS)] if rng.random() < 0.3 else None,
                metadata={"session_id": f"s{i // 4}", "buckets": " ".join(rng.sample(["b1", "b2", "b3", "b4"], 2))},
            )
        )
    await layer.memory.add_many(user_id="u1", memories=memories)
    await layer.memory.add_many(user_id="u2", memories=memories[:10])  # another user's rows never come back
    return memories


async def test_candidates_are_what_a_scan_of_the_rows_finds(layer: AgentFusionDataLayer) -> None:
    rng = random.Random(3)
    memories = await _corpus(layer, rng, 80)
    await layer.memory.delete(user_id="u1", memory_key="m3")
    records = await layer.memory.get_many(
        user_id="u1", memory_keys=[m.memory_key for m in memories], include_inactive=True
    )
    active = {k: r for k, r in records.items() if r.is_active}
    by_id = {r.id: r for r in active.values()}
    keywords = {
        r.id: {k.keyword for k in await layer.memory.get_keywords(user_id="u1", memory_key=r.memory_key)}
        for r in active.values()
    }
    for _ in range(25):
        terms = rng.sample(WORDS, rng.randint(1, 3))
        kterms = rng.sample(WORDS, 1) if rng.random() < 0.4 else []
        prefixes = ["火"] if rng.random() < 0.3 else []
        scope = rng.choice([Scope.of("u1"), Scope.of("u1", "f1"), Scope.of("u1", "f2", include_shared=False)])
        types = rng.choice([None, ["event"], ["general", "profile"]])
        start, end = rng.choice([(None, None), (T0 + timedelta(hours=20), T0 + timedelta(hours=60))])
        got = await layer.memory.memory_candidates(
            user_id="u1",
            terms=terms,
            keyword_terms=kterms,
            prefixes=prefixes,
            scope=scope,
            memory_types=types,
            start=start,
            end=end,
            limit=1000,
        )
        expected = {
            r.id
            for r in active.values()
            if scope.sees_record(r)
            and (types is None or r.memory_type in types)
            and (start is None or start <= r.created_at < end)
            and (
                set(r.content.split()) & set(terms)
                or keywords[r.id] & set(kterms)
                or any(w.startswith(p) for w in r.content.split() for p in prefixes)
            )
        }
        assert len(got) == len(set(got))
        assert set(got) == expected
        limited = await layer.memory.memory_candidates(
            user_id="u1",
            terms=terms,
            keyword_terms=kterms,
            prefixes=prefixes,
            scope=scope,
            memory_types=types,
            start=start,
            end=end,
            limit=3,
        )
        assert limited == got[:3]
    # vector candidates: by how many bucket terms they hold
    wanted = ["b1", "b2"]
    got = await layer.memory.memory_vector_candidates(user_id="u1", vector_terms=wanted, limit=1000)
    held = {
        i: len(set(next(m for m in memories if m.memory_key == r.memory_key).metadata["buckets"].split()) & set(wanted))
        for i, r in by_id.items()
    }
    assert set(got) == {i for i, n in held.items() if n}
    assert [held[i] for i in got] == sorted((held[i] for i in got), reverse=True)


async def test_a_rarer_query_term_ranks_first(layer: AgentFusionDataLayer) -> None:
    layer.memory.set_analyzer(WordsAnalyzer())
    common = [NewMemory(memory_key=f"c{i}", content=f"common filler{i}") for i in range(30)]
    rare = NewMemory(memory_key="rare", content="rare filler")
    both = [*common, rare]
    await layer.memory.add_many(user_id="u1", memories=both)
    got = await layer.memory.memory_candidates(user_id="u1", terms=["common", "rare"], limit=5)
    first = (await layer.memory.get_many(user_id="u1", memory_keys=["rare"]))["rare"]
    assert got[0] == first.id
    df = await layer.memory.memory_term_frequencies(user_id="u1", terms=["common", "rare", "absent"])
    assert df == {"common": 30, "rare": 1}
    assert await layer.memory.memory_term_prefixes(user_id="u1", prefix="fill", limit=3) == [
        "filler",
        "filler0",
        "filler1",
    ]
    collection = await layer.memory.memory_collection(user_id="u1")
    assert (collection.memories, collection.total_length) == (31, 62)
    assert collection.revision == (await layer.memory.index_state(user_id="u1")).revision


async def test_rows_and_session_rows(layer: AgentFusionDataLayer) -> None:
    rng = random.Random(5)
    memories = await _corpus(layer, rng, 24)
    records = await layer.memory.get_many(
        user_id="u1", memory_keys=[m.memory_key for m in memories], include_inactive=True
    )
    await layer.memory.delete(user_id="u1", memory_key="m5")
    ids = [records["m1"].id, records["m5"].id, records["m9"].id]
    rows = await layer.memory.memory_rows(user_id="u1", ids=ids)
    assert {r.id for r in rows} == {records["m1"].id, records["m9"].id}
    every = {r.id: r for r in await layer.memory.index_rows(user_id="u1")}
    for row in rows:
        assert row.tokens == every[row.id].tokens and row.keywords == every[row.id].keywords
    sessions = await layer.memory.memory_session_turns(user_id="u1", ids=[records["m1"].id])
    seed = every[records["m1"].id]
    expected = {
        r.id for r in every.values() if r.is_active and r.session == seed.session and r.friend_id == seed.friend_id
    }
    assert {r.id for r in sessions} == expected
    assert await layer.memory.memory_rows(user_id="u2", ids=ids) == []


def test_prefix_bounds_hold_exactly_the_strings_of_the_prefix() -> None:
    low, high = prefix_bounds("ab")
    assert (low, high) == ("ab", "ac")
    assert prefix_bounds("a\U0010ffff") == ("a\U0010ffff", "b")
    assert prefix_bounds("\ud7ff")[1] == "\ue000"
    assert math.isfinite(len(low))


@pytest.mark.parametrize("backend", [pytest.param("postgresql", marks=pytest.mark.postgres)])
async def test_concurrent_writers_keep_exact_counts(db_url: str) -> None:
    import asyncio

    async with AgentFusionDataLayer(db_url) as a, AgentFusionDataLayer(db_url) as b:
        for layer in (a, b):
            layer.memory.set_analyzer(WordsAnalyzer())

        async def write(layer: AgentFusionDataLayer, tag: str) -> None:
            for i in range(15):
                batch = [NewMemory(memory_key=f"{tag}{i}-{j}", content=" ".join(WORDS[:20])) for j in range(5)]
                await layer.memory.add_many(user_id="u1", memories=batch)
                await layer.memory.add_many(user_id="u2", memories=batch)

        await asyncio.gather(write(a, "a"), write(b, "b"))
        for uid in ("u1", "u2"):
            assert await _stored(a, uid) == await _recounted(a, uid)
            assert (await _stored(a, uid))[2]["w0"] == 150


def _unused(*_: Any) -> None:
    uuid.uuid4()


async def _snapshot(layer: AgentFusionDataLayer, uid: str) -> tuple[Any, ...]:
    every = await layer.memory.index_rows(user_id=uid, active_only=True)
    rows = await layer.memory.memory_rows(user_id=uid, ids=[r.id for r in every])
    found = await layer.memory.memory_candidates(user_id=uid, terms=WORDS[:5], keyword_terms=WORDS[5:8], limit=500)
    return (
        await _stored(layer, uid),
        sorted((r.id, r.tokens, r.keyword_terms) for r in rows),
        sorted(found),
    )


async def test_a_database_written_before_the_engine_gets_the_same_statistics(db_url: str) -> None:
    from agent_memory.search._analyzer import fill_keyword_terms
    from data_layer import downgrade, upgrade

    rng = random.Random(11)
    async with AgentFusionDataLayer(db_url) as layer:
        await _corpus(layer, rng, 60)
        await layer.memory.delete(user_id="u1", memory_key="m7")
        await layer.memory.delete(user_id="u1", memory_key="m8", hard=True)
        fresh = {uid: await _snapshot(layer, uid) for uid in ("u1", "u2")}
    assert fresh["u1"][0][0] == 58
    await downgrade(db_url, "0009_message_search_engine")
    async with AgentFusionDataLayer(db_url) as layer:
        async with layer.db.read() as session:
            names = set((await session.execute(text("SELECT * FROM agent_memory_search_index"))).keys())
        assert not {"keyword_terms", "vector_terms", "row_id"} & names
    await upgrade(db_url)
    async with AgentFusionDataLayer(db_url) as layer:
        layer.memory.set_analyzer(WordsAnalyzer())
        before = await layer.memory.memory_rows(
            user_id="u1", ids=[r.id for r in await layer.memory.index_rows(user_id="u1")]
        )
        assert before and all(r.keyword_terms is None for r in before)  # not analysed yet
        rows, users = await fill_keyword_terms(layer, WordsAnalyzer(), batch=7)
        assert (rows, users) == (58 + 1 + 10, 2)  # every analysed row, the soft-deleted one too
        assert await fill_keyword_terms(layer, WordsAnalyzer()) == (0, 0)
        for uid in ("u1", "u2"):
            assert await _snapshot(layer, uid) == fresh[uid]
        # and it goes on counting new writes
        await layer.memory.add(user_id="u1", memory_key="later", content="w1 w2 w2")
        assert await _stored(layer, "u1") == await _recounted(layer, "u1")
