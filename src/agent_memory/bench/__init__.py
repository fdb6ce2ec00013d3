"""Benchmarks: ingest throughput now; retrieval quality, latency, recall and the archive later.

Run them with ``agent-memory bench ...`` or ``python -m agent_memory.bench ...``; each prints one
JSON object.
"""

from ._ingest import IngestFigures, bench_ingest
from ._synthetic import synthetic_memories, synthetic_queries
from ._tempdb import DEFAULT_PG_ADMIN_URL, temporary_postgres, temporary_sqlite

__all__ = [
    "DEFAULT_PG_ADMIN_URL",
    "IngestFigures",
    "bench_ingest",
    "synthetic_memories",
    "synthetic_queries",
    "temporary_postgres",
    "temporary_sqlite",
]
