"""``MemoryModel``: the old ``search_memories`` call, kept compatible, and
``search_memories_advanced`` that the memory tools call.

>>> model = MemoryModel(layer)  # doctest: +SKIP
>>> infos = await model.search_memories("数据库", user_id=1, limit=5)  # doctest: +SKIP
>>> infos[0].memory_key, infos[0].relevance_score  # doctest: +SKIP
('db-config-001', 0.82)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from data_layer import AgentFusionDataLayer, InvalidInputError

from ._engine import HybridMemorySearch, SearchMode
from ._pipeline import SearchHit


@dataclass(frozen=True, slots=True)
class MemoryInfo:
    """A search result as the recall tools expect it."""

    memory_key: str
    summary: str
    content: str
    memory_type: str
    friend_id: str | None
    relevance_score: float
    created_at: datetime
    keywords: tuple[str, ...]

    @classmethod
    def of(cls, hit: SearchHit) -> MemoryInfo:
        """The info of a :class:`SearchHit`."""
        r = hit.record
        return cls(
            r.memory_key, r.summary, r.content, r.memory_type, r.friend_id, hit.score, r.created_at, hit.keywords
        )


class MemoryModel:
    """Memory search over a data layer (one :class:`HybridMemorySearch` per model)."""

    def __init__(self, layer: AgentFusionDataLayer, *, search: HybridMemorySearch | None = None) -> None:
        self.layer = layer
        self.engine = search or HybridMemorySearch(layer.memory)

    async def search_memories(
        self,
        query: str,
        user_id: int | str | None = None,
        limit: int = 5,
        search_mode: SearchMode = "keyword",
        keywords: Sequence[str] | None = None,
        memory_types: Sequence[str] | None = None,
        time_range: tuple[datetime, datetime] | None = None,
        min_relevance_score: float = 0.0,
    ) -> list[MemoryInfo]:
        """The original interface (keyword mode by default, as before); ``user_id`` is required."""
        if user_id is None:
            raise InvalidInputError("user_id is required: memories are always searched for one user")
        start, end = time_range if time_range is not None else (None, None)
        hits = await self.engine.search(
            query,
            user_id=user_id,
            mode=search_mode,
            keywords=keywords,
            memory_types=memory_types,
            start=start,
            end=end,
            limit=limit,
            min_relevance_score=min_relevance_score,
        )
        return [MemoryInfo.of(h) for h in hits]

    async def search_memories_advanced(
        self,
        *,
        user_id: int | str,
        query: str,
        friend_id: int | str | None = None,
        keywords: Sequence[str] | None = None,
        memory_types: Sequence[str] | None = None,
        time_range_days: int | None = None,
        min_relevance_score: float = 0.0,
        limit: int = 5,
        search_mode: SearchMode = "hybrid",
        now: datetime | None = None,
    ) -> list[MemoryInfo]:
        """The tools' search: hybrid by default, scoped to an AI friend (plus shared memories)."""
        hits = await self.engine.search(
            query,
            user_id=user_id,
            friend_id=friend_id,
            mode=search_mode,
            keywords=keywords,
            memory_types=memory_types,
            time_range_days=time_range_days,
            min_relevance_score=min_relevance_score,
            limit=limit,
            now=now,
        )
        return [MemoryInfo.of(h) for h in hits]
