"""End to end: conversations enter as chat messages, the archiver forms memories, the evidence recall
answers each question; a hit is the evidence message itself or a memory whose sources include it.

Every conversation (LoCoMo) or trajectory (MemDaily) is one user chatting with one AI friend. Its
messages are stored through the normal saving path with their own timestamps (LoCoMo: the first
speaker is the user, the other the assistant; MemDaily: every message is the user's). The archiver
then runs offline as it would after the chats, and each question goes to the evidence recall
(memory search + lexical and semantic search over the messages + neighbours), whose ranked hits are
scored against the gold evidence ids. The in-run baseline is BM25 over the turns.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from data_layer import NewMessage

from ..evidence import RankedHit
from ._datasets import BenchDataset, BenchQuery
from ._retrieval import percentile
from ._system import bench_settings, bench_system

FRIEND = "bench-friend"


@dataclass(frozen=True, slots=True)
class E2ERun:
    """Hit sets per query (each hit: the gold-comparable ids it covers) and the timings."""

    hits: list[list[frozenset[str]]]
    recall_ms: list[float]
    archive_s: float
    profiles: int
    gists: int
    messages: int


def _role(doc_text: str, first_speaker: dict[str, str], user: str) -> Literal["user", "assistant"]:
    speaker = doc_text.split(":", 1)[0]
    first = first_speaker.setdefault(user, speaker)
    return "user" if speaker == first else "assistant"


async def run_e2e(dataset: BenchDataset, url: str) -> E2ERun:
    """Store, archive and recall ``dataset`` in the database at ``url`` (migrated here)."""
    async with bench_system(url, bench_settings(url, memory_sessions_enabled=False)) as system:
        await system.ensure_schema()
        first_speaker: dict[str, str] = {}
        by_user: dict[str, list[NewMessage]] = {}
        doc_of: dict[tuple[str, int], str] = {}
        for doc in dataset.docs:
            role: Literal["user", "assistant"] = (
                "user" if dataset.name != "locomo" else _role(doc.text, first_speaker, doc.user_id)
            )
            by_user.setdefault(doc.user_id, []).append(
                NewMessage(role=role, content=doc.text, friend_id=FRIEND, created_at=doc.created_at)
            )
        ids_by_user: dict[str, list[str]] = {}
        for doc in dataset.docs:
            ids_by_user.setdefault(doc.user_id, []).append(doc.id)
        for user, messages in by_user.items():
            stored = await system.layer.messages.append_many(user_id=user, messages=messages)
            for record, doc_id in zip(stored, ids_by_user[user], strict=True):
                doc_of[(user, record.id)] = doc_id
        started = time.perf_counter()
        profiles = gists = 0
        for user in by_user:
            report = await system.session_archiver.run(user_id=user, friend_id=FRIEND, end_open=True)
            profiles += report.profiles
            gists += report.gists
        archive_s = time.perf_counter() - started
        hits, latencies = [], []
        for query in dataset.queries:
            t0 = time.perf_counter()
            run = await system.evidence_agent(system.scope(query.user_id, FRIEND)).recall(query.text, now=query.now)
            latencies.append((time.perf_counter() - t0) * 1000)
            hits.append([_ids(hit, query, doc_of) for hit in run.ranked])
    return E2ERun(hits, latencies, archive_s, profiles, gists, sum(len(v) for v in by_user.values()))


def _ids(hit: RankedHit, query: BenchQuery, doc_of: dict[tuple[str, int], str]) -> frozenset[str]:
    return frozenset(doc_of[(query.user_id, i)] for i in hit.message_ids if (query.user_id, i) in doc_of)


def hit_metrics(
    hits: Sequence[Sequence[frozenset[str]]], queries: Sequence[BenchQuery], ks: Sequence[int]
) -> dict[str, float]:
    """recall@k: the share of a query's gold ids covered by its top-k hits, averaged."""
    out: dict[str, list[float]] = {}
    for ranked, query in zip(hits, queries, strict=True):
        for k in ks:
            covered = set().union(*ranked[:k]) if ranked[:k] else set()
            got = len(covered & query.gold.keys())
            out.setdefault(f"recall@{k}", []).append(got / len(query.gold))
            out.setdefault(f"recall_all@{k}", []).append(1.0 if got == len(query.gold) else 0.0)
    return {name: round(statistics.fmean(values), 4) for name, values in out.items()}


def e2e_report(dataset: BenchDataset, run: E2ERun, baseline: list[list[str]]) -> dict[str, Any]:
    """The benchmarks' JSON shape (figures, the baseline's, their ratio), plus what the archiver formed and its time."""
    ours = hit_metrics(run.hits, dataset.queries, dataset.ks)
    base = hit_metrics([[frozenset([d]) for d in ids] for ids in baseline], dataset.queries, dataset.ks)
    return {
        "dataset": dataset.name,
        "mode": "e2e-evidence-offline",
        "queries": len(dataset.queries),
        **ours,
        "baseline": {"name": "bm25", **base},
        "ratio": {k: round(ours[k] / base[k], 3) if base[k] else None for k in ours},
        "latency_ms": {"p50": percentile(run.recall_ms, 50), "p95": percentile(run.recall_ms, 95)},
        "messages": run.messages,
        "profiles_formed": run.profiles,
        "gists_formed": run.gists,
        "archive_s": round(run.archive_s, 2),
    }
