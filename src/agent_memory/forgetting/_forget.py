"""Forgetting what a user asked to forget, listing what was forgotten, and undoing it.

A forgetting sets aside, for one subject in the words of the request:

- the memories the project's own search finds for it in the friend's scope (the user's shared profile
  items, which every AI friend of the user sees, and this friend's own events and turns; another
  friend's events are not in the scope and stay), the earlier versions of a forgotten item, and the
  gists and profile items that cite a message about it;
- the messages about it (the lexical search over the chat, in the same scope), the messages the
  forgotten memories cite, and the request itself: evidence recall no longer returns them, and the
  session archiver does not turn them into memories (a session still open when the user asked is
  archived later, and must not bring the subject back).

Nothing is deleted: a forgotten memory is inactive with ``metadata.forgotten`` (by which forgetting,
when, after which message), so :mod:`agent_memory.history` does not take it for an earlier version and
search, recall, lists and MCP leave it out. The forgetting itself is recorded as an inactive memory
``forgetting-…`` (never searched) whose ``metadata.forgetting`` says what was forgotten: the subject,
the keys with their summaries, the messages, when. :func:`unforget` brings it all back as it was.
"""

from __future__ import annotations

import json
import unicodedata
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from data_layer import (
    MAX_GET_MANY,
    MAX_METADATA_BYTES,
    PROFILE_TYPES,
    AgentFusionDataLayer,
    InvalidInputError,
    MemoryRecord,
    MemoryRepository,
    MessageRecord,
    NewMemory,
    NotFoundError,
    Scope,
)

from ..history import base_key, kept_versions, parse_time, version_stem
from ._request import MAX_SUBJECT_CHARS, forget_request, names_nothing

if TYPE_CHECKING:
    from ..search import HybridMemorySearch


class MessageFinder(Protocol):
    """What a forgetting reads messages with: the lexical search of a scope's messages (evidence recall's
    message index is one), so the messages that tell the subject are set aside with the memories."""

    async def lexical(
        self, scope: Scope, query_text: str, *, limit: int = ...
    ) -> Sequence[tuple[MessageRecord, float]]:
        """The scope's messages matching ``query_text``, best first, with their scores."""
        ...


#: The key of a forgetting's record starts with this.
FORGETTING_PREFIX = "forgetting-"
#: The metadata field of a forgetting's record (what was forgotten).
FORGETTING_FIELD = "forgetting"
#: The metadata field of a forgotten memory (by which forgetting).
FORGOTTEN_FIELD = "forgotten"
#: A memory is about the subject when the search's keyword score (the weighted share of the subject's
#: words it holds: exact 1, inner word 0.8, synonym 0.7 x similarity) is at least this: a memory alike
#: only in meaning, or holding a minor word of a longer subject, is not forgotten.
MIN_KEYWORD = 0.5
#: A message is about the subject when its lexical score (1: every word of the subject, about once) is
#: at least this.
MIN_MESSAGE_SCORE = 0.5
#: The most memories and messages one forgetting finds by search.
MAX_FOUND = 100
#: Rows read per page while looking through the user's memories.
_PAGE = 500
#: A subject is too broad to forget without saying so when it matches at least this many of the scope's
#: active memories, and more than half of them ("用户", "the user": the archiver's events all say it).
BROAD_MIN_MATCHES = 5


class BroadSubjectError(InvalidInputError):
    """The subject matches most of the scope's active memories: ``matches`` of ``total``. Nothing was set
    aside; name the subject more precisely, or forget with ``broad=True``."""

    def __init__(self, subject: str, *, matches: int, total: int) -> None:
        self.subject, self.matches, self.total = subject, matches, total
        super().__init__(
            f"subject {subject!r} matches {matches} of the {total} active memories in this scope and would set "
            f"them all aside; name it more precisely (e.g. '前任' rather than '用户'), or forget them all on "
            "purpose with broad=True (CLI --all-matching, MCP all_matching: true)"
        )


def too_broad(matches: int, total: int) -> bool:
    """Whether ``matches`` of a scope's ``total`` active memories are too many to set aside unasked."""
    return matches >= BROAD_MIN_MATCHES and 2 * matches > total


