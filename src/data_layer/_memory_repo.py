"""Memories, their keywords and the keyword synonyms.

Every method takes ``user_id`` and touches only that user's rows; there is no call that reads across
users. The synonym table is shared vocabulary (seed 002 section 3.2.2) and holds no user data.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import Select, and_, delete, func, or_, select, tuple_, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from . import _validation as v
from ._dialect import insert_ignoring, insert_updating
from ._engine import Database
from ._errors import DuplicateMemoryKeyError, InvalidInputError, MemoryNotFoundError
from ._records import (
    KeywordInput,
    KeywordRecord,
    MemoryDraft,
    MemoryRecord,
    Page,
    SynonymRecord,
    UpsertResult,
)
from ._tables import AgentMemoryKeywordsTable, AgentMemoryTable, KeywordSynonymsTable
from ._types import utcnow

OnOversize = Literal["truncate", "error"]
OnConflict = Literal["error", "replace", "skip"]

#: Computes keywords for a memory about to be written (installed by the search layer).
KeywordProvider = Callable[[MemoryDraft], Sequence[KeywordInput]]
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


def _record(row: AgentMemoryTable) -> MemoryRecord:
    return MemoryRecord(
        id=row.id,
        memory_key=row.memory_key,
        user_id=row.user_id,
        friend_id=row.friend_id,
        memory_type=row.memory_type,
        summary=row.summary,
        content=row.content,
        metadata=dict(row.content_metadata or {}),
        created_at=row.created_at,
        updated_at=row.updated_at,
        last_accessed_at=row.last_accessed_at,
        access_count=row.access_count,
        is_active=row.is_active,
        needs_keyword_extraction=row.needs_keyword_extraction,
    )


def _score(value: float | None) -> float:
    return 0.8 if value is None else value


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


class MemoryRepository:
    """Reads and writes ``agent_memories``, ``agent_memory_keywords`` and ``keyword_synonyms``.

    >>> rec = await layer.memory.add(user_id="u1", memory_key="db-config-001",
    ...                              content='{"host": "localhost"}', summary="MySQL config")  # doctest: +SKIP
    >>> (await layer.memory.retrieve_memory(memory_key="db-config-001", user_id="u1")).summary  # doctest: +SKIP
    'MySQL config'
    """

    def __init__(self, db: Database) -> None:
        self._db = db
        self._keyword_provider: KeywordProvider | None = None
        self._listeners: list[ChangeListener] = []

    # -- hooks -----------------------------------------------------------------------------------

    def set_keyword_provider(self, provider: KeywordProvider | None) -> None:
        """Compute keywords on every write with ``provider`` (``None``: mark memories for backfill)."""
        self._keyword_provider = provider

    def add_listener(self, listener: ChangeListener) -> None:
        """Call ``listener(user_id)`` after every committed change to that user's memories."""
        self._listeners.append(listener)

    def _changed(self, user_id: str) -> None:
        for listener in self._listeners:
            listener(user_id)

    # -- writes ----------------------------------------------------------------------------------

    def _draft(self, uid: str, item: NewMemory, *, on_oversize: OnOversize) -> MemoryDraft:
        key = v.memory_key(item.memory_key)
        content, metadata = v.content_and_metadata(item.content, item.metadata, on_oversize=on_oversize)
        return MemoryDraft(
            memory_key=key,
            user_id=uid,
            friend_id=v.scope_id(item.friend_id, name="friend_id", optional=True),
            memory_type=v.memory_type(item.memory_type),
            summary=v.summary(item.summary, content),
            content=content,
            metadata=metadata,
            created_at=v.aware_datetime(item.created_at, name="created_at") or utcnow(),
            keywords=v.keyword_inputs(item.keywords),
        )

    def _keywords_for(self, draft: MemoryDraft) -> tuple[list[KeywordInput], bool]:
        """The keywords to store and whether extraction is still pending."""
        merged: dict[str, KeywordInput] = {k.keyword: k for k in draft.keywords}
        if self._keyword_provider is None:
            return list(merged.values()), True
        for kw in v.keyword_inputs(list(self._keyword_provider(draft))):
            if kw.keyword not in merged:
                merged[kw.keyword] = kw
        return list(merged.values()), False

    @staticmethod
    def _row_values(draft: MemoryDraft, *, pending: bool, memory_id: uuid.UUID) -> dict[str, Any]:
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
            "needs_keyword_extraction": pending,
        }

    @staticmethod
    def _keyword_rows(memory_id: uuid.UUID, keywords: Sequence[KeywordInput]) -> list[dict[str, Any]]:
        now = utcnow()
        return [
            {
                "memory_id": memory_id,
                "keyword": k.keyword,
                "weight": k.weight,
                "extraction_source": k.source,
                "created_at": now,
            }
            for k in keywords
        ]

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
    ) -> MemoryRecord:
        """Store a new memory. A key the user already has raises :class:`DuplicateMemoryKeyError`.

        ``friend_id=None`` makes the memory visible to all of the user's AI friends (profiles);
        an event memory names its friend. Content over 100 KB is cut and
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
        prepared = [(d, *self._keywords_for(d)) for d in drafts]
        async with self._db.write() as session:
            existing = await self._existing(session, uid, keys)
            if existing and on_conflict == "error":
                key = next(k for k in keys if k in existing)
                raise DuplicateMemoryKeyError(key, inactive=not existing[key].is_active)
            memory_rows: list[dict[str, Any]] = []
            keyword_rows: list[dict[str, Any]] = []
            written: list[MemoryRecord] = []
            for draft, kws, pending in prepared:
                old = existing.get(draft.memory_key)
                if old is not None:
                    if on_conflict == "skip":
                        continue
                    values = await self._replace(session, old, draft, kws, pending)
                else:
                    values = self._row_values(draft, pending=pending, memory_id=uuid.uuid4())
                    memory_rows.append(values)
                    keyword_rows.extend(self._keyword_rows(values["id"], kws))
                written.append(_from_values(values))
            if memory_rows:
                try:
                    await session.execute(AgentMemoryTable.__table__.insert(), memory_rows)
                except IntegrityError:
                    # Another writer took one of the keys between our check and the insert.
                    taken = ", ".join(sorted(r["memory_key"] for r in memory_rows))
                    raise DuplicateMemoryKeyError(taken[:200], inactive=False) from None
            if keyword_rows:
                await session.execute(AgentMemoryKeywordsTable.__table__.insert(), keyword_rows)
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
        )
        draft = self._draft(uid, item, on_oversize=on_oversize)
        kws, pending = self._keywords_for(draft)
        for attempt in range(2):
            try:
                async with self._db.write() as session:
                    existing = (await self._existing(session, uid, [draft.memory_key])).get(draft.memory_key)
                    if existing is not None:
                        values = await self._replace(
                            session, existing, draft, kws, pending, keep_created=created_at is None
                        )
                        created = False
                    else:
                        values = self._row_values(draft, pending=pending, memory_id=uuid.uuid4())
                        created = True
                        await session.execute(AgentMemoryTable.__table__.insert(), [values])
                        if kws:
                            await session.execute(
                                AgentMemoryKeywordsTable.__table__.insert(),
                                self._keyword_rows(values["id"], kws),
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
        draft: MemoryDraft,
        kws: Sequence[KeywordInput],
        pending: bool,
        *,
        keep_created: bool = False,
    ) -> dict[str, Any]:
        """Overwrite ``old`` with ``draft``; returns the row's new values."""
        values = self._row_values(draft, pending=pending, memory_id=old.id)
        if keep_created:
            values["created_at"] = old.created_at
        await session.execute(
            update(AgentMemoryTable)
            .where(AgentMemoryTable.id == old.id)
            .values(**{k: val for k, val in values.items() if k != "id"})
        )
        await session.execute(delete(AgentMemoryKeywordsTable).where(AgentMemoryKeywordsTable.memory_id == old.id))
        if kws:
            await session.execute(AgentMemoryKeywordsTable.__table__.insert(), self._keyword_rows(old.id, kws))
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

    @staticmethod
    async def _by_ids(session: AsyncSession, ids: Sequence[uuid.UUID]) -> list[AgentMemoryTable]:
        rows: list[AgentMemoryTable] = []
        for start in range(0, len(ids), 500):
            chunk = list(ids[start : start + 500])
            result = await session.scalars(
                select(AgentMemoryTable).where(AgentMemoryTable.id.in_(chunk)).execution_options(populate_existing=True)
            )
            rows.extend(result)
        return rows

    async def delete(self, *, user_id: str | int, memory_key: str, hard: bool = False) -> bool:
        """Soft-delete (``is_active = False``) the user's memory; ``hard=True`` removes the row.

        Returns ``False`` when the user has no such (active) memory.
        """
        uid = v.user_id(user_id)
        key = v.memory_key(memory_key)
        async with self._db.write() as session:
            where = and_(AgentMemoryTable.user_id == uid, AgentMemoryTable.memory_key == key)
            if hard:
                result = await session.execute(delete(AgentMemoryTable).where(where))
            else:
                result = await session.execute(
                    update(AgentMemoryTable)
                    .where(where, AgentMemoryTable.is_active.is_(True))
                    .values(is_active=False, updated_at=utcnow())
                )
        changed = bool(result.rowcount)  # type: ignore[attr-defined]
        if changed:
            self._changed(uid)
        return changed

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
            return _record(row) if row is not None else None
        async with self._db.write() as session:
            await session.execute(
                update(AgentMemoryTable)
                .where(*conditions)
                .values(access_count=AgentMemoryTable.access_count + 1, last_accessed_at=utcnow())
            )
            row = await session.scalar(
                select(AgentMemoryTable).where(*conditions).execution_options(populate_existing=True)
            )
        return _record(row) if row is not None else None

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
        return {k: _record(r) for k, r in found.items() if include_inactive or r.is_active}

    async def get_by_ids(self, *, user_id: str | int, ids: Sequence[uuid.UUID]) -> list[MemoryRecord]:
        """The user's active memories with these ids, in the given order (others are left out)."""
        uid = v.user_id(user_id)
        async with self._db.read() as session:
            rows = await self._by_ids(session, list(ids))
        by_id = {r.id: r for r in rows if r.user_id == uid and r.is_active}
        return [_record(by_id[i]) for i in ids if i in by_id]

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
        fid = v.scope_id(friend_id, name="friend_id", optional=True)
        stmt = select(AgentMemoryTable).where(AgentMemoryTable.user_id == uid)
        if not include_inactive:
            stmt = stmt.where(AgentMemoryTable.is_active.is_(True))
        if types is not None:
            stmt = stmt.where(AgentMemoryTable.memory_type.in_(types))
        if lo is not None:
            stmt = stmt.where(AgentMemoryTable.created_at >= lo)
        if hi is not None:
            stmt = stmt.where(AgentMemoryTable.created_at < hi)
        if fid is not None:
            if include_shared:
                stmt = stmt.where(or_(AgentMemoryTable.friend_id == fid, AgentMemoryTable.friend_id.is_(None)))
            else:
                stmt = stmt.where(AgentMemoryTable.friend_id == fid)
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
            at = datetime.fromisoformat(at_iso)
            stmt = stmt.where(
                tuple_(AgentMemoryTable.created_at, AgentMemoryTable.id) < tuple_(at, uuid.UUID(at_id))  # type: ignore[arg-type]
            )
        stmt = stmt.order_by(AgentMemoryTable.created_at.desc(), AgentMemoryTable.id.desc()).limit(size + 1)
        async with self._db.read() as session:
            rows = list(await session.scalars(stmt))
        items = [_record(r) for r in rows[:size]]
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

    # -- keywords ----------------------------------------------------------------------------------

    async def _memory_id(self, session: AsyncSession, uid: str, key: str) -> uuid.UUID:
        memory_id = await session.scalar(
            select(AgentMemoryTable.id).where(
                AgentMemoryTable.user_id == uid,
                AgentMemoryTable.memory_key == key,
                AgentMemoryTable.is_active.is_(True),
            )
        )
        if memory_id is None:
            raise MemoryNotFoundError(key)
        return memory_id

    async def get_keywords(self, *, user_id: str | int, memory_key: str) -> list[KeywordRecord]:
        """The keywords of the user's memory, heaviest first."""
        uid = v.user_id(user_id)
        key = v.memory_key(memory_key)
        async with self._db.read() as session:
            memory_id = await self._memory_id(session, uid, key)
            rows = await session.scalars(
                select(AgentMemoryKeywordsTable)
                .where(AgentMemoryKeywordsTable.memory_id == memory_id)
                .order_by(AgentMemoryKeywordsTable.weight.desc(), AgentMemoryKeywordsTable.keyword)
            )
            return [
                KeywordRecord(
                    r.memory_id,
                    r.keyword,
                    1.0 if r.weight is None else r.weight,
                    r.extraction_source or "llm",
                    r.created_at,
                )
                for r in rows
            ]

    async def add_keywords(
        self,
        *,
        user_id: str | int,
        memory_key: str,
        keywords: Sequence[str | tuple[str, float] | KeywordInput],
    ) -> int:
        """Attach keywords (plain strings are user tags of weight 1.0); an existing keyword is re-weighted.

        Returns how many keywords were written.
        """
        uid = v.user_id(user_id)
        key = v.memory_key(memory_key)
        kws = v.keyword_inputs(list(keywords))
        async with self._db.write() as session:
            memory_id = await self._memory_id(session, uid, key)
            if kws:
                stmt = insert_updating(
                    self._db.backend,
                    AgentMemoryKeywordsTable,
                    conflict=["memory_id", "keyword"],
                    update=["weight", "extraction_source"],
                )
                await session.execute(stmt, self._keyword_rows(memory_id, kws))
        self._changed(uid)
        return len(kws)

    async def replace_keywords(
        self,
        *,
        user_id: str | int,
        memory_key: str,
        keywords: Sequence[str | tuple[str, float] | KeywordInput],
        keep_user_tags: bool = True,
    ) -> int:
        """Replace the memory's keywords (user tags stay unless ``keep_user_tags=False``).

        Clears ``needs_keyword_extraction``. Returns how many keywords the memory has afterwards.
        """
        uid = v.user_id(user_id)
        key = v.memory_key(memory_key)
        kws = v.keyword_inputs(list(keywords))
        async with self._db.write() as session:
            memory_id = await self._memory_id(session, uid, key)
            await self._replace_keyword_rows(session, memory_id, kws, keep_user_tags=keep_user_tags)
            total = await session.scalar(select(func.count()).where(AgentMemoryKeywordsTable.memory_id == memory_id))
        self._changed(uid)
        return int(total or 0)

    async def _replace_keyword_rows(
        self,
        session: AsyncSession,
        memory_id: uuid.UUID,
        kws: Sequence[KeywordInput],
        *,
        keep_user_tags: bool,
    ) -> None:
        wipe = delete(AgentMemoryKeywordsTable).where(AgentMemoryKeywordsTable.memory_id == memory_id)
        if keep_user_tags:
            wipe = wipe.where(AgentMemoryKeywordsTable.extraction_source != "user_tag")
        await session.execute(wipe)
        if kws:
            stmt = insert_ignoring(self._db.backend, AgentMemoryKeywordsTable, conflict=["memory_id", "keyword"])
            await session.execute(stmt, self._keyword_rows(memory_id, kws))
        await session.execute(
            update(AgentMemoryTable).where(AgentMemoryTable.id == memory_id).values(needs_keyword_extraction=False)
        )

    async def remove_keywords(self, *, user_id: str | int, memory_key: str, keywords: Sequence[str]) -> int:
        """Detach keywords from the user's memory; returns how many were removed."""
        uid = v.user_id(user_id)
        key = v.memory_key(memory_key)
        if isinstance(keywords, str):
            raise InvalidInputError("keywords must be a list of str")
        words = [v.keyword_text(k) for k in keywords]
        async with self._db.write() as session:
            memory_id = await self._memory_id(session, uid, key)
            result = await session.execute(
                delete(AgentMemoryKeywordsTable).where(
                    AgentMemoryKeywordsTable.memory_id == memory_id,
                    AgentMemoryKeywordsTable.keyword.in_(words),
                )
            )
        self._changed(uid)
        return int(result.rowcount or 0)  # type: ignore[attr-defined]

    async def pending_keyword_extraction(self, *, user_id: str | int, limit: int = 500) -> list[MemoryRecord]:
        """Active memories of the user still marked ``needs_keyword_extraction``."""
        uid = v.user_id(user_id)
        size = v.bounded_int(limit, name="limit", low=1, high=10_000)
        async with self._db.read() as session:
            rows = await session.scalars(
                select(AgentMemoryTable)
                .where(
                    AgentMemoryTable.user_id == uid,
                    AgentMemoryTable.is_active.is_(True),
                    AgentMemoryTable.needs_keyword_extraction.is_(True),
                )
                .order_by(AgentMemoryTable.created_at, AgentMemoryTable.id)
                .limit(size)
            )
            return [_record(r) for r in rows]

    async def store_extracted_keywords(
        self, *, user_id: str | int, extracted: Sequence[tuple[uuid.UUID, Sequence[KeywordInput]]]
    ) -> int:
        """Write keywords computed by a backfill for the user's memories and clear their flag.

        Returns how many memories were updated (ids of other users are ignored).
        """
        uid = v.user_id(user_id)
        done = 0
        async with self._db.write() as session:
            ids = [mid for mid, _ in extracted]
            owned = set(
                await session.scalars(
                    select(AgentMemoryTable.id).where(AgentMemoryTable.user_id == uid, AgentMemoryTable.id.in_(ids))
                )
            )
            for memory_id, kws in extracted:
                if memory_id not in owned:
                    continue
                await self._replace_keyword_rows(session, memory_id, v.keyword_inputs(list(kws)), keep_user_tags=True)
                done += 1
        if done:
            self._changed(uid)
        return done

    async def users_pending_keyword_extraction(self) -> list[str]:
        """Maintenance: the ids (only) of users with memories awaiting keyword extraction (backfill)."""
        async with self._db.read() as session:
            rows = await session.scalars(
                select(AgentMemoryTable.user_id)
                .where(AgentMemoryTable.is_active.is_(True), AgentMemoryTable.needs_keyword_extraction.is_(True))
                .distinct()
                .order_by(AgentMemoryTable.user_id)
            )
            return list(rows)

    # -- synonyms (shared vocabulary) --------------------------------------------------------------

    async def add_synonym(
        self, keyword: str, synonym: str, *, similarity_score: float = 0.8, bidirectional: bool = True
    ) -> None:
        """Record that ``synonym`` can stand for ``keyword`` (and, by default, the other way round)."""
        kw = v.keyword_text(keyword)
        syn = v.keyword_text(synonym)
        if kw == syn:
            raise InvalidInputError(f"a keyword cannot be its own synonym ({kw!r})")
        score = v.unit_float(similarity_score, name="similarity_score")
        pairs = [(kw, syn)] + ([(syn, kw)] if bidirectional else [])
        stmt = insert_updating(
            self._db.backend,
            KeywordSynonymsTable,
            conflict=["keyword", "synonym"],
            update=["similarity_score"],
        )
        async with self._db.write() as session:
            await session.execute(stmt, [{"keyword": a, "synonym": b, "similarity_score": score} for a, b in pairs])

    async def remove_synonym(self, keyword: str, synonym: str, *, bidirectional: bool = True) -> int:
        """Forget a synonym pair; returns how many rows were removed."""
        kw = v.keyword_text(keyword)
        syn = v.keyword_text(synonym)
        pairs = [(kw, syn)] + ([(syn, kw)] if bidirectional else [])
        async with self._db.write() as session:
            result = await session.execute(
                delete(KeywordSynonymsTable).where(
                    or_(*(and_(KeywordSynonymsTable.keyword == a, KeywordSynonymsTable.synonym == b) for a, b in pairs))
                )
            )
        return int(result.rowcount or 0)  # type: ignore[attr-defined]

    async def synonyms_for(self, keywords: Sequence[str]) -> dict[str, list[SynonymRecord]]:
        """The recorded synonyms of each keyword, most similar first (keywords are lower-cased)."""
        if isinstance(keywords, str):
            raise InvalidInputError("keywords must be a list of str")
        words = sorted({v.keyword_text(k) for k in keywords})
        result: dict[str, list[SynonymRecord]] = {w: [] for w in words}
        if not words:
            return result
        async with self._db.read() as session:
            rows = await session.scalars(
                select(KeywordSynonymsTable)
                .where(KeywordSynonymsTable.keyword.in_(words))
                .order_by(KeywordSynonymsTable.similarity_score.desc(), KeywordSynonymsTable.synonym)
            )
            for r in rows:
                result[r.keyword].append(SynonymRecord(r.keyword, r.synonym, _score(r.similarity_score)))
        return result

    async def list_synonyms(self, *, limit: int = 1000) -> list[SynonymRecord]:
        """Every synonym pair, alphabetically (at most ``limit``)."""
        size = v.bounded_int(limit, name="limit", low=1, high=100_000)
        async with self._db.read() as session:
            rows = await session.scalars(
                select(KeywordSynonymsTable)
                .order_by(KeywordSynonymsTable.keyword, KeywordSynonymsTable.synonym)
                .limit(size)
            )
            return [SynonymRecord(r.keyword, r.synonym, _score(r.similarity_score)) for r in rows]
