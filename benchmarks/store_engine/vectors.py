"""Would bucket terms of the vectors find a query's nearest memories? Random-hyperplane (sign) LSH terms
(``agent_memory.search._vector_terms``) simulated in Python: for every query, its exact nearest memories
by cosine among its user's memories (top 10 / 50 / 200), and the candidates an engine would return: the
top M memories by count of matched query terms (M = 200 / 500 / 1000; ties in memory order; a memory
matching no term is no candidate). Reported: the share of the exact top k among the candidates, and how
many memories match at least one query term (what the engine has to rank).

Vectors are the default embedder's (the packaged use-m3 sentence encoder), of each memory's search text
(``memory_text``) and of each query's text, cached in ``--cache`` (a folder outside the repository).

Run from the repository root, niced::

    nice .venv/bin/python benchmarks/store_engine/vectors.py embed --locomo locomo_dev.json \\
        --memdaily memdaily/ --allusion benchmarks/zh_allusion --synthetic 100000
    nice .venv/bin/python benchmarks/store_engine/vectors.py measure

``measure --schemes 16x4-8-12-16p4m512,32x4-10p8m512`` compares schemes (tables x prefix levels, probes,
most memories per bucket a query asks); without it, the default scheme.
Data sets: each user's own memories; ``pooled``: all memories of a data set as one user's (a larger
collection of real texts); ``synthetic``: one user of the synthetic corpus (its queries).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import numpy.typing as npt

from agent_memory.bench._datasets import load_dataset
from agent_memory.bench._synthetic import synthetic_memories, synthetic_queries
from agent_memory.search import SentenceEncoderEmbedder, memory_text
from agent_memory.search._vector_terms import VectorTermScheme, default_scheme

TOPS = (10, 50, 200)
DEPTHS = (200, 500, 1000)


def _embed(texts: list[str]) -> npt.NDArray[np.float32]:
    return SentenceEncoderEmbedder().encode(texts)


def embed(args: argparse.Namespace) -> None:
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    sources = [("locomo", args.locomo), ("memdaily", args.memdaily), ("generic", args.allusion)]
    for name, path in sources:
        if not path:
            continue
        ds = load_dataset(name, path)
        started = time.perf_counter()
        docs = _embed([memory_text(d.text[:120], d.text) for d in ds.docs])
        queries = _embed([q.text for q in ds.queries])
        users = sorted({d.user_id for d in ds.docs})
        np.savez(
            cache / f"{'allusion' if name == 'generic' else name}.npz",
            docs=docs,
            queries=queries,
            doc_users=np.array([users.index(d.user_id) for d in ds.docs]),
            query_users=np.array([users.index(q.user_id) if q.user_id in users else -1 for q in ds.queries]),
        )
        print(json.dumps({"dataset": name, "docs": len(ds.docs), "seconds": round(time.perf_counter() - started, 1)}))
    if args.synthetic:
        items = list(synthetic_memories(args.synthetic, start=datetime(2026, 1, 1, tzinfo=UTC)))
        started = time.perf_counter()
        docs = _embed([memory_text(m.summary, m.content) for m in items])
        seconds = time.perf_counter() - started
        queries = _embed(synthetic_queries(200))
        np.savez(cache / "synthetic.npz", docs=docs, queries=queries, doc_users=np.zeros(len(docs), dtype=int),
                 query_users=np.zeros(len(queries), dtype=int))  # fmt: skip
        print(json.dumps({"dataset": "synthetic", "docs": len(docs), "seconds": round(seconds, 1)}))


def _counts_by_terms(scheme: VectorTermScheme, docs: npt.NDArray, queries: npt.NDArray, size: int) -> list[npt.NDArray]:
    """Matched-term counts per memory through the real string terms (the check of the fast path)."""
    index: dict[str, list[int]] = {}
    for i, terms in enumerate(scheme.memory_terms_many(docs)):
        for term in terms:
            index.setdefault(term, []).append(i)
    out = []
    for q in queries:
        counts = np.zeros(len(docs), dtype=np.int32)
        for term in scheme.query_terms(q, collection_size=size):
            counts[index.get(term, [])] += 1
        out.append(counts)
    return out


def _counts(buckets: npt.NDArray[np.int64], asked: dict[tuple[int, int], list[int]]) -> npt.NDArray[np.int32]:
    counts = np.zeros(buckets.shape[0], dtype=np.int32)
    for (t, j), values in asked.items():
        counts += np.isin(buckets[:, t, j], values)
    return counts


def measure_set(
    scheme: VectorTermScheme, data: dict[str, npt.NDArray], *, pooled: bool = False, every: int = 1
) -> dict[str, object]:
    docs, queries = data["docs"], data["queries"]
    doc_users = np.zeros(len(docs), dtype=int) if pooled else data["doc_users"]
    query_users = np.zeros(len(queries), dtype=int) if pooled else data["query_users"]
    buckets_all = scheme.buckets(docs)
    found = {(k, m): [0, 0] for k in TOPS for m in DEPTHS}
    matched: list[int] = []
    query_terms: list[int] = []
    checked = False
    for user in np.unique(query_users[query_users >= 0]):
        members = np.flatnonzero(doc_users == user)
        buckets = buckets_all[members]
        for qi in np.flatnonzero(query_users == user):
            if qi % every:
                continue
            q = queries[qi]
            if not np.any(q):
                continue
            cosine = docs[members] @ q
            exact = np.argsort(-cosine, kind="stable")
            asked = scheme.query_buckets(q, collection_size=len(members))
            counts = _counts(buckets, asked)
            if not checked:  # the fast path counts what the engine would, term for term
                assert np.array_equal(counts, _counts_by_terms(scheme, docs[members], q[None, :], len(members))[0])
                checked = True
            query_terms.append(sum(len(set(v)) for v in asked.values()))
            hit = np.flatnonzero(counts)
            matched.append(len(hit))
            ranked = hit[np.argsort(-counts[hit], kind="stable")]
            for m in DEPTHS:
                pool = np.zeros(len(members), dtype=bool)
                pool[ranked[:m]] = True
                for k in TOPS:
                    top = exact[: min(k, len(members))]
                    found[(k, m)][0] += int(pool[top].sum())
                    found[(k, m)][1] += len(top)
    return {
        "recall": {f"top{k}@M{m}": round(a / max(b, 1), 3) for (k, m), (a, b) in found.items()},
        "matched_p50": int(statistics.median(matched)) if matched else 0,
        "matched_p95": int(np.percentile(matched, 95)) if matched else 0,
        "query_terms_p50": int(statistics.median(query_terms)) if query_terms else 0,
        "queries": len(matched),
    }


def parse_scheme(spec: str, dim: int) -> VectorTermScheme:
    """``TxL1-L2-...pPmB``: T tables, prefix levels L1, L2..., P probes, max bucket B (``16x4-8-12-16p4m512``)."""
    match = re.fullmatch(r"(\d+)x([\d-]+)p(\d+)m(\d+)", spec)
    if match is None:
        raise SystemExit(f"a scheme is TxL1-L2pPmB, e.g. 16x4-8-12-16p4m512; not {spec!r}")
    tables, levels, probes, most = match.groups()
    return VectorTermScheme(embedder=SentenceEncoderEmbedder().name, dim=dim, tables=int(tables),
                            levels=tuple(int(b) for b in levels.split("-")), probes=int(probes),
                            max_bucket=int(most))  # fmt: skip


def measure(args: argparse.Namespace) -> None:
    cache = Path(args.cache)
    sets = [s for s in args.sets.split(",") if (cache / f"{s.removesuffix('-pooled')}.npz").exists()]
    loaded = {s: dict(np.load(cache / f"{s.removesuffix('-pooled')}.npz")) for s in sets}
    dim = next(iter(loaded.values()))["docs"].shape[1]
    schemes = [parse_scheme(spec, dim) for spec in args.schemes.split(",")] if args.schemes else []
    schemes = schemes or [default_scheme(SentenceEncoderEmbedder().name, dim)]
    for scheme in schemes:
        for name in sets:
            started = time.perf_counter()
            every = max(1, len(loaded[name]["queries"]) // args.queries) if args.queries else 1
            row = measure_set(scheme, loaded[name], pooled=name.endswith("-pooled"), every=every)
            shape = {"set": name, "tables": scheme.tables, "levels": scheme.levels, "probes": scheme.probes}
            row = {**shape, "max_bucket": scheme.max_bucket, **row, "seconds": round(time.perf_counter() - started, 1)}
            print(json.dumps(row), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", default="/tmp/agent-memory-vector-terms")
    sub = parser.add_subparsers(dest="command", required=True)
    e = sub.add_parser("embed", help="embed the data sets into the cache")
    e.add_argument("--locomo")
    e.add_argument("--memdaily")
    e.add_argument("--allusion")
    e.add_argument("--synthetic", type=int, default=0, help="memories of the synthetic corpus")
    m = sub.add_parser("measure", help="simulate the candidates of bucket terms")
    m.add_argument("--sets", default="locomo,memdaily,allusion,locomo-pooled,memdaily-pooled,synthetic")
    m.add_argument("--queries", type=int, help="about this many queries of each set (evenly spaced)")
    m.add_argument("--schemes", help="schemes to compare (TxL1-L2pPmB, comma-separated) instead of the default")
    args = parser.parse_args()
    embed(args) if args.command == "embed" else measure(args)


if __name__ == "__main__":
    main()
