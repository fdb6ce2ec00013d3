"""Search latency at scale on a synthetic zh+en corpus: warm searches, the first search of a fresh
process (``cold``), and first searches of many users (:mod:`._latency_users`).

>>> figures = await bench_latency(url, memories=100_000, snapshot_dir="/tmp/snaps")  # doctest: +SKIP
>>> figures.p95_ms, figures.cold_first_search_ms["search_ms"]  # doctest: +SKIP

The corpus is written through the composition root (:class:`~agent_memory.system.MemorySystem`), so
the analyser, and therefore the saved index, are the ones a real process uses. ``cold`` spawns a new
Python process that opens the system and runs one search: it reports the search call, the process's
phases and its wall time from spawn to exit, with the tokenizer loaded first (as a server does when it
starts) and without. One such process varies by a few hundred milliseconds with what the machine does
meanwhile (the same code gave 0.85 s and 1.37 s), so ``cold_runs`` processes of each kind run in turn
and each phase is their median, with the first search's range beside it.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from data_layer import upgrade

from ..search import SearchMode, freeze_loaded
from ._retrieval import percentile
from ._synthetic import synthetic_memories, synthetic_queries

BENCH_USER = "bench-user"
#: Fresh processes timed for each kind of cold first search (their median is reported).
COLD_RUNS = 3


@dataclass(frozen=True, slots=True)
class LatencyFigures:
    """Ingest rate (with keyword extraction and analysis), index build time, warm search latency and the
    first search of a fresh process (``cold_first_search_ms``: with and without the tokenizer loaded)."""

    backend: str
    memories: int
    ingest_per_s: float
    index_build_s: float
    snapshot_mb: float
    queries: int
    p50_ms: float
    p95_ms: float
    mode: str
    cold_first_search_ms: dict[str, Any] = field(default_factory=dict)


async def bench_latency(
    url: str,
    *,
    memories: int,
    snapshot_dir: str,
    queries: int = 200,
    batch: int = 500,
    mode: SearchMode = "hybrid",
    cold: bool = True,
    cold_runs: int = COLD_RUNS,
) -> LatencyFigures:
    """Write ``memories`` synthetic memories through the analysing write path, build the index once (it
    is saved to ``snapshot_dir``), time ``queries`` distinct warm searches (the recent-search cache never
    answers them), then the first search of ``cold_runs`` fresh processes of each kind (medians)."""
    from ._system import bench_settings, bench_system

    if isinstance(cold_runs, bool) or not isinstance(cold_runs, int) or cold_runs < 1:
        raise ValueError(f"cold_runs must be a whole number of at least 1, got {cold_runs!r}")

    await upgrade(url)
    items = list(synthetic_memories(memories, start=datetime(2026, 1, 1, tzinfo=UTC)))
    async with bench_system(url, bench_settings(url, memory_search_index_snapshot_dir=snapshot_dir)) as system:
        engine = system.search
        started = time.perf_counter()
        for i in range(0, len(items), batch):
            await system.layer.memory.add_many(user_id=BENCH_USER, memories=items[i : i + batch])
        ingest = time.perf_counter() - started
        await engine.warm_up()
        freeze_loaded()  # as a process the system owns does after its warm-up (``serve``)
        started = time.perf_counter()
        await engine.refresh(user_id=BENCH_USER)  # builds and saves the snapshot
        build = time.perf_counter() - started
        texts = list(dict.fromkeys(synthetic_queries(queries * 3)))[:queries]
        for text in texts[:5]:
            await engine.search(text + " warm", user_id=BENCH_USER, mode=mode, limit=10)
        latencies = []
        for text in texts:
            t0 = time.perf_counter()
            await engine.search(text, user_id=BENCH_USER, mode=mode, limit=10)
            latencies.append((time.perf_counter() - t0) * 1000)
        backend = system.layer.backend
        snapshots = engine.snapshots
        size = snapshots.path(BENCH_USER).stat().st_size if snapshots and snapshots.path(BENCH_USER).exists() else 0
    figures: dict[str, Any] = {}
    if cold:
        query = texts[len(texts) // 2] + " cold"
        runs: dict[str, list[dict[str, Any]]] = {"tokenizer_loaded_first": [], "tokenizer_cold": []}
        for i in range(cold_runs):  # the two kinds in turn, each first every other time
            for name in sorted(runs, reverse=i % 2 == 0):
                warm = name == "tokenizer_loaded_first"
                runs[name].append(await cold_first_search(url, snapshot_dir, BENCH_USER, query, mode, warm=warm))
        figures = {name: median_run(found) for name, found in runs.items()}
    return LatencyFigures(
        backend=backend,
        memories=memories,
        ingest_per_s=round(memories / ingest, 1),
        index_build_s=round(build, 3),
        snapshot_mb=round(size / 1e6, 2),
        queries=len(latencies),
        p50_ms=percentile(latencies, 50),
        p95_ms=percentile(latencies, 95),
        mode=mode,
        cold_first_search_ms=figures,
    )


def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One figure per phase of several cold processes: each number is the median of the runs (a flag is
    true when it was in every run), with ``runs`` and the first search's ``search_ms_range``."""
    if not runs:
        raise ValueError("median_run needs at least one run")
    out: dict[str, Any] = {}
    for key, value in runs[0].items():
        values = [run[key] for run in runs]
        if isinstance(value, bool):
            out[key] = all(values)
        elif isinstance(value, int):
            out[key] = statistics.median_low(values)
        elif isinstance(value, float):
            out[key] = round(float(statistics.median(values)), 1)
        else:
            out[key] = value
    out["runs"] = len(runs)
    out["search_ms_range"] = [min(run["search_ms"] for run in runs), max(run["search_ms"] for run in runs)]
    return out


async def cold_first_search(
    url: str, snapshot_dir: str, user: str, query: str, mode: str, *, warm: bool
) -> dict[str, Any]:
    """Spawn a fresh Python process that opens the system and runs one search; its phases (ms) and the
    wall time from spawn to exit (``process_wall_ms``)."""
    started = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "agent_memory.bench._cold",
        url,
        snapshot_dir,
        user,
        query,
        mode,
        "1" if warm else "0",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    wall = (time.perf_counter() - started) * 1000
    if proc.returncode != 0:
        raise RuntimeError(f"the cold-search process failed: {err.decode(errors='replace')[-2000:]}")
    result: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
    result["process_wall_ms"] = round(wall, 1)
    return result