@dataclass(frozen=True, slots=True)
class ForgottenMemory:
    """A memory set aside by a forgetting: its key, type and summary, and whether it was active."""

    memory_key: str
    memory_type: str
    summary: str
    was_active: bool


@dataclass(frozen=True, slots=True)
class Forgetting:
    """One request to forget, carried out: what it was about, what it set aside, when, and whether it
    was undone."""

    key: str
    user_id: str
    friend_id: str | None
    subject: str
    request_message_id: int | None
    memories: tuple[ForgottenMemory, ...]
    message_ids: tuple[int, ...]
    at: datetime
    undone_at: datetime | None

    @property
    def memory_keys(self) -> tuple[str, ...]:
        """The keys of the memories it set aside."""
        return tuple(m.memory_key for m in self.memories)

    def describe(self) -> str:
        """One line for a person: what was forgotten and how much."""
        state = f"（已于 {self.undone_at.isoformat(timespec='seconds')} 撤销）" if self.undone_at else ""
        return (
            f"已忘记「{self.subject}」：{len(self.memories)} 条记忆，{len(self.message_ids)} 条消息不再作为证据{state}"
        )

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready values (times in ISO-8601)."""
        return {
            "key": self.key,
            "friend_id": self.friend_id,
            "subject": self.subject,
            "request_message_id": self.request_message_id,
            "memories": [
                {
                    "memory_key": m.memory_key,
                    "memory_type": m.memory_type,
                    "summary": m.summary,
                    "was_active": m.was_active,
                }
                for m in self.memories
            ],
            "message_ids": list(self.message_ids),
            "at": self.at.isoformat(),
            "undone_at": self.undone_at.isoformat() if self.undone_at else None,
        }


def _of_record(record: MemoryRecord) -> Forgetting | None:
    data = record.metadata.get(FORGETTING_FIELD)
    # a record is written inactive with its memories set aside, in one transaction: an active one is no
    # forgetting that was carried out
    if not record.memory_key.startswith(FORGETTING_PREFIX) or not isinstance(data, dict) or record.is_active:
        return None
    memories = tuple(
        ForgottenMemory(
            str(m.get("memory_key")),
            str(m.get("memory_type", "")),
            str(m.get("summary", "")),
            bool(m.get("was_active", True)),
        )
        for m in data.get("memories") or []
        if isinstance(m, dict)
    )
    request = data.get("request_message_id")
    return Forgetting(
        key=record.memory_key,
        user_id=record.user_id,
        friend_id=record.friend_id,
        subject=str(data.get("subject", "")),
        request_message_id=request if isinstance(request, int) else None,
        memories=memories,
        message_ids=tuple(i for i in data.get("message_ids") or [] if isinstance(i, int)),
        at=parse_time(data.get("at")) or record.created_at,
        undone_at=parse_time(data.get("undone_at")),
    )


async def forgettings(memory: MemoryRepository, *, user_id: str | int) -> list[Forgetting]:
    """The user's forgettings, newest first (undone ones too, marked ``undone_at``)."""
    found: list[Forgetting] = []
    cursor: str | None = None
    while True:
        page = await memory.list_memories(
            user_id=user_id, memory_types=["general"], include_inactive=True, limit=_PAGE, cursor=cursor
        )
        found += [f for f in map(_of_record, page.items) if f is not None]
        cursor = page.next_cursor
        if cursor is None:
            return sorted(found, key=lambda f: f.at, reverse=True)


async def forgotten_message_ids(memory: MemoryRepository, *, user_id: str | int) -> frozenset[int]:
    """The user's messages kept out of evidence recall and archiving by forgettings not undone."""
    return frozenset(
        i for f in await forgettings(memory, user_id=user_id) if f.undone_at is None for i in f.message_ids
    )


async def set_aside(
    memory: MemoryRepository, *, user_id: str | int, messages: Sequence[MessageRecord]
) -> frozenset[int]:
    """The ids of ``messages`` that must not become memories: those a forgetting keeps out, and the
    user's requests to forget (a request names what it forgets, and must not be remembered for it)."""
    requests = {m.id for m in messages if m.role == "user" and forget_request(m.content) is not None}
    return frozenset(requests | (await forgotten_message_ids(memory, user_id=user_id) & {m.id for m in messages}))


