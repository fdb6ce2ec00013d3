"""The search's record cache: values expire after their time, the oldest makes room, a user's go at once."""

from __future__ import annotations

import pytest

from agent_memory.search._expiring import ExpiringMap


def test_a_value_lives_its_time_and_no_longer() -> None:
    cache: ExpiringMap[str, int] = ExpiringMap(max_entries=10, ttl_s=60.0)
    cache.put("a", 1, now=100.0)
    assert cache.get("a", now=159.9) == 1
    assert cache.get("a", now=160.0) is None and len(cache) == 0  # looked up expired: gone
    assert cache.get("never", now=0.0) is None
    cache.put("a", 2, now=200.0)  # put again: a new life
    assert cache.get("a", now=250.0) == 2


def test_the_oldest_entry_makes_room() -> None:
    cache: ExpiringMap[str, int] = ExpiringMap(max_entries=3, ttl_s=60.0)
    for n, key in enumerate("abc"):
        cache.put(key, n, now=0.0)
    cache.put("a", 9, now=1.0)  # replaced: now the newest
    cache.put("d", 3, now=2.0)
    assert [cache.get(k, now=3.0) for k in "abcd"] == [9, None, 2, 3] and len(cache) == 3


def test_drop_where_drops_only_the_chosen_keys() -> None:
    cache: ExpiringMap[tuple[str, int], str] = ExpiringMap(max_entries=10, ttl_s=60.0)
    for user in ("alice", "bob"):
        for n in range(3):
            cache.put((user, n), f"{user}{n}", now=0.0)
    cache.drop_where(lambda key: key[0] == "alice")
    assert [cache.get(("alice", n), now=1.0) for n in range(3)] == [None] * 3
    assert [cache.get(("bob", n), now=1.0) for n in range(3)] == ["bob0", "bob1", "bob2"]


@pytest.mark.parametrize(("size", "ttl"), [(0, 1.0), (1, 0.0), (5, -1.0)])
def test_bad_bounds_are_refused(size: int, ttl: float) -> None:
    with pytest.raises(ValueError, match="max_entries"):
        ExpiringMap(max_entries=size, ttl_s=ttl)
