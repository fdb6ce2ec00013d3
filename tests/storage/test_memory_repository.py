"""MemoryRepository on both backends: writes, reads, listing, friend scope, keywords, synonyms."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import event

from data_layer import (
    AgentFusionDataLayer,
    KeywordInput,
    MemoryAnalysis,
    MemoryNotFoundError,
    NewMemory,
)

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


async def test_add_then_retrieve_counts_access(layer: AgentFusionDataLayer) -> None:
    rec = await layer.memory.add(
        user_id="u1",
        memory_key="db-config-001",
        content='{"host": "localhost", "port": 3306}',
        summary="MySQL 配置",
        memory_type="command_output",
        metadata={"engine": "mysql"},
        created_at=T0,
    )
    assert rec.created_at == T0
    assert rec.needs_keyword_extraction is True  # no keyword provider installed
    got = await layer.memory.retrieve_memory(memory_key="db-config-001", user_id="u1")
    assert got is not None
    assert (got.summary, got.content, got.metadata) == ("MySQL 配置", rec.content, {"engine": "mysql"})
    assert got.access_count == 1 and got.last_accessed_at is not None
    again = await layer.memory.retrieve_memory(memory_key="db-config-001", user_id="u1", touch=False)
    assert again is not None and again.access_count == 1


async def test_concurrent_reads_count_every_access_in_shared_transactions(layer: AgentFusionDataLayer) -> None:
    """Recalls of many chats read memories at the same moment: on SQLite their access counts are
    written together (group commit); none is lost, and another user's key is still not found."""
    for user in ("u1", "u2"):
        await layer.memory.add(user_id=user, memory_key="trip", content=f"{user} 下周去北京出差", created_at=T0)
    transactions: list[int] = []
    event.listen(layer.db.engine.sync_engine, "begin", lambda _conn: transactions.append(1))
    reads = [("u1", "trip")] * 12 + [("u2", "trip")] * 6 + [("u1", "nobody-has-this")]
    got = await asyncio.gather(*(layer.memory.retrieve_memory(memory_key=k, user_id=u) for u, k in reads))
    if layer.db.backend == "sqlite":  # one writer at a time: the counts share transactions
        assert len(transactions) < len(reads) // 2, len(transactions)  # one transaction per read before
    else:  # PostgreSQL: each its own (a batch touching rows in two orders could dead-lock)
        assert len(transactions) == len(reads), len(transactions)
    assert got[-1] is None
    assert sorted(r.access_count for r in got[:12] if r) == list(range(1, 13))  # each saw its own count
    assert {r.content for r in got[12:18] if r} == {"u2 下周去北京出差"}
    for user, count in (("u1", 12), ("u2", 6)):
        stored = await layer.memory.retrieve_memory(memory_key="trip", user_id=user, touch=False)
        assert stored is not None and stored.access_count == count


async def test_int_and_str_user_ids_are_the_same_user(layer: AgentFusionDataLayer) -> None:
    await layer.memory.add(user_id=42, memory_key="k", content="hello")
    assert await layer.memory.retrieve_memory(memory_key="k", user_id="42") is not None


async def test_summary_defaults_to_first_sentence(layer: AgentFusionDataLayer) -> None:
    rec = await layer.memory.add(user_id="u1", memory_key="k", content="用户喜欢科幻电影。也喜欢悬疑小说。")
    assert rec.summary == "用户喜欢科幻电影。"


async def test_upsert_replaces_and_reactivates(layer: AgentFusionDataLayer) -> None:
    first = await layer.memory.upsert(user_id="u1", memory_key="k", content="v1", created_at=T0)
    assert first.created
    await layer.memory.retrieve_memory(memory_key="k", user_id="u1")
    assert await layer.memory.delete(user_id="u1", memory_key="k")
    assert await layer.memory.retrieve_memory(memory_key="k", user_id="u1") is None
    second = await layer.memory.upsert(user_id="u1", memory_key="k", content="v2")
    assert not second.created
    assert second.record.id == first.record.id
    assert second.record.created_at == T0, "replacing keeps the creation time"
    got = await layer.memory.retrieve_memory(memory_key="k", user_id="u1", touch=False)
    assert got is not None and got.content == "v2" and got.is_active and got.access_count == 0


