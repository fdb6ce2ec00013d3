"""What the write paths give the memory engine (migration ``0010_memory_search_engine``) with a search row.

A row of ``agent_memory_search_index`` carries the memory's tokens, the search terms of its stored
keywords (``keyword_terms``) and the bucket terms of its embedding (``vector_terms``), all space-joined
and cleaned by :func:`engine_text` (the one rule: the triggers split on single spaces), and on SQLite
its ``row_id`` (:func:`number_rows`). The keyword terms are computed by the analyzer's
``keyword_terms(words)`` (:class:`KeywordTermsAnalyzer`) from the keywords the memory holds once the
write is done, so a kept user tag, a keyword backfill and a tag edit are all counted; a repository whose
analyzer has no such method stores ``NULL`` ("not analysed yet"), which ``agent-memory db upgrade`` fills.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from sqlalchemy import bindparam, select, text, update
from sqlalchemy.ext.asyncio import AsyncSession

from ._tables import MEMORY_FTS_TABLE, AgentMemoryKeywordsTable, AgentMemorySearchIndexTable

#: Longest term the engine holds, in UTF-8 bytes (PostgreSQL refuses lexemes of 2 KiB and more).
MAX_TERM_BYTES = 500

_IX = AgentMemorySearchIndexTable
#: A character the engine refuses, or a term that may be longer than MAX_TERM_BYTES (4 bytes a
#: character at most): a text without either is kept as it is, its empty terms aside.
_NEEDS_CHECK = re.compile(r"[\x00-\x1f]|[^ ]{" + str(MAX_TERM_BYTES // 4 + 1) + ",}")


@runtime_checkable
class KeywordTermsAnalyzer(Protocol):
    """An analyzer that also gives the search terms of keywords (``SearchAnalyzer`` does)."""

    def keyword_terms(self, keywords: Sequence[str]) -> str:
        """The search terms of ``keywords``, space-joined (each once, in order)."""
        ...


def engine_text(text: str | None) -> str | None:
    """``text``'s terms the engine holds, space-joined: non-empty, without a character below U+0020, at
    most :data:`MAX_TERM_BYTES` bytes (``None`` stays ``None``)."""
    if text is None:
        return None
    if _NEEDS_CHECK.search(text) is None:
        return " ".join(t for t in text.split(" ") if t)
    kept = [t for t in text.split(" ") if t and not any(ch < " " for ch in t) and len(t.encode()) <= MAX_TERM_BYTES]
    return " ".join(kept)


def keyword_terms_of(analyzer: object, keywords: Sequence[str]) -> str | None:
    """The stored ``keyword_terms`` of a memory holding ``keywords`` (``None``: the analyzer cannot say)."""
    if not isinstance(analyzer, KeywordTermsAnalyzer):
        return None
    return engine_text(analyzer.keyword_terms(list(keywords)))


async def number_rows(session: AsyncSession, backend: str, rows: Sequence[dict[str, Any]]) -> None:
    """Give new search rows their ``row_id`` on SQLite: the engine's largest rowid plus one, in order (the
    writer holds the file's write lock, so no other writer numbers meanwhile). PostgreSQL's come from the
    column's sequence."""
    if backend != "sqlite" or not rows:
        return
    largest = (await session.execute(text(f"SELECT max(rowid) FROM {MEMORY_FTS_TABLE}"))).scalar()
    start = int(largest or 0) + 1
    for offset, row in enumerate(rows):
        row["row_id"] = start + offset


async def refresh_keyword_terms(
    session: AsyncSession, analyzer: object, uid: str, memory_ids: Sequence[uuid.UUID]
) -> None:
    """Store the keyword terms of these memories' search rows from the keywords they now hold."""
    if not memory_ids:
        return
    kw = AgentMemoryKeywordsTable
    held: dict[uuid.UUID, list[str]] = {mid: [] for mid in memory_ids}
    if isinstance(analyzer, KeywordTermsAnalyzer):
        for start in range(0, len(memory_ids), 500):
            part = list(memory_ids[start : start + 500])
            rows = await session.execute(
                select(kw.memory_id, kw.keyword).where(kw.user_id == uid, kw.memory_id.in_(part)).order_by(kw.keyword)
            )
            for mid, word in rows:
                held[mid].append(word)
    values = [{"mid": mid, "terms": keyword_terms_of(analyzer, words)} for mid, words in held.items()]
    t = _IX.__table__
    await session.execute(
        update(t).where(t.c.user_id == uid, t.c.memory_id == bindparam("mid")).values(keyword_terms=bindparam("terms")),
        values,
    )
