"""What the store's engine costs at the size of a big user: ``N`` memories of one user from the synthetic
corpus (``agent-memory bench latency``'s), analysed by the project's tokenizer into an SQLite FTS5 table.
Prints the tokenizer's and FTS5's write rates, how many memories a query's terms match (OR), the time of
FTS5's ``bm25`` top K with the user filter, and of reading K rows' terms and 512-dimensional vectors.

    .venv/bin/python benchmarks/store_engine/scale.py --memories 100000
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import tempfile
import time
from datetime import UTC, datetime

from agent_memory.bench._synthetic import synthetic_memories, synthetic_queries
from agent_memory.text import Tokenizer

FTS5_TOKENIZER = "ascii tokenchars '!\"#$%&()*+,-./:;<=>?@[\\]^_`{|}~'"
DIM = 512


def _p95(values: list[float]) -> float:
    return round(sorted(values)[int(len(values) * 0.95)], 2)


def measure(count: int, *, depths: tuple[int, ...] = (200, 500)) -> dict[str, object]:
    tokenizer = Tokenizer()
    texts = [m.content for m in synthetic_memories(count, start=datetime(2026, 1, 1, tzinfo=UTC))]
    started = time.perf_counter()
    terms = [" ".join(tokenizer.tokens(t)) for t in texts]
    tokenize_s = time.perf_counter() - started
    with tempfile.TemporaryDirectory() as folder:
        con = sqlite3.connect(os.path.join(folder, "engine.db"))
        tokenize = FTS5_TOKENIZER.replace("'", "''")
        con.execute(f"CREATE VIRTUAL TABLE t USING fts5(terms, user_id UNINDEXED, tokenize='{tokenize}')")
        con.execute("CREATE TABLE rows (id INTEGER PRIMARY KEY, user_id TEXT, terms TEXT, vector BLOB)")
        started = time.perf_counter()
        with con:
            for i in range(0, count, 500):
                con.executemany("INSERT INTO t (terms, user_id) VALUES (?, 'u1')", [(x,) for x in terms[i : i + 500]])
        insert_s = time.perf_counter() - started
        vector = os.urandom(4 * DIM)
        with con:
            con.executemany(
                "INSERT INTO rows VALUES (?, 'u1', ?, ?)", [(i + 1, x, vector) for i, x in enumerate(terms)]
            )
        report: dict[str, object] = {
            "memories": count,
            "tokenized_per_s": round(count / tokenize_s),
            "fts5_inserted_per_s": round(count / insert_s),
        }
        queries = [q for q in synthetic_queries(200) if tokenizer.tokens(q)]
        matching = []
        for depth in depths:
            engine_ms, read_ms = [], []
            for text in queries:
                match = " OR ".join('"' + x.replace('"', '""') + '"' for x in dict.fromkeys(tokenizer.tokens(text)))
                started = time.perf_counter()
                ids = [r[0] for r in con.execute(
                    "SELECT rowid FROM t WHERE t MATCH ? AND user_id = 'u1' ORDER BY bm25(t) LIMIT ?", (match, depth)
                )]  # fmt: skip
                read = time.perf_counter()
                marks = ",".join("?" * len(ids))
                con.execute(f"SELECT id, terms, vector FROM rows WHERE id IN ({marks})", ids).fetchall()
                engine_ms.append((read - started) * 1000)
                read_ms.append((time.perf_counter() - read) * 1000)
                if depth == depths[0]:
                    matching.append(con.execute("SELECT count(*) FROM t WHERE t MATCH ?", (match,)).fetchone()[0])
            report[f"top_{depth}"] = {
                "fts5_ms_p50": round(statistics.median(engine_ms), 2),
                "fts5_ms_p95": _p95(engine_ms),
                "read_rows_ms_p50": round(statistics.median(read_ms), 2),
            }
        report["matching_p50"] = statistics.median(matching)
        report["matching_p95"] = _p95([float(m) for m in matching])
        con.close()
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=100_000)
    print(json.dumps(measure(parser.parse_args().memories)))


if __name__ == "__main__":
    main()
