"""When a memory holds: the one rule of validity that search, recall and history share.

A profile item holds from ``metadata.valid_from`` (default: ``created_at``) until ``metadata.valid_to``
(``None``: still). A memory may also carry ``metadata.expires_at``: from then on it is not current.
A superseded value is kept as an inactive memory ``<key>--<message id>`` marked ``metadata.history``;
the key before ``--`` names the item it is a version of.

>>> from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import AwareDatetime, BeforeValidator
>>> parse_time("2026-03-01T00:00:00+00:00") == datetime(2026, 3, 1, tzinfo=UTC)
True
>>> base_key("profile-residence--12"), base_key("profile-residence")
('profile-residence', 'profile-residence')
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import AwareDatetime, BeforeValidator

from data_layer import InvalidInputError, MemoryRecord

#: Between an item's key and the message id of one of its earlier versions.
VERSION_SEPARATOR = "--"


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


def base_key(memory_key: str) -> str:
    """The key of the item a version belongs to (the key itself for a current item).

    A version's key is its item's key, the separator and a number, so only a last part of digits is
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
