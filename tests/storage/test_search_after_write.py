"""A search right after another process's writes answers exactly what an engine built from the stored
rows answers: the rows changed are applied to the loaded index (new words, removed words, new vectors,
a memory written again, a deletion), not the index rebuilt.

The writes change the collection by more than 2 %: an index updated in place refreshes its tf-idf
norms then (until then it keeps them, and its scores may differ from a fresh build's in the sixth
decimal, which can swap near-ties; see ``UserIndex.norms``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from agent_memory.search import HybridMemorySearch
from agent_memory.system import MemorySystem
from data_layer import SESSION_FIELD, AgentFusionDataLayer
from engine_answers import engine_answers

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
TEXTS = [
    "我把 MySQL 数据库的连接池配置改成了 50",
    "周末去看了一场科幻电影，星际穿越很好看",
    "I switched the kubernetes cluster upgrade to next Tuesday",
    "my cat Mochi likes salmon and hates the vacuum cleaner",
    "咖啡喝多了晚上睡不着，改喝绿茶",
    "planning a trip to Kyoto in May, booking the ryokan",
]
QUERIES = ["MySQL 配置", "科幻 电影", "kubernetes upgrade", "cat salmon", "咖啡 绿茶", "Kyoto trip"]
QUERIES += ["zebrafish", "zebra"]  # a new word, and a prefix of it


async def _answers(engine: HybridMemorySearch, user: str) -> list[Any]:
    return await engine_answers(engine, user, QUERIES, now=T0)


async def test_a_search_after_another_process_wrote_answers_like_a_fresh_build(db_url: str) -> None:
    async with _system(db_url) as reader, _system(db_url) as writer:
        memory = writer.layer.memory
        for n in range(60):
            await memory.add(
                user_id="u1",
                memory_key=f"m{n}",
                content=f"{TEXTS[n % len(TEXTS)]} ({n // len(TEXTS)})",
                friend_id=(None, "f1", "f2")[n % 3],
                memory_type="general",
                created_at=T0 - timedelta(hours=n),
                metadata={SESSION_FIELD: f"s{n // 10}"},
            )
        before = await _answers(reader.search, "u1")  # the reader's index, built and searched in every mode
        assert sum(len(a) for a in before) > 50
        # the writer's changes: a memory with words no memory held, one written again with other words,
        # a deletion, and a memory of known words only
        await memory.add(
            user_id="u1", memory_key="new", content="zebrafish aquarium heater broke", friend_id="f1", created_at=T0
        )
        await memory.upsert(
            user_id="u1",
            memory_key="m3",
            content="the zebra crossing near the office is repainted",
            friend_id=None,
            memory_type="general",
            created_at=T0 - timedelta(hours=3),
        )
        assert await memory.delete(user_id="u1", memory_key="m4")
        for n, text in enumerate(("咖啡 绿茶 Kyoto trip", "MySQL 配置 kubernetes", "cat salmon 科幻电影")):
            await memory.add(user_id="u1", memory_key=f"known{n}", content=text, friend_id="f1", created_at=T0)
        after = await _answers(reader.search, "u1")
        hybrid = dict(zip(QUERIES, after[: len(QUERIES)], strict=True))
        assert [k for k, *_ in hybrid["zebrafish"]][:1] == ["new"]  # the new word is found
        assert "m3" in [k for k, *_ in hybrid["zebra"]]  # so is the memory written again
        assert "m4" not in {k for a in after for k, *_ in a}  # the deleted one is gone
        async with _system(db_url) as fresh:  # a process that builds the index from the rows
            assert after == await _answers(fresh.search, "u1")


def _system(db_url: str) -> MemorySystem:
    from agent_memory.settings import load_settings

    return MemorySystem.build(load_settings(memory_database_url=db_url, memory_search_index_snapshot_dir="off"))


async def test_an_update_reads_the_keywords_of_the_changed_memories(layer: AgentFusionDataLayer) -> None:
    """An index update reads the keywords of the memories changed since, by id: the same keywords, in
    the same order, a read of every row gives those memories."""
    for n in range(12):
        await layer.memory.add(
            user_id="u1", memory_key=f"m{n}", content=f"note {n}", keywords=[f"k{n}", "shared", f"z{n % 3}"]
        )
    state = await layer.memory.index_state(user_id="u1")
    await layer.memory.upsert(user_id="u1", memory_key="m5", content="note five", keywords=["five", "shared"])
    await layer.memory.add(user_id="u1", memory_key="late", content="late note", keywords=["late"])
    changed = await layer.memory.index_rows(user_id="u1", after_revision=state.revision)
    every = {r.memory_key: r for r in await layer.memory.index_rows(user_id="u1")}
    assert sorted(r.memory_key for r in changed) == ["late", "m5"]
    for row in changed:
        assert row.keywords == every[row.memory_key].keywords and row.keywords
    assert {w for w, _ in every["m5"].keywords} == {"five", "shared"}


@pytest.mark.slow
def test_bench_after_write_reports_both_searches_and_what_b_saw() -> None:
    import json

    from typer.testing import CliRunner

    from agent_memory.cli import app

    out = CliRunner().invoke(app, ["bench", "after-write", "-n", "40", "--rounds", "3", "--backend", "sqlite"])
    assert out.exit_code == 0, out.output
    result = json.loads(out.output)["results"][0]
    assert result["backend"] == "sqlite" and result["memories"] == 40 and result["rounds"] == 3
    assert result["seen"] == 3 and result["saw_every_write"] is True
    for name in ("after_write_ms", "no_write_ms", "no_write_cached_ms", "write_ms"):
        assert result[name]["max"] >= result[name]["p50"] > 0
    assert result["ratio"] > 0 and result["ratio_to_cached"] > 0
    refused = CliRunner().invoke(app, ["bench", "after-write", "-n", "3", "--rounds", "5", "--backend", "sqlite"])
    assert refused.exit_code != 0 and "more than rounds" in refused.output


def test_bench_after_write_refuses_a_profile_file_in_a_missing_folder_at_once(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from agent_memory.cli import app

    missing = tmp_path / "no-such-folder" / "b.prof"
    out = CliRunner().invoke(
        app, ["bench", "after-write", "-n", "40", "--backend", "sqlite", "--profile", str(missing)]
    )
    assert out.exit_code != 0
    assert "its folder does not exist; give a file in an existing folder" in out.output
    assert "Traceback" not in out.output and not missing.parent.exists()
