"""Storage records of :class:`~agent_memory.search._index.UserIndex`: slots and posting lists.

A slot holds one memory with its term frequencies; a posting list maps slots to a value (term frequency or
keyword weight) and caches the numpy form the scorers read, dropped on every change. ``_inner_words``
decides which Chinese compounds a shorter query word may reach. These are plain data with no index
logic, so they sit apart from the index's write and scoring code.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from ..text import dictionary_cuts

if TYPE_CHECKING:
    from ._index import IndexedMemory

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(slots=True)
class _Slot:
    memory: IndexedMemory
    tf: dict[str, int]
    ts: float


class _Postings:
    """Slots holding a term and their values; ``by_slot`` (the writable form) is made from the cached arrays
    only when a write needs it, so postings loaded from a snapshot stay two numpy arrays until then."""

    __slots__ = ("_by_slot", "cached")

    def __init__(
        self, by_slot: dict[int, float] | None = None, cached: tuple[IntArray, FloatArray] | None = None
    ) -> None:
        self._by_slot = by_slot if by_slot is not None or cached is not None else {}
        self.cached = cached

    @property
    def by_slot(self) -> dict[int, float]:
        if self._by_slot is None:
            assert self.cached is not None
            self._by_slot = dict(zip(self.cached[0].tolist(), self.cached[1].tolist(), strict=True))
        return self._by_slot

    def count(self) -> int:
        """How many slots hold the term."""
        if self._by_slot is not None:
            return len(self._by_slot)
        assert self.cached is not None  # one of the two forms is always held
        return len(self.cached[0])

    def arrays(self) -> tuple[IntArray, FloatArray]:
        if self.cached is None:
            by_slot = self.by_slot
            slots = np.fromiter(by_slot.keys(), dtype=np.int64, count=len(by_slot))
            values = np.fromiter(by_slot.values(), dtype=np.float64, count=len(by_slot))
            self.cached = (slots, values)
        return self.cached


def _inner_words(term: str) -> list[str]:
    """Substrings of 2+ characters inside a Chinese term of 3 to 8 characters (科幻电影 -> 科幻, 电影, ...),
    but none that runs across the words the term is made of (幻电; 天天 in 今天天气, which would let
    "天天加班" find a memory about the weather; :func:`~agent_memory.text.dictionary_cuts`)."""
    if not 3 <= len(term) <= 8 or not all("\u3400" <= ch <= "\u9fff" for ch in term):
        return []
    n, cuts = len(term), dictionary_cuts(term)
    return [
        term[i:j] for i in range(n) for j in range(i + 2, n + 1) if j - i < n and not any(i < cut < j for cut in cuts)
    ]