async def test_soft_and_hard_delete(layer: AgentFusionDataLayer) -> None:
    await layer.memory.add(user_id="u1", memory_key="a", content="x")
    await layer.memory.add(user_id="u1", memory_key="b", content="y")
    assert await layer.memory.delete(user_id="u1", memory_key="a")
    assert not await layer.memory.delete(user_id="u1", memory_key="a"), "already inactive"
    inactive = await layer.memory.retrieve_memory(memory_key="a", user_id="u1", include_inactive=True, touch=False)
    assert inactive is not None and not inactive.is_active
    assert await layer.memory.delete(user_id="u1", memory_key="b", hard=True)
    assert await layer.memory.retrieve_memory(memory_key="b", user_id="u1", include_inactive=True) is None
    assert await layer.memory.count(user_id="u1") == 0
    assert await layer.memory.count(user_id="u1", include_inactive=True) == 1


async def _seed_scoped(layer: AgentFusionDataLayer) -> None:
    await layer.memory.add_many(
        user_id="u1",
        memories=[
            NewMemory("profile-job", "产品经理", memory_type="profile", created_at=T0),
            NewMemory(
                "ev-a",
                "friend A event",
                memory_type="event",
                friend_id="A",
                created_at=T0 + timedelta(days=1),
            ),
            NewMemory(
                "ev-b",
                "friend B event",
                memory_type="event",
                friend_id="B",
                created_at=T0 + timedelta(days=2),
            ),
            NewMemory("pref", "likes tea", memory_type="user_preference", created_at=T0 + timedelta(days=3)),
        ],
    )


async def test_friend_scope_profiles_shared_events_isolated(layer: AgentFusionDataLayer) -> None:
    await _seed_scoped(layer)
    seen_by_a = {r.memory_key for r in (await layer.memory.list_memories(user_id="u1", friend_id="A")).items}
    seen_by_b = {r.memory_key for r in (await layer.memory.list_memories(user_id="u1", friend_id="B")).items}
    assert seen_by_a == {"profile-job", "ev-a", "pref"}
    assert seen_by_b == {"profile-job", "ev-b", "pref"}
    only_a = await layer.memory.list_memories(user_id="u1", friend_id="A", include_shared=False)
    assert [r.memory_key for r in only_a.items] == ["ev-a"]


async def test_list_filters_and_pagination(layer: AgentFusionDataLayer) -> None:
    await _seed_scoped(layer)
    events = await layer.memory.list_memories(user_id="u1", memory_types=["event"])
    assert [r.memory_key for r in events.items] == ["ev-b", "ev-a"]  # newest first
    window = await layer.memory.list_memories(user_id="u1", since=T0 + timedelta(days=1), until=T0 + timedelta(days=3))
    assert [r.memory_key for r in window.items] == ["ev-b", "ev-a"]
    keys: list[str] = []
    cursor = None
    while True:
        page = await layer.memory.list_memories(user_id="u1", limit=3, cursor=cursor)
        keys.extend(r.memory_key for r in page.items)
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert keys == ["pref", "ev-b", "ev-a", "profile-job"]


async def test_add_many_conflict_modes(layer: AgentFusionDataLayer) -> None:
    await layer.memory.add(user_id="u1", memory_key="k1", content="old")
    batch = [NewMemory("k1", "new"), NewMemory("k2", "two")]
    skipped = await layer.memory.add_many(user_id="u1", memories=batch, on_conflict="skip")
    assert [r.memory_key for r in skipped] == ["k2"]
    k1 = await layer.memory.retrieve_memory(memory_key="k1", user_id="u1", touch=False)
    assert k1 is not None and k1.content == "old"
    replaced = await layer.memory.add_many(user_id="u1", memories=[NewMemory("k1", "new")], on_conflict="replace")
    assert replaced[0].content == "new"
    k1 = await layer.memory.retrieve_memory(memory_key="k1", user_id="u1", touch=False)
    assert k1 is not None and k1.content == "new"


