"""The engine's saved indexes and its memory cap: load a user's snapshot, save it again, drop idle users.

A mixin of :class:`~agent_memory.search.HybridMemorySearch`, kept apart so the engine module holds the
index upkeep and the search itself. A snapshot is adopted only when it is intact, was built under the
engine's analyser, embedder and link window, is not ahead of storage, and one of its newest memories is
still stored (a re-created database at the same place fails that); the rows changed after its revision
are then applied as for a live index. ``index_cache_mb`` caps the loaded indexes by their estimated
size (:meth:`UserIndex.approx_bytes`): the least recently searched users are dropped first.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass, field

from data_layer import MemoryRepository

from ._analyzer import SearchAnalyzer
from ._embeddings import Embedder
from ._index import UserIndex
from ._snapshot import SnapshotError, SnapshotMeta, SnapshotStore, decode, encode

_log = logging.getLogger(__name__)
#: A loaded snapshot is saved again once this many rows (or 5 % of the index) were applied after it.
RESAVE_ROWS = 500


@dataclass(slots=True)
class _UserState:
    index: UserIndex
    revision: int = -1
    hard_delete_revision: int = 0
    vocabulary_revision: int = 0
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    #: revision of the user's stored snapshot (-1: none known), rows applied since, snapshot tried
    snapshot_revision: int = -1
    applied_since_snapshot: int = 0
    snapshot_tried: bool = False
    approx_bytes: int = 0
    #: the first build of the index, running in a task of its own (see ``HybridMemorySearch._build_first``)
    building: asyncio.Task[None] | None = None
    #: rows analysed otherwise were left out of the index: the next refresh re-analyses them (a failed or
    #: cancelled re-analysis must not leave them out for good; storing the analyses gives them new
    #: revisions, so the refresh after it reads them), not before ``analysis_retry_at`` (monotonic)
    awaiting_analysis: bool = False
    analysis_retry_at: float = 0.0
    #: ids of the memories the last refresh put into the index
    last_put: list[Hashable] = field(default_factory=list)


class SnapshotCacheMixin:
    """Snapshot loading and saving, and the LRU cap, of :class:`HybridMemorySearch`."""

    memory: MemoryRepository
    analyzer: SearchAnalyzer
    embedder: Embedder
    link_minutes: float
    snapshots: SnapshotStore | None
    index_cache_mb: float | None
    _users: OrderedDict[str, _UserState]
    #: the sum of the cached users' ``approx_bytes`` (kept up to date by ``_touch`` and ``_drop``)
    _cached_bytes: int

    def _snapshot_meta(self, uid: str, revision: int = -1, hard_delete_revision: int = 0) -> SnapshotMeta:
        return SnapshotMeta(
            user_id=uid,
            revision=revision,
            hard_delete_revision=hard_delete_revision,
            analyzer=self.analyzer.name,
            embedder=self.embedder.name,
            link_seconds=self.link_minutes * 60.0,
        )

    async def _load_snapshot(self, uid: str, current: _UserState, revision: int, hard_delete_revision: int) -> None:
        """Adopt the stored snapshot when it is intact, built under these settings and not ahead of storage."""
        store = self.snapshots
        assert store is not None
        data = await asyncio.to_thread(store.load, uid)
        if data is None:
            return
        try:
            index, meta = await asyncio.to_thread(decode, data, expect=self._snapshot_meta(uid))
            if meta.revision > revision or meta.hard_delete_revision > hard_delete_revision:
                raise SnapshotError("snapshot is ahead of storage (a restored or replaced database)")
            # one of the newest memories must still be stored, or this is another database at the same
            # place (a re-created file, a truncated table); if they were all deleted since: rebuild
            anchors = [uuid.UUID(a) for a in meta.anchors]
            if not anchors or not await self.memory.get_by_ids(user_id=uid, ids=anchors):
                raise SnapshotError("none of the snapshot's newest memories is stored")
        except ValueError as exc:  # a SnapshotError, or a malformed anchor id
            _log.info("search index snapshot of a user rebuilt: %s", exc)
            await asyncio.to_thread(store.discard, uid)
            return
        current.index = index
        current.revision = meta.revision
        current.hard_delete_revision = meta.hard_delete_revision
        current.snapshot_revision = meta.revision
        current.applied_since_snapshot = 0

    async def _maybe_save_snapshot(self, uid: str, current: _UserState) -> None:
        """Save after a build, and again once enough rows were applied on top of the stored snapshot."""
        store = self.snapshots
        index = current.index
        if store is None or index.size == 0 or current.revision <= current.snapshot_revision:
            return
        due = max(RESAVE_ROWS, index.size // 20)
        if current.snapshot_revision >= 0 and current.applied_since_snapshot < due:
            return
        meta = self._snapshot_meta(uid, current.revision, current.hard_delete_revision)
        try:
            data = encode(index, meta)
        except SnapshotError as exc:
            _log.info("search index snapshot not saved: %s", exc)
            return
        if await asyncio.to_thread(store.save, uid, data):
            current.snapshot_revision = current.revision
            current.applied_since_snapshot = 0

    def _touch(self, uid: str, state: _UserState) -> None:
        """Mark the user most recently used; drop least recently used users' indexes past the cap."""
        size = state.index.approx_bytes()
        if self._users.get(uid) is state:
            self._users.move_to_end(uid)
            self._cached_bytes += size - state.approx_bytes
        state.approx_bytes = size
        if self.index_cache_mb is None or self._cached_bytes <= self.index_cache_mb * 1024 * 1024:
            return  # the running total, not a sum over every cached user on every search
        cap = self.index_cache_mb * 1024 * 1024
        for other in list(self._users):
            if self._cached_bytes <= cap:
                break
            if other == uid:
                continue  # the user just searched always stays
            self._drop(other)

    def _drop(self, uid: str) -> None:
        """Forget the user's cached index (its size leaves the running total)."""
        dropped = self._users.pop(uid, None)
        if dropped is not None:
            self._cached_bytes -= dropped.approx_bytes

    def cached_users(self) -> list[str]:
        """Users whose index is loaded, least recently searched first (the first to be dropped)."""
        return list(self._users)
