"""Memories: add, upsert, read, list, delete. Keyword, synonym and index operations are mixed in from
``_keyword_ops`` and ``_index_ops`` so that ``layer.memory`` offers them all.

Every method takes ``user_id`` and touches only that user's rows; there is no call that reads across
users. Every write bumps the user's revision (``memory_index_state``) in the same transaction.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import Select, and_, delete, func, select, tuple_, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from . import _revision
from . import _validation as v
from ._engine import Database
from ._errors import DuplicateMemoryKeyError, InvalidInputError
from ._index_ops import IndexOpsMixin
from ._records import KeywordInput, MemoryAnalysis, MemoryAnalyzer, MemoryDraft, MemoryRecord, Page, UpsertResult
from ._rows import keyword_rows, record_of
from ._scope import Scope
from ._tables import AgentMemoryKeywordsTable, AgentMemorySearchIndexTable, AgentMemoryTable
from ._types import utcnow

OnOversize = Literal["truncate", "error"]
OnConflict = Literal["error", "replace", "skip"]

#: Called after a commit that changed a user's memories, with the user id.
ChangeListener = Callable[[str], None]

MAX_PAGE = 1000


@dataclass(frozen=True, slots=True)
class NewMemory:
    """One memory for :meth:`MemoryRepository.add_many`; the fields mean what ``add``'s arguments mean."""

    memory_key: str
    content: str
    summary: str | None = None
    memory_type: str = "general"
    friend_id: str | int | None = None
    metadata: dict[str, Any] | None = None
    created_at: datetime | None = None
    keywords: Sequence[str | tuple[str, float] | KeywordInput] | None = None
    #: An event memory without ``friend_id`` is refused unless this is set: shared on purpose.
    shared: bool = False


#: Memory types that belong to one AI friend's conversation: they must name the friend.
FRIEND_OWNED_TYPES = frozenset({"event"})


def _from_values(values: dict[str, Any]) -> MemoryRecord:
    return MemoryRecord(
        id=values["id"],
        memory_key=values["memory_key"],
        user_id=values["user_id"],
        friend_id=values["friend_id"],
        memory_type=values["memory_type"],
        summary=values["summary"],
        content=values["content"],
        metadata=dict(values["content_metadata"]),
        created_at=values["created_at"],
        updated_at=values["updated_at"],
        last_accessed_at=values["last_accessed_at"],
        access_count=values["access_count"],
        is_active=values["is_active"],
        needs_keyword_extraction=values["needs_keyword_extraction"],
    )


@dataclass(frozen=True, slots=True)
class _Prepared:
    draft: MemoryDraft
    keywords: list[KeywordInput]
    analysis: MemoryAnalysis | None