async def test_get_many_returns_only_existing_keys(layer: AgentFusionDataLayer) -> None:
    await layer.memory.add(user_id="u1", memory_key="a", content="x")
    found = await layer.memory.get_many(user_id="u1", memory_keys=["a", "missing"])
    assert list(found) == ["a"]


async def test_get_many_reads_in_chunks_only_the_users_own_memories(layer: AgentFusionDataLayer) -> None:
    """More keys than one statement takes (500), another user's key among them, a deleted memory and
    repeated keys (below the cap of MAX_GET_MANY keys a call): the user's own active memories, with their
    fields as written."""
    mine = [
        NewMemory(f"k{i:04d}", f"内容{i}", memory_type="event", friend_id="A", metadata={"n": i}) for i in range(903)
    ]
    await layer.memory.add_many(user_id="u1", memories=mine)
    theirs = [NewMemory(key, "别人的", memory_type="event", friend_id="A") for key in ("k0001", "only-u2")]
    await layer.memory.add_many(user_id="u2", memories=theirs)
    await layer.memory.delete(user_id="u1", memory_key="k0700")
    keys = [f"k{i:04d}" for i in range(903)] + ["only-u2", "missing", "k0001"]
    found = await layer.memory.get_many(user_id="u1", memory_keys=keys)
    assert len(found) == 902 and "k0700" not in found and "only-u2" not in found
    assert (found["k0001"].content, found["k0001"].user_id, found["k0902"].metadata["n"]) == ("内容1", "u1", 902)
    assert found["k0001"].created_at.tzinfo is not None
    with_deleted = await layer.memory.get_many(user_id="u1", memory_keys=keys, include_inactive=True)
    assert len(with_deleted) == 903 and with_deleted["k0700"].is_active is False
    assert await layer.memory.get_many(user_id="u1", memory_keys=[]) == {}
    assert list(await layer.memory.get_many(user_id="u2", memory_keys=keys)) == ["k0001", "only-u2"]


async def test_keyword_crud(layer: AgentFusionDataLayer) -> None:
    await layer.memory.add(user_id="u1", memory_key="k", content="mysql config", keywords=["MySQL"])
    kws = await layer.memory.get_keywords(user_id="u1", memory_key="k")
    assert [(k.keyword, k.weight, k.extraction_source) for k in kws] == [("mysql", 1.0, "user_tag")]
    written = await layer.memory.add_keywords(
        user_id="u1", memory_key="k", keywords=[("数据库", 0.6), KeywordInput("config", 0.9, "llm")]
    )
    assert written == 2
    kws = await layer.memory.get_keywords(user_id="u1", memory_key="k")
    assert [k.keyword for k in kws] == ["mysql", "config", "数据库"]  # heaviest first
    total = await layer.memory.replace_keywords(user_id="u1", memory_key="k", keywords=[KeywordInput("host", 0.5)])
    assert total == 3, "user tags (mysql, 数据库) survive a replacement; the llm keyword 'config' does not"
    rec = await layer.memory.retrieve_memory(memory_key="k", user_id="u1", touch=False)
    assert rec is not None and rec.needs_keyword_extraction is False
    assert await layer.memory.remove_keywords(user_id="u1", memory_key="k", keywords=["host", "nope"]) == 1
    assert [k.keyword for k in await layer.memory.get_keywords(user_id="u1", memory_key="k")] == [
        "mysql",
        "数据库",
    ]
    with pytest.raises(MemoryNotFoundError):
        await layer.memory.get_keywords(user_id="u1", memory_key="missing")


