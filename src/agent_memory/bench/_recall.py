"""Recall quality and latency: the full offline recall (MemRecallAgent through AutoGen's
AssistantAgent and the memory tools) against the search engine alone and BM25, in one run."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime

from data_layer import MemoryRecallSettings, upgrade

from ..settings import AgentMemorySettings
from ..system import EngineDescription, describe_engine
from ._datasets import BenchDataset
from ._retrieval import load_dataset_into, metrics, percentile
from ._synthetic import synthetic_memories, synthetic_queries
from ._system import bench_settings, bench_system

#: The similarity threshold of the recall block: a user's default setting.
BLOCK_THRESHOLD = MemoryRecallSettings().similarity_threshold


@dataclass(frozen=True, slots=True)
class RecallRun:
    """Ranked doc ids per query from the recall (handoff keys, then the other results) and from the
    engine's own top results, with per-query latencies; ``blocks``: the doc ids of the recall block (the
    memories at or above :data:`BLOCK_THRESHOLD`, what the main model is given); ``stranger_blocks``:
    how many memories the block holds when the same message is recalled in the next user's memories,
    where none is about it; ``engine``: what the search engine was built with."""

    recall_ranked: list[list[str]]
    engine_ranked: list[list[str]]
    recall_ms: list[float]
    engine_ms: list[float]
    handoffs: int
    blocks: list[list[str]]
    stranger_blocks: list[int]
    engine: EngineDescription


async def run_recall(
    dataset: BenchDataset, url: str, *, depth: int = 10, settings: AgentMemorySettings | None = None
) -> RecallRun:
    """Load the dataset into ``url``; for every query run the recall agent and the engine of the memory
    system ``settings`` build (default: :func:`bench_settings`, the library's), offline."""
    await upgrade(url)
    async with bench_system(url, settings if settings is not None else bench_settings(url)) as system:
        layer, engine = system.layer, system.search
        key_to_doc, _ = await load_dataset_into(layer, dataset)
        for user in {d.user_id for d in dataset.docs}:
            await engine.settle(user_id=user)
        users = sorted({d.user_id for d in dataset.docs})
        recall_ranked, engine_ranked, recall_ms, engine_ms, handoffs = [], [], [], [], 0
        blocks, stranger_blocks = [], []
        for q in dataset.queries:
            agent = system.recall_agent(system.scope(q.user_id, q.friend_id), now=q.now)
            t0 = time.perf_counter()
            result = await agent.recall([*((m["role"], m["content"]) for m in q.context), ("user", q.text)])
            recall_ms.append((time.perf_counter() - t0) * 1000)
            handoffs += result.handoff is not None
            recall_ranked.append([key_to_doc[(q.user_id, k)] for k in result.ranked_keys[:depth]])
            blocks.append([key_to_doc[(q.user_id, m.memory_key)] for m in result.relevant(BLOCK_THRESHOLD)])
            stranger = users[(users.index(q.user_id) + 1) % len(users)] if q.user_id in users else users[0]
            if stranger != q.user_id:
                other = await system.recall_agent(system.scope(stranger), now=q.now).recall([("user", q.text)])
                stranger_blocks.append(len(other.relevant(BLOCK_THRESHOLD)))
            t0 = time.perf_counter()
            hits = await engine.search(q.text, user_id=q.user_id, friend_id=q.friend_id, limit=depth, now=q.now)
            engine_ms.append((time.perf_counter() - t0) * 1000)
            engine_ranked.append([key_to_doc[(q.user_id, h.memory_key)] for h in hits])
        described = describe_engine(engine)
    return RecallRun(recall_ranked, engine_ranked, recall_ms, engine_ms, handoffs, blocks, stranger_blocks, described)


async def recall_latency(
    url: str, *, memories: int, queries: int = 100, settings: AgentMemorySettings | None = None
) -> dict[str, float]:
    """p50/p95 of one full recall over ``memories`` synthetic memories of one user (warm index), in the
    memory system ``settings`` build (default: :func:`bench_settings`), offline."""
    await upgrade(url)
    items = list(synthetic_memories(memories, start=datetime(2026, 1, 1, tzinfo=UTC)))
    async with bench_system(url, settings if settings is not None else bench_settings(url)) as system:
        layer, engine = system.layer, system.search
        for i in range(0, len(items), 500):
            await layer.memory.add_many(user_id="bench-user", memories=items[i : i + 500])
        await engine.settle(user_id="bench-user")
        texts = list(dict.fromkeys(synthetic_queries(queries * 3)))[:queries]
        agent = system.recall_agent(system.scope("bench-user"))
        await agent.recall([("user", texts[0] + " warm")])
        latencies = []
        for text in texts:
            t0 = time.perf_counter()
            await agent.recall([("user", text)])
            latencies.append((time.perf_counter() - t0) * 1000)
    return {
        "memories": memories,
        "queries": len(latencies),
        "p50": percentile(latencies, 50),
        "p95": percentile(latencies, 95),
    }


def recall_report(dataset: BenchDataset, run: RecallRun, baseline: list[list[str]]) -> dict[str, object]:
    """The benchmarks' JSON shape for the recall, plus the engine alone and the ratio to it."""
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
    result["recall_block"] = block_report(dataset, run)
    result["latency_ms"] = {"p50": percentile(run.recall_ms, 50), "p95": percentile(run.recall_ms, 95)}
    result["engine_latency_ms"] = {"p50": percentile(run.engine_ms, 50), "p95": percentile(run.engine_ms, 95)}
    return result


def block_report(dataset: BenchDataset, run: RecallRun) -> dict[str, float | int | None]:
    """What the recall block (memories at or above :data:`BLOCK_THRESHOLD`) holds: the share of queries
    whose block has a gold memory, its mean size and mean number of other memories, and, for the same
    messages in another user's memories, the share of non-empty blocks and their mean size (every
    memory there is unrelated: a precision figure that needs no judgement of relevance)."""
    n = max(1, len(dataset.queries))
    gold = [set(q.gold) for q in dataset.queries]
    strangers = max(1, len(run.stranger_blocks))
    return {
        "threshold": BLOCK_THRESHOLD,
        "with_gold": round(sum(bool(g & set(b)) for g, b in zip(gold, run.blocks, strict=True)) / n, 4),
        "mean_size": round(sum(map(len, run.blocks)) / n, 2),
        "mean_other": round(sum(len(set(b) - g) for g, b in zip(gold, run.blocks, strict=True)) / n, 2),
        "stranger_nonempty": round(sum(x > 0 for x in run.stranger_blocks) / strangers, 4)
        if run.stranger_blocks
        else None,
        "stranger_mean_size": round(sum(run.stranger_blocks) / strangers, 2) if run.stranger_blocks else None,
    }
