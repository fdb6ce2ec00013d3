"""Figures of this set by split: all queries, dev (id ends in an even number), test (odd).

Run from the repository root (one sqlite run, about 10 s)::

    .venv/bin/python benchmarks/zh_allusion/measure.py [--mode hybrid|keyword|semantic] [--semantic-share 0.3]
                                                       [--embedder hashing|wordvec-zh|use-m3|openai|minilm]
                                                       [--no-word-neighbours]

It uses the same pieces as ``agent-memory bench retrieval --dataset generic`` (reader, engine run,
in-run BM25 baseline, metrics) and adds what that command does not report for this set: recall@3, the
dev/test split, the expected recall of a random ranking of the docs the query's friend may see, and
what each query lists when searched in another user's memories (``other_users_memories``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
from pathlib import Path

from agent_memory.bench import (
    BenchDataset,
    bench_system,
    bm25_baseline,
    engine_label,
    engine_settings,
    load_dataset,
    load_dataset_into,
    metrics,
    run_engine,
    temporary_sqlite,
)
from agent_memory.search import EMBEDDERS, is_search_mode
from agent_memory.settings import AgentMemorySettings
from data_layer import upgrade

KS = (3, 5, 10)
KEEP = ("recall@3", "recall@5", "recall@10", "ndcg@10", "mrr")
SPLITS = {"all": lambda n: True, "dev": lambda n: n % 2 == 0, "test": lambda n: n % 2 == 1}


async def other_users(ds: BenchDataset, url: str, settings: AgentMemorySettings) -> dict[str, int | float]:
    """Each query searched in the next user's memories, where nothing is about it: how many searches
    list anything, how many memories on average, and how many list one at the recall's 0.5 or more."""
    await upgrade(url)
    async with bench_system(url, settings) as system:
        engine = system.search
        await load_dataset_into(system.layer, ds)
        users = sorted({d.user_id for d in ds.docs})
        for user in users:
            await engine.settle(user_id=user)
        listed = []
        for q in ds.queries:
            other = users[(users.index(q.user_id) + 1) % len(users)]
            listed.append([h.score for h in await engine.search(q.text, user_id=other, now=q.now, limit=10)])
    return {
        "searches": len(listed),
        "listing_any": sum(bool(x) for x in listed),
        "mean_listed": round(sum(map(len, listed)) / len(listed), 2),
        "listing_one_at_0.5": sum(any(v >= 0.5 for v in x) for x in listed),
    }


def _number(query_id: str) -> int:
    found = re.search(r"(\d+)$", query_id)
    if found is None:
        raise ValueError(f"query id {query_id!r} ends in no number")
    return int(found.group(1))


async def main(mode: str, share: float | None, embedder: str, neighbours: bool) -> None:
    if not is_search_mode(mode):
        raise SystemExit(f"unknown search mode {mode!r}")
    ds = load_dataset("generic", Path(__file__).parent)
    base = bm25_baseline(ds, 10)
    async with temporary_sqlite() as url:
        run = await run_engine(
            ds,
            url,
            mode=mode,
            depth=10,
            settings=engine_settings(url, embedder=embedder, semantic_share=share, word_neighbours=neighbours),
        )
    engine = run.engine
    out: dict[str, object] = {
        "mode": mode,
        "semantic_share": engine.semantic_share,
        "embedder": engine_label(engine),
        "word_neighbours": engine.word_neighbours,
        "documents": len(ds.docs),
    }
    out["queries_without_hits"] = sum(not r for r in run.ranked)
    for name, pick in SPLITS.items():
        idx = [i for i, q in enumerate(ds.queries) if pick(_number(q.id))]
        qs = [ds.queries[i] for i in idx]
        ours = metrics([run.ranked[i] for i in idx], qs, KS)
        bm25 = metrics([base[i] for i in idx], qs, KS)
        rand = {}
        for k in KS:
            seen = [sum(d.user_id == q.user_id and d.friend_id == q.friend_id for d in ds.docs) for q in qs]
            rand[f"recall@{k}"] = round(sum(min(k, n) / n for n in seen) / len(seen), 4)
        out[name] = {
            "queries": len(qs),
            **{k: ours[k] for k in KEEP},
            "bm25": {k: bm25[k] for k in KEEP},
            "random_in_friend_scope": rand,
        }
    async with temporary_sqlite() as url:
        out["other_users_memories"] = await other_users(
            ds, url, engine_settings(url, embedder=embedder, semantic_share=share, word_neighbours=neighbours)
        )
    print(json.dumps(out, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", default="hybrid", choices=("hybrid", "keyword", "semantic"))
    parser.add_argument("--semantic-share", type=float, default=None)
    parser.add_argument("--embedder", default="auto", choices=EMBEDDERS)
    parser.add_argument("--no-word-neighbours", dest="neighbours", action="store_false")
    args = parser.parse_args()
    asyncio.run(main(args.mode, args.semantic_share, args.embedder, args.neighbours))