class _SplitAnalyzer:
    """A tiny analyzer for the tests: words of the content become keywords and tokens."""

    name = "split-v1"

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def analyze(self, drafts):
        self.seen.extend(d.memory_key for d in drafts)
        return [
            MemoryAnalysis(
                analyzer=self.name,
                tokens=d.content.lower(),
                keywords=tuple(KeywordInput(w, 0.5) for w in d.content.split()),
            )
            for d in drafts
        ]


async def test_analyzer_runs_on_write_and_its_output_is_stored(layer: AgentFusionDataLayer) -> None:
    analyzer = _SplitAnalyzer()
    layer.memory.set_analyzer(analyzer)
    rec = await layer.memory.add(user_id="u1", memory_key="k", content="Alpha beta", keywords=["tag"])
    assert analyzer.seen == ["k"]
    assert rec.needs_keyword_extraction is False
    kws = {k.keyword: k.extraction_source for k in await layer.memory.get_keywords(user_id="u1", memory_key="k")}
    assert kws == {"tag": "user_tag", "alpha": "system", "beta": "system"}
    rows = await layer.memory.index_rows(user_id="u1")
    assert [(r.memory_key, r.analyzer, r.tokens) for r in rows] == [("k", "split-v1", "alpha beta")]
    assert set(rows[0].keywords) == {("tag", 1.0), ("alpha", 0.5), ("beta", 0.5)}


async def test_every_write_bumps_the_revision(layer: AgentFusionDataLayer) -> None:
    state = await layer.memory.index_state(user_id="u1")
    assert state.revision == 0
    await layer.memory.add(user_id="u1", memory_key="a", content="x")
    await layer.memory.add(user_id="u1", memory_key="b", content="y")
    s1 = await layer.memory.index_state(user_id="u1")
    assert s1.revision == 2
    changed = await layer.memory.index_rows(user_id="u1", after_revision=1)
    assert [r.memory_key for r in changed] == ["b"]
    await layer.memory.add_keywords(user_id="u1", memory_key="a", keywords=["kw"])
    assert [r.memory_key for r in await layer.memory.index_rows(user_id="u1", after_revision=2)] == ["a"]
    await layer.memory.delete(user_id="u1", memory_key="a")
    deleted = await layer.memory.index_rows(user_id="u1", after_revision=3)
    assert [(r.memory_key, r.is_active) for r in deleted] == [("a", False)]
    await layer.memory.delete(user_id="u1", memory_key="b", hard=True)
    s2 = await layer.memory.index_state(user_id="u1")
    assert s2.revision == 5 and s2.hard_delete_revision == 5
    assert await layer.memory.active_ids(user_id="u1") == set()
    await layer.memory.add_synonym("db", "database")
    assert (await layer.memory.index_state(user_id="u1")).vocabulary_revision == 1
    assert (await layer.memory.index_state(user_id="u2")).revision == 0, "other users are untouched"


async def test_pending_analysis_and_store_analysis(layer: AgentFusionDataLayer) -> None:
    await layer.memory.add_many(user_id="u1", memories=[NewMemory("a", "one two"), NewMemory("b", "three")])
    pending = await layer.memory.pending_analysis(user_id="u1", analyzer="split-v1")
    assert {p.memory_key for p in pending} == {"a", "b"}
    analyzer = _SplitAnalyzer()
    drafts_by_id = {p.id: p for p in pending}
    analyses = [
        (mid, MemoryAnalysis(analyzer="split-v1", tokens=rec.content, keywords=(KeywordInput("w", 0.4),)))
        for mid, rec in drafts_by_id.items()
    ]
    assert await layer.memory.store_analysis(user_id="u1", analyses=analyses) == 2
    assert await layer.memory.pending_analysis(user_id="u1", analyzer="split-v1") == []
    assert len(await layer.memory.pending_analysis(user_id="u1", analyzer="split-v2")) == 2
    assert analyzer.seen == []
    blob = b"\x00" * 16
    first = next(iter(drafts_by_id))
    assert await layer.memory.store_embeddings(user_id="u1", embedder="e1", vectors=[(first, blob)]) == 1
    assert await layer.memory.store_embeddings(user_id="u2", embedder="e1", vectors=[(first, blob)]) == 0
    row = next(r for r in await layer.memory.index_rows(user_id="u1") if r.id == first)
    assert (row.embedder, row.embedding) == ("e1", blob)


