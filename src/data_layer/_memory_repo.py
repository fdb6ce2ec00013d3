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
from sqlalchemy.ext.asyncio import AsyncSession

from . import _revision
from . import _validation as v
from ._combiner import CombinerPool
from ._engine import Database
from ._errors import DuplicateMemoryKeyError, InvalidInputError, NotFoundError, StaleMemoryError, StorageError
from ._index_ops import IndexOpsMixin
from ._memory_engine import number_rows
from ._memory_reads import MemoryReadsMixin
from ._memory_rows import MemoryRowsMixin, NewMemory, OnOversize, _from_values, _Prepared
from ._memory_search import MemorySearchMixin
from ._records import ExpectedContent, KeywordInput, MemoryAnalyzer, MemoryRecord, UpsertResult
from ._rows import keyword_rows
from ._tables import AgentMemoryKeywordsTable, AgentMemorySearchIndexTable, AgentMemoryTable
from ._types import utcnow

OnConflict = Literal["error", "replace", "skip"]

#: Called after a commit that changed a user's memories, with the user id.
ChangeListener = Callable[[str], None]


async def _flush_queued(items: Sequence[_QueuedAdd]) -> list[MemoryRecord | BaseException]:
    return await items[0][0]._flush_adds(items)


class MemoryRepository(MemoryReadsMixin, MemoryRowsMixin, IndexOpsMixin, MemorySearchMixin):
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

        Adds running at the same time are written together, one transaction per batch (group
        commit); each call still returns only once its memory is committed, and fails alone.
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
        uid = v.user_id(user_id)
        prepared = (await self._prepare([self._draft(uid, item, on_oversize=on_oversize)]))[0]
        # concurrent adds to one database share a transaction (group commit, see ``_combiner``)
        return await _ADDS.current(self._db.writer_key).submit((self, uid, prepared))

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
            results = await self._store(session, uid, prepared, on_conflict=on_conflict)
        self._changed(uid)
        return [r for r in results if isinstance(r, MemoryRecord)]

    async def _flush_adds(self, items: Sequence[_QueuedAdd]) -> list[MemoryRecord | BaseException]:
        """Write queued ``add`` calls of several callers in one transaction (see ``_combiner``).

        The items may come from other repositories on the same database file (separate engines);
        each item's repository is told of its change. A key that exists, or that an earlier item of
        the batch takes, fails that item alone. If the insert itself conflicts (another process took
        a key meanwhile), each item is retried alone.
        """
        by_user: dict[str, list[int]] = {}
        for index, (_, uid, _) in enumerate(items):
            by_user.setdefault(uid, []).append(index)
        results: list[MemoryRecord | BaseException] = [RuntimeError("not written")] * len(items)
        try:
            async with self._db.write(short=True) as session:  # at most MAX_BATCH memories: a short write
                # users in one order for every transaction: two processes locking the same users'
                # revision rows in opposite orders would deadlock (PostgreSQL), found by `bench load`
                for uid, indexes in sorted(by_user.items()):
                    stored = await self._store(session, uid, [items[i][2] for i in indexes], on_conflict="each")
                    for i, result in zip(indexes, stored, strict=True):
                        results[i] = result if result is not None else RuntimeError("skipped")
        except DuplicateMemoryKeyError:
            if len(items) == 1:
                raise
            alone: list[MemoryRecord | BaseException] = []
            for item in items:
                try:
                    alone.extend(await self._flush_adds([item]))
                except DuplicateMemoryKeyError as exc:
                    alone.append(exc)
            return alone
        for repository, uid in dict.fromkeys((repo, uid) for repo, uid, _ in items):
            repository._changed(uid)
        return results

    async def _store(
        self,
        session: AsyncSession,
        uid: str,
        prepared: Sequence[_Prepared],
        *,
        on_conflict: OnConflict | Literal["each"],
    ) -> list[MemoryRecord | DuplicateMemoryKeyError | None]:
        """Insert (or replace) one user's prepared memories in ``session``; one result per item.

        ``on_conflict="each"``: an existing or repeated key fails that item (its result is the error);
        ``"error"`` raises for the first existing key (nothing is written); ``"skip"`` gives ``None``.
        """
        keys = [p.draft.memory_key for p in prepared]
        # the revision row first (bump's rule); a refused duplicate rolls the bump back
        revision = await _revision.bump(session, self._db.backend, uid)
        existing = await self._existing(session, uid, keys)
        if existing and on_conflict == "error":
            key = next(k for k in keys if k in existing)
            raise DuplicateMemoryKeyError(key, inactive=not existing[key].is_active)
        memory_rows: list[dict[str, Any]] = []
        kw_rows: list[dict[str, Any]] = []
        index_rows: list[dict[str, Any]] = []
        results: list[MemoryRecord | DuplicateMemoryKeyError | None] = []
        taken: set[str] = set()
        for item in prepared:
            key = item.draft.memory_key
            old = existing.get(key)
            if on_conflict == "each" and (old is not None or key in taken):
                results.append(DuplicateMemoryKeyError(key, inactive=old is not None and not old.is_active))
                continue
            taken.add(key)
            if old is not None:
                if on_conflict == "skip":
                    results.append(None)
                    continue
                values = await self._replace(session, old, item, revision=revision)
            else:
                values = self._row_values(item, memory_id=uuid.uuid4(), revision=revision)
                memory_rows.append(values)
                kw_rows.extend(keyword_rows(uid, values["id"], item.keywords))
                if item.analysis is not None:
                    index_rows.append(
                        self._index_row(uid, values["id"], item.analysis, keyword_terms=item.keyword_terms)
                    )
            results.append(_from_values(values))
        if memory_rows:
            try:
                await session.execute(AgentMemoryTable.__table__.insert(), memory_rows)
            except IntegrityError:
                # Another writer took one of the keys between our check and the insert.
                names = ", ".join(sorted(r["memory_key"] for r in memory_rows))
                raise DuplicateMemoryKeyError(names[:200], inactive=False) from None
        if kw_rows:
            await session.execute(AgentMemoryKeywordsTable.__table__.insert(), kw_rows)
        if index_rows:
            await number_rows(session, self._db.backend, index_rows)
            await session.execute(AgentMemorySearchIndexTable.__table__.insert(), index_rows)
        return results

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
        must_exist: bool = False,
        expect: ExpectedContent | None = None,
        keep: NewMemory | None = None,
    ) -> UpsertResult:
        """Store a memory under ``memory_key``, replacing the user's memory of that key if any.

        Replacing keeps ``id`` and ``created_at`` (unless given), reactivates a deleted memory,
        resets access statistics and recomputes its keywords.

        ``must_exist=True`` is an edit: it replaces the user's active memory of that key, or raises
        ``NotFoundError`` and writes nothing when there is none, also when a delete (of the memory or of
        its AI friend) committed after the caller read it. Without it an edit racing a delete would
        store the memory again, after the delete had reported success.

        ``expect`` makes the edit conditional on what the caller read (:class:`ExpectedContent`): when the
        user's active memory of the key has other content by the time the edit commits (another edit came
        first), it raises :class:`StaleMemoryError` and writes nothing. ``keep`` is a memory written
        inactive in the same transaction (a profile item's earlier value, kept as a version): the kept
        value and the edit commit together or not at all; a key the user already has raises
        :class:`DuplicateMemoryKeyError` and writes nothing. The two together make read, keep and replace
        one step, so two edits of one item at once keep every value (the later one sees the earlier).

        >>> await repo.upsert(user_id="u1", memory_key="k", content="改过的内容", must_exist=True)  # doctest: +SKIP
        """
        if not isinstance(must_exist, bool):
            raise InvalidInputError(f"must_exist must be True or False, got {type(must_exist).__name__}")
        if expect is not None and not isinstance(expect, ExpectedContent):
            raise InvalidInputError(f"expect must be an ExpectedContent, got {type(expect).__name__}")
        if keep is not None and not isinstance(keep, NewMemory):
            raise InvalidInputError(f"keep must be a NewMemory, got {type(keep).__name__}")
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
        drafts = [self._draft(uid, item, on_oversize=on_oversize)]
        if keep is not None:
            drafts.append(self._draft(uid, keep, on_oversize="error"))
        prepared, *kept = await self._prepare(drafts)
        for attempt in range(2):
            try:
                async with self._db.write() as session:
                    # the revision row first (bump's rule): the look-up sees what a delete committed
                    revision = await _revision.bump(session, self._db.backend, uid)
                    existing = (await self._existing(session, uid, [memory_key])).get(memory_key)
                    if must_exist and (existing is None or not existing.is_active):
                        raise NotFoundError(
                            f"no memory {memory_key[:80]!r} to change: it was deleted; list the memories again"
                        )
                    held = existing.content if existing is not None and existing.is_active else None
                    if expect is not None and held != expect.content:
                        raise StaleMemoryError(memory_key)
                    if kept:
                        await self._store(session, uid, kept, on_conflict="error")
                        await session.execute(
                            update(AgentMemoryTable)
                            .where(
                                AgentMemoryTable.user_id == uid, AgentMemoryTable.memory_key == kept[0].draft.memory_key
                            )
                            .values(is_active=False)
                        )
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
                                keyword_rows(uid, values["id"], prepared.keywords),
                            )
                        if prepared.analysis is not None:
                            row = self._index_row(
                                uid, values["id"], prepared.analysis, keyword_terms=prepared.keyword_terms
                            )
                            await number_rows(session, self._db.backend, [row])
                            await session.execute(AgentMemorySearchIndexTable.__table__.insert(), [row])
                break
            except StorageError as exc:  # another writer inserted the key between our look-up and insert
                if exc.reason != "conflict" or attempt == 1:
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
                await session.execute(
                    delete(AgentMemoryTable).where(AgentMemoryTable.user_id == uid, AgentMemoryTable.id == target)
                )
            else:
                target = await session.scalar(select(AgentMemoryTable.id).where(where, AgentMemoryTable.is_active))
                if target is None:
                    return False
                revision = await _revision.bump(session, self._db.backend, uid)
                await session.execute(
                    update(AgentMemoryTable)
                    .where(AgentMemoryTable.user_id == uid, AgentMemoryTable.id == target)
                    .values(is_active=False, updated_at=utcnow(), revision=revision)
                )
        self._changed(uid)
        return True

    async def set_active(
        self,
        *,
        user_id: str | int,
        changes: dict[str, tuple[bool, dict[str, Any]]],
        add: NewMemory | None = None,
    ) -> list[str]:
        """Switch the user's memories on or off in one transaction, keeping their keywords and search
        rows: ``changes`` maps a key to ``(is_active, metadata updates)``, where an update to ``None``
        removes that metadata field. Keys the user does not have are left out of the result (the keys
        changed). Any number of keys, all in the one transaction: they are read a few hundred a statement
        (a forgetting may set aside more memories than :meth:`get_many` reads at once).

        ``add`` is a new memory written in the same transaction, before the changes (which may name it):
        the record of what was set aside commits with the setting aside, or neither does. A key the
        user already has raises :class:`DuplicateMemoryKeyError` and changes nothing.

        This is how a memory is set aside and brought back unchanged (a user's request to forget, and
        its undo); :meth:`delete` and :meth:`upsert` are the edits.

        >>> await repo.set_active(user_id="u1", changes={"k": (False, {"forgotten": {"by": "f-1"}})})  # doctest: +SKIP
        ['k']
        """
        uid = v.user_id(user_id)
        if not isinstance(changes, dict):
            raise InvalidInputError("changes must be a dict of memory key -> (is_active, metadata updates)")
        wanted: dict[str, tuple[bool, dict[str, Any]]] = {}
        for key, change in changes.items():
            if not (
                isinstance(change, tuple)
                and len(change) == 2
                and isinstance(change[0], bool)
                and isinstance(change[1], dict)
            ):
                raise InvalidInputError(f"changes[{key!r}] must be (is_active, metadata updates), e.g. (False, {{}})")
            wanted[v.memory_key(key)] = change
        if add is not None and not isinstance(add, NewMemory):
            raise InvalidInputError(f"add must be a NewMemory, got {type(add).__name__}")
        if not wanted and add is None:
            return []
        prepared = await self._prepare([self._draft(uid, add, on_oversize="error")]) if add is not None else []
        done: list[str] = []
        async with self._db.write() as session:
            if prepared:  # bumps the revision too: the same transaction's second bump is the one stamped
                await self._store(session, uid, prepared, on_conflict="error")
            revision = await _revision.bump(session, self._db.backend, uid)
            existing = await self._existing(session, uid, list(wanted))
            now = utcnow()
            for key, row in existing.items():
                active, updates = wanted[key]
                metadata = {**(row.content_metadata or {})}
                for name, value in updates.items():
                    if value is None:
                        metadata.pop(name, None)
                    else:
                        metadata[name] = value
                await session.execute(
                    update(AgentMemoryTable)
                    .where(AgentMemoryTable.user_id == uid, AgentMemoryTable.id == row.id)
                    .values(is_active=active, content_metadata=metadata, updated_at=now, revision=revision)
                )
                done.append(key)
        if done or prepared:
            self._changed(uid)
        return done


#: An ``add`` waiting for its batch: the repository it was made on, the user and the prepared memory.
_QueuedAdd = tuple[MemoryRepository, str, _Prepared]
#: Queued adds per (event loop, SQLite file).
_ADDS: CombinerPool[_QueuedAdd, MemoryRecord] = CombinerPool(_flush_queued)
