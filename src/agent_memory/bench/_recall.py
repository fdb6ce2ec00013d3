"""Recall quality and latency: the full offline recall (MemRecallAgent through AutoGen's
AssistantAgent and the memory tools) against the search engine alone and BM25, in one run."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime

from data_layer import AgentFusionDataLayer, Scope, upgrade

from ..recall import MemRecallAgent
from ..search import Embedder, HybridMemorySearch
from ._datasets import BenchDataset
from ._retrieval import load_dataset_into, metrics, percentile
from ._synthetic import synthetic_memories, synthetic_queries


@dataclass(frozen=True, slots=True)
class RecallRun:
    """Ranked doc ids per query from the recall (handoff keys, then the other results) and from the
    engine's own top results, with per-query latencies."""

    recall_ranked: list[list[str]]
    engine_ranked: list[list[str]]
    recall_ms: list[float]
    engine_ms: list[float]
    handoffs: int


async def run_recall(
    dataset: BenchDataset, url: str, *, depth: int = 10, embedder: Embedder | None = None, semantic_share: float = 0.0
) -> RecallRun:
    """Load the dataset into ``url``; for every query run the recall agent and the engine (``embedder`` and
    ``semantic_share`` as the composition root would pass them from the settings)."""
    await upgrade(url)
    async with AgentFusionDataLayer(url) as layer:
        engine = HybridMemorySearch(layer.memory, embedder=embedder, semantic_share=semantic_share)
        layer.memory.set_analyzer(engine.analyzer)  # what the composition root does
        key_to_doc, _ = await load_dataset_into(layer, dataset)
        for user in {d.user_id for d in dataset.docs}:
            await engine.refresh(user_id=user)
        recall_ranked, engine_ranked, recall_ms, engine_ms, handoffs = [], [], [], [], 0
        for q in dataset.queries:
            agent = MemRecallAgent(engine, scope=Scope.of(q.user_id, q.friend_id), now=q.now)
            t0 = time.perf_counter()
            result = await agent.recall([*((m["role"], m["content"]) for m in q.context), ("user", q.text)])
            recall_ms.append((time.perf_counter() - t0) * 1000)
            handoffs += result.handoff is not None
            recall_ranked.append([key_to_doc[(q.user_id, k)] for k in result.ranked_keys[:depth]])
            t0 = time.perf_counter()
            hits = await engine.search(q.text, user_id=q.user_id, friend_id=q.friend_id, limit=depth, now=q.now)
            engine_ms.append((time.perf_counter() - t0) * 1000)
            engine_ranked.append([key_to_doc[(q.user_id, h.memory_key)] for h in hits])
    return RecallRun(recall_ranked, engine_ranked, recall_ms, engine_ms, handoffs)


async def recall_latency(url: str, *, memories: int, queries: int = 100) -> dict[str, float]:
    """p50/p95 of one full recall over ``memories`` synthetic memories of one user (warm index)."""
    await upgrade(url)
    items = list(synthetic_memories(memories, start=datetime(2026, 1, 1, tzinfo=UTC)))
    async with AgentFusionDataLayer(url) as layer:
        engine = HybridMemorySearch(layer.memory)
        layer.memory.set_analyzer(engine.analyzer)  # what the composition root does
        for i in range(0, len(items), 500):
            await layer.memory.add_many(user_id="bench-user", memories=items[i : i + 500])
        await engine.refresh(user_id="bench-user")
        texts = list(dict.fromkeys(synthetic_queries(queries * 3)))[:queries]
        agent = MemRecallAgent(engine, scope=Scope.of("bench-user"))
        await agent.recall([("user", texts[0] + " warm")])
        latencies = []
        for text in texts:
            t0 = time.perf_counter()
            await agent.recall([("user", text)])
            latencies.append((time.perf_counter() - t0) * 1000)
    return {"memories": memories, "queries": len(latencies), "p50": percentile(latencies, 50),
            "p95": percentile(latencies, 95)}  # fmt: skip


def recall_report(dataset: BenchDataset, run: RecallRun, baseline: list[list[str]]) -> dict[str, object]:
    """DESIGN.md's JSON shape for the recall, plus the engine alone and the ratio to it."""
    ours = metrics(run.recall_ranked, dataset.queries, dataset.ks)
    engine = metrics(run.engine_ranked, dataset.queries, dataset.ks)
    base = metrics(baseline, dataset.queries, dataset.ks)
    result: dict[str, object] = {
        "dataset": dataset.name,
        "mode": "recall-agent-offline",
        "queries": len(dataset.queries),
    }
    result.update(ours)
    result["baseline"] = {"name": "bm25", **base}
    result["ratio"] = {name: round(ours[name] / base[name], 3) if base[name] else None for name in ours}
    result["engine"] = {"name": "hybrid-search", **engine}
    result["ratio_to_engine"] = {name: round(ours[name] / engine[name], 3) if engine[name] else None for name in ours}
    result["handoff_rate"] = round(run.handoffs / max(1, len(dataset.queries)), 4)
    result["latency_ms"] = {"p50": percentile(run.recall_ms, 50), "p95": percentile(run.recall_ms, 95)}
    result["engine_latency_ms"] = {"p50": percentile(run.engine_ms, 50), "p95": percentile(run.engine_ms, 95)}
    return result
