"""Turning caller input into ``agent_memories`` rows: validation, analysis and row values.

Both write paths of :class:`~data_layer._memory_repo.MemoryRepository` (``add_many`` and ``upsert``)
go through the same steps: validate a :class:`NewMemory` into a :class:`MemoryDraft` (this is where an
event memory without a friend is refused unless ``shared=True``, and a profile memory with one), run the
analyzer outside the transaction, then build or overwrite the row, its keywords and its search-index row.
Keeping those steps here lets the repository module hold only the transaction logic (conflicts,
revisions, listeners).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from sqlalchemy import delete, update
from sqlalchemy.ext.asyncio import AsyncSession

from . import _validation as v
from ._errors import InvalidInputError
from ._memory_engine import KeywordTermsAnalyzer, engine_text, keyword_terms_of, number_rows
from ._memory_types import DEFAULT_MEMORY_TYPE, FRIEND_OWNED_TYPES, USER_OWNED_TYPES
from ._records import KeywordInput, MemoryAnalysis, MemoryAnalyzer, MemoryDraft, MemoryRecord
from ._rows import keyword_rows
from ._tables import AgentMemoryKeywordsTable, AgentMemorySearchIndexTable, AgentMemoryTable
from ._types import utcnow

if TYPE_CHECKING:
    from ._engine import Database

OnOversize = Literal["truncate", "error"]


@dataclass(frozen=True, slots=True)
class NewMemory:
    """One memory for :meth:`MemoryRepository.add_many`; the fields mean what ``add``'s arguments mean."""

    memory_key: str
    content: str
    summary: str | None = None
    memory_type: str = DEFAULT_MEMORY_TYPE
    friend_id: str | int | None = None
    metadata: dict[str, Any] | None = None
    created_at: datetime | None = None
    keywords: Sequence[str | tuple[str, float] | KeywordInput] | None = None
    #: An event memory without ``friend_id`` is refused unless this is set: shared on purpose.
    shared: bool = False


def _from_values(values: dict[str, Any]) -> MemoryRecord:
    return MemoryRecord(
        id=values["id"],
        memory_key=values["memory_key"],
        user_id=values["user_id"],
        friend_id=values["friend_id"],
        memory_type=values["memory_type"],
        summary=values["summary"],
        content=values["content"],
        metadata=dict(values["content_metadata"]),
        created_at=values["created_at"],
        updated_at=values["updated_at"],
        last_accessed_at=values["last_accessed_at"],
        access_count=values["access_count"],
        is_active=values["is_active"],
        needs_keyword_extraction=values["needs_keyword_extraction"],
    )


@dataclass(frozen=True, slots=True)
class _Prepared:
    draft: MemoryDraft
    keywords: list[KeywordInput]
    analysis: MemoryAnalysis | None
    #: the search terms of ``keywords`` (``None``: the analyzer gives none)
    keyword_terms: str | None = None


