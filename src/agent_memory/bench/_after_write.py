"""Two processes on one database: B's search right after A's write, beside B's search with no write between.

The user's memories (``memories`` synthetic ones, each with a code word of its own) are written first;
then two spawned processes open a :class:`~agent_memory.MemorySystem` each on the database, B builds
the user's index with a first search, and ``rounds`` rounds run, each:

1. A writes one memory (``memory.add``) holding a new code word;
2. B searches for that code word (``after_write``: B's index reads the change and applies it), and the
   written memory must be among the hits (``seen``);
3. B searches for the code word of an earlier memory never searched for (``no_write``: the index
   unchanged since B's last search; a query of its own, so the recent-search cache cannot answer it);
4. B repeats that search (``no_write_cached``: the recent-search cache answers it).

``after_write`` and ``no_write`` are alike in all but the write: each a query B has not asked before,
with the same words around the code word. Times are B's ``search`` call (the parent waits for each step
before the next), A's ``add`` call for ``write_ms``.
"""

from __future__ import annotations

import asyncio
import cProfile
import multiprocessing
import statistics
import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from data_layer import AgentFusionDataLayer, upgrade

from ._retrieval import spread
from ._synthetic import synthetic_memories, synthetic_queries

USER = "after-write-user"
#: Most memories written before the rounds, and most rounds.
MAX_MEMORIES = 200_000
MAX_ROUNDS = 1_000
#: How long a process may take to answer one request (building a large user's index among them).
ANSWER_S = 900.0


def code_word(n: int) -> str:
    """A word of letters no other memory holds (``n`` 0 to 26**5 - 1), the same on every run.

    >>> code_word(0), code_word(27)
    ('codeqaaaaa', 'codeqaaabb')
    """
    letters = []
    for _ in range(5):
        n, digit = divmod(n, 26)
        letters.append(chr(ord("a") + digit))
    return "codeq" + "".join(reversed(letters))


@dataclass(frozen=True, slots=True)
class AfterWriteFigures:
    """Medians (ms) of B's searches after A's write and without one, their ratio, and what B saw."""

    backend: str
    memories: int
    rounds: int
    after_write_ms: dict[str, float]
    no_write_ms: dict[str, float]
    no_write_cached_ms: dict[str, float]
    write_ms: dict[str, float]
    #: median of after_write / median of no_write (both computed; the cache answers neither)
    ratio: float
    #: median of after_write / median of no_write_cached
    ratio_to_cached: float
    seen: int
    #: whether B's after-write search found every memory A wrote
    saw_every_write: bool


async def _serve(url: str, conn: Any, profile: str | None) -> None:
    from ._system import bench_system

    profiler = cProfile.Profile() if profile else None
    async with bench_system(url) as system:
        await system.search.warm_up()
        conn.send("ready")
        while True:
            request = await asyncio.to_thread(conn.recv)
            kind = request[0]
            if kind == "stop":
                if profiler is not None and profile:
                    profiler.dump_stats(profile)
                conn.send("stopped")
                return
            if kind == "add":
                _, key, content = request
                started = time.perf_counter()
                await system.layer.memory.add(
                    user_id=USER, memory_key=key, content=content, friend_id="friend-0", memory_type="event"
                )
                conn.send((time.perf_counter() - started) * 1000)
            elif kind == "search":
                _, text, expected, profiled = request
                if profiled and profiler is not None:
                    profiler.enable()
                started = time.perf_counter()
                hits = await system.search.search(text, user_id=USER, limit=10)
                elapsed = (time.perf_counter() - started) * 1000
                if profiled and profiler is not None:
                    profiler.disable()
                conn.send((elapsed, any(h.memory_key == expected for h in hits)))


def _process_main(url: str, conn: Any, profile: str | None) -> None:  # pragma: no cover - a spawned process
    try:
        asyncio.run(_serve(url, conn, profile))
    except BaseException as exc:
        conn.send(("failed", f"{type(exc).__name__}: {exc}"[:500]))
        raise


