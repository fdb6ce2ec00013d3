"""Memories: the write transactions (add, add_many, upsert, delete) and change listeners.

The rest of :class:`MemoryRepository` is mixed in so that ``layer.memory`` offers it all while each
module keeps one concern: ``_memory_rows`` validates input and builds rows, ``_memory_reads`` reads,
lists and counts, ``_keyword_ops`` and ``_index_ops`` hold keyword, synonym and index operations.

Every method takes ``user_id`` and touches only that user's rows; there is no call that reads across
users. Every write bumps the user's revision (``memory_index_state``) in the same transaction.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import and_, delete, select, update
from sqlalchemy.exc import IntegrityError

from . import _revision
from . import _validation as v
from ._engine import Database
from ._errors import DuplicateMemoryKeyError, InvalidInputError
from ._index_ops import IndexOpsMixin
from ._memory_reads import MemoryReadsMixin
from ._memory_rows import MemoryRowsMixin, NewMemory, OnOversize, _from_values
from ._records import KeywordInput, MemoryAnalyzer, MemoryRecord, UpsertResult
from ._rows import keyword_rows
from ._tables import AgentMemoryKeywordsTable, AgentMemorySearchIndexTable, AgentMemoryTable
from ._types import utcnow

OnConflict = Literal["error", "replace", "skip"]

#: Called after a commit that changed a user's memories, with the user id.
ChangeListener = Callable[[str], None]


class MemoryRepository(MemoryReadsMixin, MemoryRowsMixin, IndexOpsMixin):
    """Reads and writes ``agent_memories`` and what hangs off it (keywords, synonyms, search index).

    >>> rec = await layer.memory.add(user_id="u1", memory_key="db-config-001",
    ...                              content='{"host": "localhost"}', summary="MySQL config")  # doctest: +SKIP
    >>> (await layer.memory.retrieve_memory(memory_key="db-config-001", user_id="u1")).summary  # doctest: +SKIP
    'MySQL config'
    """

    def __init__(self, db: Database) -> None:
        self._db = db
        self._analyzer: MemoryAnalyzer | None = None
        self._listeners: list[ChangeListener] = []

    # -- hooks -----------------------------------------------------------------------------------

    @property
    def analyzer(self) -> MemoryAnalyzer | None:
        """The analyzer run on every write (``None``: memories wait for a keyword backfill)."""
        return self._analyzer

    def set_analyzer(self, analyzer: MemoryAnalyzer | None) -> None:
        """Compute keywords and search tokens on every write with ``analyzer``."""
        self._analyzer = analyzer

    def add_listener(self, listener: ChangeListener) -> None:
        """Call ``listener(user_id)`` after every committed change to that user's memories."""
        self._listeners.append(listener)

    def _changed(self, user_id: str) -> None:
        for listener in self._listeners:
            listener(user_id)

    # -- writes ----------------------------------------------------------------------------------

    async def add(
        self,
        *,
        user_id: str | int,
        memory_key: str,
        content: str,
        summary: str | None = None,
        memory_type: str = "general",
        friend_id: str | int | None = None,
        metadata: dict[str, Any] | None = None,
        created_at: datetime | None = None,
        keywords: Sequence[str | tuple[str, float] | KeywordInput] | None = None,
        on_oversize: OnOversize = "truncate",
        shared: bool = False,
    ) -> MemoryRecord:
        """Store a new memory. A key the user already has raises :class:`DuplicateMemoryKeyError`.

        ``friend_id=None`` makes the memory visible to all of the user's AI friends (profiles);
        an event memory names its friend (``shared=True`` shares one on purpose). Content over 100 KB is cut and
        ``metadata["truncation"]`` says so (``on_oversize="error"`` refuses it instead).
        ``keywords`` are user tags kept next to the extracted ones.
        """
        item = NewMemory(
            memory_key=memory_key,
            content=content,
            summary=summary,
            memory_type=memory_type,
            friend_id=friend_id,
            metadata=metadata,
            created_at=created_at,
            keywords=keywords,
            shared=shared,
        )
        records = await self.add_many(user_id=user_id, memories=[item], on_oversize=on_oversize)
        return records[0]

    async def add_many(
        self,
        *,
        user_id: str | int,
        memories: Sequence[NewMemory],
        on_conflict: OnConflict = "error",
        on_oversize: OnOversize = "truncate",
    ) -> list[MemoryRecord]:
        """Store many memories in one transaction (the fast path for imports).

        ``on_conflict``: ``"error"`` refuses the batch if any key exists (nothing is written),
        ``"skip"`` keeps existing memories, ``"replace"`` overwrites them like :meth:`upsert`.
        Returns the records written (skipped ones are left out).
        """
        uid = v.user_id(user_id)
        if on_conflict not in ("error", "replace", "skip"):
            raise InvalidInputError("on_conflict must be 'error', 'replace' or 'skip'")
        if isinstance(memories, str | bytes) or not isinstance(memories, Sequence):
            raise InvalidInputError("memories must be a list of NewMemory")
        drafts = []
        for item in memories:
            if not isinstance(item, NewMemory):
                raise InvalidInputError(f"memories must hold NewMemory items, got {type(item).__name__}")
            drafts.append(self._draft(uid, item, on_oversize=on_oversize))
        keys = [d.memory_key for d in drafts]
        if len(set(keys)) != len(keys):
            dup = next(k for k in keys if keys.count(k) > 1)
            raise InvalidInputError(f"memory_key {dup!r} appears twice in one batch")
        if not drafts:
            return []
        prepared = await self._prepare(drafts)
        async with self._db.write() as session:
            existing = await self._existing(session, uid, keys)
            if existing and on_conflict == "error":
                key = next(k for k in keys if k in existing)
                raise DuplicateMemoryKeyError(key, inactive=not existing[key].is_active)
            revision = await _revision.bump(session, self._db.backend, uid)
            memory_rows: list[dict[str, Any]] = []
            kw_rows: list[dict[str, Any]] = []
            index_rows: list[dict[str, Any]] = []
            written: list[MemoryRecord] = []
            for item in prepared:
                old = existing.get(item.draft.memory_key)
                if old is not None:
                    if on_conflict == "skip":
                        continue
                    values = await self._replace(session, old, item, revision=revision)
                else:
                    values = self._row_values(item, memory_id=uuid.uuid4(), revision=revision)
                    memory_rows.append(values)
                    kw_rows.extend(keyword_rows(values["id"], item.keywords))
                    if item.analysis is not None:
                        index_rows.append(self._index_row(values["id"], item.analysis))
                written.append(_from_values(values))
            if memory_rows:
                try:
                    await session.execute(AgentMemoryTable.__table__.insert(), memory_rows)
                except IntegrityError:
                    # Another writer took one of the keys between our check and the insert.
                    taken = ", ".join(sorted(r["memory_key"] for r in memory_rows))
                    raise DuplicateMemoryKeyError(taken[:200], inactive=False) from None
            if kw_rows:
                await session.execute(AgentMemoryKeywordsTable.__table__.insert(), kw_rows)
            if index_rows:
                await session.execute(AgentMemorySearchIndexTable.__table__.insert(), index_rows)
        self._changed(uid)
        return written

    async def upsert(
        self,
        *,
        user_id: str | int,
        memory_key: str,
        content: str,
        summary: str | None = None,
        memory_type: str = "general",
        friend_id: str | int | None = None,
        metadata: dict[str, Any] | None = None,
        created_at: datetime | None = None,
        keywords: Sequence[str | tuple[str, float] | KeywordInput] | None = None,
        on_oversize: OnOversize = "truncate",
        shared: bool = False,
    ) -> UpsertResult:
        """Store a memory under ``memory_key``, replacing the user's memory of that key if any.

        Replacing keeps ``id`` and ``created_at`` (unless given), reactivates a deleted memory,
        resets access statistics and recomputes its keywords.
        """
        uid = v.user_id(user_id)
        item = NewMemory(
            memory_key=memory_key,
            content=content,
            summary=summary,
            memory_type=memory_type,
            friend_id=friend_id,
            metadata=metadata,
            created_at=created_at,
            keywords=keywords,
            shared=shared,
        )
        prepared = (await self._prepare([self._draft(uid, item, on_oversize=on_oversize)]))[0]
        for attempt in range(2):
            try:
                async with self._db.write() as session:
                    existing = (await self._existing(session, uid, [memory_key])).get(memory_key)
                    revision = await _revision.bump(session, self._db.backend, uid)
                    if existing is not None:
                        values = await self._replace(
                            session, existing, prepared, revision=revision, keep_created=created_at is None
                        )
                        created = False
                    else:
                        values = self._row_values(prepared, memory_id=uuid.uuid4(), revision=revision)
                        created = True
                        await session.execute(AgentMemoryTable.__table__.insert(), [values])
                        if prepared.keywords:
                            await session.execute(
                                AgentMemoryKeywordsTable.__table__.insert(),
                                keyword_rows(values["id"], prepared.keywords),
                            )
                        if prepared.analysis is not None:
                            await session.execute(
                                AgentMemorySearchIndexTable.__table__.insert(),
                                [self._index_row(values["id"], prepared.analysis)],
                            )
                break
            except IntegrityError:
                if attempt == 1:
                    raise
        self._changed(uid)
        return UpsertResult(record=_from_values(values), created=created)

    async def delete(self, *, user_id: str | int, memory_key: str, hard: bool = False) -> bool:
        """Soft-delete (``is_active = False``) the user's memory; ``hard=True`` removes the row.

        Returns ``False`` when the user has no such (active) memory.
        """
        uid = v.user_id(user_id)
        key = v.memory_key(memory_key)
        async with self._db.write() as session:
            where = and_(AgentMemoryTable.user_id == uid, AgentMemoryTable.memory_key == key)
            if hard:
                target = await session.scalar(select(AgentMemoryTable.id).where(where))
                if target is None:
                    return False
                await _revision.bump(session, self._db.backend, uid, hard_delete=True)
                await session.execute(delete(AgentMemoryTable).where(AgentMemoryTable.id == target))
            else:
                target = await session.scalar(select(AgentMemoryTable.id).where(where, AgentMemoryTable.is_active))
                if target is None:
                    return False
                revision = await _revision.bump(session, self._db.backend, uid)
                await session.execute(
                    update(AgentMemoryTable)
                    .where(AgentMemoryTable.id == target)
                    .values(is_active=False, updated_at=utcnow(), revision=revision)
                )
        self._changed(uid)
        return True
