"""Many writers: acknowledged writes are stored, failures stay with their own call, and a
batch that fails as a whole acknowledges nothing. Behaviour only; the latency figures come from
``agent-memory bench writers`` (never asserted here)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlalchemy import event

from agent_memory.bench import bench_writers
from agent_memory.bench._keywords import KINDS, bench_keywords
from data_layer import AgentFusionDataLayer, DuplicateMemoryKeyError, InvalidInputError, StorageError

WRITERS = 32


async def test_32_concurrent_writers_lose_nothing(layer: AgentFusionDataLayer, db_url: str) -> None:
    changed: list[str] = []
    layer.memory.add_listener(changed.append)
    others = [AgentFusionDataLayer(db_url) for _ in range(3)]  # separate engines on the same database too

    async def writer(n: int) -> list[str]:
        target = layer if n % 4 == 0 else others[n % 3]
        acked = []
        for i in range(6):
            await target.memory.add(user_id=f"u{n % 4}", memory_key=f"w{n}-{i}", content=f"writer {n} item {i}")
            acked.append(f"w{n}-{i}")
        return acked

    try:
        acked = [key for keys in await asyncio.gather(*(writer(n) for n in range(WRITERS))) for key in keys]
    finally:
        for other in others:
            await other.close()
    assert len(acked) == WRITERS * 6
    stored = 0
    for user in range(4):
        keys = [k for k in acked if int(k[1:].split("-")[0]) % 4 == user]
        stored += len(await layer.memory.get_many(user_id=f"u{user}", memory_keys=keys))
    assert stored == len(acked)
    assert set(changed) == {"u0"} and len(changed) >= 1  # listeners of the writing layer are told


async def test_a_duplicate_fails_alone_in_a_shared_batch(layer: AgentFusionDataLayer) -> None:
    await layer.memory.add(user_id="u1", memory_key="taken", content="first")
    calls = [layer.memory.add(user_id="u1", memory_key=f"k{i}", content=f"c{i}") for i in range(10)]
    calls += [layer.memory.add(user_id="u1", memory_key="taken", content="again")]
    calls += [layer.memory.add(user_id="u2", memory_key="same", content="x") for _ in range(2)]
    results = await asyncio.gather(*calls, return_exceptions=True)
    errors = [r for r in results if isinstance(r, BaseException)]
    assert len(errors) == 2 and all(isinstance(e, DuplicateMemoryKeyError) for e in errors), errors
    assert await layer.memory.count(user_id="u1") == 11 and await layer.memory.count(user_id="u2") == 1
    kept = await layer.memory.retrieve_memory(user_id="u1", memory_key="taken", touch=False)
    assert kept is not None and kept.content == "first"


async def test_bad_input_fails_before_the_batch(layer: AgentFusionDataLayer) -> None:
    calls = [layer.memory.add(user_id="u1", memory_key=f"k{i}", content="ok") for i in range(5)]
    calls.append(layer.memory.add(user_id="u1", memory_key="bad", content="a\x00b"))
    results = await asyncio.gather(*calls, return_exceptions=True)
    assert [type(r).__name__ for r in results if isinstance(r, BaseException)] == ["InvalidInputError"]
    assert isinstance(results[-1], InvalidInputError) and await layer.memory.count(user_id="u1") == 5


async def test_a_failed_batch_acknowledges_nothing(layer: AgentFusionDataLayer) -> None:
    """When the shared transaction fails, every call in it fails and none of them is stored."""
    failing = {"on": True}

    def _fail(conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        if failing["on"] and statement.lstrip().upper().startswith("INSERT INTO AGENT_MEMORY_KEYWORDS"):
            raise OSError(28, "No space left on device")

    event.listen(layer.db.engine.sync_engine, "before_cursor_execute", _fail)
    results = await asyncio.gather(
        *(layer.memory.add(user_id="u1", memory_key=f"k{i}", content="c", keywords=["kw"]) for i in range(8)),
        return_exceptions=True,
    )
    assert all(isinstance(r, StorageError) and r.reason == "full" for r in results), results
    failing["on"] = False
    assert await layer.memory.count(user_id="u1") == 0
    await layer.memory.add(user_id="u1", memory_key="k0", content="c", keywords=["kw"])
    assert await layer.memory.count(user_id="u1") == 1


async def test_a_cancelled_writer_does_not_stop_the_others(layer: AgentFusionDataLayer) -> None:
    tasks = [asyncio.create_task(layer.memory.add(user_id="u1", memory_key=f"k{i}", content="c")) for i in range(6)]
    tasks[2].cancel()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    done = [r for r in results if not isinstance(r, BaseException)]
    assert len(done) >= 5
    assert await layer.memory.count(user_id="u1") >= len(done)


@pytest.mark.parametrize("analyze", [False, True])
async def test_bench_writers_counts_acknowledged_and_stored(db_url: str, analyze: bool) -> None:
    figures = await bench_writers(db_url, writers=4, ops=3, analyze=analyze)
    assert (figures.acknowledged, figures.stored, figures.lost, figures.failed) == (12, 12, 0, 0)
    assert figures.p50_ms <= figures.p95_ms <= figures.max_ms


def test_bench_keywords_runs_every_kind() -> None:
    figures = bench_keywords(samples=1, size=2_000)
    assert [f.kind for f in figures] == list(KINDS)
    assert all(f.keywords and f.samples == 1 for f in figures)
