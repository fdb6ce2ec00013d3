"""Vectors made later: a user's memories stored without a vector of the running embedder are embedded in
the background.

A memory lacks one when its write could not embed it (an embedding endpoint down or past its time-out:
the words were stored, see ``SearchAnalyzer.vectors``) or when the embedder changed
(``MEMORY_SEARCH_EMBEDDER``, another endpoint model). Search uses a stored vector only when it is the
running embedder's, so until the pass is done those memories are found by their words alone, and two
models' vectors are never compared. The stored vectors give the memories new revisions, so the next
search reads them.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable

import numpy as np

from data_layer import MemoryRepository

from ._analyzer import SearchAnalyzer, memory_text
from ._embeddings import to_bytes
from ._vector_terms import stored_vector_terms

logger = logging.getLogger(__name__)

#: Memories embedded per batch (one embedder call and one write each).
BATCH = 256
#: After a failed pass, the user's next pass waits this long (each try can cost an endpoint's time-out).
RETRY_S = 30.0


class BackgroundEmbedding:
    """One re-embedding pass per user at a time, started by :meth:`request` and awaited by :meth:`wait`."""

    def __init__(self, memory: MemoryRepository, analyzer: SearchAnalyzer, *, retry_s: float = RETRY_S) -> None:
        if analyzer.embedder is None:
            raise ValueError("background embedding needs an analyzer with an embedder")
        self.memory = memory
        self.analyzer = analyzer
        self.retry_s = retry_s
        self._tasks: dict[str, asyncio.Task[int]] = {}
        self._retry_at: dict[str, float] = {}

    def request(self, user_id: str) -> None:
        """Start a pass for the user unless one runs or a failed one waits for its retry time."""
        if user_id in self._tasks or time.monotonic() < self._retry_at.get(user_id, 0.0):
            return
        task = asyncio.get_running_loop().create_task(self._pass(user_id), name=f"embed-memories:{user_id}")
        self._tasks[user_id] = task
        task.add_done_callback(lambda _: self._tasks.pop(user_id, None))

    async def wait(self, user_id: str) -> int:
        """Run a pass for the user now (or join the running one); returns how many memories it embedded."""
        running = self._tasks.get(user_id)
        if running is not None and not running.done():  # a finished one is popped by its callback, later
            return await asyncio.shield(running)
        self._retry_at.pop(user_id, None)
        return await self._pass(user_id)

    async def close(self) -> None:
        """Cancel the running passes (what they stored stays; the rest is embedded by a later pass)."""
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _pass(self, user_id: str) -> int:
        embedder = self.analyzer.embedder
        assert embedder is not None
        done = 0
        try:
            while True:
                records = await self.memory.pending_embedding(user_id=user_id, embedder=embedder.name, limit=BATCH)
                if not records:
                    return done
                vectors = await embedder.embed([memory_text(r.summary, r.content) for r in records])
                buckets = stored_vector_terms(vectors, embedder=embedder.name)
                done += await self.memory.store_embeddings(
                    user_id=user_id,
                    embedder=embedder.name,
                    vectors=[(r.id, to_bytes(vector)) for r, vector in zip(records, vectors, strict=True)],
                    vector_terms=dict(zip((r.id for r in records), buckets, strict=True)),
                )
                if len(records) < BATCH:
                    return done
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # an endpoint still down: its memories keep their words, tried again later
            self._retry_at[user_id] = time.monotonic() + self.retry_s
            logger.warning(
                "embedding a user's memories with %s failed after %d (%s); their words still find them, "
                "tried again in %.0f s",
                embedder.name,
                done,
                exc,
                self.retry_s,
            )
            return done


async def fill_vector_terms(
    memory: MemoryRepository, *, batch: int = 1000, on_batch: Callable[[int], None] | None = None
) -> tuple[int, int]:
    """Store the bucket terms of every stored vector that has none (vectors stored before the terms were
    stored with them), in batches; the vectors themselves are kept. Idempotent: a second run finds none.
    Returns ``(rows filled, users)``."""
    rows, users = 0, set[str]()
    after: tuple[str, uuid.UUID] | None = None
    while True:
        found = await memory.vector_terms_pending(after=after, limit=batch)
        if not found:
            return rows, len(users)
        groups: dict[tuple[str, str, int], list[tuple[uuid.UUID, bytes]]] = {}
        for pending in found:
            key = (pending.user_id, pending.embedder, len(pending.embedding))
            groups.setdefault(key, []).append((pending.memory_id, pending.embedding))
        for (user, embedder, size), items in groups.items():
            if size % 4 or not size:
                continue  # not a float32 vector: nothing to bucket
            vectors = np.stack([np.frombuffer(blob, dtype="<f4") for _, blob in items]).astype(np.float32)
            buckets = await asyncio.to_thread(stored_vector_terms, vectors, embedder=embedder)
            done = await memory.store_vector_terms(
                user_id=user, embedder=embedder, terms=[(mid, t) for (mid, _), t in zip(items, buckets, strict=True)]
            )
            rows += done
            if done:
                users.add(user)
            if on_batch is not None:
                on_batch(done)
        last = found[-1]
        after = (last.user_id, last.memory_id)
        if len(found) < batch:
            return rows, len(users)
