"""Benchmarks: ingest throughput, retrieval quality against BM25, search latency, concurrent writers,
keyword extraction time.

Run them with ``agent-memory bench ...``; each prints one
JSON object. Every benchmark measures the memory system a user's settings build
(:func:`bench_system`, through ``MemorySystem.build``).

The names load on first use: the ``agent-memory`` command imports :func:`bench_app` (typer only), and
``agent-memory --help`` must not load the search, SQLAlchemy or bm25s.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._commands import bench_app
    from ._datasets import BenchDataset, BenchDoc, BenchQuery, load_dataset
    from ._ingest import CORPORA, IngestFigures, bench_ingest
    from ._latency import LatencyFigures, bench_latency
    from ._retrieval import EngineRun, bm25_baseline, load_dataset_into, metrics, report, run_engine, top_k_agreement
    from ._synthetic import synthetic_memories, synthetic_queries, varied_memories
    from ._system import bench_settings, bench_system, engine_label, engine_settings
    from ._tempdb import DEFAULT_PG_ADMIN_URL, temporary_postgres, temporary_sqlite
    from ._writers import WriterFigures, bench_writers

_LAZY = {
    "bench_app": "_commands",
    **dict.fromkeys(("BenchDataset", "BenchDoc", "BenchQuery", "load_dataset"), "_datasets"),
    **dict.fromkeys(("CORPORA", "IngestFigures", "bench_ingest"), "_ingest"),
    **dict.fromkeys(("LatencyFigures", "bench_latency"), "_latency"),
    **dict.fromkeys(
        ("EngineRun", "bm25_baseline", "load_dataset_into", "metrics", "report", "run_engine", "top_k_agreement"),
        "_retrieval",
    ),
    **dict.fromkeys(("synthetic_memories", "synthetic_queries", "varied_memories"), "_synthetic"),
    **dict.fromkeys(("bench_settings", "bench_system", "engine_label", "engine_settings"), "_system"),
    **dict.fromkeys(("DEFAULT_PG_ADMIN_URL", "temporary_postgres", "temporary_sqlite"), "_tempdb"),
    **dict.fromkeys(("WriterFigures", "bench_writers"), "_writers"),
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'agent_memory.bench' has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "CORPORA",
    "DEFAULT_PG_ADMIN_URL",
    "BenchDataset",
    "BenchDoc",
    "BenchQuery",
    "EngineRun",
    "IngestFigures",
    "LatencyFigures",
    "WriterFigures",
    "bench_app",
    "bench_ingest",
    "bench_latency",
    "bench_settings",
    "bench_system",
    "bench_writers",
    "bm25_baseline",
    "engine_label",
    "engine_settings",
    "load_dataset",
    "load_dataset_into",
    "metrics",
    "report",
    "run_engine",
    "synthetic_memories",
    "synthetic_queries",
    "temporary_postgres",
    "temporary_sqlite",
    "top_k_agreement",
    "varied_memories",
]
