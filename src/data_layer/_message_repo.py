"""The chat message store (``chat_messages``) that recall reads: append, range listing, neighbours.

Appends can skip messages already stored (re-running an import). A message's identity is its
``external_id`` when it has one (unique per user), else its user, friend, thread, role, ``created_at``
and content; a message given without ``created_at`` is already stored when the same conversation holds
as many messages with its role and content (at any time). The ``content_hash`` index finds them.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Integer, Select, and_, bindparam, func, literal, or_, select, tuple_
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncSession

from . import _validation as v
from ._combiner import CombinerPool
from ._engine import Database
from ._errors import InvalidInputError, MessageNotFoundError
from ._message_search import MessageSearchMixin
from ._records import MessageRecord, MessageRole, Page
from ._row_ids import SqliteIds
from ._tables import EXTERNAL_ID_LENGTH, ChatMessageTable
from ._types import utcnow

MAX_PAGE = 1000
MAX_NEIGHBORS = 200
#: Rows per INSERT, and values per IN (...) of the look-up of stored messages.
CHUNK = 500

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_RECORD_FIELDS = ("user_id", "friend_id", "thread_id", "role", "content", "created_at")


@dataclass(frozen=True, slots=True)
class NewMessage:
    """One message for :meth:`MessageRepository.append_many`.

    ``external_id`` is the message's id elsewhere (an export's message id): unique per user, and the
    message's identity when appends skip what is stored.
    """

    role: MessageRole
    content: str
    friend_id: str | int | None = None
    thread_id: str | int | None = None
    created_at: datetime | None = None
    external_id: str | int | None = None


def content_hash(content: str) -> str:
    """``chat_messages.content_hash``: the first 32 hex digits of the SHA-256 of the UTF-8 content."""
    return hashlib.sha256(content.encode("utf-8")).hexdigest()[:32]


def _external_id(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise InvalidInputError(f"external_id must be a str or int, got {type(value).__name__}")
    text = str(value)
    if not text.strip() or len(text) > EXTERNAL_ID_LENGTH or _CONTROL.search(text):
        raise InvalidInputError(
            f"external_id must be 1-{EXTERNAL_ID_LENGTH} characters without control characters, got {text[:40]!r}"
        )
    return v.stored_text(text, name="external_id")


def _content(value: object) -> str:
    text = v.message_content(value)
    if not text.strip():
        raise InvalidInputError("message content is empty; a message needs some text (whitespace alone is refused)")
    return text


def _exact(row: Mapping[str, Any]) -> tuple[Any, ...]:
    return (row["friend_id"], row["thread_id"], row["role"], row["created_at"], row["content"])


def _loose(row: Mapping[str, Any]) -> tuple[Any, ...]:
    return (row["friend_id"], row["thread_id"], row["role"], row["content"])


@dataclass(slots=True)
class _Batch:
    """One user's validated rows; ``timed`` marks the rows given with a ``created_at``."""

    user_id: str
    rows: list[dict[str, Any]]
    timed: list[bool]


def _record(row: ChatMessageTable | Row[Any]) -> MessageRecord:
    return MessageRecord(
        id=row.id,
        user_id=row.user_id,
        friend_id=row.friend_id,
        thread_id=row.thread_id,
        role=row.role,
        content=row.content,
        created_at=row.created_at,
    )


#: The columns of a :class:`MessageRecord`, in the order of its fields (a row unpacks into it).
_RECORD_COLUMNS = tuple(
    ChatMessageTable.__table__.c[name]
    for name in ("id", "user_id", "friend_id", "thread_id", "role", "content", "created_at")
)


