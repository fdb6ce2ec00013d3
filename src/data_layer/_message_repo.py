"""The chat message store (``chat_messages``) that recall reads: append, range listing, neighbours."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import and_, func, or_, select, tuple_

from . import _validation as v
from ._engine import Database
from ._errors import InvalidInputError, MessageNotFoundError
from ._records import MessageRecord, MessageRole, Page
from ._tables import ChatMessageTable
from ._types import utcnow

MAX_PAGE = 1000
MAX_NEIGHBORS = 200


@dataclass(frozen=True, slots=True)
class NewMessage:
    """One message for :meth:`MessageRepository.append_many`."""

    role: MessageRole
    content: str
    friend_id: str | int | None = None
    thread_id: str | int | None = None
    created_at: datetime | None = None


def _record(row: ChatMessageTable) -> MessageRecord:
    return MessageRecord(
        id=row.id,
        user_id=row.user_id,
        friend_id=row.friend_id,
        thread_id=row.thread_id,
        role=row.role,
        content=row.content,
        created_at=row.created_at,
    )


def _same_scope(column: Any, value: str | None) -> Any:
    return column.is_(None) if value is None else column == value


class MessageRepository:
    """Append and read one user's chat messages, oldest first.

    >>> msg = await layer.messages.append(user_id="u1", friend_id="f1", role="user", content="你好")  # doctest: +SKIP
    >>> page = await layer.messages.list_range(user_id="u1", friend_id="f1", page_size=20)  # doctest: +SKIP
    """

    def __init__(self, db: Database) -> None:
        self._db = db

    def _row(self, uid: str, item: NewMessage) -> dict[str, Any]:
        if not isinstance(item, NewMessage):
            raise InvalidInputError(f"messages must hold NewMessage items, got {type(item).__name__}")
        return {
            "user_id": uid,
            "friend_id": v.scope_id(item.friend_id, name="friend_id", optional=True),
            "thread_id": v.scope_id(item.thread_id, name="thread_id", optional=True),
            "role": v.message_role(item.role),
            "content": v.message_content(item.content),
            "created_at": v.aware_datetime(item.created_at, name="created_at") or utcnow(),
        }

    def validate(self, *, user_id: str | int, messages: Sequence[NewMessage]) -> None:
        """Check messages as :meth:`append_many` would, without writing (raises ``InvalidInputError``)."""
        uid = v.user_id(user_id)
        for m in messages:
            self._row(uid, m)

    async def append(
        self,
        *,
        user_id: str | int,
        role: MessageRole,
        content: str,
        friend_id: str | int | None = None,
        thread_id: str | int | None = None,
        created_at: datetime | None = None,
    ) -> MessageRecord:
        """Store one message and return it with its id."""
        item = NewMessage(role=role, content=content, friend_id=friend_id, thread_id=thread_id, created_at=created_at)
        return (await self.append_many(user_id=user_id, messages=[item]))[0]

    async def append_many(self, *, user_id: str | int, messages: Sequence[NewMessage]) -> list[MessageRecord]:
        """Store messages in one transaction, in order; returns them with their ids."""
        uid = v.user_id(user_id)
        if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
            raise InvalidInputError("messages must be a list of NewMessage")
        rows = [self._row(uid, m) for m in messages]
        if not rows:
            return []
        table = ChatMessageTable.__table__
        async with self._db.write() as session:
            result = await session.execute(table.insert().returning(table.c.id, sort_by_parameter_order=True), rows)
            ids = [r[0] for r in result]
        return [MessageRecord(id=i, **r) for i, r in zip(ids, rows, strict=True)]

    async def get(self, *, user_id: str | int, message_id: int) -> MessageRecord | None:
        """The user's message with this id, or ``None``."""
        uid = v.user_id(user_id)
        mid = v.bounded_int(message_id, name="message_id", low=1, high=2**63 - 1)
        async with self._db.read() as session:
            row = await session.scalar(
                select(ChatMessageTable).where(ChatMessageTable.user_id == uid, ChatMessageTable.id == mid)
            )
        return _record(row) if row is not None else None

    async def list_range(
        self,
        *,
        user_id: str | int,
        since: datetime | None = None,
        until: datetime | None = None,
        role: MessageRole | None = None,
        friend_id: str | int | None = None,
        thread_id: str | int | None = None,
        page_size: int = 100,
        cursor: str | None = None,
        newest_first: bool = False,
    ) -> Page[MessageRecord]:
        """The user's messages in ``[since, until)``, ordered by ``(created_at, id)``, a page at a time.

        Filters by ``role``, ``friend_id`` and ``thread_id`` when given. Pass ``next_cursor`` back as
        ``cursor`` for the following page.
        """
        uid = v.user_id(user_id)
        lo, hi = v.time_range(since, until)
        size = v.bounded_int(page_size, name="page_size", low=1, high=MAX_PAGE)
        t = ChatMessageTable
        stmt = select(t).where(t.user_id == uid)
        if lo is not None:
            stmt = stmt.where(t.created_at >= lo)
        if hi is not None:
            stmt = stmt.where(t.created_at < hi)
        if role is not None:
            stmt = stmt.where(t.role == v.message_role(role))
        fid = v.scope_id(friend_id, name="friend_id", optional=True)
        if fid is not None:
            stmt = stmt.where(t.friend_id == fid)
        tid = v.scope_id(thread_id, name="thread_id", optional=True)
        if tid is not None:
            stmt = stmt.where(t.thread_id == tid)
        if cursor is not None:
            at_iso, at_id = v.decode_cursor(cursor, kinds=(str, int))
            key = tuple_(t.created_at, t.id)
            bound = tuple_(datetime.fromisoformat(at_iso), at_id)  # type: ignore[arg-type]
            stmt = stmt.where(key < bound if newest_first else key > bound)
        order = (t.created_at.desc(), t.id.desc()) if newest_first else (t.created_at, t.id)
        stmt = stmt.order_by(*order)
        async with self._db.read() as session:
            rows = list(await session.scalars(stmt.limit(size + 1)))
        items = [_record(r) for r in rows[:size]]
        next_cursor = None
        if len(rows) > size:
            next_cursor = v.encode_cursor([items[-1].created_at.isoformat(), items[-1].id])
        return Page(items=items, next_cursor=next_cursor)

    async def latest(
        self,
        *,
        user_id: str | int,
        friend_id: str | int | None = None,
        thread_id: str | int | None = None,
        limit: int = 10,
    ) -> list[MessageRecord]:
        """The last ``limit`` messages of a conversation, oldest first."""
        page = await self.list_range(
            user_id=user_id, friend_id=friend_id, thread_id=thread_id, page_size=limit, newest_first=True
        )
        return list(reversed(page.items))

    async def neighbors(
        self, *, user_id: str | int, message_id: int, before: int = 5, after: int = 5
    ) -> list[MessageRecord]:
        """The message and up to ``before``/``after`` messages around it in the same conversation.

        The conversation is the anchor's ``friend_id`` and ``thread_id``. Raises
        :class:`MessageNotFoundError` when the user has no such message.
        """
        uid = v.user_id(user_id)
        n_before = v.bounded_int(before, name="before", low=0, high=MAX_NEIGHBORS)
        n_after = v.bounded_int(after, name="after", low=0, high=MAX_NEIGHBORS)
        anchor = await self.get(user_id=uid, message_id=message_id)
        if anchor is None:
            raise MessageNotFoundError(message_id)
        t = ChatMessageTable
        scope = and_(
            t.user_id == uid,
            _same_scope(t.friend_id, anchor.friend_id),
            _same_scope(t.thread_id, anchor.thread_id),
        )
        key = (anchor.created_at, anchor.id)
        earlier = or_(t.created_at < key[0], and_(t.created_at == key[0], t.id < key[1]))
        later = or_(t.created_at > key[0], and_(t.created_at == key[0], t.id > key[1]))
        async with self._db.read() as session:
            prev_rows = (
                list(
                    await session.scalars(
                        select(t).where(scope, earlier).order_by(t.created_at.desc(), t.id.desc()).limit(n_before)
                    )
                )
                if n_before
                else []
            )
            next_rows = (
                list(await session.scalars(select(t).where(scope, later).order_by(t.created_at, t.id).limit(n_after)))
                if n_after
                else []
            )
        return [_record(r) for r in reversed(prev_rows)] + [anchor] + [_record(r) for r in next_rows]

    async def count(self, *, user_id: str | int, friend_id: str | int | None = None) -> int:
        """How many messages the user has (with one friend when ``friend_id`` is given)."""
        uid = v.user_id(user_id)
        stmt = select(func.count()).select_from(ChatMessageTable).where(ChatMessageTable.user_id == uid)
        fid = v.scope_id(friend_id, name="friend_id", optional=True)
        if fid is not None:
            stmt = stmt.where(ChatMessageTable.friend_id == fid)
        async with self._db.read() as session:
            return int(await session.scalar(stmt) or 0)
