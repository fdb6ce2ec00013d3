"""Reading memories back: by key, by id, and filtered pages and counts of a user's memories.

Reads never write rows except ``retrieve_memory(touch=True)``, which counts the access that ranking
uses. Listing and counting share ``_filtered``, which applies the friend visibility rule through
:class:`~data_layer._scope.Scope` so that a list, a count and a search agree on what a friend sees.
``_existing`` (rows by key, in chunks) lives here too; the write path uses it to detect conflicts.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Select, bindparam, func, select, tuple_, update
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncSession

from . import _validation as v
from ._combiner import CombinerPool
from ._engine import Database
from ._errors import InvalidInputError
from ._records import MemoryRecord, Page
from ._rows import record_of
from ._scope import Scope
from ._tables import AgentMemoryTable
from ._types import utcnow

MAX_PAGE = 1000


_MEMORIES = AgentMemoryTable.__table__
#: The user's memories with the given keys (``uid``, ``keys``: an expanding IN), built once: as rows for
#: reads, as ORM objects for the write path that changes them. At most :data:`KEYS_PER_STATEMENT` keys.
_KEYS_OF_USER = (_MEMORIES.c.user_id == bindparam("uid"), _MEMORIES.c.memory_key.in_(bindparam("keys", expanding=True)))
_BY_KEYS = select(_MEMORIES).where(*_KEYS_OF_USER)
_BY_KEYS_ORM = select(AgentMemoryTable).where(*_KEYS_OF_USER)
KEYS_PER_STATEMENT = 500
#: Keys one :meth:`get_many` call reads at most: a caller with more reads them in pages (a recall needs
#: a few dozen; an unbounded list held the connection for as long as the caller liked).
MAX_GET_MANY = 1000


class MemoryReadsMixin:
    """Read, list and count operations of :class:`MemoryRepository`."""

    _db: Database

    @staticmethod
    async def _existing(session: AsyncSession, uid: str, keys: Sequence[str]) -> dict[str, AgentMemoryTable]:
        found: dict[str, AgentMemoryTable] = {}
        for start in range(0, len(keys), KEYS_PER_STATEMENT):
            chunk = list(keys[start : start + KEYS_PER_STATEMENT])
            found.update({r.memory_key: r for r in await session.scalars(_BY_KEYS_ORM, {"uid": uid, "keys": chunk})})
        return found

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
        if not touch:  # the recall's get_memory_detail: the quick path
            stmt = select(AgentMemoryTable.__table__).where(*conditions)
            row = await self._db.quick_read(lambda conn: conn.execute(stmt).first())
            return record_of(row) if row is not None else None
        if self._db.one_writer:  # reads at the same time count their accesses in one transaction
            return await _TOUCHES.current(self._db.writer_key).submit((self._db, tuple(conditions)))
        # PostgreSQL: a transaction of its own (a batch touching rows in two orders could dead-lock)
        return (await _flush_touches([(self._db, tuple(conditions))]))[0]

    async def get_many(
        self, *, user_id: str | int, memory_keys: Sequence[str], include_inactive: bool = False
    ) -> dict[str, MemoryRecord]:
        """The user's memories for these keys (missing keys are absent from the result); at most
        :data:`MAX_GET_MANY` keys."""
        uid = v.user_id(user_id)
        if isinstance(memory_keys, str) or not isinstance(memory_keys, Sequence):
            raise InvalidInputError("memory_keys must be a list of keys")
        if len(memory_keys) > MAX_GET_MANY:
            raise InvalidInputError(
                f"memory_keys holds {len(memory_keys)} keys; get_many reads at most {MAX_GET_MANY} at a time: "
                "read them in pages (or list the memories with list_memories)"
            )
        keys = [v.memory_key(k) for k in memory_keys]

        # the quick path and a statement built once: every recall reads its memories here again
        def read(conn: Connection) -> list[Any]:
            return [
                row
                for start in range(0, len(keys), KEYS_PER_STATEMENT)
                for row in conn.execute(_BY_KEYS, {"uid": uid, "keys": keys[start : start + KEYS_PER_STATEMENT]})
            ]

        rows = await self._db.quick_read(read)
        return {r.memory_key: record_of(r) for r in rows if include_inactive or r.is_active}

    async def get_by_ids(self, *, user_id: str | int, ids: Sequence[uuid.UUID]) -> list[MemoryRecord]:
        """The user's active memories with these ids, in the given order (others are left out)."""
        uid = v.user_id(user_id)
        wanted = v.uuid_list(ids, name="ids")
        table = AgentMemoryTable.__table__

        # the quick path (search fetches its results here): by the primary key (user_id, id)
        def read(conn: Connection) -> list[Any]:
            return [
                row
                for start in range(0, len(wanted), 500)
                for row in conn.execute(
                    select(table).where(table.c.user_id == uid, table.c.id.in_(wanted[start : start + 500]))
                )
            ]

        rows = await self._db.quick_read(read)
        by_id = {r.id: record_of(r) for r in rows if r.is_active}
        return [by_id[i] for i in wanted if i in by_id]

    def _filtered(
        self,
        uid: str,
        *,
        memory_types: object,
        since: object,
        until: object,
        friend_id: str | int | None,
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
            bound = tuple_(*v.cursor_position(cursor, id_kind=uuid.UUID))
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


async def _flush_touches(items: Sequence[tuple[Database, tuple[Any, ...]]]) -> list[MemoryRecord | None]:
    """Count the accesses of queued ``retrieve_memory(touch=True)`` calls in one transaction (a short
    write); each gets its memory as it is after its own count (``None``: no such memory)."""
    out: list[MemoryRecord | None] = []
    async with items[0][0].write(short=True) as session:
        for _, conditions in items:
            await session.execute(
                update(AgentMemoryTable)
                .where(*conditions)
                .values(access_count=AgentMemoryTable.access_count + 1, last_accessed_at=utcnow())
            )
            row = await session.scalar(
                select(AgentMemoryTable).where(*conditions).execution_options(populate_existing=True)
            )
            out.append(record_of(row) if row is not None else None)
    return out


#: Queued access counts per (event loop, SQLite file).
_TOUCHES: CombinerPool[tuple[Database, tuple[Any, ...]], MemoryRecord | None] = CombinerPool(_flush_touches)
