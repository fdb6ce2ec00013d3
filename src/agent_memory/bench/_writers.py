"""Many concurrent writers in one process: are acknowledged writes stored, and how long does one take?

``writers`` tasks each add ``ops`` memories, one call at a time, through the data layer of one
:class:`~agent_memory.MemorySystem` (one engine, shared), or through one system each with
``separate_engines``; ``analyze`` keeps the system's analyzer (keywords, tokens, topics, vectors) on
every write, as a user's system runs it; without it, raw rows are written. A write is acknowledged
when ``add`` returns; afterwards every acknowledged key is read back, so ``lost`` counts acknowledged
writes that are not stored. Latency is the time of one ``add`` call, queueing included.
"""

from __future__ import annotations

import asyncio
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass

from data_layer import AgentFusionDataLayer, AgentMemoryError, upgrade

from ..settings import AgentMemorySettings
from ._retrieval import percentile
from ._system import bench_settings, bench_system

#: Users the writers spread over (writer ``n`` writes for user ``n % USERS``).
USERS = 4


@dataclass(frozen=True, slots=True)
class WriterFigures:
    """Acknowledged against stored writes and the latency of one write (milliseconds)."""

    backend: str
    writers: int
    ops_per_writer: int
    analyze: bool
    separate_engines: bool
    acknowledged: int
    failed: int
    stored: int
    lost: int
    p50_ms: float
    p95_ms: float
    max_ms: float
    writes_per_s: float
    errors: tuple[str, ...]


async def _writer(
    layer: AgentFusionDataLayer, n: int, ops: int, latencies: list[float], acked: list[str], errors: list[str]
) -> None:
    for i in range(ops):
        key = f"w{n}-{i}"
        started = time.perf_counter()
        try:
            await layer.memory.add(
                user_id=f"bench-user-{n % USERS}",
                memory_key=key,
                content=f"writer {n} wrote memory {i}: 用户提到了数据库端口 {5000 + i} 和部署脚本 deploy_{n}.sh",
                friend_id=f"friend-{n % 3}",
                memory_type="event",
                keywords=[f"writer-{n}"],
            )
        except AgentMemoryError as exc:
            errors.append(f"{type(exc).__name__}: {exc}"[:200])
            continue
        latencies.append((time.perf_counter() - started) * 1000)
        acked.append(key)


async def bench_writers(
    url: str,
    *,
    writers: int = 32,
    ops: int = 50,
    analyze: bool = True,
    separate_engines: bool = False,
    settings: AgentMemorySettings | None = None,
) -> WriterFigures:
    """Run the writers against a migrated database at ``url`` and check what was stored, through the
    memory systems ``settings`` build (default: :func:`bench_settings`, the library's)."""
    await upgrade(url)
    chosen = settings if settings is not None else bench_settings(url)
    latencies: list[float] = []
    acked: list[str] = []
    errors: list[str] = []
    async with AsyncExitStack() as stack:
        count = writers if separate_engines else 1
        systems = [await stack.enter_async_context(bench_system(url, chosen)) for _ in range(count)]
        layers = [system.layer for system in systems]
        if not analyze:
            for layer in layers:
                layer.memory.set_analyzer(None)
        for layer in layers:  # warm up: connections, statement caches, jieba's dictionary
            await layer.memory.add(user_id="warm-up", memory_key=f"warm-{id(layer)}", content="预热 warm up")
        started = time.perf_counter()
        await asyncio.gather(*(_writer(layers[n % count], n, ops, latencies, acked, errors) for n in range(writers)))
        elapsed = time.perf_counter() - started
        stored = 0
        by_user: dict[str, list[str]] = {}
        for key in acked:
            by_user.setdefault(f"bench-user-{int(key[1:].split('-')[0]) % USERS}", []).append(key)
        for user, keys in by_user.items():
            for start in range(0, len(keys), 500):
                found = await layers[0].memory.get_many(user_id=user, memory_keys=keys[start : start + 500])
                stored += len(found)
    return WriterFigures(
        backend=layers[0].backend,
        writers=writers,
        ops_per_writer=ops,
        analyze=analyze,
        separate_engines=separate_engines,
        acknowledged=len(acked),
        failed=len(errors),
        stored=stored,
        lost=len(acked) - stored,
        p50_ms=percentile(latencies, 50),
        p95_ms=percentile(latencies, 95),
        max_ms=round(max(latencies, default=0.0), 3),
        writes_per_s=round(len(acked) / elapsed, 1) if elapsed else 0.0,
        errors=tuple(dict.fromkeys(errors))[:5],
    )
