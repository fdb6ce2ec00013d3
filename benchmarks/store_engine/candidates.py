"""Would the store's own full-text engine find what the search ranks first? For each query of a data set,
the engine's top 10 (built through ``MemorySystem``, as users get it) against an SQLite FTS5 table of the
same stored search terms and keywords: the share of the top 10 among FTS5's ``bm25`` top K of the query's
expanded terms (OR), and with each of those memories' conversation neighbours (two turns either side)
added, for several K; and the FTS5 query's median time.

Run from the repository root (one SQLite run)::

    .venv/bin/python benchmarks/store_engine/candidates.py locomo /path/to/locomo_dev.json
    .venv/bin/python benchmarks/store_engine/candidates.py memdaily /path/to/memdaily
    .venv/bin/python benchmarks/store_engine/candidates.py generic benchmarks/zh_allusion

What the FTS5 candidates miss is what a search in the store needs besides them: the neighbours' words
(BM25F over a memory and its turns around it), prefix expansions, and the memories found by meaning alone.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import statistics
import time

from agent_memory.bench import temporary_sqlite
from agent_memory.bench._datasets import load_dataset
from agent_memory.bench._retrieval import load_dataset_into
from agent_memory.settings import load_settings
from agent_memory.system import MemorySystem
from data_layer import upgrade

DEPTHS = (50, 100, 200, 500, 100_000)
#: Turns either side of a candidate added as its conversation neighbours.
NEIGHBOURS = 2
#: FTS5 splits the stored terms on spaces only: every ASCII punctuation mark belongs to a term.
FTS5_TOKENIZER = "ascii tokenchars '!\"#$%&()*+,-./:;<=>?@[\\]^_`{|}~'"


def _phrase(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def _fts5(path: str) -> tuple[sqlite3.Connection, dict[str, list[str]]]:
    """An in-memory FTS5 table of every active memory's stored terms and keywords; each user's keys in order."""
    con = sqlite3.connect(path)
    rows = con.execute(
        "SELECT m.user_id, m.memory_key, s.tokens FROM agent_memories m "
        "JOIN agent_memory_search_index s ON s.memory_id = m.id AND s.user_id = m.user_id WHERE m.is_active"
    ).fetchall()
    keywords: dict[tuple[str, str], list[str]] = {}
    for user, key, word in con.execute(
        "SELECT m.user_id, m.memory_key, k.keyword FROM agent_memories m "
        "JOIN agent_memory_keywords k ON k.memory_id = m.id AND k.user_id = m.user_id"
    ):
        keywords.setdefault((user, key), []).append(word)
    fts = sqlite3.connect(":memory:")
    tokenizer = FTS5_TOKENIZER.replace("'", "''")
    fts.execute(f"CREATE VIRTUAL TABLE t USING fts5(user_id UNINDEXED, mkey UNINDEXED, terms, tokenize='{tokenizer}')")
    order: dict[str, list[str]] = {}
    for user, key, tokens in rows:
        fts.execute(
            "INSERT INTO t VALUES (?, ?, ?)", (user, key, f"{tokens} {' '.join(keywords.get((user, key), []))}")
        )
        order.setdefault(user, []).append(key)
    return fts, {user: sorted(keys) for user, keys in order.items()}


async def measure(name: str, path: str, *, queries: int | None) -> dict[str, object]:
    dataset = load_dataset(name, path)
    async with temporary_sqlite() as url:
        await upgrade(url)
        async with MemorySystem.from_settings(load_settings(memory_database_url=url)) as system:
            await load_dataset_into(system.layer, dataset)
            for user in {d.user_id for d in dataset.docs}:
                await system.search.settle(user_id=user)
            fts, order = _fts5(url.split("///", 1)[1])
            place = {user: {k: i for i, k in enumerate(keys)} for user, keys in order.items()}
            found = {k: [0, 0] for k in DEPTHS}
            with_neighbours = {k: [0, 0] for k in DEPTHS}
            timings: list[float] = []
            for query in dataset.queries[:queries]:
                hits = await system.search.search(query.text, user_id=query.user_id, friend_id=query.friend_id,
                                                  limit=10, now=query.now)  # fmt: skip
                top = [h.memory_key for h in hits]
                if not top or not hits.expanded:
                    continue  # a time alone lists by time: no words to give the engine
                match = " OR ".join(_phrase(t) for t in hits.expanded)
                started = time.perf_counter()
                ranked = [r[0] for r in fts.execute(
                    "SELECT mkey FROM t WHERE t MATCH ? AND user_id = ? ORDER BY bm25(t) LIMIT ?",
                    (match, query.user_id, max(DEPTHS)),
                )]  # fmt: skip
                timings.append((time.perf_counter() - started) * 1000)
                keys = order[query.user_id]
                for depth in DEPTHS:
                    pool = set(ranked[:depth])
                    near = set(pool)
                    for key in pool:
                        i = place[query.user_id][key]
                        near.update(keys[max(0, i - NEIGHBOURS) : i + NEIGHBOURS + 1])
                    found[depth][0] += sum(k in pool for k in top)
                    with_neighbours[depth][0] += sum(k in near for k in top)
                    found[depth][1] += len(top)
                    with_neighbours[depth][1] += len(top)
    return {
        "dataset": name,
        "top10_among_fts5_top_k": {k: round(a / max(b, 1), 3) for k, (a, b) in found.items()},
        "with_neighbours": {k: round(a / max(b, 1), 3) for k, (a, b) in with_neighbours.items()},
        "fts5_ms_p50": round(statistics.median(timings), 2) if timings else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset", choices=("locomo", "memdaily", "generic"))
    parser.add_argument("data")
    parser.add_argument("--queries", type=int, default=None, help="the first N queries only")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(measure(args.dataset, args.data, queries=args.queries)), ensure_ascii=False))


if __name__ == "__main__":
    main()
