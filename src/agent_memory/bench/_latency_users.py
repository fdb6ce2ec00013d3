"""First searches of many users (``agent-memory bench latency --users N``): N users x M memories each.

>>> figures = await bench_users(url, users=1000, memories=100, snapshot_dir="/tmp/snaps")  # doctest: +SKIP
>>> figures.first_search_snapshot_ms["p95"]  # doctest: +SKIP

Two passes over the users, each with its own composition root: the first builds every user's index from
the rows (and saves it), as a process does the first time a user searches; the second stands for a
restarted process, whose first search of each user loads the saved index. Both report p50/p95/max of
the first search per user, and the second how many indexes stayed loaded under the memory cap.

On PostgreSQL the tables are ``ANALYZE``d after the bulk write (``analyzed``), as autovacuum does soon
after in a real database: with the statistics of empty tables the planner joins a user's keywords by a
sequential scan of every user's keywords instead of the index on them. They are
also analysed while the write goes on (at 5,000 rows, then each time the rows grew tenfold), as autovacuum
would: a connection keeps the plans it made for empty tables, and the foreign key check of every keyword
row then scans all memories, so a write of 1M memories would slow down with every user.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from data_layer import upgrade

from ..search import SearchMode, freeze_loaded
from ._retrieval import spread
from ._synthetic import synthetic_memories, synthetic_queries
from ._tempdb import analyze

#: Rows written before the first ``ANALYZE`` of the bulk write on PostgreSQL (then at ten times as many).
ANALYZE_FIRST_ROWS = 5_000


@dataclass(frozen=True, slots=True)
class UsersFigures:
    """First search per user, built from rows and loaded from a snapshot, in milliseconds."""

    backend: str
    users: int
    memories_per_user: int
    ingest_s: float
    mode: str
    first_search_build_ms: dict[str, float]
    first_search_snapshot_ms: dict[str, float]
    second_search_ms: dict[str, float]
    loaded_users: int
    loaded_mb: float
    analyzed: bool


async def bench_users(
    url: str,
    *,
    users: int,
    memories: int,
    snapshot_dir: str,
    mode: SearchMode = "hybrid",
    cache_mb: float | None = None,
) -> UsersFigures:
    """Write ``users`` x ``memories`` synthetic memories, then time each user's first search twice: in a
    system that builds the indexes, then in a new one that loads them (``cache_mb`` caps what it keeps)."""
    from ._system import bench_settings, bench_system

    await upgrade(url)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    names = [f"user-{i:05d}" for i in range(users)]
    queries = synthetic_queries(max(users, 10), seed=23)
    options: dict[str, Any] = {"memory_search_index_snapshot_dir": snapshot_dir}
    if cache_mb is not None:
        options["memory_search_index_cache_mb"] = cache_mb
    settings = bench_settings(url, **options)
    async with bench_system(url, settings) as system:
        analyzed = system.layer.backend == "postgresql"
        began = time.perf_counter()
        next_analyze = ANALYZE_FIRST_ROWS
        for n, user in enumerate(names):
            items = list(synthetic_memories(memories, seed=1000 + n, start=start))
            await system.layer.memory.add_many(user_id=user, memories=items)
            if analyzed and (n + 1) * memories >= next_analyze:  # as autovacuum does while the tables grow
                await analyze(url)
                next_analyze *= 10
        ingest = time.perf_counter() - began
        if analyzed:
            await analyze(url)
        await system.search.warm_up()
        freeze_loaded()  # as a process the system owns does after its warm-up (``serve``)
        built = await _first_searches(system, names, queries, mode)
        backend = system.layer.backend
    async with bench_system(url, settings) as system:
        await system.search.warm_up()
        freeze_loaded()  # as a process the system owns does after its warm-up (``serve``)
        loaded = await _first_searches(system, names, queries, mode)
        again = await _first_searches(system, names, [q + " again" for q in queries], mode)
        kept = system.search.cached_users()
        size = sum(system.search._users[u].approx_bytes for u in kept)
    return UsersFigures(
        backend=backend,
        users=users,
        memories_per_user=memories,
        ingest_s=round(ingest, 2),
        mode=mode,
        first_search_build_ms=spread(built),
        first_search_snapshot_ms=spread(loaded),
        second_search_ms=spread(again),
        loaded_users=len(kept),
        loaded_mb=round(size / 2**20, 1),
        analyzed=analyzed,
    )


async def _first_searches(system: Any, names: list[str], queries: list[str], mode: SearchMode) -> list[float]:
    times = []
    for n, user in enumerate(names):
        t0 = time.perf_counter()
        await system.search.search(queries[n % len(queries)], user_id=user, mode=mode, limit=10)
        times.append((time.perf_counter() - t0) * 1000)
    return times
