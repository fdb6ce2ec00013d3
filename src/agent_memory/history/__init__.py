"""Memories over time: when a memory holds, an item's earlier versions, and what was current "as of" a
time.

>>> versions = await memory_history(layer.memory, user_id="u1", memory_key="profile-residence")  # doctest: +SKIP
>>> [(v.value, v.current) for v in versions]  # doctest: +SKIP
[('杭州', False), ('深圳', True)]
"""

from ._revise import keep_version, revise
from ._validity import (
    VERSION_SEPARATOR,
    AwareTime,
    aware,
    base_key,
    expired,
    expires_at,
    holds_at,
    is_version,
    parse_time,
    shown_at,
    valid_from,
    valid_to,
    with_expiry,
)
from ._versions import MemoryVersion, kept_versions, memory_history, records_as_of, versions_at

__all__ = [
    "VERSION_SEPARATOR",
    "AwareTime",
    "MemoryVersion",
    "aware",
    "base_key",
    "expired",
    "expires_at",
    "holds_at",
    "is_version",
    "keep_version",
    "kept_versions",
    "memory_history",
    "parse_time",
    "records_as_of",
    "revise",
    "shown_at",
    "valid_from",
    "valid_to",
    "versions_at",
    "with_expiry",
]