class _Child:
    """One spawned process answering requests over a pipe."""

    def __init__(self, url: str, profile: str | None = None) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.conn, theirs = ctx.Pipe()
        self.process = ctx.Process(target=_process_main, args=(url, theirs, profile), daemon=True)
        self.process.start()

    async def ask(self, *request: object) -> Any:
        if request:
            self.conn.send(request)
        if not await asyncio.to_thread(self.conn.poll, ANSWER_S):
            raise TimeoutError(f"a benchmark process did not answer {request[:1]!r} in {ANSWER_S:.0f} s")
        answer = self.conn.recv()
        if isinstance(answer, tuple) and answer[:1] == ("failed",):
            raise RuntimeError(f"a benchmark process failed: {answer[1]}")
        return answer

    def close(self) -> None:
        self.process.join(timeout=30)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()


def _text(query: str, word: str) -> str:
    return f"{query} {word}"


async def bench_after_write(
    url: str, *, memories: int, rounds: int = 30, profile: str | None = None
) -> AfterWriteFigures:
    """Write ``memories`` memories for one user at ``url`` (migrated here), then run ``rounds`` rounds
    between two spawned processes (see the module); ``profile``: a file B saves the cProfile statistics of
    its after-write searches to."""
    from ._system import bench_system

    if not 1 <= memories <= MAX_MEMORIES:
        raise ValueError(f"memories must be 1-{MAX_MEMORIES}")
    if not 1 <= rounds <= MAX_ROUNDS:
        raise ValueError(f"rounds must be 1-{MAX_ROUNDS}")
    if memories < rounds + 1:
        raise ValueError("memories must be more than rounds (each no-write search finds a memory of its own)")
    await upgrade(url)
    items = [
        replace(m, content=f"{m.content} {code_word(i)}")
        for i, m in enumerate(synthetic_memories(memories, start=datetime(2026, 1, 1, tzinfo=UTC)))
    ]
    async with bench_system(url) as system:
        for start in range(0, len(items), 500):
            await system.layer.memory.add_many(user_id=USER, memories=items[start : start + 500])
        await system.search.settle(user_id=USER)  # vectors a bulk write leaves to a background pass
    async with AgentFusionDataLayer(url) as layer:
        backend = layer.backend
    queries = synthetic_queries(3 * rounds + 3, seed=5)
    writer, searcher = _Child(url), _Child(url, profile)
    after: list[float] = []
    alone: list[float] = []
    cached: list[float] = []
    writes: list[float] = []
    seen = 0
    try:
        await writer.ask()
        await searcher.ask()
        await searcher.ask("search", _text(queries[-1], code_word(memories - 1)), "", False)  # builds B's index
        await searcher.ask("search", _text(queries[-2], code_word(memories - 2)), "", False)
        for r in range(rounds):
            word, key = code_word(memories + r), f"written-{r:05d}"
            content = f"Round {r}: {queries[3 * r + 1]}, noted with the code word {word}."
            writes.append(await writer.ask("add", key, content))
            ms, found = await searcher.ask("search", _text(queries[3 * r + 1], word), key, True)
            after.append(ms)
            seen += found
            earlier = (r * 7919) % (memories - 2)  # an earlier memory no search has asked for
            text = _text(queries[3 * r + 2], code_word(earlier))
            alone.append((await searcher.ask("search", text, "", False))[0])
            cached.append((await searcher.ask("search", text, "", False))[0])
        await writer.ask("stop")
        await searcher.ask("stop")
    finally:
        writer.close()
        searcher.close()
    a, b, c = statistics.median(after), statistics.median(alone), statistics.median(cached)
    return AfterWriteFigures(
        backend=backend,
        memories=memories,
        rounds=rounds,
        after_write_ms=spread(after),
        no_write_ms=spread(alone),
        no_write_cached_ms=spread(cached),
        write_ms=spread(writes),
        ratio=round(a / b, 2) if b else 0.0,
        ratio_to_cached=round(a / c, 1) if c else 0.0,
        seen=seen,
        saw_every_write=seen == rounds,
    )