@functools.lru_cache(maxsize=128)
def _listing(
    *, since: bool, until: bool, role: bool, friend: bool, thread: bool, cursor: bool, newest_first: bool
) -> Select[Any]:
    """The statement of a listing with these filters, its values as bound parameters (``uid``,
    ``since``, ``until``, ``role``, ``fid``, ``tid``, ``at``/``at_id`` of the cursor, ``limit``). Built
    once per shape: every chat turn reads its history with one, and building it cost more than running
    it."""
    t = ChatMessageTable
    when = t.created_at.type
    stmt = select(*_RECORD_COLUMNS).where(t.user_id == bindparam("uid"))
    if since:
        stmt = stmt.where(t.created_at >= bindparam("since", type_=when))
    if until:
        stmt = stmt.where(t.created_at < bindparam("until", type_=when))
    if role:
        stmt = stmt.where(t.role == bindparam("role"))
    if friend:
        stmt = stmt.where(t.friend_id == bindparam("fid"))
    if thread:
        stmt = stmt.where(t.thread_id == bindparam("tid"))
    if cursor:
        key = tuple_(t.created_at, t.id)
        bound = tuple_(bindparam("at", type_=when), bindparam("at_id", type_=t.id.type))
        stmt = stmt.where(key < bound if newest_first else key > bound)
    order = (t.created_at.desc(), t.id.desc()) if newest_first else (t.created_at, t.id)
    return stmt.order_by(*order).limit(bindparam("limit", type_=Integer()))


def _same_scope(column: Any, value: str | None) -> Any:
    return column.is_(None) if value is None else column == value


