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

from data_layer import DuplicateMemoryKeyError, MemoryRecord, MemoryRepository, NewMemory, UpsertResult

from ._validity import aware, valid_from, version_key


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

    The kept version holds until ``at`` (default: now) and is superseded by ``memory_key``; the new value
    holds from ``at`` and names the version it supersedes. Any other change (a new memory, another type,
    the same content) is the plain upsert.
    """
    when = aware(at, "at") or datetime.now(UTC)
    current = await memory.retrieve_memory(memory_key=memory_key, user_id=user_id, touch=False)
    changes = (
        current is not None
        and "profile" in (current.memory_type, memory_type)
        and current.content.strip() != content.strip()
    )
    meta = dict(metadata if metadata is not None else {})
    if changes and current is not None:
        old_key = await keep_version(memory, user_id=user_id, record=current, valid_to=when, superseded_by=memory_key)
        meta |= {"valid_from": when.isoformat(), "valid_to": None, "superseded_by": None, "supersedes": old_key}
    return await memory.upsert(
        user_id=user_id, memory_key=memory_key, content=content, memory_type=memory_type,
        metadata=meta, **fields,
    )  # fmt: skip


async def keep_version(
    memory: MemoryRepository, *, user_id: str, record: MemoryRecord, valid_to: datetime, superseded_by: str
) -> str:
    """Store ``record`` as an inactive earlier version of its item, held until ``valid_to``; returns its key
    (``<key>--<milliseconds since the epoch of valid_from>``, the next free one; for a long key its
    stem, :func:`version_stem`, before ``--``, so the version key fits a memory key's length).

    The version is written inactive in one transaction (``set_active(add=...)`` switches it off as it is
    added): a failure leaves no version at all, never one that search and recall take for current."""
    stamp = int(valid_from(record).timestamp() * 1000)
    meta = {**record.metadata, "valid_to": valid_to.isoformat(), "superseded_by": superseded_by, "history": True}
    while True:
        key = version_key(record.memory_key, stamp)
        version = NewMemory(memory_key=key, content=record.content, summary=record.summary,
                            memory_type=record.memory_type, friend_id=record.friend_id, metadata=meta,
                            created_at=record.created_at, shared=record.friend_id is None)  # fmt: skip
        try:
            await memory.set_active(user_id=user_id, changes={key: (False, {})}, add=version)
        except DuplicateMemoryKeyError:  # another version holds this stamp: the next one
            stamp += 1
            continue
        return key
