"""Profile items: the user's own explicit statements, shared by all AI friends, with their history.

One current memory per (topic, subject) — ``profile-diet-辣`` — or per topic for single-valued
topics (``profile-residence``). A newer direct statement that says something else supersedes the
current one: the old value is kept as an inactive history memory (``...--<message id>``) with
``valid_to`` and ``superseded_by``, never silently lost; ``memory list --include-inactive`` shows it.
The new current item cites both sides as its source messages (the new statement first), so the change
("moved from 杭州 to 深圳") is shown with its evidence.
A statement older than the current value (an old chat imported later) goes straight to history.
Everything is keyed by the source message, so applying the same statements twice writes nothing new.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from data_layer import (
    AgentFusionDataLayer,
    DuplicateMemoryKeyError,
    ExpectedContent,
    MemoryRecord,
    NewMemory,
    StaleMemoryError,
)

from ..history import valid_from, version_key
from ._adjudicate import group_key, precedence
from ._statements import Statement

#: Tries of one statement's change of an item while other edits of the item keep committing first.
APPLY_ATTEMPTS = 8
_SLUG = re.compile(r"[^\w]+", re.UNICODE)


@dataclass(frozen=True, slots=True)
class ProfileChange:
    """What applying one statement did: ``created``, ``confirmed``, ``superseded``, ``history`` or
    ``unchanged`` (already applied)."""

    memory_key: str
    action: str
    statement: Statement


def key_part(text: str) -> str:
    """``text`` as part of a memory key: letters (any script), digits, ``-``; a hash when nothing is left."""
    slug = _SLUG.sub("-", text.lower()).strip("-_")[:80]
    return slug or hashlib.sha1(text.encode("utf-8")).hexdigest()[:12]


def profile_key(statement: Statement) -> str:
    """The key of the current memory for a statement's (topic, subject)."""
    if statement.single_valued or not statement.subject:
        return f"profile-{key_part(statement.topic)}"
    return f"profile-{key_part(statement.topic)}-{key_part(statement.subject)}"


def _metadata(statement: Statement, *, sources: Sequence[int], **extra: Any) -> dict[str, Any]:
    return {
        "topic": statement.topic,
        "topic_label": statement.topic_label,
        "subject": statement.subject,
        "value": statement.value,
        "polarity": statement.polarity,
        "message_id": statement.message_id,
        "source_message_ids": list(dict.fromkeys(i for i in sources if i)),  # a statement without a message cites none
        "valid_from": statement.at.isoformat(),
        "valid_to": None,
        "superseded_by": None,
        **extra,
    }


def _content(statement: Statement) -> str:
    return f"{statement.topic_label}: {statement.value}"


def _same_fact(record: MemoryRecord, statement: Statement) -> bool:
    """Whether the statement says what the stored item says: the same polarity about the same
    subject; for a single-valued topic (a job, a home) also the same value."""
    meta = record.metadata
    if meta.get("polarity") != statement.polarity:
        return False
    return not statement.single_valued or meta.get("value") == statement.value