async def test_pending_keyword_extraction_and_backfill(layer: AgentFusionDataLayer) -> None:
    await layer.memory.add_many(user_id="u1", memories=[NewMemory("a", "x"), NewMemory("b", "y")])
    await layer.memory.add(user_id="u2", memory_key="c", content="z")
    assert await layer.memory.users_pending_keyword_extraction() == ["u1", "u2"]
    pending = await layer.memory.pending_keyword_extraction(user_id="u1")
    assert {p.memory_key for p in pending} == {"a", "b"}
    other = await layer.memory.pending_keyword_extraction(user_id="u2")
    # u1's backfill cannot write keywords onto u2's memory even with its id.
    done = await layer.memory.store_extracted_keywords(
        user_id="u1", extracted=[(pending[0].id, [KeywordInput("kw")]), (other[0].id, [KeywordInput("evil")])]
    )
    assert done == 1
    assert len(await layer.memory.pending_keyword_extraction(user_id="u1")) == 1
    assert await layer.memory.get_keywords(user_id="u2", memory_key="c") == []


async def test_synonyms_bidirectional(layer: AgentFusionDataLayer) -> None:
    await layer.memory.add_synonym("数据库", "database", similarity_score=0.9)
    await layer.memory.add_synonym("DB", "database", similarity_score=0.7, bidirectional=False)
    syn = await layer.memory.synonyms_for(["database", "数据库", "db", "none"])
    assert [(s.synonym, s.similarity_score) for s in syn["database"]] == [("数据库", 0.9)]
    assert [s.synonym for s in syn["数据库"]] == ["database"]
    assert [s.synonym for s in syn["db"]] == ["database"]
    assert syn["none"] == []
    await layer.memory.add_synonym("数据库", "database", similarity_score=0.95)
    assert (await layer.memory.synonyms_for(["database"]))["database"][0].similarity_score == 0.95
    assert await layer.memory.remove_synonym("数据库", "database") == 2
    assert len(await layer.memory.list_synonyms()) == 1


async def test_content_truncated_over_100kb_and_flagged(layer: AgentFusionDataLayer) -> None:
    big = "记" * 40_000  # 120,000 UTF-8 bytes
    rec = await layer.memory.add(user_id="u1", memory_key="big", content=big)
    assert rec.truncated
    assert rec.metadata["truncation"]["original_bytes"] == 120_000
    assert len(rec.content.encode("utf-8")) <= 100 * 1024
    stored = await layer.memory.retrieve_memory(memory_key="big", user_id="u1", touch=False)
    assert stored is not None and stored.content == rec.content and stored.truncated


@pytest.mark.slow
async def test_set_active_changes_more_keys_than_one_read_takes_in_one_call(layer: AgentFusionDataLayer) -> None:
    """A forgetting sets aside however many memories match: 1,001 keys (more than get_many reads at once)
    are switched off and back on, with their metadata, in one call each."""
    from data_layer import MAX_GET_MANY

    many = MAX_GET_MANY + 1
    keys = [f"note-{i:04d}" for i in range(many)]
    await layer.memory.add_many(user_id="u1", memories=[NewMemory(memory_key=k, content=f"第{k}条") for k in keys])
    off = await layer.memory.set_active(user_id="u1", changes={k: (False, {"forgotten": {"by": "f-1"}}) for k in keys})
    assert sorted(off) == keys
    assert await layer.memory.count(user_id="u1") == 0
    back = await layer.memory.set_active(user_id="u1", changes={k: (True, {"forgotten": None}) for k in keys})
    assert sorted(back) == keys
    assert await layer.memory.count(user_id="u1") == many
    last = await layer.memory.retrieve_memory(memory_key=keys[-1], user_id="u1", touch=False)
    assert last is not None and "forgotten" not in last.metadata
