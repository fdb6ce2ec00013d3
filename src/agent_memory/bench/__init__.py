"""Benchmarks: ingest throughput, retrieval quality against BM25, search latency, concurrent writers,
keyword extraction time.

Run them with ``agent-memory bench ...`` or ``python -m agent_memory.bench ...``; each prints one
JSON object.
"""

from ._datasets import BenchDataset, BenchDoc, BenchQuery, load_dataset
from ._ingest import IngestFigures, bench_ingest
from ._latency import LatencyFigures, bench_latency
from ._retrieval import EngineRun, bm25_baseline, metrics, report, run_engine, top_k_agreement
from ._synthetic import synthetic_memories, synthetic_queries
from ._tempdb import DEFAULT_PG_ADMIN_URL, temporary_postgres, temporary_sqlite
from ._writers import WriterFigures, bench_writers

__all__ = [
    "DEFAULT_PG_ADMIN_URL",
    "BenchDataset",
    "BenchDoc",
    "BenchQuery",
    "EngineRun",
    "IngestFigures",
    "LatencyFigures",
    "WriterFigures",
    "bench_ingest",
    "bench_latency",
    "bench_writers",
    "bm25_baseline",
    "load_dataset",
    "metrics",
    "report",
    "run_engine",
    "synthetic_memories",
    "synthetic_queries",
    "temporary_postgres",
    "temporary_sqlite",
    "top_k_agreement",
]
