"""When a memory holds: the one rule of validity that search, recall and history share.

A profile item holds from ``metadata.valid_from`` (default: ``created_at``) until ``metadata.valid_to``
(``None``: still). A memory may also carry ``metadata.expires_at``: from then on it is not current.
A superseded value is kept as an inactive memory ``<key>--<message id>`` marked ``metadata.history``;
the key before ``--`` names the item it is a version of (its stem: for a key too long to take the suffix,
its first characters and a hash of the whole key, see :func:`version_stem`).

>>> from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import AwareDatetime, BeforeValidator
>>> parse_time("2026-03-01T00:00:00+00:00") == datetime(2026, 3, 1, tzinfo=UTC)
True
>>> base_key("profile-residence--12"), base_key("profile-residence")
('profile-residence', 'profile-residence')
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import AwareDatetime, BeforeValidator

from data_layer import MEMORY_KEY_LENGTH, InvalidInputError, MemoryRecord

#: Between an item's key and the message id of one of its earlier versions.
VERSION_SEPARATOR = "--"

#: The longest stem a version key keeps: room is left for the separator and a 13-digit number (the
#: milliseconds of a time until the year 2286), so every key that took a suffix before keeps its stem.
STEM_LENGTH = MEMORY_KEY_LENGTH - len(VERSION_SEPARATOR) - 13

#: Hex digits of the hash that tells apart long keys sharing their first characters.
_HASH_DIGITS = 12


def parse_time(value: object) -> datetime | None:
    """An ISO-8601 time stored in metadata, made timezone-aware (UTC when it names no zone); ``None``
    for anything else."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _iso(value: object) -> object:
    """An ISO-8601 string read as a datetime before a strict check (JSON has no datetime type)."""
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value)
        except ValueError:
            return value  # the model's own error says what is wanted
    return value


#: A timezone-aware time in a tool's input: a datetime, or ISO-8601 text (``2026-06-03T18:00:00+08:00``).
AwareTime = Annotated[AwareDatetime, BeforeValidator(_iso)]


def aware(value: datetime | None, name: str) -> datetime | None:
    """``value`` checked: a timezone-aware datetime or ``None``; a clear error otherwise."""
    if value is None:
        return None
    if not isinstance(value, datetime):
        raise InvalidInputError(f"{name} must be a datetime, e.g. 2026-03-01T00:00:00+00:00")
    if value.tzinfo is None:
        raise InvalidInputError(f"{name} must be timezone-aware, e.g. 2026-03-01T00:00:00+00:00")
    return value


def version_stem(item_key: str) -> str:
    """What the keys of the item ``item_key``'s versions hold before the separator: the key itself, or
    for a key longer than :data:`STEM_LENGTH`, its first characters, ``-`` and a short hash of the whole
    key (stable, so every version of a long item has the same stem and two long keys that start alike
    have different ones). A stem is its own stem."""
    if len(item_key) <= STEM_LENGTH:
        return item_key
    digest = hashlib.sha256(item_key.encode()).hexdigest()[:_HASH_DIGITS]
    return f"{item_key[: STEM_LENGTH - _HASH_DIGITS - 1]}-{digest}"


def version_key(item_key: str, number: int) -> str:
    """The key of the item ``item_key``'s version numbered ``number`` (a message id or a time):
    ``<stem>--<number>``, within the 255 characters of a memory key."""
    return f"{version_stem(item_key)}{VERSION_SEPARATOR}{number}"


def base_key(memory_key: str) -> str:
    """The stem of the item a version belongs to (the key itself for a current item); compare it with
    :func:`version_stem` of an item's key, which is the item's key unless that is a long one.

    A version's key is its item's stem, the separator and a number, so only a last part of digits is
    taken off: an item's own key may hold the separator too (``pet--cat`` is no version of ``pet``).
    """
    item, separator, stamp = memory_key.rpartition(VERSION_SEPARATOR)
    return item if separator and item and stamp.isdigit() else memory_key


def is_version(record: MemoryRecord) -> bool:
    """Whether ``record`` is a kept earlier version of an item (not a deleted memory)."""
    return bool(record.metadata.get("history")) and not record.metadata.get("forgotten")


def valid_from(record: MemoryRecord) -> datetime:
    """Since when the memory holds."""
    return parse_time(record.metadata.get("valid_from")) or record.created_at


def valid_to(record: MemoryRecord) -> datetime | None:
    """Until when the memory held (``None``: it still does)."""
    return parse_time(record.metadata.get("valid_to"))


def expires_at(record: MemoryRecord) -> datetime | None:
    """When the memory stops being current, if it was given an end (``metadata.expires_at``)."""
    return parse_time(record.metadata.get("expires_at"))


def with_expiry(metadata: dict[str, Any] | None, at: datetime | None) -> dict[str, Any] | None:
    """``metadata`` with ``expires_at`` set to ``at`` (checked: timezone-aware), for a memory that stops
    being current then; ``metadata`` itself when ``at`` is ``None``."""
    end = aware(at, "expires_at")
    return metadata if end is None else {**(metadata or {}), "expires_at": end.isoformat()}


def expired(record: MemoryRecord, at: datetime) -> bool:
    """Whether the memory's ``expires_at`` has passed at ``at``."""
    end = expires_at(record)
    return end is not None and end <= at


def holds_at(record: MemoryRecord, at: datetime) -> bool:
    """Whether the memory was current at ``at``: it existed and held then, and had not expired."""
    if valid_from(record) > at:
        return False
    end = valid_to(record)
    return (end is None or end > at) and not expired(record, at)


def shown_at(record: MemoryRecord, as_of: datetime | None) -> bool:
    """Whether a memory read again may be given as a result: an active one now; as of a time, one that
    held then (an active memory or a kept earlier version, never a deleted one)."""
    if as_of is None:
        return record.is_active
    return (record.is_active or is_version(record)) and holds_at(record, as_of)