class ProfileWriter:
    """Applies direct user statements to the user's shared profile memories."""

    def __init__(self, layer: AgentFusionDataLayer) -> None:
        self.layer = layer

    async def apply(self, user_id: str, statements: Sequence[Statement]) -> list[ProfileChange]:
        """Apply ``statements`` oldest first; only direct statements by the user change the profile."""
        changes = []
        # a past statement ("我以前很喜欢吃辣") describes what no longer holds: not a current value
        usable = [s for s in statements if s.role == "user" and s.speech == "direct" and not s.past]
        # of one message's statements on one item, the one adjudication puts last ("我换工作了，现在在小米上班":
        # the new employer, not the change alone); statements in order of precedence
        last: dict[tuple[str, str, int | None], Statement] = {}
        for statement in usable:
            slot = (*group_key(statement), statement.message_id)
            if slot not in last or precedence(statement) >= precedence(last[slot]):
                last[slot] = statement
        for statement in sorted(last.values(), key=lambda s: (precedence(s), s.message_id or 0)):
            changes.append(await self._apply_read(user_id, statement))
        return changes

    async def _apply_read(self, uid: str, statement: Statement) -> ProfileChange:
        """:meth:`_apply_one`, read again while another edit of the item (the web page, MCP, another
        friend's chat) commits between this one's read and its write."""
        for _ in range(APPLY_ATTEMPTS - 1):
            try:
                return await self._apply_one(uid, statement)
            except StaleMemoryError:
                continue
        return await self._apply_one(uid, statement)

    async def _apply_one(self, uid: str, statement: Statement) -> ProfileChange:
        memory = self.layer.memory
        key = profile_key(statement)
        current = await memory.retrieve_memory(memory_key=key, user_id=uid, touch=False, include_inactive=True)
        if current is None:
            await self._write_current(
                uid, key, statement, sources=[statement.message_id or 0], expect=ExpectedContent(None)
            )
            return ProfileChange(key, "created", statement)
        applied = current.metadata.get("source_message_ids") or []
        if statement.message_id is not None and statement.message_id in applied:
            return ProfileChange(key, "unchanged", statement)
        history_key = version_key(key, statement.message_id or int(statement.at.timestamp()))
        if not current.is_active:
            return ProfileChange(key, "unchanged", statement)  # the user deleted it: not brought back
        if _same_fact(current, statement):
            sources = [*applied, statement.message_id or 0]
            await self._write_current(
                uid, key, statement, sources=sources, since=valid_from(current), expect=ExpectedContent(current.content)
            )
            return ProfileChange(key, "confirmed", statement)
        if statement.at < valid_from(current):
            # an older statement seen late: history, superseded by what is current now
            await self._write_history(uid, history_key, statement, valid_to=valid_from(current), superseded_by=key)
            return ProfileChange(history_key, "history", statement)
        old_key = version_key(key, current.metadata.get("message_id") or int(valid_from(current).timestamp()))
        # the evidence of a change is both statements: the new one first, then what it replaced
        sources = [statement.message_id or 0, *(current.metadata.get("source_message_ids") or [])]
        expect = ExpectedContent(current.content)
        meta = {**current.metadata, "valid_to": statement.at.isoformat(), "superseded_by": key, "history": True}
        version = NewMemory(
            memory_key=old_key,
            content=current.content,
            summary=current.content,
            memory_type="profile",
            metadata=meta,
            created_at=current.created_at,
        )
        try:  # the earlier value is kept in the transaction that replaces it
            await self._write_current(
                uid, key, statement, sources=sources, supersedes=old_key, expect=expect, keep=version
            )
        except DuplicateMemoryKeyError as exc:  # kept already (a run stopped between the two steps it once took)
            if exc.memory_key != old_key:
                raise
            await self._write_history_from(uid, old_key, current, valid_to=statement.at, superseded_by=key)
            await self._write_current(uid, key, statement, sources=sources, supersedes=old_key, expect=expect)
        return ProfileChange(key, "superseded", statement)

    async def _write_current(
        self,
        uid: str,
        key: str,
        statement: Statement,
        *,
        sources: Sequence[int],
        since: datetime | None = None,
        supersedes: str | None = None,
        expect: ExpectedContent | None = None,
        keep: NewMemory | None = None,
    ) -> None:
        meta = _metadata(statement, sources=sources, supersedes=supersedes)
        if since is not None:
            meta["valid_from"] = since.isoformat()
        await self.layer.memory.upsert(
            user_id=uid,
            memory_key=key,
            content=_content(statement),
            summary=_content(statement),
            memory_type="profile",
            metadata=meta,
            created_at=statement.at,
            keywords=[statement.topic_label],
            expect=expect,
            keep=keep,
        )

    async def _write_history(
        self, uid: str, key: str, statement: Statement, *, valid_to: datetime, superseded_by: str
    ) -> None:
        meta = _metadata(
            statement, sources=[statement.message_id or 0], valid_to=valid_to.isoformat(), superseded_by=superseded_by
        )
        await self._store_inactive(uid, key, content=_content(statement), metadata=meta, created_at=statement.at)

    async def _write_history_from(
        self, uid: str, key: str, record: MemoryRecord, *, valid_to: datetime, superseded_by: str
    ) -> None:
        meta = {**record.metadata, "valid_to": valid_to.isoformat(), "superseded_by": superseded_by}
        await self._store_inactive(uid, key, content=record.content, metadata=meta, created_at=record.created_at)

    async def _store_inactive(
        self, uid: str, key: str, *, content: str, metadata: dict[str, Any], created_at: datetime
    ) -> None:
        memory = self.layer.memory
        found = await memory.retrieve_memory(memory_key=key, user_id=uid, touch=False, include_inactive=True)
        if found is None:  # history is written once
            await memory.upsert(
                user_id=uid,
                memory_key=key,
                content=content,
                summary=content,
                memory_type="profile",
                metadata={**metadata, "history": True},
                created_at=created_at,
            )
        if found is None or found.is_active:  # also when a run was killed between the two steps
            await memory.delete(user_id=uid, memory_key=key)
