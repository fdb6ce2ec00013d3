"""Containers whose values are made on first access, so an index loaded from a snapshot costs little.

A :class:`~agent_memory.search._index.UserIndex` loaded from a snapshot keeps its posting lists, slots,
sessions and inner-word sets as numpy arrays; the Python objects the write path and the scorers use
are made one by one when a search or a write first touches them. A search reads the postings of a few
query terms and the slots of about thirty results, so the first search after a restart pays for those
only, not for the whole index.

>>> m = LazyMap(["a", "b"], lambda i: i * 10)
>>> m.get("b"), "a" in m, len(m)
(10, True, 2)

The containers keep the key order of the dict they replace (the keys come from a snapshot written in
that order), so iteration, and therefore every float sum over it, is the same as in the index that
was saved.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator
from typing import Generic, TypeVar, overload

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
D = TypeVar("D")


class LazyMap(Generic[K, V]):
    """A dict (the methods the index uses) whose values come from ``loader(position)`` when first read."""

    __slots__ = ("_data", "_loader")

    def __init__(self, keys: Iterable[K] = (), loader: Callable[[int], V] | None = None) -> None:
        # a value not made yet is its position (an int: no value the index stores is one)
        self._data: dict[K, V | int] = dict(zip(keys, range(1 << 62), strict=False))
        self._loader = loader

    def _made(self, key: K, value: V | int) -> V:
        if isinstance(value, int):
            assert self._loader is not None
            made = self._loader(value)
            self._data[key] = made
            return made
        return value

    @overload
    def get(self, key: K) -> V | None: ...

    @overload
    def get(self, key: K, default: D) -> V | D: ...

    def get(self, key: K, default: object = None) -> object:
        try:
            value = self._data[key]
        except KeyError:
            return default
        return self._made(key, value)

    def __getitem__(self, key: K) -> V:
        return self._made(key, self._data[key])

    def __setitem__(self, key: K, value: V) -> None:
        self._data[key] = value

    def __delitem__(self, key: K) -> None:
        del self._data[key]

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __len__(self) -> int:
        return len(self._data)

    def __iter__(self) -> Iterator[K]:
        return iter(self._data)

    def pop(self, key: K, default: V | None = None) -> V | None:
        if key not in self._data:
            return default
        value = self._made(key, self._data[key])
        del self._data[key]
        return value

    def setdefault(self, key: K, default: V) -> V:
        if key in self._data:
            return self[key]
        self._data[key] = default
        return default

    def keys(self) -> set[K]:
        return set(self._data)

    def values(self) -> list[V]:
        return [self._made(k, v) for k, v in list(self._data.items())]

    def items(self) -> list[tuple[K, V]]:
        return [(k, self._made(k, v)) for k, v in list(self._data.items())]


class LazyList(Generic[V]):
    """A list (the methods the index uses) whose items come from ``loader(position)`` when first read."""

    __slots__ = ("_items", "_loader")

    def __init__(self, size: int = 0, loader: Callable[[int], V] | None = None) -> None:
        self._items: list[V | int] = list(range(size))
        self._loader = loader

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, at: int) -> V:
        value = self._items[at]
        if isinstance(value, int):
            assert self._loader is not None
            value = self._items[at] = self._loader(value)
        return value

    def __setitem__(self, at: int, value: V) -> None:
        self._items[at] = value

    def append(self, value: V) -> None:
        self._items.append(value)

    def __iter__(self) -> Iterator[V]:
        for at in range(len(self._items)):
            yield self[at]

    def pending(self, at: int) -> bool:
        """True while the item at ``at`` has not been made."""
        return type(self._items[at]) is int
