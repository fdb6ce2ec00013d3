"""Saved search indexes: a loaded snapshot answers exactly like a fresh build, and is never trusted blindly.

Each test writes real memories (SQLite file and PostgreSQL), builds an index with one engine (which
saves its snapshot), and searches with a second engine standing for a restarted process.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from agent_memory.search import HybridMemorySearch, SearchAnalyzer, SnapshotError, SnapshotStore
from agent_memory.search._snapshot import SnapshotMeta, decode
from agent_memory.system import MemorySystem
from agent_memory.text import KeywordExtractor
from data_layer import SESSION_FIELD, AgentFusionDataLayer
from engine_answers import engine_answers

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
TEXTS = [
    ("我把 MySQL 数据库的连接池配置改成了 50", ["mysql", "连接池"]),
    ("周末去看了一场科幻电影，星际穿越很好看", ["科幻电影"]),
    ("I switched the kubernetes cluster upgrade to next Tuesday", ["kubernetes"]),
    ("my cat Mochi likes salmon and hates the vacuum cleaner", ["cat"]),
    ("咖啡喝多了晚上睡不着，改喝绿茶", ["咖啡", "绿茶"]),
    ("planning a trip to Kyoto in May, booking the ryokan", ["kyoto", "trip"]),
    ("Python 脚本里的 pandas 读取 CSV 太慢了", ["python", "pandas"]),
    ("my sister's birthday is on June 3rd, she wants a camera", ["birthday"]),
]
QUERIES = [
    "MySQL 配置",
    "科幻 电影",
    "kubernetes upgrade",
    "cat salmon",
    "咖啡 绿茶",
    "Kyoto trip May",
    "pandas CSV",
    "birthday camera",
    "数据库",
    "电影",
    "what did Ann say about the cat?",
]


async def _fill(layer: AgentFusionDataLayer, engine: HybridMemorySearch, user: str, copies: int = 4) -> None:
    layer.memory.set_analyzer(engine.analyzer)
    n = 0
    for c in range(copies):
        for i, (text, keywords) in enumerate(TEXTS):
            kind = ("general", "user_preference")[i % 2]
            friend = None if kind == "user_preference" else (None, "f1", "f2")[(i + c) % 3]  # a profile is shared
            await layer.memory.add(
                user_id=user,
                memory_key=f"{user}-m{n}",
                content=f"{text} ({c}){'?' if i % 3 == 0 else ''}",
                keywords=keywords,
                friend_id=friend,
                created_at=T0 + timedelta(days=c, minutes=7 * i),
                metadata={SESSION_FIELD: f"s{c}", "speaker": ("Ann", "Bob")[n % 2]},  # conversations of two
                # speakers, with questions whose replies are lifted
                memory_type=kind,
            )
            n += 1


async def _answers(engine: HybridMemorySearch, user: str) -> list[Any]:
    return await engine_answers(engine, user, QUERIES, now=T0)


def _engine(layer: AgentFusionDataLayer, folder: Path | None, **options: Any) -> HybridMemorySearch:
    return HybridMemorySearch(layer.memory, snapshots=SnapshotStore(folder) if folder else None, **options)


async def test_a_loaded_snapshot_answers_like_a_fresh_build(layer: AgentFusionDataLayer, tmp_path: Path) -> None:
    builder = _engine(layer, tmp_path)
    await _fill(layer, builder, "u1")
    await builder.refresh(user_id="u1")
    assert SnapshotStore(tmp_path).path("u1").exists()
    restarted = _engine(layer, tmp_path)
    fresh = _engine(layer, None)
    loaded = await _answers(restarted, "u1")
    assert restarted._users["u1"].snapshot_revision >= 0  # it loaded the snapshot, did not rebuild
    assert restarted._users["u1"].applied_since_snapshot == 0
    expected = await _answers(fresh, "u1")
    assert loaded == expected
    assert sum(len(a) for a in loaded) > 50  # the searches found things


async def test_writes_of_another_process_reach_a_loaded_snapshot(
    layer: AgentFusionDataLayer, db_url: str, tmp_path: Path
) -> None:
    builder = _engine(layer, tmp_path)
    await _fill(layer, builder, "u1")
    await builder.search("咖啡", user_id="u1")
    async with AgentFusionDataLayer(db_url) as other:  # another process: its own connections
        other.memory.set_analyzer(builder.analyzer)
        await other.memory.add(
            user_id="u1", memory_key="late", content="zebrafish aquarium heater broke", created_at=T0
        )
        await other.memory.delete(user_id="u1", memory_key="u1-m4")  # soft delete (咖啡)
    restarted = _engine(layer, tmp_path)
    hits = await restarted.search("zebrafish aquarium", user_id="u1", now=T0)
    assert [h.memory_key for h in hits][:1] == ["late"]
    assert "u1-m4" not in [h.memory_key for h in await restarted.search("咖啡 绿茶", user_id="u1", now=T0)]
    assert restarted._users["u1"].snapshot_revision < restarted._users["u1"].revision  # stale, then refreshed
    # exactly what the process that saved the snapshot answers after applying the same writes (an index
    # updated in place keeps its tf-idf norms until the collection drifts by 2 %, so a fresh build may
    # order near-ties differently)
    assert await _answers(restarted, "u1") == await _answers(builder, "u1")


async def test_a_hard_delete_elsewhere_is_seen(layer: AgentFusionDataLayer, tmp_path: Path) -> None:
    builder = _engine(layer, tmp_path)
    await _fill(layer, builder, "u1", copies=2)
    await builder.refresh(user_id="u1")
    assert await layer.memory.delete(user_id="u1", memory_key="u1-m1", hard=True)
    restarted = _engine(layer, tmp_path)
    keys = [h.memory_key for h in await restarted.search("科幻电影", user_id="u1", limit=20, now=T0)]
    assert "u1-m1" not in keys and "u1-m9" in keys
    assert await _answers(restarted, "u1") == await _answers(builder, "u1")


async def test_a_loaded_snapshot_is_saved_again_after_enough_writes(
    layer: AgentFusionDataLayer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent_memory.search import _engine_snapshots

    monkeypatch.setattr(_engine_snapshots, "RESAVE_ROWS", 2)  # save again after 2 rows (default 500)
    builder = _engine(layer, tmp_path)
    await _fill(layer, builder, "u1")
    await builder.refresh(user_id="u1")
    restarted = _engine(layer, tmp_path)
    await restarted.search("咖啡", user_id="u1")  # loaded: every slot but a few stays unloaded
    first = restarted._users["u1"].snapshot_revision
    await layer.memory.add(user_id="u1", memory_key="late1", content="zebrafish aquarium heater", created_at=T0)
    await layer.memory.add(user_id="u1", memory_key="late2", content="aquarium pump and 咖啡", created_at=T0)
    await layer.memory.delete(user_id="u1", memory_key="u1-m5")
    await restarted.search("aquarium", user_id="u1")
    state = restarted._users["u1"]
    assert state.snapshot_revision == state.revision > first  # saved again from the partly loaded index
    third = _engine(layer, tmp_path)
    assert await _answers(third, "u1") == await _answers(restarted, "u1")
    assert third._users["u1"].applied_since_snapshot == 0  # it loaded the new snapshot and read no rows


async def test_a_corrupt_snapshot_is_rebuilt(layer: AgentFusionDataLayer, tmp_path: Path) -> None:
    builder = _engine(layer, tmp_path)
    await _fill(layer, builder, "u1", copies=2)
    await builder.refresh(user_id="u1")
    path = SnapshotStore(tmp_path).path("u1")
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one flipped byte in the payload
    path.write_bytes(bytes(data))
    with pytest.raises(SnapshotError, match="checksum"):
        decode(bytearray(data), expect=_meta(builder, "u1"))
    restarted = _engine(layer, tmp_path)
    assert await _answers(restarted, "u1") == await _answers(_engine(layer, None), "u1")
    assert restarted._users["u1"].snapshot_revision == restarted._users["u1"].revision  # rebuilt and saved anew
    decode(bytearray(path.read_bytes()), expect=_meta(builder, "u1"))  # the new file is intact
    path.write_bytes(b"AFMSNAP1\x05")  # truncated
    again = _engine(layer, tmp_path)
    assert await _answers(again, "u1") == await _answers(_engine(layer, None), "u1")


async def test_a_snapshot_of_a_replaced_database_is_not_used(tmp_path: Path, sqlite_template: Path) -> None:
    import shutil

    path = tmp_path / "memory.db"
    url = f"sqlite+aiosqlite:///{path}"
    shutil.copy(sqlite_template, path)
    async with AgentFusionDataLayer(url) as layer:
        builder = _engine(layer, tmp_path / "snaps")
        await _fill(layer, builder, "u1", copies=3)
        await builder.refresh(user_id="u1")
    shutil.copy(sqlite_template, path)  # the same file name, another database (same user, same revision count)
    async with AgentFusionDataLayer(url) as layer:
        other = _engine(layer, None)
        await _fill(layer, other, "u1", copies=3)
        restarted = _engine(layer, tmp_path / "snaps")
        assert await _answers(restarted, "u1") == await _answers(other, "u1")
        state = restarted._users["u1"]
        assert state.snapshot_revision == state.revision  # rebuilt from this database, and saved anew
        hits = await restarted.search("咖啡", user_id="u1")
        stored = await layer.memory.get_by_ids(user_id="u1", ids=[h.record.id for h in hits])
        assert hits and len(stored) == len(hits)  # every result is a memory of this database


async def test_another_analyser_rebuilds(layer: AgentFusionDataLayer, tmp_path: Path) -> None:
    builder = _engine(layer, tmp_path)
    await _fill(layer, builder, "u1", copies=2)
    await builder.refresh(user_id="u1")
    other = SearchAnalyzer(extractor=KeywordExtractor(max_keywords=2))
    assert other.name != builder.analyzer.name
    stored = SnapshotStore(tmp_path).load("u1")
    assert stored is not None
    with pytest.raises(SnapshotError, match="analyser"):
        decode(stored, expect=_meta(builder, "u1", analyzer=other.name))
    restarted = _engine(layer, tmp_path, analyzer=other)
    layer.memory.set_analyzer(other)
    fresh = await _answers(restarted, "u1")
    assert restarted._users["u1"].snapshot_revision == restarted._users["u1"].revision
    resaved = SnapshotStore(tmp_path).load("u1")
    assert resaved is not None
    _, meta = decode(resaved, expect=_meta(builder, "u1", analyzer=other.name))
    assert meta.analyzer == other.name
    assert fresh == await _answers(_engine(layer, None, analyzer=other), "u1")


async def test_the_cache_cap_drops_the_least_recently_used_user(layer: AgentFusionDataLayer, tmp_path: Path) -> None:
    sizer = _engine(layer, None)
    for user in ("u1", "u2", "u3"):
        await _fill(layer, sizer, user, copies=2)
    for user in ("u1", "u2", "u3"):  # a search keeps values with the index, counted in its size
        for query in ("咖啡", "电影", "kubernetes"):
            await sizer.search(query, user_id=user)
    sizes = [(await sizer.refresh(user_id=u)).approx_bytes() for u in ("u1", "u2", "u3")]
    cap_mb = (2 * max(sizes) + min(sizes) // 2) / (1024 * 1024)  # any two fit, three do not
    engine = _engine(layer, tmp_path, index_cache_mb=cap_mb)
    for user in ("u1", "u2", "u1", "u3"):
        await engine.search("咖啡", user_id=user)
    assert engine.cached_users() == ["u1", "u3"]  # u2 was used least recently
    await engine.search("电影", user_id="u2")
    assert engine.cached_users() == ["u3", "u2"]
    hits = await engine.search("kubernetes", user_id="u1")  # dropped, reloaded from its snapshot
    assert hits and engine._users["u1"].snapshot_revision >= 0
    engine.forget(user_id="u3")
    await layer.memory.add(user_id="u2", memory_key="more", content="周末去看科幻电影 " * 50)
    await engine.search("电影", user_id="u2")  # grown: the running total follows
    assert engine._cached_bytes == sum(s.approx_bytes for s in engine._users.values()) > 0
    with pytest.raises(ValueError, match="index_cache_mb"):
        _engine(layer, None, index_cache_mb=0)


async def test_the_settings_reach_the_engine(db_url: str, tmp_path: Path) -> None:
    folder = tmp_path / "snaps"
    async with MemorySystem.open(
        db_url, memory_search_index_cache_mb=0.001, memory_search_index_snapshot_dir=str(folder)
    ) as system:
        assert system.search.index_cache_mb == 0.001
        for user in ("u1", "u2"):
            await _fill(system.layer, system.search, user, copies=1)
            await system.search.search("咖啡", user_id=user)
        assert system.search.cached_users() == ["u2"]  # 1 KB holds no index: only the current user stays
        assert system.search.snapshots is not None
        assert list(system.search.snapshots.folder.glob("*.idx"))
        assert system.search.snapshots.folder.parent == folder
    async with MemorySystem.open(db_url, memory_search_index_snapshot_dir="off") as system:
        assert system.search.snapshots is None


def _meta(engine: HybridMemorySearch, user: str, **changes: Any) -> SnapshotMeta:
    base = engine._snapshot_meta(user)
    fields = {f: getattr(base, f) for f in SnapshotMeta.__dataclass_fields__}
    fields.update(changes)
    return SnapshotMeta(**fields)


@pytest.mark.slow
def test_bench_latency_reports_the_cold_first_search_and_users() -> None:
    import json

    from typer.testing import CliRunner

    from agent_memory.cli import app

    runner = CliRunner()
    out = runner.invoke(
        app, ["bench", "latency", "-n", "300", "--queries", "10", "--backend", "sqlite", "--cold-runs", "3"]
    )
    assert out.exit_code == 0, out.output
    result = json.loads(out.output)["results"][0]
    cold = result["cold_first_search_ms"]
    for variant in ("tokenizer_loaded_first", "tokenizer_cold"):
        assert cold[variant]["from_snapshot"] is True  # the fresh processes loaded the saved index
        assert cold[variant]["hits"] > 0
        assert cold[variant]["process_wall_ms"] > cold[variant]["search_ms"] > 0
        low, high = cold[variant]["search_ms_range"]
        assert cold[variant]["runs"] == 3 and low <= cold[variant]["search_ms"] <= high  # the median of three
    assert result["snapshot_mb"] > 0 and result["p95_ms"] >= result["p50_ms"] > 0
    out = runner.invoke(app, ["bench", "latency", "--users", "6", "--per-user", "20", "--backend", "sqlite"])
    assert out.exit_code == 0, out.output
    users = json.loads(out.output)["results"][0]
    assert users["users"] == 6 and users["loaded_users"] == 6
    assert set(users["first_search_snapshot_ms"]) == {"p50", "p95", "max"}


def test_cold_figures_are_the_median_of_the_runs() -> None:
    from agent_memory.bench._latency import median_run

    runs = [
        {"search_ms": 900.0, "open_ms": 5.0, "hits": 10, "from_snapshot": True, "note": "a"},
        {"search_ms": 700.0, "open_ms": 4.0, "hits": 10, "from_snapshot": False, "note": "b"},
        {"search_ms": 1400.0, "open_ms": 6.0, "hits": 9, "from_snapshot": True, "note": "c"},
    ]
    got = median_run(runs)
    assert got["search_ms"] == 900.0 and got["open_ms"] == 5.0 and got["hits"] == 10
    assert got["from_snapshot"] is False  # true only when every process loaded the saved index
    assert got["runs"] == 3 and got["search_ms_range"] == [700.0, 1400.0] and got["note"] == "a"
    with pytest.raises(ValueError, match="at least one run"):
        median_run([])


async def test_reused_term_parts_give_the_same_scores(layer: AgentFusionDataLayer) -> None:
    """A term's BM25F and keyword-tier parts are kept between searches (UserIndex.memo): a search whose
    terms were all seen before scores exactly like the first search of a fresh engine."""
    warm = _engine(layer, None)
    await _fill(layer, warm, "u1", copies=2)
    for q in QUERIES:  # fills the memo with every query term
        await warm.search(q, user_id="u1", limit=8, now=T0)
    assert (await warm.refresh(user_id="u1"))._memo
    for mode in ("hybrid", "keyword"):
        for q in QUERIES:
            first = await _engine(layer, None).search(q, user_id="u1", mode=mode, limit=7, now=T0)
            again = await warm.search(q, user_id="u1", mode=mode, limit=7, now=T0)
            assert [(h.memory_key, h.score, h.rank_score, h.keyword, h.text) for h in again] == [
                (h.memory_key, h.score, h.rank_score, h.keyword, h.text) for h in first
            ]
    await layer.memory.add(user_id="u1", memory_key="new", content="咖啡 绿茶 every morning", created_at=T0)
    after = [(h.memory_key, h.score) for h in await warm.search("咖啡 绿茶", user_id="u1", limit=5, now=T0)]
    assert "new" in [k for k, _ in after]  # the write dropped the kept parts of 咖啡 and 绿茶
    assert after == [
        (h.memory_key, h.score) for h in await _engine(layer, None).search("咖啡 绿茶", user_id="u1", limit=5, now=T0)
    ]
