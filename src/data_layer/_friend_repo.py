"""A user's AI friends (``ai_friends``): create, read, list, change and delete, per user.

>>> friend = await layer.friends.create(user_id="u1", name="职场导师", system_prompt="你是职场导师。")  # doctest: +SKIP
>>> [f.name for f in await layer.friends.list(user_id="u1")]  # doctest: +SKIP
['职场导师']

A friend's id scopes its chat (``chat_messages.friend_id``) and its event memories
(``agent_memories.friend_id``). Deleting a friend removes both in the same transaction, with the
tool results archived for its conversation and its session-archiving mark, so nothing the user told
that friend outlives it. Profiles are the user's shared memories (``friend_id`` null) and stay.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, delete, func, select, update
from sqlalchemy.engine import Row

from . import _revision
from . import _validation as v
from ._changed import rows_changed
from ._engine import Database
from ._errors import InvalidInputError, NotFoundError
from ._tables import (
    AgentMemoryKeywordsTable,
    AgentMemorySearchIndexTable,
    AgentMemoryTable,
    AIFriendTable,
    ChatMessageTable,
    SessionArchiveStateTable,
    ToolResultArchiveTable,
)
from ._types import utcnow

#: Longest friend name, in characters.
MAX_FRIEND_NAME = 100
#: Longest system prompt, in characters.
MAX_SYSTEM_PROMPT = 8000
#: Most friends one user may have.
MAX_FRIENDS_PER_USER = 200


@dataclass(frozen=True, slots=True)
class FriendRecord:
    """One AI friend of a user."""

    user_id: str
    friend_id: str
    name: str
    system_prompt: str
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class FriendDeletion:
    """What deleting a friend removed."""

    friend_id: str
    messages: int
    memories: int


def _name(value: object) -> str:
    text = " ".join(v.stored_text(value, name="name").split())
    if not v.has_visible_text(text):
        raise InvalidInputError("name must not be empty: give the AI friend a name such as 职场导师")
    if len(text) > MAX_FRIEND_NAME:
        raise InvalidInputError(f"name is {len(text)} characters long; at most {MAX_FRIEND_NAME} allowed")
    return text


def _prompt(value: object) -> str:
    text = v.stored_text(value, name="system_prompt").strip()
    if len(text) > MAX_SYSTEM_PROMPT:
        raise InvalidInputError(
            f"system_prompt is {len(text)} characters long; at most {MAX_SYSTEM_PROMPT} allowed: shorten it"
        )
    return text


def _record(row: AIFriendTable | Row[Any]) -> FriendRecord:
    return FriendRecord(
        user_id=row.user_id,
        friend_id=row.friend_id,
        name=row.name,
        system_prompt=row.system_prompt,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


_FRIENDS = AIFriendTable.__table__
#: One friend by its key, built once (see :meth:`FriendRepository.get`).
_ONE = select(_FRIENDS).where(_FRIENDS.c.user_id == bindparam("uid"), _FRIENDS.c.friend_id == bindparam("fid"))


class FriendRepository:
    """Reads and writes one user's AI friends; every method takes ``user_id`` and touches only that
    user's rows, so a friend id of another user is simply not found."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def create(
        self, *, user_id: str | int, name: str, system_prompt: str = "", friend_id: str | int | None = None
    ) -> FriendRecord:
        """A new friend (``friend_id``: a given id, else a random one such as ``f-3c9a1b2e7d``)."""
        uid = v.user_id(user_id)
        fid = v.scope_id(friend_id, name="friend_id", optional=True) or f"f-{secrets.token_hex(5)}"
        now = utcnow()
        row = AIFriendTable(
            user_id=uid,
            friend_id=fid,
            name=_name(name),
            system_prompt=_prompt(system_prompt),
            created_at=now,
            updated_at=now,
        )
        async with self._db.write() as session:
            t = AIFriendTable
            count = await session.scalar(select(func.count()).select_from(t).where(t.user_id == uid))
            if (count or 0) >= MAX_FRIENDS_PER_USER:
                raise InvalidInputError(f"a user may have at most {MAX_FRIENDS_PER_USER} AI friends; delete one first")
            if await session.get(t, (uid, fid)) is not None:
                from ._errors import DuplicateError

                raise DuplicateError(f"the user already has an AI friend with id {fid!r}")
            session.add(row)
        return _record(row)

    async def get(self, *, user_id: str | int, friend_id: str | int) -> FriendRecord:
        """The user's friend; raises ``NotFoundError`` when the user has no such friend."""
        uid = v.user_id(user_id)
        fid = v.scope_id(friend_id, name="friend_id")
        # read at the start of every chat turn: the quick path
        row = await self._db.quick_read(lambda conn: conn.execute(_ONE, {"uid": uid, "fid": fid}).first())
        if row is None:
            raise NotFoundError(f"no AI friend {fid!r}: list the friends with GET /api/friends")
        return _record(row)

    async def list(self, *, user_id: str | int) -> list[FriendRecord]:
        """The user's friends, oldest first."""
        uid = v.user_id(user_id)
        t = AIFriendTable
        async with self._db.read() as session:
            rows = (await session.scalars(select(t).where(t.user_id == uid).order_by(t.created_at, t.friend_id))).all()
        return [_record(r) for r in rows]

    async def update(
        self, *, user_id: str | int, friend_id: str | int, name: str | None = None, system_prompt: str | None = None
    ) -> FriendRecord:
        """Change the friend's name and/or system prompt (``None``: unchanged)."""
        uid = v.user_id(user_id)
        fid = v.scope_id(friend_id, name="friend_id")
        changes: dict[str, object] = {}
        if name is not None:
            changes["name"] = _name(name)
        if system_prompt is not None:
            changes["system_prompt"] = _prompt(system_prompt)
        t = AIFriendTable
        async with self._db.write() as session:
            if changes:
                changes["updated_at"] = utcnow()
                await session.execute(update(t).where(t.user_id == uid, t.friend_id == fid).values(**changes))
            row = await session.get(t, (uid, fid), populate_existing=True)
            if row is None:
                raise NotFoundError(f"no AI friend {fid!r}: list the friends with GET /api/friends")
            return _record(row)

    async def delete(self, *, user_id: str | int, friend_id: str | int) -> FriendDeletion:
        """Delete the friend with its chat messages, its memories (events, turns), the tool results
        archived for its conversation and its archiving mark, in one transaction. Shared profiles stay.

        Raises ``NotFoundError`` when the user has no such friend (nothing is deleted then).
        """
        uid = v.user_id(user_id)
        fid = v.scope_id(friend_id, name="friend_id")
        assert fid is not None
        m = AgentMemoryTable
        async with self._db.write() as session:
            gone = await session.execute(
                delete(AIFriendTable).where(AIFriendTable.user_id == uid, AIFriendTable.friend_id == fid)
            )
            if not rows_changed(gone):
                raise NotFoundError(f"no AI friend {fid!r}: list the friends with GET /api/friends")
            messages = await session.execute(
                delete(ChatMessageTable).where(ChatMessageTable.user_id == uid, ChatMessageTable.friend_id == fid)
            )
            # the revision row before the look-up: on PostgreSQL a memory write of this user (an edit)
            # then commits before the look-up sees the friend's memories, or waits for this deletion and
            # finds its memory gone. Search indexes rebuild on a hard-delete revision: the friend's
            # memories leave every index.
            await _revision.bump(session, self._db.backend, uid, hard_delete=True)
            ids = (await session.scalars(select(m.id).where(m.user_id == uid, m.friend_id == fid))).all()
            if ids:
                for start in range(0, len(ids), 500):
                    chunk = ids[start : start + 500]
                    # explicit, not only ON DELETE CASCADE: a SQLite connection may run without foreign keys
                    kw, ix = AgentMemoryKeywordsTable, AgentMemorySearchIndexTable
                    await session.execute(delete(kw).where(kw.user_id == uid, kw.memory_id.in_(chunk)))
                    await session.execute(delete(ix).where(ix.user_id == uid, ix.memory_id.in_(chunk)))
                    await session.execute(delete(m).where(m.user_id == uid, m.id.in_(chunk)))
            await session.execute(
                delete(ToolResultArchiveTable).where(
                    ToolResultArchiveTable.user_id == uid, ToolResultArchiveTable.conversation_id == f"{uid}/{fid}"
                )
            )
            await session.execute(
                delete(SessionArchiveStateTable).where(
                    SessionArchiveStateTable.user_id == uid, SessionArchiveStateTable.friend_key == fid
                )
            )
        return FriendDeletion(friend_id=fid, messages=rows_changed(messages), memories=len(ids))
