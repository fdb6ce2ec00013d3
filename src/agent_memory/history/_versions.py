"""An item's versions: the current value and every earlier one, oldest first, for ``memory history``,
the web memory page and MCP's ``memory_history``; and the version of each item current at a time, for
search, recall and evidence recall "as of" a time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from data_layer import MemoryRecord, MemoryRepository, NotFoundError

from ._validity import base_key, holds_at, is_version, valid_from, valid_to, version_stem

#: Rows read per page when listing a user's kept versions.
_PAGE = 500


@dataclass(frozen=True, slots=True)
class MemoryVersion:
    """One version of an item: what it said, when it held, what followed it and the messages it cites.

    ``superseded_by`` is the key of the version that replaced it (``None`` for the current one);
    ``current`` is true for the item's present value.
    """

    memory_key: str
    content: str
    value: str
    valid_from: datetime
    valid_to: datetime | None
    superseded_by: str | None
    evidence_ids: tuple[int, ...]
    current: bool

    def as_dict(self) -> dict[str, object]:
        """The version as JSON-ready values (times in ISO-8601)."""
        return {
            "memory_key": self.memory_key,
            "content": self.content,
            "value": self.value,
            "valid_from": self.valid_from.isoformat(),
            "valid_to": self.valid_to.isoformat() if self.valid_to else None,
            "superseded_by": self.superseded_by,
            "evidence_ids": list(self.evidence_ids),
            "current": self.current,
        }


def _evidence(record: MemoryRecord) -> tuple[int, ...]:
    return tuple(i for i in record.metadata.get("source_message_ids") or [] if isinstance(i, int))


async def kept_versions(memory: MemoryRepository, *, user_id: str) -> list[MemoryRecord]:
    """Every kept earlier version of the user's items (inactive, marked ``history``)."""
    found: list[MemoryRecord] = []
    cursor: str | None = None
    while True:
        page = await memory.list_memories(user_id=user_id, include_inactive=True, limit=_PAGE, cursor=cursor)
        found += [r for r in page.items if not r.is_active and is_version(r)]
        cursor = page.next_cursor
        if cursor is None:
            return found


async def memory_history(memory: MemoryRepository, *, user_id: str, memory_key: str) -> list[MemoryVersion]:
    """The versions of the item ``memory_key`` (or of the item a version key belongs to), oldest first.

    Raises :class:`~data_layer.NotFoundError` when the user has no such item.
    """
    current = await memory.retrieve_memory(memory_key=memory_key, user_id=user_id, touch=False)
    key = memory_key  # an item of its own, whatever its key looks like
    if current is None:
        key = base_key(memory_key)
        current = await memory.retrieve_memory(memory_key=key, user_id=user_id, touch=False)
    stem = version_stem(key)
    earlier = [r for r in await kept_versions(memory, user_id=user_id) if base_key(r.memory_key) == stem]
    if current is None:  # the version key of a long item: its item is the one its versions name
        named = {r.metadata.get("superseded_by") for r in earlier}
        for name in sorted(n for n in named if isinstance(n, str) and n != key and version_stem(n) == stem):
            current = await memory.retrieve_memory(memory_key=name, user_id=user_id, touch=False)
            if current is not None:
                key = name
                break
    if current is None and not earlier:
        raise NotFoundError(f"no memory {key!r} with a history; `agent-memory memory list` lists the keys")
    ordered = sorted(earlier, key=lambda r: (valid_from(r), r.memory_key))
    chain: list[MemoryRecord] = [*ordered, *([current] if current is not None else [])]
    versions = []
    for position, record in enumerate(chain):
        following = chain[position + 1].memory_key if position + 1 < len(chain) else None
        is_current = record is current
        versions.append(
            MemoryVersion(
                memory_key=record.memory_key,
                content=record.content,
                value=str(record.metadata.get("value") or record.content),
                valid_from=valid_from(record),
                valid_to=None if is_current else valid_to(record),
                superseded_by=None if is_current else following or record.metadata.get("superseded_by"),
                evidence_ids=_evidence(record),
                current=is_current,
            )
        )
    return versions


async def versions_at(memory: MemoryRepository, *, user_id: str, at: datetime) -> dict[str, MemoryRecord]:
    """The kept earlier version of each item that was current at ``at``, by the item's stem
    (:func:`version_stem`: its key unless that is a long one)."""
    found: dict[str, MemoryRecord] = {}
    for record in await kept_versions(memory, user_id=user_id):
        if holds_at(record, at):
            found.setdefault(base_key(record.memory_key), record)
    return found


async def records_as_of(
    memory: MemoryRepository, *, user_id: str, records: Sequence[MemoryRecord], at: datetime
) -> list[MemoryRecord | None]:
    """Each record as it stood at ``at``: itself when it held then, else its item's version that did,
    else ``None`` (the item did not hold then)."""
    earlier: dict[str, MemoryRecord] | None = None
    out: list[MemoryRecord | None] = []
    for record in records:
        if holds_at(record, at) and (record.is_active or is_version(record)):
            out.append(record)
            continue
        if earlier is None:
            earlier = await versions_at(memory, user_id=user_id, at=at)
        out.append(earlier.get(version_stem(base_key(record.memory_key))))
    return out
