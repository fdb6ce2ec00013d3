"""Changing a stored memory so that a profile item's earlier value is kept, whoever changes it.

The archiver keeps a superseded profile value as an inactive version ``<key>--<id>`` (``metadata.history``,
``valid_to``, ``superseded_by``). An edit by hand (the web page, ``agent-memory memory add --replace``,
MCP ``update_memory``) changes the item just as much: :func:`revise` keeps the earlier value the same way,
so ``agent-memory memory history KEY`` and answers "as of" a time before the edit still find it.

>>> await revise(layer.memory, user_id="u1", memory_key="profile-residence", content="居住地: 深圳",
...              memory_type="profile")  # doctest: +SKIP
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from data_layer import (
    DuplicateMemoryKeyError,
    ExpectedContent,
    MemoryRecord,
    MemoryRepository,
    NewMemory,
    StaleMemoryError,
    UpsertResult,
)

from ._validity import aware, valid_from, version_key

#: Tries of an edit that keeps a version, when other edits of the same item keep committing first.
REVISE_ATTEMPTS = 8


async def revise(
    memory: MemoryRepository,
    *,
    user_id: str,
    memory_key: str,
    content: str,
    memory_type: str = "general",
    metadata: dict[str, Any] | None = None,
    at: datetime | None = None,
    **fields: Any,
) -> UpsertResult:
    """Store ``content`` under ``memory_key`` (``memory.upsert`` with ``fields``), keeping the current
    value as an earlier version when the memory is a profile item whose content changes.

    Reading the current value, keeping it and replacing it commit as one step: the write expects the
    content it read, so when another edit of the item commits in between, this one reads again and keeps
    that value instead (two edits at once keep every value, in the order they committed).

    The kept version holds until ``at`` (default: now) and is superseded by ``memory_key``; the new value
    holds from ``at`` and names the version it supersedes. Any other change (a new memory, another type,
    the same content) is the plain upsert.
    """
    given = aware(at, "at")
    for _ in range(REVISE_ATTEMPTS):
        when = given or datetime.now(UTC)  # read again after another edit: its value held until now
        current = await memory.retrieve_memory(memory_key=memory_key, user_id=user_id, touch=False)
        if current is not None and not current.is_active:
            current = None  # a deleted item: the edit stores it again, with nothing to keep
        expect = ExpectedContent(current.content if current is not None else None)
        changes = (
            current is not None
            and "profile" in (current.memory_type, memory_type)
            and current.content.strip() != content.strip()
        )
        meta = dict(metadata if metadata is not None else {})
        if not changes or current is None:
            try:
                return await memory.upsert(
                    user_id=user_id,
                    memory_key=memory_key,
                    content=content,
                    memory_type=memory_type,
                    metadata=meta,
                    expect=expect,
                    **fields,
                )
            except StaleMemoryError:
                continue  # another edit of the item committed after the read: read it again
        stamp = _stamp(current)
        while True:
            keep = _version(current, valid_to=when, superseded_by=memory_key, stamp=stamp)
            meta |= {
                "valid_from": when.isoformat(),
                "valid_to": None,
                "superseded_by": None,
                "supersedes": keep.memory_key,
            }
            try:
                return await memory.upsert(
                    user_id=user_id,
                    memory_key=memory_key,
                    content=content,
                    memory_type=memory_type,
                    metadata=meta,
                    expect=expect,
                    keep=keep,
                    **fields,
                )
            except DuplicateMemoryKeyError as exc:  # another version holds this stamp: the next one
                if exc.memory_key != keep.memory_key:
                    raise
                stamp += 1
            except StaleMemoryError:
                break  # another edit of the item committed after the read: read it again
    raise StaleMemoryError(memory_key)


def _stamp(record: MemoryRecord) -> int:
    return int(valid_from(record).timestamp() * 1000)


def _version(record: MemoryRecord, *, valid_to: datetime, superseded_by: str, stamp: int) -> NewMemory:
    """``record`` as an earlier version of its item, held until ``valid_to``, keyed by ``stamp``."""
    meta = {**record.metadata, "valid_to": valid_to.isoformat(), "superseded_by": superseded_by, "history": True}
    return NewMemory(
        memory_key=version_key(record.memory_key, stamp),
        content=record.content,
        summary=record.summary,
        memory_type=record.memory_type,
        friend_id=record.friend_id,
        metadata=meta,
        created_at=record.created_at,
        shared=record.friend_id is None,
    )


async def keep_version(
    memory: MemoryRepository, *, user_id: str, record: MemoryRecord, valid_to: datetime, superseded_by: str
) -> str:
    """Store ``record`` as an inactive earlier version of its item, held until ``valid_to``; returns its key
    (``<key>--<milliseconds since the epoch of valid_from>``, the next free one; for a long key its
    stem, :func:`version_stem`, before ``--``, so the version key fits a memory key's length).

    The version is written inactive in one transaction (``set_active(add=...)`` switches it off as it is
    added): a failure leaves no version at all, never one that search and recall take for current."""
    stamp = _stamp(record)
    while True:
        version = _version(record, valid_to=valid_to, superseded_by=superseded_by, stamp=stamp)
        key = version.memory_key
        try:
            await memory.set_active(user_id=user_id, changes={key: (False, {})}, add=version)
        except DuplicateMemoryKeyError:  # another version holds this stamp: the next one
            stamp += 1
            continue
        return key
