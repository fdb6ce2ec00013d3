"""Ingest throughput: memories written per second through ``MemoryRepository.add_many``."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime

from data_layer import AgentFusionDataLayer, MemoryAnalyzer, upgrade

from ._synthetic import synthetic_memories


@dataclass(frozen=True, slots=True)
class IngestFigures:
    """Rows written, wall time and rows per second for one backend."""

    backend: str
    memories: int
    batch: int
    seconds: float
    rows_per_s: float
    keyword_extraction: bool


async def bench_ingest(
    url: str, *, memories: int, batch: int = 500, analyzer: MemoryAnalyzer | None = None
) -> IngestFigures:
    """Migrate ``url``, then write ``memories`` synthetic memories for one user in batches of ``batch``."""
    await upgrade(url)
    items = list(synthetic_memories(memories, start=datetime(2026, 1, 1, tzinfo=UTC)))
    async with AgentFusionDataLayer(url) as layer:
        layer.memory.set_analyzer(analyzer)
        started = time.perf_counter()
        for i in range(0, len(items), batch):
            await layer.memory.add_many(user_id="bench-user", memories=items[i : i + batch])
        seconds = time.perf_counter() - started
        stored = await layer.memory.count(user_id="bench-user")
    if stored != memories:
        raise RuntimeError(f"ingest wrote {stored} rows, expected {memories}")
    return IngestFigures(
        backend=layer.backend,
        memories=memories,
        batch=batch,
        seconds=round(seconds, 3),
        rows_per_s=round(memories / seconds, 1),
        keyword_extraction=analyzer is not None,
    )