class MessageRepository(MessageSearchMixin):
    """Append and read one user's chat messages, oldest first.

    >>> msg = await layer.messages.append(user_id="u1", friend_id="f1", role="user", content="你好")  # doctest: +SKIP
    >>> page = await layer.messages.list_range(user_id="u1", friend_id="f1", page_size=20)  # doctest: +SKIP
    """

    def __init__(self, db: Database) -> None:
        self._db = db
        self._analyzer = None

    def _row(self, uid: str, item: NewMessage) -> dict[str, Any]:
        if not isinstance(item, NewMessage):
            raise InvalidInputError(f"messages must hold NewMessage items, got {type(item).__name__}")
        content = _content(item.content)
        return {
            "user_id": uid,
            "friend_id": v.scope_id(item.friend_id, name="friend_id", optional=True),
            "thread_id": v.scope_id(item.thread_id, name="thread_id", optional=True),
            "role": v.message_role(item.role),
            "content": content,
            "created_at": v.aware_datetime(item.created_at, name="created_at") or utcnow(),
            "content_hash": content_hash(content),
            "external_id": _external_id(item.external_id),
        }

    def _prepare(self, messages: Mapping[str | int, Sequence[NewMessage]]) -> list[_Batch]:
        if not isinstance(messages, Mapping):
            raise InvalidInputError("messages must map user ids to lists of NewMessage")
        batches: dict[str, _Batch] = {}
        for user, items in messages.items():
            uid = v.user_id(user)
            if isinstance(items, str | bytes) or not isinstance(items, Sequence):
                raise InvalidInputError("messages must be a list of NewMessage")
            batch = batches.setdefault(uid, _Batch(uid, [], []))
            for item in items:
                batch.rows.append(self._row(uid, item))
                batch.timed.append(item.created_at is not None)
        for batch in batches.values():
            seen: dict[str, tuple[Any, ...]] = {}
            for row, timed in zip(batch.rows, batch.timed, strict=True):
                ext = row["external_id"]
                identity = (*_loose(row), row["created_at"] if timed else None)
                if ext is not None and seen.setdefault(ext, identity) != identity:
                    raise InvalidInputError(f"external_id {ext!r} is given to two different messages")
        return list(batches.values())

    def validate(self, *, user_id: str | int, messages: Sequence[NewMessage]) -> None:
        """Check messages as :meth:`append_many` would, without writing (raises ``InvalidInputError``)."""
        self._prepare({v.user_id(user_id): messages})

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

    async def append_many(
        self, *, user_id: str | int, messages: Sequence[NewMessage], skip_existing: bool = False
    ) -> list[MessageRecord]:
        """Store messages in one transaction, in order; returns the stored ones with their ids.

        ``skip_existing`` leaves out messages already stored (see the module docs for a message's
        identity) and repeats within ``messages``; without it an ``external_id`` the user already has
        is refused.

        On SQLite, which lets one writer in at a time anyway, appends without external ids that run at
        the same time are written in one transaction (group commit): a call cancelled once its batch
        is being written may still be stored, as with ``memory.add``. On PostgreSQL each call is its
        own transaction: a batch would lock every user in it, so one user's long import would hold up
        everyone's messages.
        """
        batches = self._prepare({v.user_id(user_id): messages})
        plain = not skip_existing and all(r["external_id"] is None for b in batches for r in b.rows)
        if plain and self._db.one_writer:
            if not any(b.rows for b in batches):
                return []
            # appends running at the same time (the chat turns of many users) share a transaction
            # (group commit, see ``_combiner``); each still returns once its messages are committed
            return await _APPENDS.current(self._db.writer_key).submit((self, batches[0]))
        stored = await self._write(batches, skip_existing=skip_existing)
        return next(iter(stored.values()), [])

    async def append_for_users(
        self,
        messages: Mapping[str | int, Sequence[NewMessage]],
        *,
        skip_existing: bool = False,
        on_progress: Callable[[int], object] | None = None,
    ) -> dict[str, list[MessageRecord]]:
        """Store several users' messages in one transaction: all of them or, on any error or
        cancellation, none. Returns each user's stored messages (with ``skip_existing``, the new ones).

        Every message is validated before anything is written. ``on_progress(n)`` is called as ``n``
        more messages are done (stored or skipped).
        """
        return await self._write(self._prepare(messages), skip_existing=skip_existing, on_progress=on_progress)

    async def _write(
        self,
        batches: Sequence[_Batch],
        *,
        skip_existing: bool,
        on_progress: Callable[[int], object] | None = None,
        short: bool = False,
    ) -> dict[str, list[MessageRecord]]:
        """Store validated batches in one transaction (see :meth:`append_for_users`; ``short``: see
        :meth:`Database.write`)."""
        result: dict[str, list[MessageRecord]] = {b.user_id: [] for b in batches}
        if not any(b.rows for b in batches):
            return result
        table = ChatMessageTable.__table__
        insert = table.insert().returning(table.c.id, sort_by_parameter_order=True)
        for batch in batches:  # the search terms, computed before the transaction and written with the rows
            await self._add_terms(batch.rows)
        async with self._db.write(short=short) as session:
            if self._db.backend == "postgresql":  # one writer per user, so two imports do not both insert
                for uid in sorted(result):
                    key = func.hashtextextended(literal("chat_messages:") + uid, 0)
                    await session.execute(select(func.pg_advisory_xact_lock(key)))
            numbering = await SqliteIds.start(session, table) if self._db.backend == "sqlite" else None
            for batch in batches:
                keep = await self._new_rows(session, batch, skip_existing=skip_existing)
                rows = [r for r, k in zip(batch.rows, keep, strict=True) if k]
                if on_progress is not None and len(rows) < len(batch.rows):
                    on_progress(len(batch.rows) - len(rows))
                for start in range(0, len(rows), CHUNK):
                    chunk = rows[start : start + CHUNK]
                    if numbering is not None:
                        ids = await numbering.insert(session, chunk)
                    else:
                        ids = [r[0] for r in await session.execute(insert, chunk)]
                    result[batch.user_id] += [
                        MessageRecord(id=i, **{f: r[f] for f in _RECORD_FIELDS})
                        for i, r in zip(ids, chunk, strict=True)
                    ]
                    if on_progress is not None:
                        on_progress(len(chunk))
        return result

    async def _new_rows(self, session: AsyncSession, batch: _Batch, *, skip_existing: bool) -> list[bool]:
        """Which rows to insert: all, or those not stored yet and not repeated earlier in the batch."""
        t = ChatMessageTable
        uid, rows = batch.user_id, batch.rows
        external = sorted({r["external_id"] for r in rows if r["external_id"] is not None})
        stored_ids: set[str] = set()
        for start in range(0, len(external), CHUNK):
            part = external[start : start + CHUNK]
            stmt = select(t.external_id).where(t.user_id == uid, t.external_id.in_(part))
            stored_ids.update(x for x in await session.scalars(stmt) if x is not None)
        if not skip_existing:
            repeated = [ext for ext, n in Counter(r["external_id"] for r in rows).items() if ext is not None and n > 1]
            if stored_ids or repeated:
                raise InvalidInputError(
                    f"external_id {min([*stored_ids, *repeated])!r} is already stored for this user or given twice; "
                    "skip stored messages (skip_existing=True) to import again"
                )
            return [True] * len(rows)
        hashes = sorted({r["content_hash"] for r in rows if r["external_id"] is None})
        exact: set[tuple[Any, ...]] = set()
        loose: Counter[tuple[Any, ...]] = Counter()
        columns = (t.friend_id, t.thread_id, t.role, t.created_at, t.content)
        for start in range(0, len(hashes), CHUNK):
            part = hashes[start : start + CHUNK]
            same = select(*columns).where(t.user_id == uid, t.content_hash.in_(part))
            for friend, thread, role, created, content in await session.execute(same):
                exact.add((friend, thread, role, created, content))
                loose[(friend, thread, role, content)] += 1
        keep: list[bool] = []
        for row, timed in zip(rows, batch.timed, strict=True):
            ext = row["external_id"]
            if ext is not None:
                new = ext not in stored_ids
                stored_ids.add(ext)
            elif timed:
                new = _exact(row) not in exact
                exact.add(_exact(row))
            else:  # no time given: a repeat is new once the conversation's earlier copies are used up
                new = loose[_loose(row)] <= 0
                loose[_loose(row)] -= 1
            keep.append(new)
        return keep

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
        params: dict[str, Any] = {"uid": uid, "since": lo, "until": hi, "limit": size + 1}
        if role is not None:
            params["role"] = v.message_role(role)
        params["fid"] = v.scope_id(friend_id, name="friend_id", optional=True)
        params["tid"] = v.scope_id(thread_id, name="thread_id", optional=True)
        if cursor is not None:
            params["at"], params["at_id"] = v.cursor_position(cursor, id_kind=int)
        stmt = _listing(
            since=lo is not None,
            until=hi is not None,
            role=role is not None,
            friend=params["fid"] is not None,
            thread=params["tid"] is not None,
            cursor=cursor is not None,
            newest_first=newest_first,
        )
        # every chat turn reads its history here: the quick path
        rows = await self._db.quick_read(lambda conn: conn.execute(stmt, params).all())
        items = [MessageRecord(*row) for row in rows[:size]]
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


async def _flush_appends(items: Sequence[tuple[MessageRepository, _Batch]]) -> list[list[MessageRecord]]:
    """Write queued appends of several callers in one transaction (each user's rows in queue order);
    each caller gets its own messages back. A failed transaction fails every item (none is stored)."""
    merged: dict[str, _Batch] = {}
    for _, batch in items:
        into = merged.setdefault(batch.user_id, _Batch(batch.user_id, [], []))
        into.rows += batch.rows
        into.timed += batch.timed
    stored = await items[0][0]._write(list(merged.values()), skip_existing=False, short=True)
    taken = dict.fromkeys(merged, 0)
    out: list[list[MessageRecord]] = []
    for _, batch in items:
        start = taken[batch.user_id]
        taken[batch.user_id] = start + len(batch.rows)
        out.append(stored[batch.user_id][start : start + len(batch.rows)])
    return out


#: Queued appends per (event loop, SQLite file).
_APPENDS: CombinerPool[tuple[MessageRepository, _Batch], list[MessageRecord]] = CombinerPool(_flush_appends)
