"""Final ordering of search results: relevance 70 %, interaction 20 %, type 10 %.

>>> from datetime import UTC, datetime
>>> ranker = SearchResultRanker()
>>> now = datetime(2024, 6, 1, tzinfo=UTC)
>>> ranker.score(relevance=0.9, access_count=0, last_accessed_at=None, memory_type="general", now=now)
0.67
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from ..domain import DEFAULT_MEMORY_TYPE
from ._scoring import TYPE_PRIORITY, interaction_score


@dataclass(frozen=True, slots=True)
class SearchResultRanker:
    """``0.7 * relevance + 0.2 * interaction + 0.1 * type priority``.

    ``interaction`` grows with the access count (log scale, 20 reads count fully) and with how
    recently the memory was read (half-life ``half_life_days``); type priorities default to
    user preferences and profiles first, then command outputs, events, and general memories.
    An event whose time has passed (``lapsed``: ``agent_memory.history.lapsed``) counts
    ``lapsed_weight`` of its score: below a current memory of the same score, above a current one
    much less relevant.
    """

    relevance_weight: float = 0.7
    interaction_weight: float = 0.2
    type_weight: float = 0.1
    half_life_days: float = 30.0
    lapsed_weight: float = 0.9
    type_priority: Mapping[str, float] = field(default_factory=lambda: dict(TYPE_PRIORITY))

    def __post_init__(self) -> None:
        total = self.relevance_weight + self.interaction_weight + self.type_weight
        if min(self.relevance_weight, self.interaction_weight, self.type_weight) < 0 or abs(total - 1.0) > 1e-6:
            raise ValueError("ranker weights must be non-negative and add up to 1")
        if not 0 < self.lapsed_weight <= 1:
            raise ValueError(f"lapsed_weight must be in (0, 1], got {self.lapsed_weight!r}")

    def score(
        self,
        *,
        relevance: float,
        access_count: int,
        last_accessed_at: datetime | None,
        memory_type: str,
        now: datetime,
        lapsed: bool = False,
    ) -> float:
        """The rank score of one result, in 0-1 (rounded to 6 places so equal inputs tie exactly)."""
        days = None if last_accessed_at is None else max(0.0, (now - last_accessed_at).total_seconds() / 86400)
        interaction = interaction_score(access_count, days, half_life_days=self.half_life_days)
        priority = self.type_priority.get(memory_type, self.type_priority.get(DEFAULT_MEMORY_TYPE, 0.4))
        value = self.relevance_weight * relevance + self.interaction_weight * interaction + self.type_weight * priority
        return round(value * (self.lapsed_weight if lapsed else 1.0), 6)
