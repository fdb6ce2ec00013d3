"""The benchmarks measure the engine a user gets: the search engine a benchmark runs is described exactly
as the one ``MemorySystem.build`` makes from the same settings (analysis with statement topics, embedder
kind, semantic share, weights, word neighbours), and a hand-wired engine is not."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_memory.bench import BenchDataset, BenchDoc, BenchQuery, bench_settings, run_engine
from agent_memory.bench._recall import run_recall
from agent_memory.cli import app
from agent_memory.search import HybridMemorySearch
from agent_memory.settings import load_settings
from agent_memory.system import EngineDescription, MemorySystem, SystemOverrides, describe_engine, search_engine
from data_layer import AgentFusionDataLayer

T0 = datetime(2026, 3, 1, 12, tzinfo=UTC)
DATASET = BenchDataset(
    name="tiny",
    docs=[
        BenchDoc(id="d1", user_id="u", text="MySQL 数据库端口是 3306", created_at=T0),
        BenchDoc(id="d2", user_id="u", text="喜欢科幻电影，不喜欢恐怖片", created_at=T0),
    ],
    queries=[BenchQuery(id="q1", user_id="u", text="数据库端口", gold={"d1": 1.0}, now=T0)],
    ks=(1,),
)


async def _users_engine(url: str, **settings: Any) -> EngineDescription:
    """The description of the engine of the system a user builds with ``settings`` on ``url``."""
    async with MemorySystem.build(load_settings(memory_database_url=url, **settings)) as system:
        return describe_engine(system.search)


@pytest.mark.parametrize(
    "settings",
    [
        {},  # the library's defaults
        {"memory_search_embedder": "hashing"},
        {"memory_search_embedder": "hashing", "memory_search_semantic_share": 0.4},
        {"memory_search_word_neighbours": False, "memory_extraction_enable_synonym_expansion": False},
        {"memory_extraction_max_keywords": 3, "memory_search_half_life_days": 7},
    ],
)
async def test_the_retrieval_and_recall_benches_run_the_users_engine(
    db_url: str, tmp_path: Path, settings: dict[str, Any]
) -> None:
    users = await _users_engine(db_url, **settings)
    assert users.topics and "|topics" in users.analyzer  # the statement topics the benches once left out
    retrieval = await run_engine(DATASET, db_url, mode="hybrid", depth=5, settings=bench_settings(db_url, **settings))
    assert retrieval.engine == users
    assert retrieval.ranked[0][:1] == ["d1"]
    other = f"sqlite+aiosqlite:///{tmp_path / 'recall.db'}"
    recall = await run_recall(DATASET, other, depth=5, settings=bench_settings(other, **settings))
    assert recall.engine == users


async def test_a_hand_wired_engine_describes_differently(layer: AgentFusionDataLayer) -> None:
    """The comparison can fail: the engine the benches used to wire (no statement topics) is told apart,
    and the composition's own factory is not."""
    settings = load_settings(memory_search_embedder="hashing")
    async with MemorySystem.build(settings, overrides=SystemOverrides(database_url=str(layer.url))) as system:
        users = describe_engine(system.search)
    assert describe_engine(HybridMemorySearch(layer.memory)) != users
    assert describe_engine(search_engine(layer.memory, settings)) == users


def test_the_bench_commands_report_the_engine_a_user_gets(tmp_path: Path) -> None:
    """``agent-memory bench retrieval`` without options names the embedder, share and word neighbours
    of the library's defaults."""
    folder = tmp_path / "generic"
    folder.mkdir()
    (folder / "corpus.jsonl").write_text(
        json.dumps(
            {"id": "d1", "user_id": "u", "text": "MySQL 数据库端口是 3306", "created_at": "2024-05-01T10:00:00Z"}
        ),
        encoding="utf-8",
    )
    (folder / "queries.jsonl").write_text(
        json.dumps({"id": "q1", "user_id": "u", "text": "数据库端口"}), encoding="utf-8"
    )
    (folder / "qrels.tsv").write_text("q1\td1\t1\n", encoding="utf-8")
    out = CliRunner().invoke(app, ["bench", "retrieval", "--dataset", "generic", "--data", str(folder)])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    with_defaults = asyncio.run(_users_engine(f"sqlite+aiosqlite:///{tmp_path / 'user.db'}"))
    assert data["embedder"] == (with_defaults.embedder if with_defaults.stored_vectors else "hashing")
    assert data["semantic_share"] == with_defaults.semantic_share
    assert data["word_neighbours"] is with_defaults.word_neighbours
