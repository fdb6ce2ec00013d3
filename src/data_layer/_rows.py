"""Conversions between table rows and the records the repositories return."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy.engine import Row

from ._records import KeywordInput, MemoryRecord
from ._tables import AgentMemoryTable
from ._types import utcnow


def record_of(row: AgentMemoryTable | Row[Any]) -> MemoryRecord:
    """The detached record of a table row (a mapped object, or a row of ``agent_memories``' columns)."""
    return MemoryRecord(
        id=row.id,
        memory_key=row.memory_key,
        user_id=row.user_id,
        friend_id=row.friend_id,
        memory_type=row.memory_type,
        summary=row.summary,
        content=row.content,
        metadata=dict(row.content_metadata or {}),
        created_at=row.created_at,
        updated_at=row.updated_at,
        last_accessed_at=row.last_accessed_at,
        access_count=row.access_count,
        is_active=row.is_active,
        needs_keyword_extraction=row.needs_keyword_extraction,
    )


def keyword_rows(user_id: str, memory_id: uuid.UUID, keywords: Sequence[KeywordInput]) -> list[dict[str, Any]]:
    """Rows of ``agent_memory_keywords`` for one memory of ``user_id``."""
    now = utcnow()
    return [
        {
            "user_id": user_id,
            "memory_id": memory_id,
            "keyword": k.keyword,
            "weight": k.weight,
            "extraction_source": k.source,
            "created_at": now,
        }
        for k in keywords
    ]
