"""Search latency and ingest rate at scale on a synthetic zh+en corpus (one user, warm index)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime

from data_layer import AgentFusionDataLayer, upgrade

from ..search import HybridMemorySearch, SearchMode
from ._retrieval import percentile
from ._synthetic import synthetic_memories, synthetic_queries


@dataclass(frozen=True, slots=True)
class LatencyFigures:
    """Ingest rate (with keyword extraction and analysis), index build time and warm search latency."""

    backend: str
    memories: int
    ingest_per_s: float
    index_build_s: float
    queries: int
    p50_ms: float
    p95_ms: float
    mode: str


async def bench_latency(
    url: str, *, memories: int, queries: int = 200, batch: int = 500, mode: SearchMode = "hybrid"
) -> LatencyFigures:
    """Write ``memories`` synthetic memories through the analysing write path, build the index once,
    then time ``queries`` distinct searches (the recent-search cache never answers them)."""
    await upgrade(url)
    items = list(synthetic_memories(memories, start=datetime(2026, 1, 1, tzinfo=UTC)))
    async with AgentFusionDataLayer(url) as layer:
        engine = HybridMemorySearch(layer.memory)
        layer.memory.set_analyzer(engine.analyzer)  # what the composition root does
        started = time.perf_counter()
        for i in range(0, len(items), batch):
            await layer.memory.add_many(user_id="bench-user", memories=items[i : i + batch])
        ingest = time.perf_counter() - started
        started = time.perf_counter()
        await engine.refresh(user_id="bench-user")
        build = time.perf_counter() - started
        texts = list(dict.fromkeys(synthetic_queries(queries * 3)))[:queries]
        for text in texts[:5]:
            await engine.search(text + " warm", user_id="bench-user", mode=mode, limit=10)
        latencies = []
        for text in texts:
            t0 = time.perf_counter()
            await engine.search(text, user_id="bench-user", mode=mode, limit=10)
            latencies.append((time.perf_counter() - t0) * 1000)
    return LatencyFigures(
        backend=layer.backend,
        memories=memories,
        ingest_per_s=round(memories / ingest, 1),
        index_build_s=round(build, 3),
        queries=len(latencies),
        p50_ms=percentile(latencies, 50),
        p95_ms=percentile(latencies, 95),
        mode=mode,
    )