class MemoryRepository(IndexOpsMixin):
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

    def _draft(self, uid: str, item: NewMemory, *, on_oversize: OnOversize) -> MemoryDraft:
        key = v.memory_key(item.memory_key)
        friend = v.scope_id(item.friend_id, name="friend_id", optional=True)
        kind = v.memory_type(item.memory_type)
        if not isinstance(item.shared, bool):
            raise InvalidInputError("shared must be true or false")
        if friend is None and kind in FRIEND_OWNED_TYPES and not item.shared:
            raise InvalidInputError(
                f"memory {key!r} is an {kind} memory without friend_id: give the AI friend whose conversation it "
                "belongs to, or pass shared=True to show it to every friend of the user"
            )
        content, metadata = v.content_and_metadata(item.content, item.metadata, on_oversize=on_oversize)
        return MemoryDraft(
            memory_key=key,
            user_id=uid,
            friend_id=friend,
            memory_type=kind,
            summary=v.summary(item.summary, content),
            content=content,
            metadata=metadata,
            created_at=v.aware_datetime(item.created_at, name="created_at") or utcnow(),
            keywords=v.keyword_inputs(item.keywords),
        )

    async def _prepare(self, drafts: Sequence[MemoryDraft]) -> list[_Prepared]:
        """Run the analyzer (outside any transaction) and merge its keywords under the user tags."""
        if self._analyzer is None:
            return [_Prepared(d, list(d.keywords), None) for d in drafts]
        analyses = await self._analyzer.analyze(drafts)
        if len(analyses) != len(drafts):
            raise RuntimeError("the memory analyzer returned a different number of analyses than drafts")
        prepared = []
        for draft, analysis in zip(drafts, analyses, strict=True):
            merged: dict[str, KeywordInput] = {k.keyword: k for k in draft.keywords}
            for kw in v.keyword_inputs(list(analysis.keywords)):
                merged.setdefault(kw.keyword, kw)
            prepared.append(_Prepared(draft, list(merged.values()), analysis))
        return prepared

    @staticmethod
    def _row_values(item: _Prepared, *, memory_id: uuid.UUID, revision: int) -> dict[str, Any]:
        draft = item.draft
        return {
            "id": memory_id,
            "memory_key": draft.memory_key,
            "user_id": draft.user_id,
            "friend_id": draft.friend_id,
            "memory_type": draft.memory_type,
            "summary": draft.summary,
            "content": draft.content,
            "content_metadata": draft.metadata,
            "created_at": draft.created_at,
            "updated_at": utcnow(),
            "last_accessed_at": None,
            "access_count": 0,
            "is_active": True,
            "needs_keyword_extraction": item.analysis is None,
            "revision": revision,
        }

    @staticmethod
    def _index_row(memory_id: uuid.UUID, analysis: MemoryAnalysis) -> dict[str, Any]:
        return {
            "memory_id": memory_id,
            "analyzer": analysis.analyzer,
            "tokens": analysis.tokens,
            "embedder": analysis.embedder,
            "embedding": analysis.embedding,
            "updated_at": utcnow(),
        }

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

    async def _replace(
        self,
        session: AsyncSession,
        old: AgentMemoryTable,
        item: _Prepared,
        *,
        revision: int,
        keep_created: bool = False,
    ) -> dict[str, Any]:
        """Overwrite ``old`` with ``item``; returns the row's new values."""
        values = self._row_values(item, memory_id=old.id, revision=revision)
        if keep_created:
            values["created_at"] = old.created_at
        await session.execute(
            update(AgentMemoryTable)
            .where(AgentMemoryTable.id == old.id)
            .values(**{k: val for k, val in values.items() if k != "id"})
        )
        await session.execute(delete(AgentMemoryKeywordsTable).where(AgentMemoryKeywordsTable.memory_id == old.id))
        await session.execute(
            delete(AgentMemorySearchIndexTable).where(AgentMemorySearchIndexTable.memory_id == old.id)
        )
        if item.keywords:
            await session.execute(AgentMemoryKeywordsTable.__table__.insert(), keyword_rows(old.id, item.keywords))
        if item.analysis is not None:
            await session.execute(
                AgentMemorySearchIndexTable.__table__.insert(), [self._index_row(old.id, item.analysis)]
            )
        return values

    @staticmethod
    async def _existing(session: AsyncSession, uid: str, keys: Sequence[str]) -> dict[str, AgentMemoryTable]:
        found: dict[str, AgentMemoryTable] = {}
        for start in range(0, len(keys), 500):
            chunk = list(keys[start : start + 500])
            rows = await session.scalars(
                select(AgentMemoryTable).where(AgentMemoryTable.user_id == uid, AgentMemoryTable.memory_key.in_(chunk))
            )
            found.update({r.memory_key: r for r in rows})
        return found

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

    # -- reads -----------------------------------------------------------------------------------

    async def retrieve_memory(
        self, *, memory_key: str, user_id: str | int, touch: bool = True, include_inactive: bool = False
    ) -> MemoryRecord | None:
        """The user's memory with this key, or ``None``. A user only ever reaches their own memories.

        ``touch`` counts the read (``access_count``, ``last_accessed_at``), which ranking uses.
        """
        uid = v.user_id(user_id)
        key = v.memory_key(memory_key)
        conditions = [AgentMemoryTable.user_id == uid, AgentMemoryTable.memory_key == key]
        if not include_inactive:
            conditions.append(AgentMemoryTable.is_active.is_(True))
        if not touch:
            async with self._db.read() as session:
                row = await session.scalar(select(AgentMemoryTable).where(*conditions))
            return record_of(row) if row is not None else None
        async with self._db.write() as session:
            await session.execute(
                update(AgentMemoryTable)
                .where(*conditions)
                .values(access_count=AgentMemoryTable.access_count + 1, last_accessed_at=utcnow())
            )
            row = await session.scalar(
                select(AgentMemoryTable).where(*conditions).execution_options(populate_existing=True)
            )
        return record_of(row) if row is not None else None

    async def get_many(
        self, *, user_id: str | int, memory_keys: Sequence[str], include_inactive: bool = False
    ) -> dict[str, MemoryRecord]:
        """The user's memories for these keys (missing keys are absent from the result)."""
        uid = v.user_id(user_id)
        if isinstance(memory_keys, str) or not isinstance(memory_keys, Sequence):
            raise InvalidInputError("memory_keys must be a list of keys")
        keys = [v.memory_key(k) for k in memory_keys]
        async with self._db.read() as session:
            found = await self._existing(session, uid, keys)
        return {k: record_of(r) for k, r in found.items() if include_inactive or r.is_active}

    async def get_by_ids(self, *, user_id: str | int, ids: Sequence[uuid.UUID]) -> list[MemoryRecord]:
        """The user's active memories with these ids, in the given order (others are left out)."""
        uid = v.user_id(user_id)
        wanted = list(ids)
        by_id: dict[uuid.UUID, MemoryRecord] = {}
        table = AgentMemoryTable.__table__
        # a bare connection (search fetches its results here); by primary key only: with the user in
        # the WHERE clause SQLite picks the per-user index and scans all of the user's rows, so
        # ownership is checked on the rows instead
        async with self._db.engine.connect() as conn:
            for start in range(0, len(wanted), 500):
                rows = await conn.execute(select(table).where(table.c.id.in_(wanted[start : start + 500])))
                by_id.update({r.id: record_of(r) for r in rows if r.user_id == uid and r.is_active})  # type: ignore[arg-type]
        return [by_id[i] for i in wanted if i in by_id]

    def _filtered(
        self,
        uid: str,
        *,
        memory_types: object,
        since: object,
        until: object,
        friend_id: object,
        include_shared: bool,
        include_inactive: bool,
    ) -> Select[Any]:
        types = v.memory_types(memory_types)
        lo, hi = v.time_range(since, until)
        scope = Scope.of(uid, friend_id, include_shared=include_shared)
        stmt = select(AgentMemoryTable).where(scope.memory_clause(AgentMemoryTable.user_id, AgentMemoryTable.friend_id))
        if not include_inactive:
            stmt = stmt.where(AgentMemoryTable.is_active.is_(True))
        if types is not None:
            stmt = stmt.where(AgentMemoryTable.memory_type.in_(types))
        if lo is not None:
            stmt = stmt.where(AgentMemoryTable.created_at >= lo)
        if hi is not None:
            stmt = stmt.where(AgentMemoryTable.created_at < hi)
        return stmt

    async def list_memories(
        self,
        *,
        user_id: str | int,
        memory_types: Sequence[str] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        friend_id: str | int | None = None,
        include_shared: bool = True,
        include_inactive: bool = False,
        limit: int = 50,
        cursor: str | None = None,
    ) -> Page[MemoryRecord]:
        """The user's memories, newest first, one page at a time.

        ``friend_id`` limits the listing to what that AI friend may see: its own memories plus the
        shared ones (``friend_id`` null, e.g. profiles); ``include_shared=False`` drops the shared
        ones. ``since``/``until`` bound ``created_at`` (``until`` exclusive).
        """
        uid = v.user_id(user_id)
        size = v.bounded_int(limit, name="limit", low=1, high=MAX_PAGE)
        stmt = self._filtered(
            uid,
            memory_types=memory_types,
            since=since,
            until=until,
            friend_id=friend_id,
            include_shared=include_shared,
            include_inactive=include_inactive,
        )
        if cursor is not None:
            at_iso, at_id = v.decode_cursor(cursor, kinds=(str, str))
            try:
                bound = tuple_(datetime.fromisoformat(at_iso), uuid.UUID(at_id))  # type: ignore[arg-type]
            except ValueError:
                raise InvalidInputError("cursor is not one this library produced; pass next_cursor unchanged") from None
            stmt = stmt.where(tuple_(AgentMemoryTable.created_at, AgentMemoryTable.id) < bound)
        stmt = stmt.order_by(AgentMemoryTable.created_at.desc(), AgentMemoryTable.id.desc()).limit(size + 1)
        async with self._db.read() as session:
            rows = list(await session.scalars(stmt))
        items = [record_of(r) for r in rows[:size]]
        next_cursor = None
        if len(rows) > size:
            last = items[-1]
            next_cursor = v.encode_cursor([last.created_at.isoformat(), str(last.id)])
        return Page(items=items, next_cursor=next_cursor)

    async def count(
        self,
        *,
        user_id: str | int,
        memory_types: Sequence[str] | None = None,
        friend_id: str | int | None = None,
        include_shared: bool = True,
        include_inactive: bool = False,
    ) -> int:
        """How many memories :meth:`list_memories` would list with these filters."""
        uid = v.user_id(user_id)
        stmt = self._filtered(
            uid,
            memory_types=memory_types,
            since=None,
            until=None,
            friend_id=friend_id,
            include_shared=include_shared,
            include_inactive=include_inactive,
        )
        async with self._db.read() as session:
            total = await session.scalar(select(func.count()).select_from(stmt.subquery()))
        return int(total or 0)
