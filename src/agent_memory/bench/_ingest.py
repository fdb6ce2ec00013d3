"""Ingest throughput: memories written per second through ``MemoryRepository.add_many`` with the library's
analysis (search terms, keywords, profile topics), beside SQLite FTS5 fed by the project's own tokenizer
on the same texts in the same run; with an embedder, also the background pass that embeds them and a
query's embedding time.

>>> figures = await bench_ingest(url, memories=10_000, rounds=3)  # doctest: +SKIP
>>> figures.ratio_to_fts5  # doctest: +SKIP

Rounds alternate: ours (a new user in the same database each round), then FTS5 (a new file each round),
so a machine that slows down or speeds up during the run weighs on both. Both start each round with the
tokenizer's text caches empty, so neither is helped by texts the other (or an earlier round) read.

On PostgreSQL the first round writes into a new database, whose empty tables' statistics make its foreign
key checks scan the table they check for every row (several times slower); the tables are ``ANALYZE``d
after each round, as autovacuum does soon after a bulk write, so later rounds show a database in use.
"""

from __future__ import annotations

import sqlite3
import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from data_layer import NewMemory, upgrade

from ._synthetic import synthetic_memories, varied_memories
from ._tempdb import analyze

if TYPE_CHECKING:
    from ..search import Embedder
    from ..text import Tokenizer

#: The texts written: ``varied`` share few pieces (as chat does), ``templated`` are the latency
#: benchmark's, whose repeated pieces the tokenizer's caches answer after the first time.
Corpus = Literal["varied", "templated"]
CORPORA: tuple[Corpus, ...] = ("varied", "templated")

#: Queries embedded one at a time to time a query's embedding.
QUERIES = (
    "最近睡眠不好，有点焦虑",
    "What kind of movies do I dislike?",
    "下周五的汇报准备得怎么样了",
    "my sister's new job",
)


@dataclass(frozen=True, slots=True)
class IngestFigures:
    """Rows written, wall time and rows per second for one backend, and the FTS5 baseline's."""

    backend: str
    memories: int
    corpus: Corpus
    batch: int
    rounds: int
    #: the median round's seconds and memories per second (ours)
    seconds: float
    rows_per_s: float
    #: memories per second of each round (ours), in the order run
    round_rows_per_s: list[float]
    keyword_extraction: bool
    #: SQLite FTS5 fed by the project's tokenizer on the same texts, batches and transactions
    fts5_rows_per_s: float
    fts5_round_rows_per_s: list[float]
    #: ours / FTS5 (medians), and the same ratio within each round
    ratio_to_fts5: float
    round_ratios: list[float]
    #: the embedder's name (``None``: no vectors)
    embedder: str | None = None
    #: seconds of the background pass that embedded the first round's memories, and its memories per second
    embedding_s: float | None = None
    embedded_per_s: float | None = None
    #: median milliseconds to embed one query
    query_embedding_ms: float | None = None