class MemoryRowsMixin:
    """Draft validation, analysis and row building shared by the write paths of :class:`MemoryRepository`."""

    _analyzer: MemoryAnalyzer | None
    _db: Database

    def _draft(self, uid: str, item: NewMemory, *, on_oversize: OnOversize) -> MemoryDraft:
        key = v.memory_key(item.memory_key)
        friend = v.scope_id(item.friend_id, name="friend_id", optional=True)
        kind = v.memory_type(item.memory_type)
        if not isinstance(item.shared, bool):
            raise InvalidInputError("shared must be true or false")
        if friend is None and kind in FRIEND_OWNED_TYPES and not item.shared:
            raise InvalidInputError(
                f"memory {key!r} is an {kind} memory without friend_id: give the AI friend whose conversation it "
                "belongs to, or share it with every friend of the user on purpose (shared=True in Python, --shared "
                "on the command line)"
            )
        if friend is not None and kind in USER_OWNED_TYPES:
            raise InvalidInputError(
                f"memory {key!r} is a {kind} memory, shared by every AI friend of the user: leave friend_id out "
                "(no --friend on the command line); a memory for one friend alone is an event"
            )
        content, metadata = v.content_and_metadata(item.content, item.metadata, on_oversize=on_oversize)
        return MemoryDraft(
            memory_key=key,
            user_id=uid,
            friend_id=friend,
            memory_type=kind,
            summary=v.summary(item.summary, content),
            content=content,
            metadata=metadata,
            created_at=v.aware_datetime(item.created_at, name="created_at") or utcnow(),
            keywords=v.keyword_inputs(item.keywords),
        )

    async def _prepare(self, drafts: Sequence[MemoryDraft]) -> list[_Prepared]:
        """Run the analyzer (outside any transaction) and merge its keywords under the user tags."""
        if self._analyzer is None:
            return [_Prepared(d, list(d.keywords), None) for d in drafts]
        analyses = await self._analyzer.analyze(drafts)
        if len(analyses) != len(drafts):
            raise RuntimeError("the memory analyzer returned a different number of analyses than drafts")
        prepared = []
        for draft, analysis in zip(drafts, analyses, strict=True):
            v.stored_text(analysis.tokens, name="the analyzer's tokens")
            merged: dict[str, KeywordInput] = {k.keyword: k for k in draft.keywords}
            for kw in v.analysis_keywords(analysis.keywords):  # a computed keyword never fails the write
                merged.setdefault(kw.keyword, kw)
            prepared.append(_Prepared(draft, list(merged.values()), analysis))
        if isinstance(self._analyzer, KeywordTermsAnalyzer):
            analyzer = self._analyzer

            def with_terms() -> list[_Prepared]:
                return [
                    replace(p, keyword_terms=keyword_terms_of(analyzer, sorted(k.keyword for k in p.keywords)))
                    for p in prepared
                ]

            # a batch's keywords are tokenised off the event loop (an import: thousands of words)
            prepared = await asyncio.to_thread(with_terms) if len(prepared) > 1 else with_terms()
        return prepared

    @staticmethod
    def _row_values(item: _Prepared, *, memory_id: uuid.UUID, revision: int) -> dict[str, Any]:
        draft = item.draft
        return {
            "id": memory_id,
            "memory_key": draft.memory_key,
            "user_id": draft.user_id,
            "friend_id": draft.friend_id,
            "memory_type": draft.memory_type,
            "summary": draft.summary,
            "content": draft.content,
            "content_metadata": draft.metadata,
            "created_at": draft.created_at,
            "updated_at": utcnow(),
            "last_accessed_at": None,
            "access_count": 0,
            "is_active": True,
            "needs_keyword_extraction": item.analysis is None,
            "revision": revision,
        }

    @staticmethod
    def _index_row(
        user_id: str, memory_id: uuid.UUID, analysis: MemoryAnalysis, *, keyword_terms: str | None = None
    ) -> dict[str, Any]:
        """A search row (numbered by :func:`number_rows` before its insert)."""
        return {
            "user_id": user_id,
            "memory_id": memory_id,
            "analyzer": analysis.analyzer,
            "tokens": engine_text(analysis.tokens),
            "embedder": analysis.embedder,
            "embedding": analysis.embedding,
            "updated_at": utcnow(),
            "keyword_terms": keyword_terms,
            "vector_terms": engine_text(analysis.vector_terms),
        }

    async def _replace(
        self,
        session: AsyncSession,
        old: AgentMemoryTable,
        item: _Prepared,
        *,
        revision: int,
        keep_created: bool = False,
    ) -> dict[str, Any]:
        """Overwrite ``old`` with ``item``; returns the row's new values."""
        uid = old.user_id
        values = self._row_values(item, memory_id=old.id, revision=revision)
        if keep_created:
            values["created_at"] = old.created_at
        await session.execute(
            update(AgentMemoryTable)
            .where(AgentMemoryTable.user_id == uid, AgentMemoryTable.id == old.id)
            .values(**{k: val for k, val in values.items() if k not in ("id", "user_id")})
        )
        kw, ix = AgentMemoryKeywordsTable, AgentMemorySearchIndexTable
        await session.execute(delete(kw).where(kw.user_id == uid, kw.memory_id == old.id))
        await session.execute(delete(ix).where(ix.user_id == uid, ix.memory_id == old.id))
        if item.keywords:
            await session.execute(kw.__table__.insert(), keyword_rows(uid, old.id, item.keywords))
        if item.analysis is not None:
            row = self._index_row(uid, old.id, item.analysis, keyword_terms=item.keyword_terms)
            await number_rows(session, self._db.backend, [row])
            await session.execute(ix.__table__.insert(), [row])
        return values
