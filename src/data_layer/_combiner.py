"""Group commit: concurrent single-item writes queued and written together, one transaction per batch.

SQLite takes one writer at a time, and through ``aiosqlite`` every statement costs a round trip to the
connection's thread (about a millisecond with SQLAlchemy's cursor handling). An ``add`` is seven such
statements, so 32 writers queueing one ``add`` each wait for 31 others: about 230 ms on average. A
batch of 32 adds is written with the same seven statements, so each waits for one or two batches
instead. PostgreSQL gains too: writers of one user queue on that user's revision row, and a pool of
20 connections serves 32 writers with fewer waits when their adds are batched.

Semantics a caller can rely on: :meth:`WriteCombiner.submit` returns only after the batch holding its
item committed (an acknowledged write is stored); an item refused on its own (a duplicate key) fails
alone; a batch that fails as a whole (the database is unreachable) fails every item in it, and none
of them is stored. One flush runs at a time, in submission order.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")

#: Most items written in one transaction (bounds a transaction's time while keeping most of the gain).
MAX_BATCH = 64

#: Writes a batch; returns one result or exception per item, in order, or raises for the whole batch.
Flush = Callable[[Sequence[T]], Awaitable[Sequence[R | BaseException]]]


class WriteCombiner(Generic[T, R]):
    """Queues items of one event loop and writes them in batches through ``flush``."""

    def __init__(self, flush: Flush[T, R], *, max_batch: int = MAX_BATCH) -> None:
        self._flush = flush
        self._max_batch = max_batch
        self._pending: list[tuple[T, asyncio.Future[R]]] = []
        self._drainer: asyncio.Task[None] | None = None

    async def submit(self, item: T) -> R:
        """Queue ``item`` and wait until the batch holding it is written; its result or error."""
        future: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self._pending.append((item, future))
        if self._drainer is None or self._drainer.done():
            self._drainer = asyncio.create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        while self._pending:
            batch = self._pending[: self._max_batch]
            del self._pending[: self._max_batch]
            live = [(item, future) for item, future in batch if not future.done()]  # a cancelled caller
            if not live:
                continue
            try:
                results = await self._flush([item for item, _ in live])
            except BaseException as exc:  # the whole batch failed: every item in it did
                for _, future in live:
                    if not future.done():
                        future.set_exception(exc)
                if not isinstance(exc, Exception):
                    raise
                continue
            for (_, future), result in zip(live, results, strict=True):
                if future.done():
                    continue
                if isinstance(result, BaseException):
                    future.set_exception(result)
                else:
                    future.set_result(result)


class CombinerPool(Generic[T, R]):
    """One :class:`WriteCombiner` per running event loop and key (a database file): futures belong to
    the loop that made them, and writers of one file share a queue even through separate engines."""

    def __init__(self, flush: Flush[T, R]) -> None:
        self._flush = flush
        self._by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, WriteCombiner[T, R]]] = (
            weakref.WeakKeyDictionary()
        )

    def current(self, key: str) -> WriteCombiner[T, R]:
        """The combiner of ``key`` on the running loop."""
        combiners = self._by_loop.setdefault(asyncio.get_running_loop(), {})
        combiner = combiners.get(key)
        if combiner is None:
            combiner = combiners[key] = WriteCombiner(self._flush)
        return combiner