async def bench_ingest(
    url: str,
    *,
    memories: int,
    batch: int = 500,
    rounds: int = 3,
    analysis: bool = True,
    embedder: Embedder | None = None,
    corpus: Corpus = "varied",
) -> IngestFigures:
    """Migrate ``url``, then ``rounds`` times write ``memories`` synthetic memories for a new user in batches
    of ``batch``, each round followed by FTS5 writing the same texts' tokens in the same batches.

    ``analysis`` (default): the writes go through the library's analyzer, as the composition root sets it
    (terms, keywords, topics; a bulk write's vectors are left to the background pass, as in the library);
    with ``embedder``, the pass is then run and timed for the first round's user and queries are embedded
    one at a time. ``analysis=False`` writes raw rows (their keywords wait for a backfill). ``corpus``
    chooses the texts (:data:`CORPORA`)."""
    from ..search import freeze_loaded
    from ..system import MemorySystem, SystemOverrides
    from ..text import clear_token_caches
    from ._system import bench_settings

    if rounds < 1:
        raise ValueError("rounds must be at least 1")
    await upgrade(url)
    if corpus not in CORPORA:
        raise ValueError(f"corpus must be one of {', '.join(CORPORA)}")
    texts = varied_memories if corpus == "varied" else synthetic_memories
    items = list(texts(memories, start=datetime(2026, 1, 1, tzinfo=UTC)))
    ours: list[float] = []
    fts5: list[float] = []
    embedding_s = query_ms = None
    # no embedder: none is loaded (hashing stores no vectors), as a library configured without one
    settings = bench_settings(url, memory_search_embedder="hashing") if embedder is None else bench_settings(url)
    async with MemorySystem.build(settings, overrides=SystemOverrides(database_url=url, embedder=embedder)) as system:
        search = system.search
        await search.warm_up()
        freeze_loaded()  # as a process the system owns does after its warm-up (``serve``)
        if not analysis:
            system.layer.memory.set_analyzer(None)
        tokenizer = search.analyzer.tokenizer  # the pipeline the library stores terms with
        with tempfile.TemporaryDirectory(prefix="agent-memory-fts5-") as folder:
            for n in range(rounds):
                clear_token_caches()
                user = f"bench-user-{n}"
                started = time.perf_counter()
                for i in range(0, len(items), batch):
                    await system.layer.memory.add_many(user_id=user, memories=items[i : i + batch])
                ours.append(time.perf_counter() - started)
                stored = await system.layer.memory.count(user_id=user)
                if stored != memories:
                    raise RuntimeError(f"ingest wrote {stored} rows, expected {memories}")
                clear_token_caches()
                fts5.append(fts5_ingest(Path(folder) / f"round-{n}.db", items, batch=batch, tokenizer=tokenizer))
                if system.layer.backend == "postgresql":  # as autovacuum would after the bulk write
                    await analyze(url)
        if embedder is not None and search.embedding is not None:
            began = time.perf_counter()
            await search.embedding.wait("bench-user-0")
            embedding_s = time.perf_counter() - began
            timings = []
            for text in QUERIES * 5:
                t0 = time.perf_counter()
                await embedder.embed([text])
                timings.append((time.perf_counter() - t0) * 1000)
            query_ms = statistics.median(timings)
        backend = system.layer.backend
    seconds = statistics.median(ours)
    base = statistics.median(fts5)
    return IngestFigures(
        backend=backend,
        memories=memories,
        corpus=corpus,
        batch=batch,
        rounds=rounds,
        seconds=round(seconds, 3),
        rows_per_s=round(memories / seconds, 1),
        round_rows_per_s=[round(memories / s, 1) for s in ours],
        keyword_extraction=analysis,
        fts5_rows_per_s=round(memories / base, 1),
        fts5_round_rows_per_s=[round(memories / s, 1) for s in fts5],
        ratio_to_fts5=round(base / seconds, 3),
        round_ratios=[round(f / s, 3) for s, f in zip(ours, fts5, strict=True)],
        embedder=embedder.name if embedder is not None else None,
        embedding_s=round(embedding_s, 3) if embedding_s is not None else None,
        embedded_per_s=round(memories / embedding_s, 1) if embedding_s else None,
        query_embedding_ms=round(query_ms, 2) if query_ms is not None else None,
    )


def fts5_ingest(path: Path, items: Sequence[NewMemory], *, batch: int, tokenizer: Tokenizer) -> float:
    """Seconds to write ``items`` into a new SQLite FTS5 table at ``path``: each memory's text (as the
    library searches it) tokenised by ``tokenizer.index_tokens``, tokens joined by spaces, ``batch``
    memories a transaction, with the user and key as unindexed columns."""
    from ..search import memory_text

    index_tokens = tokenizer.index_tokens
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")  # the pragmas the data layer sets on its SQLite files
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("CREATE VIRTUAL TABLE memories USING fts5(tokens, user_id UNINDEXED, memory_key UNINDEXED)")
        started = time.perf_counter()
        for i in range(0, len(items), batch):
            rows = [
                (" ".join(index_tokens(memory_text(m.summary or "", m.content))), "bench-user", m.memory_key)
                for m in items[i : i + batch]
            ]
            conn.execute("BEGIN")
            conn.executemany("INSERT INTO memories (tokens, user_id, memory_key) VALUES (?, ?, ?)", rows)
            conn.execute("COMMIT")
        return time.perf_counter() - started
    finally:
        conn.close()
