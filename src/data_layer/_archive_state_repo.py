"""What the session archiver has archived in each (user, AI friend) chat: a mark on every message.

>>> batch = await layer.archive_state.pending(user_id="u1", friend_id="mentor")  # doctest: +SKIP
>>> await layer.archive_state.mark_archived(user_id="u1", friend_id="mentor", message_ids=[3, 1, 2])  # doctest: +SKIP

Sessions are cut by time, and messages imported late or with ``created_at`` out of id order fall
anywhere in time: what was archived is a set of messages, never "everything up to an id". So each
message carries ``archived_at`` (set once), and the archiver reads the unmarked messages by time.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import and_, func, or_, select, update

from . import _validation as v
from ._changed import rows_changed
from ._dialect import insert_updating
from ._engine import Database
from ._message_repo import _record
from ._records import MessageRecord
from ._tables import ChatMessageTable, SessionArchiveStateTable
from ._types import utcnow

#: Most messages one read returns.
MAX_BATCH = 1000
#: Most messages one ``mark_archived`` call takes (a session is far smaller).
MAX_MARK = 10_000


class ArchiveStateRepository:
    """Which messages of each chat are archived, and the reads the archiver makes: the user's chats,
    the messages not archived yet (by time) and the messages after an id."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def last(self, *, user_id: str | int, friend_id: str | int | None = None) -> int:
        """The largest id of an archived message of the user's chat with ``friend_id`` (0: none)."""
        uid = v.user_id(user_id)
        key = v.scope_id(friend_id, name="friend_id", optional=True) or ""
        t = SessionArchiveStateTable
        async with self._db.read() as session:
            found = await session.scalar(select(t.last_message_id).where(t.user_id == uid, t.friend_key == key))
        return int(found or 0)

    async def pending(
        self,
        *,
        user_id: str | int,
        friend_id: str | int | None,
        after: tuple[datetime, int] | None = None,
        limit: int = 500,
    ) -> list[MessageRecord]:
        """The chat's messages not archived yet, oldest first (by ``created_at``, then id); ``after`` a
        ``(created_at, id)`` of the previous page continues from there."""
        uid = v.user_id(user_id)
        fid = v.scope_id(friend_id, name="friend_id", optional=True)
        size = v.bounded_int(limit, name="limit", low=1, high=MAX_BATCH)
        t = ChatMessageTable
        stmt = select(t).where(t.user_id == uid, t.archived_at.is_(None))
        stmt = stmt.where(t.friend_id.is_(None) if fid is None else t.friend_id == fid)
        if after is not None:
            at = v.aware_datetime(after[0], name="after", optional=False)
            mid = v.bounded_int(after[1], name="after", low=0, high=2**63 - 1)
            stmt = stmt.where(or_(t.created_at > at, and_(t.created_at == at, t.id > mid)))
        async with self._db.read() as session:
            rows = list(await session.scalars(stmt.order_by(t.created_at, t.id).limit(size)))
        return [_record(r) for r in rows]

    async def mark_archived(
        self, *, user_id: str | int, friend_id: str | int | None, message_ids: Sequence[int]
    ) -> int:
        """Mark the chat's messages ``message_ids`` as archived (ids of other chats are left alone), and
        record the chat's latest work, in one transaction; returns how many were newly marked."""
        uid = v.user_id(user_id)
        fid = v.scope_id(friend_id, name="friend_id", optional=True)
        if isinstance(message_ids, (str, bytes)) or not isinstance(message_ids, Sequence):
            raise TypeError("message_ids must be a list of message ids")
        if len(message_ids) > MAX_MARK:
            raise v.InvalidInputError(f"at most {MAX_MARK} message ids per call, got {len(message_ids)}: mark in parts")
        ids = sorted({v.bounded_int(i, name="message_ids", low=1, high=2**63 - 1) for i in message_ids})
        if not ids:
            return 0
        t, s = ChatMessageTable, SessionArchiveStateTable
        now = utcnow()
        chat = t.friend_id.is_(None) if fid is None else t.friend_id == fid
        async with self._db.write() as session:
            marked = await session.execute(
                update(t).where(t.user_id == uid, chat, t.id.in_(ids), t.archived_at.is_(None)).values(archived_at=now)
            )
            row = (
                await session.execute(
                    select(func.max(t.id), func.max(t.created_at)).where(t.user_id == uid, chat, t.id.in_(ids))
                )
            ).one()
            if row[0] is None:
                return 0
            key = fid or ""
            current = await session.scalar(
                select(s.last_message_id).where(s.user_id == uid, s.friend_key == key).with_for_update()
            )
            if current is None or current < row[0]:
                stmt = insert_updating(
                    self._db.backend,
                    s.__table__,
                    conflict=["user_id", "friend_key"],
                    update=["last_message_id", "last_message_at", "updated_at"],
                )
                await session.execute(
                    stmt,
                    [
                        {
                            "user_id": uid,
                            "friend_key": key,
                            "last_message_id": int(row[0]),
                            "last_message_at": row[1],
                            "updated_at": now,
                        }
                    ],
                )
        return rows_changed(marked)

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
