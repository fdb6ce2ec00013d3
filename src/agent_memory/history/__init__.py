"""Memories over time: when a memory holds, an item's earlier versions, what was current "as of" a
time, and events that become the past when the time they name has passed (``lapse_of``).

>>> versions = await memory_history(layer.memory, user_id="u1", memory_key="profile-residence")  # doctest: +SKIP
>>> [(v.value, v.current) for v in versions]  # doctest: +SKIP
[('杭州', False), ('深圳', True)]
"""

from ._lapse import PAST_MARK, lapse_of, lapsed, lapses_at, latest_lapse, marked, past_mark, with_lapse
from ._revise import keep_version, revise
from ._validity import (
    STEM_LENGTH,
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
    version_key,
    version_stem,
    with_expiry,
)
from ._versions import MemoryVersion, kept_versions, memory_history, records_as_of, versions_at

__all__ = [
    "PAST_MARK",
    "STEM_LENGTH",
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
    "lapse_of",
    "lapsed",
    "lapses_at",
    "latest_lapse",
    "marked",
    "memory_history",
    "parse_time",
    "past_mark",
    "records_as_of",
    "revise",
    "shown_at",
    "valid_from",
    "valid_to",
    "version_key",
    "version_stem",
    "versions_at",
    "with_expiry",
    "with_lapse",
]
