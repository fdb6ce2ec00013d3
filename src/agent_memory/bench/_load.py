"""Load from several OS processes: writers and searchers on one database for a bounded time.

``processes`` spawned processes each open one :class:`~agent_memory.MemorySystem` on the database and
run ``writers`` writer tasks (``add``, one memory per call, spread over a few users and friends) and
``searchers`` searcher tasks (hybrid search as a user's AI friend) until ``seconds`` have passed; all
processes start together after warming up. A write is acknowledged when ``add`` returns; afterwards
every acknowledged key is read back, so ``lost`` counts acknowledged writes that are not stored (it must
be 0). Latencies are per call, queueing included; errors are counted by exception type.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import queue as queue_module
import time
from collections import Counter
from typing import Any

from data_layer import AgentFusionDataLayer, upgrade

from ._retrieval import percentile

#: Users the writers spread over, and the friends their memories belong to.
USERS = 4
FRIENDS = ("f0", "f1", "f2")
QUERIES = ("数据库 端口", "deploy script", "咖啡 旅行", "会议 meeting notes", "postgres 配置")
#: Bounds: a run is at most this long, with at most this many writer tasks in all.
MAX_SECONDS = 600
MAX_WRITERS = 256
MAX_PROCESSES = 64
MAX_SEARCHERS = 256


def check_bounds(*, processes: int, writers: int, searchers: int, seconds: float) -> None:
    """Refuse runs that are not bounded (raises ``ValueError``)."""
    if not 1 <= processes <= MAX_PROCESSES:
        raise ValueError(f"--processes must be 1-{MAX_PROCESSES}")
    if writers < 0 or searchers < 0 or writers + searchers == 0:
        raise ValueError("--writers and --searchers must be >= 0, and not both 0")
    if processes * writers > MAX_WRITERS:
        raise ValueError(f"processes x writers must be <= {MAX_WRITERS} (got {processes * writers})")
    if processes * searchers > MAX_SEARCHERS:
        raise ValueError(f"processes x searchers must be <= {MAX_SEARCHERS} (got {processes * searchers})")
    if not 0 < seconds <= MAX_SECONDS:
        raise ValueError(f"--seconds must be more than 0 and at most {MAX_SECONDS}")


def _user(process: int, writer: int) -> str:
    return f"load-user-{(process + writer) % USERS}"


async def _worker(url: str, process: int, writers: int, searchers: int, seconds: float, barrier: Any) -> dict[str, Any]:
    from ._system import bench_system

    acked: list[tuple[str, str]] = []
    write_ms: list[float] = []
    search_ms: list[float] = []
    errors: Counter[str] = Counter()
    samples: dict[str, str] = {}  # one message per error type
    async with bench_system(url) as system:
        memory = system.layer.memory
        # warm up: connections, jieba's dictionary, the search index of every user
        await memory.add(user_id=f"warm-up-{process}", memory_key="warm", content="预热 warm up")
        for n in range(USERS):
            await system.search.search("预热", user_id=f"load-user-{n}", friend_id="f0", limit=5)
        await asyncio.to_thread(barrier.wait, 300)
        deadline = time.monotonic() + seconds

        async def write(w: int) -> None:
            i = 0
            while time.monotonic() < deadline:
                user, key = _user(process, w), f"p{process}w{w}-{i}"
                started = time.perf_counter()
                try:
                    await memory.add(
                        user_id=user,
                        memory_key=key,
                        content=f"process {process} writer {w} memory {i}: 数据库端口 {5000 + i % 1000} "
                        f"deploy script deploy_{w}.sh 咖啡 旅行 meeting notes",
                        friend_id=FRIENDS[(w + i) % len(FRIENDS)],
                        memory_type="event",
                    )
                except Exception as exc:  # counted by type: the figure this bench exists for
                    errors[f"write {type(exc).__name__}"] += 1
                    samples.setdefault(f"write {type(exc).__name__}", str(exc)[:300])
                else:
                    write_ms.append((time.perf_counter() - started) * 1000)
                    acked.append((user, key))
                i += 1

        async def search(s: int) -> None:
            i = 0
            while time.monotonic() < deadline:
                started = time.perf_counter()
                try:
                    await system.search.search(
                        QUERIES[(s + i) % len(QUERIES)],
                        user_id=f"load-user-{(s + i) % USERS}",
                        friend_id=FRIENDS[i % len(FRIENDS)],
                        limit=10,
                    )
                except Exception as exc:
                    errors[f"search {type(exc).__name__}"] += 1
                    samples.setdefault(f"search {type(exc).__name__}", str(exc)[:300])
                else:
                    search_ms.append((time.perf_counter() - started) * 1000)
                i += 1

        started = time.perf_counter()
        await asyncio.gather(*(write(w) for w in range(writers)), *(search(s) for s in range(searchers)))
        elapsed = time.perf_counter() - started
    return {
        "process": process,
        "acked": acked,
        "write_ms": write_ms,
        "search_ms": search_ms,
        "errors": dict(errors),
        "samples": samples,
        "elapsed": elapsed,
    }


def _process_main(
    url: str, process: int, writers: int, searchers: int, seconds: float, barrier: Any, out: Any
) -> None:  # pragma: no cover - runs in a spawned process
    try:
        out.put(asyncio.run(_worker(url, process, writers, searchers, seconds, barrier)))
    except BaseException as exc:
        barrier.abort()
        out.put({"process": process, "failed": f"{type(exc).__name__}: {exc}"[:500]})


async def _stored(url: str, acked: list[tuple[str, str]]) -> int:
    by_user: dict[str, list[str]] = {}
    for user, key in acked:
        by_user.setdefault(user, []).append(key)
    stored = 0
    async with AgentFusionDataLayer(url) as layer:
        for user, keys in by_user.items():
            for start in range(0, len(keys), 500):
                stored += len(await layer.memory.get_many(user_id=user, memory_keys=keys[start : start + 500]))
    return stored


def _latency(values: list[float]) -> dict[str, float]:
    return {
        "p50": percentile(values, 50),
        "p95": percentile(values, 95),
        "max": round(max(values, default=0.0), 3),
    }


async def bench_load(url: str, *, processes: int, writers: int, searchers: int, seconds: float) -> dict[str, Any]:
    """Run the load against the database at ``url`` (migrated here) and return the figures."""
    check_bounds(processes=processes, writers=writers, searchers=searchers, seconds=seconds)
    await upgrade(url)
    async with AgentFusionDataLayer(url) as layer:
        backend = layer.backend
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(processes)
    out = ctx.Queue()
    children = [
        ctx.Process(target=_process_main, args=(url, n, writers, searchers, seconds, barrier, out), daemon=True)
        for n in range(processes)
    ]
    for child in children:
        child.start()
    results: list[dict[str, Any]] = []
    give_up = time.monotonic() + seconds + 600
    try:
        while len(results) < processes:
            try:
                results.append(await asyncio.to_thread(out.get, True, 5))
            except queue_module.Empty:
                if time.monotonic() > give_up or not any(c.is_alive() for c in children):
                    break
    finally:
        for child in children:
            child.join(timeout=30)
            if child.is_alive():
                child.kill()
                child.join()
    failed = [r["failed"] for r in results if "failed" in r]
    done = [r for r in results if "failed" not in r]
    acked = [tuple(pair) for r in done for pair in r["acked"]]
    errors: Counter[str] = Counter()
    samples: dict[str, str] = {}
    for r in done:
        errors.update(r["errors"])
        for kind, message in r["samples"].items():
            samples.setdefault(kind, message)
    if len(results) < processes:
        errors["process ended without a result"] += processes - len(results)
    for message in failed:
        errors[f"process {message.split(':')[0]}"] += 1
    stored = await _stored(url, acked)
    elapsed = max((r["elapsed"] for r in done), default=0.0)
    write_ms = [v for r in done for v in r["write_ms"]]
    search_ms = [v for r in done for v in r["search_ms"]]
    return {
        "backend": backend,
        "processes": processes,
        "writers_per_process": writers,
        "searchers_per_process": searchers,
        "seconds": round(elapsed, 2),
        "acknowledged": len(acked),
        "stored": stored,
        "lost": len(acked) - stored,
        "searches": len(search_ms),
        "writes_per_s": round(len(acked) / elapsed, 1) if elapsed else 0.0,
        "searches_per_s": round(len(search_ms) / elapsed, 1) if elapsed else 0.0,
        "write_ms": _latency(write_ms),
        "search_ms": _latency(search_ms),
        "errors": dict(sorted(errors.items())),
        "error_samples": dict(sorted(samples.items())),
        "failures": failed[:5],
    }
