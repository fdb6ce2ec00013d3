"""Ingest throughput: memories written per second through ``MemoryRepository.add_many``; with an embedder,
also the background pass that embeds them and a query's embedding time."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from data_layer import AgentFusionDataLayer, MemoryAnalyzer, upgrade

from ._synthetic import synthetic_memories

if TYPE_CHECKING:
    from ..search import Embedder

#: Queries embedded one at a time to time a query's embedding.
QUERIES = (
    "最近睡眠不好，有点焦虑",
    "What kind of movies do I dislike?",
    "下周五的汇报准备得怎么样了",
    "my sister's new job",
)


@dataclass(frozen=True, slots=True)
class IngestFigures:
    """Rows written, wall time and rows per second for one backend."""

    backend: str
    memories: int
    batch: int
    seconds: float
    rows_per_s: float
    keyword_extraction: bool
    #: the embedder's name (``None``: no vectors)
    embedder: str | None = None
    #: seconds of the background pass that embedded the written memories, and its memories per second
    embedding_s: float | None = None
    embedded_per_s: float | None = None
    #: median milliseconds to embed one query
    query_embedding_ms: float | None = None


async def bench_ingest(
    url: str,
    *,
    memories: int,
    batch: int = 500,
    analyzer: MemoryAnalyzer | None = None,
    embedder: Embedder | None = None,
) -> IngestFigures:
    """Migrate ``url``, then write ``memories`` synthetic memories for one user in batches of ``batch``.

    With ``embedder``, the writes go through the library's analyzer (terms, keywords; a batch's vectors
    are left to the background pass, as in the library), then the pass is run and timed, and queries are
    embedded one at a time."""
    from ..search import HybridMemorySearch, SearchAnalyzer

    await upgrade(url)
    items = list(synthetic_memories(memories, start=datetime(2026, 1, 1, tzinfo=UTC)))
    async with AgentFusionDataLayer(url) as layer:
        search = None
        if embedder is not None:
            search = HybridMemorySearch(layer.memory, analyzer=SearchAnalyzer(embedder=embedder))
            analyzer = search.analyzer
            await search.warm_up()
        layer.memory.set_analyzer(analyzer)
        started = time.perf_counter()
        for i in range(0, len(items), batch):
            await layer.memory.add_many(user_id="bench-user", memories=items[i : i + batch])
        seconds = time.perf_counter() - started
        stored = await layer.memory.count(user_id="bench-user")
        embedding_s = query_ms = None
        if search is not None and search.embedding is not None and embedder is not None:
            began = time.perf_counter()
            await search.embedding.wait("bench-user")
            embedding_s = time.perf_counter() - began
            timings = []
            for text in QUERIES * 5:
                t0 = time.perf_counter()
                await embedder.embed([text])
                timings.append((time.perf_counter() - t0) * 1000)
            query_ms = statistics.median(timings)
            await search.close()
    if stored != memories:
        raise RuntimeError(f"ingest wrote {stored} rows, expected {memories}")
    return IngestFigures(
        backend=layer.backend,
        memories=memories,
        batch=batch,
        seconds=round(seconds, 3),
        rows_per_s=round(memories / seconds, 1),
        keyword_extraction=analyzer is not None,
        embedder=embedder.name if embedder is not None else None,
        embedding_s=round(embedding_s, 3) if embedding_s is not None else None,
        embedded_per_s=round(memories / embedding_s, 1) if embedding_s else None,
        query_embedding_ms=round(query_ms, 2) if query_ms is not None else None,
    )
