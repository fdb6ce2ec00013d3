"""The memory engine's reads at the size of a big user: ``N`` synthetic memories of one user (the latency
benchmark's corpus, ten to a conversation session) written through ``add_many`` with the library's
analyzer, then timed: ``memory_candidates`` of each synthetic query's 8 rarest held terms at limit 200,
``memory_rows`` of 1,000 ids, ``memory_session_rows`` of 20 ids, ``memory_term_frequencies`` of 5,000
terms, ``memory_collection``. Prints JSON per backend.

    nice .venv/bin/python benchmarks/store_engine/memory_reads.py --memories 100000 --backend both
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg

from agent_memory.bench._synthetic import synthetic_memories, synthetic_queries
from agent_memory.search import SearchAnalyzer
from data_layer import AgentFusionDataLayer, upgrade

USER = "bench-user"
BATCH = 500


def _p(values: list[float], q: float) -> float:
    return round(sorted(values)[min(len(values) - 1, int(len(values) * q))], 2)


async def _timed(fn: Callable[[], Awaitable[Any]], rounds: int) -> dict[str, float]:
    took = []
    for _ in range(rounds):
        started = time.perf_counter()
        await fn()
        took.append((time.perf_counter() - started) * 1000)
    return {"p50_ms": round(statistics.median(took), 2), "p95_ms": _p(took, 0.95)}


async def measure(url: str, count: int) -> dict[str, Any]:
    await upgrade(url)
    analyzer = SearchAnalyzer()
    report: dict[str, Any] = {"memories": count}
    async with AgentFusionDataLayer(url) as layer:
        layer.memory.set_analyzer(analyzer)
        items = [
            replace(m, metadata={"session_id": f"s{i // 10}"})
            for i, m in enumerate(synthetic_memories(count, start=datetime(2026, 1, 1, tzinfo=UTC)))
        ]
        started = time.perf_counter()
        for i in range(0, count, BATCH):
            await layer.memory.add_many(user_id=USER, memories=items[i : i + BATCH])
        report["add_many_per_s"] = round(count / (time.perf_counter() - started))
        ids: list[uuid.UUID] = [r.id for r in await layer.memory.index_rows(user_id=USER, active_only=True)]
        queries = []
        for text in synthetic_queries(200):
            terms = list(dict.fromkeys(analyzer.tokenizer.unique_tokens(text)))
            df = await layer.memory.memory_term_frequencies(user_id=USER, terms=terms)
            held = sorted((n, t) for t, n in df.items())
            if held:
                queries.append([t for _, t in held[:8]])
        matched = []
        took = []
        for terms in queries:
            started = time.perf_counter()
            found = await layer.memory.memory_candidates(user_id=USER, terms=terms, limit=200)
            took.append((time.perf_counter() - started) * 1000)
            matched.append(len(found))
        report["candidates_limit_200"] = {
            "queries": len(queries),
            "p50_ms": round(statistics.median(took), 2),
            "p95_ms": _p(took, 0.95),
            "returned_p50": statistics.median(matched),
        }
        rng = random.Random(1)
        report["rows_1000"] = await _timed(
            lambda: layer.memory.memory_rows(user_id=USER, ids=rng.sample(ids, 1000)), 20
        )
        report["session_rows_of_20_ids"] = await _timed(
            lambda: layer.memory.memory_session_rows(user_id=USER, ids=rng.sample(ids, 20)), 20
        )
        async with layer.db.read() as session:
            from sqlalchemy import text

            vocabulary = [
                r[0]
                for r in await session.execute(
                    text("SELECT term FROM memory_term_statistics WHERE user_id = :u"), {"u": USER}
                )
            ]
        report["vocabulary"] = len(vocabulary)
        asked = (rng.sample(vocabulary, min(4000, len(vocabulary))) + [f"absent{i}" for i in range(1000)])[:5000]
        report["term_frequencies_5000"] = await _timed(
            lambda: layer.memory.memory_term_frequencies(user_id=USER, terms=asked), 20
        )
        report["collection"] = await _timed(lambda: layer.memory.memory_collection(user_id=USER), 50)
    return report


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--backend", choices=["sqlite", "postgresql", "both"], default="both")
    parser.add_argument("--pg-admin", default="postgresql://postgres@127.0.0.1:5432/postgres")
    args = parser.parse_args()
    out: dict[str, Any] = {}
    if args.backend in ("sqlite", "both"):
        with tempfile.TemporaryDirectory() as folder:
            out["sqlite"] = await measure(f"sqlite+aiosqlite:///{Path(folder) / 'bench.db'}", args.memories)
    if args.backend in ("postgresql", "both"):
        name = f"afm_bench_reads_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(args.pg_admin, autocommit=True) as admin:
            admin.execute(f"CREATE DATABASE {name}")
        try:
            base = args.pg_admin.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://")
            out["postgresql"] = await measure(f"{base}/{name}", args.memories)
        finally:
            with psycopg.connect(args.pg_admin, autocommit=True) as admin:
                admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    print(json.dumps(out, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    asyncio.run(main())
