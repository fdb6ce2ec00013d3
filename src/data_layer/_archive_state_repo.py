"""How far the session archiver got per (user, AI friend): read and advance, never move back.

>>> last = await layer.archive_state.last(user_id="u1", friend_id="mentor")  # doctest: +SKIP
>>> await layer.archive_state.advance(user_id="u1", friend_id="mentor", message_id=42, at=when)  # doctest: +SKIP
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select

from . import _validation as v
from ._dialect import insert_updating
from ._engine import Database
from ._message_repo import _record
from ._records import MessageRecord
from ._tables import ChatMessageTable, SessionArchiveStateTable
from ._types import utcnow

#: Most messages one read returns.
MAX_BATCH = 1000


class ArchiveStateRepository:
    """The last archived message id of each chat (0 when nothing was archived yet), and the reads the
    archiver makes: the user's chats and the messages after a mark."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def last(self, *, user_id: str | int, friend_id: str | int | None = None) -> int:
        """The id of the last archived message of the user's chat with ``friend_id`` (0: none)."""
        uid = v.user_id(user_id)
        key = v.scope_id(friend_id, name="friend_id", optional=True) or ""
        t = SessionArchiveStateTable
        async with self._db.read() as session:
            found = await session.scalar(select(t.last_message_id).where(t.user_id == uid, t.friend_key == key))
        return int(found or 0)

    async def advance(self, *, user_id: str | int, friend_id: str | int | None, message_id: int, at: datetime) -> int:
        """Record ``message_id`` as archived unless a later one already is; returns the stored id."""
        uid = v.user_id(user_id)
        key = v.scope_id(friend_id, name="friend_id", optional=True) or ""
        mid = v.bounded_int(message_id, name="message_id", low=1, high=2**63 - 1)
        when = v.aware_datetime(at, name="at", optional=False)
        t = SessionArchiveStateTable
        async with self._db.write() as session:
            current = await session.scalar(
                select(t.last_message_id).where(t.user_id == uid, t.friend_key == key).with_for_update()
            )
            if current is not None and current >= mid:
                return int(current)
            stmt = insert_updating(self._db.backend, t.__table__, conflict=["user_id", "friend_key"],
                                   update=["last_message_id", "last_message_at", "updated_at"])  # fmt: skip
            await session.execute(stmt, [{"user_id": uid, "friend_key": key, "last_message_id": mid,
                                          "last_message_at": when, "updated_at": utcnow()}])  # fmt: skip
        return mid

    async def chats(self, *, user_id: str | int) -> list[str | None]:
        """The AI friends the user has messages with (``None`` for messages without a friend)."""
        uid = v.user_id(user_id)
        t = ChatMessageTable
        async with self._db.read() as session:
            found = list(await session.scalars(select(t.friend_id).where(t.user_id == uid).distinct()))
        return sorted(found, key=lambda f: (f is not None, f or ""))

    async def messages_after(
        self, *, user_id: str | int, friend_id: str | int | None, after_id: int, limit: int = 500
    ) -> list[MessageRecord]:
        """The chat's messages with an id above ``after_id``, by id (insertion order)."""
        uid = v.user_id(user_id)
        fid = v.scope_id(friend_id, name="friend_id", optional=True)
        mark = v.bounded_int(after_id, name="after_id", low=0, high=2**63 - 1)
        size = v.bounded_int(limit, name="limit", low=1, high=MAX_BATCH)
        t = ChatMessageTable
        stmt = select(t).where(t.user_id == uid, t.id > mark)
        stmt = stmt.where(t.friend_id.is_(None) if fid is None else t.friend_id == fid)
        async with self._db.read() as session:
            rows = list(await session.scalars(stmt.order_by(t.id).limit(size)))
        return [_record(r) for r in rows]
