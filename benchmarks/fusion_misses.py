"""Where a hybrid search with a sentence encoder misses, per data set: the gold outside the cut, by
what ranks it in the top 50 (the words alone, the encoder alone, both, neither), and the queries where
the meaning took part in the order (the words supported no memory) beside those where the words decided.

Run from the repository root (sqlite; LoCoMo about a minute, MemDaily a few)::

    .venv/bin/python benchmarks/fusion_misses.py --dataset locomo --data locomo_dev.json --k 10
    .venv/bin/python benchmarks/fusion_misses.py --dataset memdaily --data memdaily/ --k 3 --capped
    .venv/bin/python benchmarks/fusion_misses.py --dataset generic --data benchmarks/zh_allusion --k 5

"words" is the same search with the meaning's share at 0 (the encoder's vectors stored, never used),
ranked 50 deep like the encoder,
"encoder" is semantic mode, "fused" the default hybrid search; figures by half too (even and odd
query positions), and the better of words and encoder per query (a fusion beats it only where a query
has gold that each of the two ranks and the other does not).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
from collections import Counter
from collections.abc import Sequence

from agent_memory.bench import (
    BenchQuery,
    bench_settings,
    bench_system,
    load_dataset,
    load_dataset_into,
    temporary_sqlite,
)
from agent_memory.search import HybridMemorySearch, SearchMode, _pipeline
from data_layer import upgrade

DEEP = 50


def _recall(ids: Sequence[str], gold: set[str], k: int, capped: bool) -> float:
    return len(set(ids[:k]) & gold) / (min(k, len(gold)) if capped else len(gold))


def _place(ids: Sequence[str], doc: str, k: int) -> str:
    if doc not in ids:
        return f">{DEEP}"
    return f"<={k}" if ids.index(doc) < k else f"<={DEEP}"


async def _ids(
    engine: HybridMemorySearch, q: BenchQuery, key_to_doc: dict[tuple[str, str], str], mode: SearchMode, limit: int
) -> list[str]:
    hits = await engine.search(q.text, user_id=q.user_id, friend_id=q.friend_id, now=q.now, mode=mode, limit=limit)
    return [key_to_doc[(q.user_id, h.memory_key)] for h in hits]


async def main(dataset: str, data: str, k: int, capped: bool) -> None:
    ds = load_dataset(dataset, data)
    fused_on: list[bool] = []
    real = _pipeline.fuse_ranks

    def spy(words: Sequence[int], meaning: Sequence[int]) -> list[int]:
        fused_on[-1] = True
        return real(words, meaning)

    _pipeline.fuse_ranks = spy  # type: ignore[assignment]
    rows = []
    async with temporary_sqlite() as url:
        await upgrade(url)
        # the engine a user of the sentence encoder gets, with its default semantic share
        async with bench_system(url, bench_settings(url, memory_search_embedder="use-m3")) as system:
            engine = system.search
            share = engine.semantic_share
            key_to_doc, _ = await load_dataset_into(system.layer, ds)
            for user in {d.user_id for d in ds.docs}:
                await engine.settle(user_id=user)
            for q in ds.queries:
                engine.semantic_share = share
                fused_on.append(False)
                fused = await _ids(engine, q, key_to_doc, "hybrid", max(k, 10))
                encoder = await _ids(engine, q, key_to_doc, "semantic", DEEP)
                engine.semantic_share = 0.0
                words = await _ids(engine, q, key_to_doc, "hybrid", DEEP)
                rows.append((set(q.gold), fused, words, encoder, fused_on[-1]))
    out: dict[str, object] = {"dataset": dataset, "k": k, "capped": capped, "queries": len(rows)}
    for name, col in (("fused", 1), ("words", 2), ("encoder", 3)):
        for half, pick in (("all", None), ("even", 0), ("odd", 1)):
            sel = [r for i, r in enumerate(rows) if pick is None or i % 2 == pick]
            out[f"{name}_{half}"] = round(statistics.fmean(_recall(r[col], r[0], k, capped) for r in sel), 4)
    out["best_of_words_and_encoder_per_query"] = round(
        statistics.fmean(max(_recall(r[2], r[0], k, capped), _recall(r[3], r[0], k, capped)) for r in rows), 4
    )
    for label, on in (("meaning_took_part", True), ("words_decided", False)):
        sel = [r for r in rows if r[4] is on]
        out[label] = {"queries": len(sel)} | {
            name: round(statistics.fmean(_recall(r[col], r[0], k, capped) for r in sel), 4) if sel else None
            for name, col in (("fused", 1), ("words", 2), ("encoder", 3))
        }
    misses: Counter[str] = Counter()
    for gold, fused, words, encoder, on in rows:
        for doc in gold - set(fused[:k]):
            where = f"words {_place(words, doc, k)}, encoder {_place(encoder, doc, k)}"
            misses[f"{where}, {'meaning took part' if on else 'words decided'}"] += 1
    out["gold_outside_the_cut"] = dict(misses.most_common())
    print(json.dumps(out, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", required=True, choices=("locomo", "memdaily", "generic"))
    parser.add_argument("--data", required=True)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--capped", action="store_true")
    args = parser.parse_args()
    asyncio.run(main(args.dataset, args.data, args.k, args.capped))
