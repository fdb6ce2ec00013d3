"""Retrieval quality: the library's search against a BM25 baseline on the same documents, one run.

The documents go through the real write path (``add_many`` with the search analyzer) into a fresh
database; queries go through the search engine of the memory system the settings build
(:func:`~agent_memory.bench._system.bench_system`). The baseline is ``bm25s`` (Lucene BM25,
k1=1.5, b=0.75) over jieba search-mode tokens, lower-cased, English stop words removed (the
baseline docs/benchmarks.md reports beside each figure).
"""

from __future__ import annotations

import math
import re
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass

import bm25s
import jieba
import numpy as np

from data_layer import AgentFusionDataLayer, NewMemory, upgrade

from ..search import SearchMode
from ..settings import AgentMemorySettings
from ..system import EngineDescription, describe_engine
from ..text import ENGLISH_STOP_WORDS, ensure_jieba
from ._datasets import BenchDataset, BenchQuery
from ._system import bench_settings, bench_system

_WORD = re.compile(r"\w+")


def baseline_tokens(text: str) -> list[str]:
    """The baseline's analysis: jieba search mode, lower case, no English stop words, words only."""
    ensure_jieba()
    return [
        w
        for w in (t.strip().lower() for t in jieba.lcut_for_search(text))
        if w and _WORD.fullmatch(w) and w not in ENGLISH_STOP_WORDS
    ]


def metrics(ranked: Sequence[Sequence[str]], queries: Sequence[BenchQuery], ks: Sequence[int]) -> dict[str, float]:
    """recall@k, recall_all@k (every gold doc in the top k), recall_capped@k, nDCG@10 and MRR, averaged
    over queries.

    ``recall_capped@k`` divides by ``min(k, |gold|)`` instead of ``|gold|`` (BEIR's capped recall): a
    question with eight gold messages can reach at most 3/8 recall@3, so on MemDaily, where many
    questions have four or eight, a perfect ranking scores about 0.85 recall@3 but 1.0 capped.
    """
    out: dict[str, list[float]] = {}
    for ids, q in zip(ranked, queries, strict=True):
        gold = q.gold
        for k in ks:
            got = len(set(ids[:k]) & gold.keys())
            out.setdefault(f"recall@{k}", []).append(got / len(gold))
            out.setdefault(f"recall_all@{k}", []).append(1.0 if got == len(gold) else 0.0)
            out.setdefault(f"recall_capped@{k}", []).append(got / min(k, len(gold)))
        dcg = sum(gold.get(d, 0.0) / math.log2(i + 2) for i, d in enumerate(ids[:10]))
        ideal = sum(g / math.log2(i + 2) for i, g in enumerate(sorted(gold.values(), reverse=True)[:10]))
        out.setdefault("ndcg@10", []).append(dcg / ideal if ideal else 0.0)
        first = next((i for i, d in enumerate(ids) if d in gold), None)
        out.setdefault("mrr", []).append(0.0 if first is None else 1.0 / (first + 1))
    return {name: round(statistics.fmean(values), 4) for name, values in out.items()}


def bm25_baseline(dataset: BenchDataset, depth: int) -> list[list[str]]:
    """Top ``depth`` doc ids per query from the BM25 baseline (ties: document order; no zero scores),
    among the docs the query's AI friend may see (its own and those without a friend)."""
    by_user: dict[str, list[int]] = {}
    for i, doc in enumerate(dataset.docs):
        by_user.setdefault(doc.user_id, []).append(i)
    ranked: dict[str, list[str]] = {}
    for user, doc_ids in by_user.items():
        retriever = bm25s.BM25(method="lucene", k1=1.5, b=0.75)
        retriever.index([baseline_tokens(dataset.docs[i].text) for i in doc_ids], show_progress=False)
        for q in (q for q in dataset.queries if q.user_id == user):
            tokens = baseline_tokens(q.text)
            scores = retriever.get_scores(tokens) if tokens else np.zeros(len(doc_ids))
            # the baseline ranks what the search may return: a doc told to another AI friend is out
            visible = [q.friend_id is None or dataset.docs[i].friend_id in (None, q.friend_id) for i in doc_ids]
            order = sorted(
                (j for j in range(len(doc_ids)) if scores[j] > 0 and visible[j]), key=lambda j: (-scores[j], j)
            )
            ranked[q.id] = [dataset.docs[doc_ids[j]].id for j in order[:depth]]
    return [ranked.get(q.id, []) for q in dataset.queries]