def is_forgotten(record: MemoryRecord) -> bool:
    """Whether ``record`` was set aside by a user's request to forget (or is such a request's record)."""
    return bool(record.metadata.get(FORGOTTEN_FIELD)) or record.memory_key.startswith(FORGETTING_PREFIX)


async def forget(
    layer: AgentFusionDataLayer,
    search: HybridMemorySearch,
    index: MessageFinder,
    *,
    scope: Scope,
    subject: str,
    request_message_id: int | None = None,
    now: datetime | None = None,
    broad: bool = False,
) -> Forgetting:
    """Forget ``subject`` for ``scope`` (see the module docs); returns the forgetting, also when it
    found nothing (the request was heard; its record says so).

    Raises :class:`BroadSubjectError` and sets nothing aside when the subject matches most of the scope's
    active memories (:func:`too_broad`), unless ``broad`` says to forget them all."""
    if not isinstance(broad, bool):
        raise InvalidInputError(f"broad must be True or False, got {type(broad).__name__}")
    if not isinstance(scope, Scope):
        raise InvalidInputError(f"scope must be a Scope (Scope.of(user_id, friend_id)), got {type(scope).__name__}")
    if not isinstance(subject, str) or not subject.strip() or len(subject) > MAX_SUBJECT_CHARS:
        raise InvalidInputError(f"subject must be the thing to forget, 1-{MAX_SUBJECT_CHARS} characters, e.g. '前任'")
    subject = subject.strip()
    if any(unicodedata.category(c) == "Cc" for c in subject):
        raise InvalidInputError("subject holds a control character; give the thing to forget as plain text, e.g. 前任")
    if names_nothing(subject):  # "everything" forgets nothing by search; a user's whole memory is erased
        raise InvalidInputError(
            f"subject {subject!r} names no thing to forget; name it (e.g. '前任'), "
            "or erase everything of the user with `agent-memory user delete U`"
        )
    when = now or datetime.now(UTC)
    uid = scope.user_id
    hits = await search.search(subject, user_id=uid, friend_id=scope.friend_id, mode="hybrid", limit=MAX_FOUND)
    matched = {h.record.memory_key: h.record for h in hits if h.keyword >= MIN_KEYWORD and not is_forgotten(h.record)}
    messages = {
        record.id
        for record, score in await index.lexical(scope, subject, limit=MAX_FOUND)
        if score >= MIN_MESSAGE_SCORE
    }
    cited = {i for r in matched.values() for i in _cites(r)}
    about = messages | ({request_message_id} if request_message_id is not None else set())
    chosen = dict(matched)
    chosen.update({r.memory_key: r for r in await _citing(layer.memory, scope, about) if r.memory_key not in chosen})
    if any(r.memory_type in PROFILE_TYPES for r in chosen.values()):
        items = {version_stem(k) for k, r in chosen.items() if r.memory_type in PROFILE_TYPES}
        for version in await kept_versions(layer.memory, user_id=uid):
            if base_key(version.memory_key) in items and not is_forgotten(version):
                chosen[version.memory_key] = version
    if not broad:
        active = sum(r.is_active for r in chosen.values())
        if active >= BROAD_MIN_MATCHES:
            total = await layer.memory.count(user_id=uid, friend_id=scope.friend_id)
            if too_broad(active, total):
                raise BroadSubjectError(subject, matches=active, total=total)
    hidden = sorted(about | cited)
    key = f"{FORGETTING_PREFIX}{uuid.uuid4().hex[:16]}"
    memories = [ForgottenMemory(r.memory_key, r.memory_type, r.summary[:200], r.is_active) for r in chosen.values()]
    data = {
        "subject": subject,
        "request_message_id": request_message_id,
        "memories": [
            {"memory_key": m.memory_key, "memory_type": m.memory_type, "summary": m.summary, "was_active": m.was_active}
            for m in memories
        ],
        "message_ids": hidden,
        "at": when.isoformat(),
        "undone_at": None,
    }
    size = len(json.dumps({FORGETTING_FIELD: data}, ensure_ascii=False).encode())
    if size > MAX_METADATA_BYTES:  # the record lists what it set aside, for the undo: it must fit one memory
        raise InvalidInputError(
            f"forgetting {subject!r} would set aside {len(chosen)} memories and {len(hidden)} messages, more than "
            "one forgetting can record; name the subject more precisely (agent-memory user delete erases a user)"
        )
    mark = {"by": key, "at": when.isoformat(), "message_id": request_message_id}
    changes: dict[str, tuple[bool, dict[str, Any]]] = {k: (False, {FORGOTTEN_FIELD: mark}) for k in chosen}
    changes[key] = (False, {})
    # one transaction writes the record and sets it and the memories aside: a failure leaves neither (a
    # record without the memories set aside would list a forgetting that never happened)
    record = NewMemory(
        memory_key=key,
        memory_type="general",
        friend_id=scope.friend_id,
        content=f"forgetting: {subject}",
        summary=f"forgetting: {subject}",
        metadata={FORGETTING_FIELD: data},
        shared=scope.friend_id is None,
    )
    await layer.memory.set_active(user_id=uid, changes=changes, add=record)
    return Forgetting(
        key=key,
        user_id=uid,
        friend_id=scope.friend_id,
        subject=subject,
        request_message_id=request_message_id,
        memories=tuple(memories),
        message_ids=tuple(hidden),
        at=when,
        undone_at=None,
    )


