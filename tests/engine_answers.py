"""What an engine answers, every part of every hit, for tests that compare two engines exactly."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from agent_memory.search import HybridMemorySearch


async def engine_answers(engine: HybridMemorySearch, user: str, queries: Sequence[str], *, now: datetime) -> list[Any]:
    """Each query in each mode, for the whole user and for friend ``f1``: the hits' keys and scores."""
    out = []
    for mode in ("hybrid", "keyword", "semantic"):
        for friend in (None, "f1"):
            for q in queries:
                hits = await engine.search(q, user_id=user, friend_id=friend, mode=mode, limit=8, now=now)
                out.append([(h.memory_key, h.score, h.rank_score, h.keyword, h.text, h.semantic) for h in hits])
    return out