@dataclass(frozen=True, slots=True)
class EngineRun:
    """The engine's ranked doc ids per query, search latencies and ingest time on one backend, and what
    the engine was built with (``engine``: its embedder, semantic share, word neighbours in effect)."""

    backend: str
    ranked: list[list[str]]
    latencies_ms: list[float]
    ingest_s: float
    engine: EngineDescription

    @property
    def word_neighbours(self) -> bool:
        """Whether query words were expanded with their neighbours in the word vectors."""
        return self.engine.word_neighbours


async def load_dataset_into(
    layer: AgentFusionDataLayer, dataset: BenchDataset
) -> tuple[dict[tuple[str, str], str], float]:
    """Write the dataset's docs through the analysing write path (one user per scope); returns
    ``{(user, memory_key): doc id}`` and the seconds it took."""
    key_to_doc: dict[tuple[str, str], str] = {}
    by_user: dict[str, list[NewMemory]] = {}
    for i, doc in enumerate(dataset.docs):
        key = f"d{i:07d}"
        key_to_doc[(doc.user_id, key)] = doc.id
        by_user.setdefault(doc.user_id, []).append(
            NewMemory(
                memory_key=key,
                content=doc.text,
                summary=doc.text[:120],
                friend_id=doc.friend_id,
                metadata={"doc_id": doc.id, **doc.metadata},
                created_at=doc.created_at,
            )
        )
    started = time.perf_counter()
    for user, items in by_user.items():
        for i in range(0, len(items), 500):
            await layer.memory.add_many(user_id=user, memories=items[i : i + 500])
    return key_to_doc, time.perf_counter() - started


async def run_engine(
    dataset: BenchDataset,
    url: str,
    *,
    mode: SearchMode,
    depth: int,
    settings: AgentMemorySettings | None = None,
) -> EngineRun:
    """Load the dataset into ``url`` through the write path and run every query through the engine of
    the memory system ``settings`` build (default: :func:`bench_settings`, the library's)."""
    await upgrade(url)
    async with bench_system(url, settings if settings is not None else bench_settings(url)) as system:
        layer, engine = system.layer, system.search
        key_to_doc, ingest_s = await load_dataset_into(layer, dataset)
        for user in {d.user_id for d in dataset.docs}:
            await engine.settle(user_id=user)  # with the vectors a bulk write leaves to the background
        ranked, latencies = [], []
        for q in dataset.queries:
            t0 = time.perf_counter()
            hits = await engine.search(
                q.text, user_id=q.user_id, friend_id=q.friend_id, mode=mode, limit=depth, now=q.now
            )
            latencies.append((time.perf_counter() - t0) * 1000)
            ranked.append([key_to_doc[(q.user_id, h.memory_key)] for h in hits])
        return EngineRun(layer.backend, ranked, latencies, ingest_s, describe_engine(engine))


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100), linear interpolation."""
    return round(float(np.percentile(np.asarray(values), q)), 3) if values else 0.0


def spread(values: Sequence[float]) -> dict[str, float]:
    """Median, 95th percentile and largest of ``values`` (milliseconds in the reports; 0 when empty)."""
    return {"p50": percentile(values, 50), "p95": percentile(values, 95), "max": round(max(values, default=0.0), 3)}


def report(dataset: BenchDataset, mode: str, run: EngineRun, baseline: list[list[str]]) -> dict[str, object]:
    """The benchmarks' JSON object: figures, the baseline's, their ratio and latency."""
    ours = metrics(run.ranked, dataset.queries, dataset.ks)
    base = metrics(baseline, dataset.queries, dataset.ks)
    result: dict[str, object] = {"dataset": dataset.name, "mode": mode, "backend": run.backend}
    result["queries"] = len(dataset.queries)
    result["documents"] = len(dataset.docs)
    result.update(ours)
    result["baseline"] = {"name": "bm25", **base}
    result["ratio"] = {name: round(ours[name] / base[name], 3) if base[name] else None for name in ours}
    result["latency_ms"] = {"p50": percentile(run.latencies_ms, 50), "p95": percentile(run.latencies_ms, 95)}
    result["ingest_docs_per_s"] = round(len(dataset.docs) / run.ingest_s, 1) if run.ingest_s else None
    return result


def top_k_agreement(a: EngineRun, b: EngineRun, k: int = 5) -> dict[str, object]:
    """How many queries got the same top ``k`` (same ids, same order) on two backends."""
    differ = [i for i, (x, y) in enumerate(zip(a.ranked, b.ranked, strict=True)) if x[:k] != y[:k]]
    return {"k": k, "queries": len(a.ranked), "identical": len(a.ranked) - len(differ), "differing": differ[:20]}
