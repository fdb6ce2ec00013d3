"""A bounded map whose entries expire: the search's cache of memory records.

A search reads the records of its thirty best candidates, so the lookup runs thirty times a search
and a few thousand times a second on a busy server. ``cachetools.TTLCache``'s lookup runs Python
code (its timer, its expiry and its LRU links); this is one ``dict.get`` and a time comparison.
The price: the oldest entry is dropped first when full (not the least
recently used) and an expired entry stays until it is looked up or pushed out.

>>> records = ExpiringMap(max_entries=2, ttl_s=600.0)
>>> records.put("a", 1, now=0.0)
>>> records.get("a", now=10.0), records.get("a", now=700.0)
(1, None)
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class ExpiringMap(Generic[K, V]):
    """At most ``max_entries`` values, each kept ``ttl_s`` seconds (see the module docs)."""

    def __init__(self, *, max_entries: int, ttl_s: float) -> None:
        if max_entries < 1 or ttl_s <= 0:
            raise ValueError("ExpiringMap needs max_entries >= 1 and ttl_s > 0")
        self.max_entries = max_entries
        self.ttl_s = ttl_s
        self._entries: dict[K, tuple[float, V]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: K, *, now: float) -> V | None:
        """The value kept for ``key`` unless it expired (``now``: ``time.monotonic()``)."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry[0] <= now:
            del self._entries[key]
            return None
        return entry[1]

    def put(self, key: K, value: V, *, now: float) -> None:
        """Keep ``value`` for ``key`` until ``now + ttl_s``; the oldest entry makes room when full."""
        entries = self._entries
        entries.pop(key, None)
        while len(entries) >= self.max_entries:
            del entries[next(iter(entries))]
        entries[key] = (now + self.ttl_s, value)

    def drop_where(self, doomed: Callable[[K], bool]) -> None:
        """Drop every entry whose key ``doomed`` accepts."""
        for key in [k for k in self._entries if doomed(k)]:
            del self._entries[key]