async def unforget(
    memory: MemoryRepository, *, user_id: str | int, key: str | None = None, now: datetime | None = None
) -> Forgetting:
    """Undo the forgetting ``key`` (default: the user's newest one not undone): its memories come back
    as they were (active or kept versions) and its messages to evidence recall.

    Raises :class:`~data_layer.NotFoundError` when there is no such forgetting to undo.
    """
    found = [f for f in await forgettings(memory, user_id=user_id) if f.undone_at is None]
    if key is not None:
        found = [f for f in found if f.key == key]
    if not found:
        what = f"no forgetting {key!r} to undo" if key else "nothing forgotten to undo"
        raise NotFoundError(f"{what}; `agent-memory memory forgotten --user U` lists the forgettings")
    target = found[0]
    when = now or datetime.now(UTC)
    keys = [*target.memory_keys, target.key]
    current: dict[str, MemoryRecord] = {}
    for start in range(0, len(keys), MAX_GET_MANY):  # a forgetting may hold more than one read takes
        current |= await memory.get_many(
            user_id=user_id, memory_keys=keys[start : start + MAX_GET_MANY], include_inactive=True
        )
    changes: dict[str, tuple[bool, dict[str, Any]]] = {}
    for item in target.memories:
        record = current.get(item.memory_key)
        mark = record.metadata.get(FORGOTTEN_FIELD) if record is not None else None
        if isinstance(mark, dict) and mark.get("by") == target.key:  # not forgotten again by a later request
            changes[item.memory_key] = (item.was_active, {FORGOTTEN_FIELD: None})
    record = current.get(target.key)
    data = dict(record.metadata.get(FORGETTING_FIELD) or {}) if record is not None else {}
    changes[target.key] = (False, {FORGETTING_FIELD: {**data, "undone_at": when.isoformat()}})
    await memory.set_active(user_id=user_id, changes=changes)
    return Forgetting(
        key=target.key,
        user_id=target.user_id,
        friend_id=target.friend_id,
        subject=target.subject,
        request_message_id=target.request_message_id,
        memories=target.memories,
        message_ids=target.message_ids,
        at=target.at,
        undone_at=when,
    )


def _cites(record: MemoryRecord) -> list[int]:
    return [i for i in record.metadata.get("source_message_ids") or [] if isinstance(i, int)]


async def _citing(memory: MemoryRepository, scope: Scope, message_ids: set[int]) -> list[MemoryRecord]:
    """The scope's active memories that cite one of ``message_ids`` (a gist or profile item formed from
    a message about the subject, in whatever words it says it)."""
    if not message_ids:
        return []
    found: list[MemoryRecord] = []
    cursor: str | None = None
    while True:
        page = await memory.list_memories(user_id=scope.user_id, friend_id=scope.friend_id, limit=_PAGE, cursor=cursor)
        found += [r for r in page.items if not is_forgotten(r) and message_ids.intersection(_cites(r))]
        cursor = page.next_cursor
        if cursor is None:
            return found
