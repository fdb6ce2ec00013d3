"""Keyword CRUD for a user's memories and the shared synonym vocabulary."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import and_, delete, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from . import _revision
from . import _validation as v
from ._changed import rows_changed
from ._dialect import insert_updating
from ._engine import Database
from ._errors import InvalidInputError, MemoryNotFoundError
from ._memory_engine import refresh_keyword_terms
from ._records import KeywordInput, KeywordRecord, SynonymRecord
from ._rows import keyword_rows
from ._tables import AgentMemoryKeywordsTable, AgentMemoryTable, KeywordSynonymsTable

Keywords = Sequence[str | tuple[str, float] | KeywordInput]


def _score(value: float | None) -> float:
    return 0.8 if value is None else value


class KeywordOpsMixin:
    """Keyword and synonym operations of :class:`MemoryRepository`."""

    _db: Database
    _changed: Callable[[str], None]
    #: the repository's analyzer (its ``keyword_terms`` makes a memory's keyword terms)
    _analyzer: Any

    async def _memory_id(self, session: AsyncSession, uid: str, key: str) -> uuid.UUID:
        memory_id = await session.scalar(
            select(AgentMemoryTable.id).where(
                AgentMemoryTable.user_id == uid,
                AgentMemoryTable.memory_key == key,
                AgentMemoryTable.is_active.is_(True),
            )
        )
        if memory_id is None:
            raise MemoryNotFoundError(key)
        return memory_id

    async def get_keywords(self, *, user_id: str | int, memory_key: str) -> list[KeywordRecord]:
        """The keywords of the user's memory, heaviest first."""
        uid = v.user_id(user_id)
        key = v.memory_key(memory_key)
        async with self._db.read() as session:
            memory_id = await self._memory_id(session, uid, key)
            rows = await session.scalars(
                select(AgentMemoryKeywordsTable)
                .where(AgentMemoryKeywordsTable.user_id == uid, AgentMemoryKeywordsTable.memory_id == memory_id)
                .order_by(AgentMemoryKeywordsTable.weight.desc(), AgentMemoryKeywordsTable.keyword)
            )
            return [
                KeywordRecord(
                    r.memory_id,
                    r.keyword,
                    1.0 if r.weight is None else r.weight,
                    r.extraction_source or "llm",
                    r.created_at,
                )
                for r in rows
            ]

    async def add_keywords(self, *, user_id: str | int, memory_key: str, keywords: Keywords) -> int:
        """Attach keywords (plain strings are user tags of weight 1.0); an existing keyword is re-weighted.

        Returns how many keywords were written.
        """
        uid = v.user_id(user_id)
        key = v.memory_key(memory_key)
        kws = v.keyword_inputs(v.keyword_list(keywords))
        async with self._db.write() as session:
            memory_id = await self._memory_id(session, uid, key)
            revision = await _revision.bump(session, self._db.backend, uid)  # before any row changes
            if kws:
                stmt = insert_updating(
                    self._db.backend,
                    AgentMemoryKeywordsTable,
                    conflict=["user_id", "memory_id", "keyword"],
                    update=["weight", "extraction_source"],
                )
                await session.execute(stmt, keyword_rows(uid, memory_id, kws))
                await _revision.stamp(session, uid, [memory_id], revision)
                await refresh_keyword_terms(session, self._analyzer, uid, [memory_id])
        self._changed(uid)
        return len(kws)

    async def replace_keywords(
        self, *, user_id: str | int, memory_key: str, keywords: Keywords, keep_user_tags: bool = True
    ) -> int:
        """Replace the memory's keywords (user tags stay unless ``keep_user_tags=False``).

        Clears ``needs_keyword_extraction``. Returns how many keywords the memory has afterwards.
        """
        uid = v.user_id(user_id)
        key = v.memory_key(memory_key)
        kws = v.keyword_inputs(v.keyword_list(keywords))
        async with self._db.write() as session:
            memory_id = await self._memory_id(session, uid, key)
            revision = await _revision.bump(session, self._db.backend, uid)  # before any row changes
            await self._replace_keyword_rows(session, uid, memory_id, kws, keep_user_tags=keep_user_tags)
            await _revision.stamp(session, uid, [memory_id], revision)
            await refresh_keyword_terms(session, self._analyzer, uid, [memory_id])
            kw = AgentMemoryKeywordsTable
            total = await session.scalar(select(func.count()).where(kw.user_id == uid, kw.memory_id == memory_id))
        self._changed(uid)
        return int(total or 0)

    async def _replace_keyword_rows(
        self,
        session: AsyncSession,
        uid: str,
        memory_id: uuid.UUID,
        kws: Sequence[KeywordInput],
        *,
        keep_user_tags: bool,
    ) -> None:
        kw, m = AgentMemoryKeywordsTable, AgentMemoryTable
        wipe = delete(kw).where(kw.user_id == uid, kw.memory_id == memory_id)
        if keep_user_tags:
            wipe = wipe.where(kw.extraction_source != "user_tag")
        await session.execute(wipe)
        if kws:
            kept = set(await session.scalars(select(kw.keyword).where(kw.user_id == uid, kw.memory_id == memory_id)))
            fresh = [k for k in kws if k.keyword not in kept]
            if fresh:
                await session.execute(kw.__table__.insert(), keyword_rows(uid, memory_id, fresh))
        await session.execute(
            update(m).where(m.user_id == uid, m.id == memory_id).values(needs_keyword_extraction=False)
        )

    async def remove_keywords(self, *, user_id: str | int, memory_key: str, keywords: Sequence[str]) -> int:
        """Detach keywords from the user's memory; returns how many were removed."""
        uid = v.user_id(user_id)
        key = v.memory_key(memory_key)
        words = [v.keyword_text(k) for k in v.keyword_list(keywords)]
        async with self._db.write() as session:
            memory_id = await self._memory_id(session, uid, key)
            revision = await _revision.bump(session, self._db.backend, uid)  # before any row changes
            result = await session.execute(
                delete(AgentMemoryKeywordsTable).where(
                    AgentMemoryKeywordsTable.user_id == uid,
                    AgentMemoryKeywordsTable.memory_id == memory_id,
                    AgentMemoryKeywordsTable.keyword.in_(words),
                )
            )
            removed = rows_changed(result)
            if removed:
                await _revision.stamp(session, uid, [memory_id], revision)
                await refresh_keyword_terms(session, self._analyzer, uid, [memory_id])
        self._changed(uid)
        return removed

    # -- synonyms (shared vocabulary) --------------------------------------------------------------

    async def add_synonym(
        self, keyword: str, synonym: str, *, similarity_score: float = 0.8, bidirectional: bool = True
    ) -> None:
        """Record that ``synonym`` can stand for ``keyword`` (and, by default, the other way round)."""
        kw = v.keyword_text(keyword)
        syn = v.keyword_text(synonym)
        if kw == syn:
            raise InvalidInputError(f"a keyword cannot be its own synonym ({kw!r})")
        score = v.unit_float(similarity_score, name="similarity_score")
        pairs = [(kw, syn)] + ([(syn, kw)] if bidirectional else [])
        await self.add_synonyms([(a, b, score) for a, b in pairs])

    async def add_synonyms(self, triples: Sequence[tuple[str, str, float]]) -> int:
        """Record many one-way synonym pairs ``(keyword, synonym, similarity_score)`` at once."""
        rows: dict[tuple[str, str], float] = {}
        if isinstance(triples, str | bytes) or not isinstance(triples, Sequence):
            raise InvalidInputError("synonyms must be a list of (keyword, synonym, similarity_score) tuples")
        for triple in triples:
            if not isinstance(triple, tuple) or len(triple) != 3:
                raise InvalidInputError("synonyms must be (keyword, synonym, similarity_score) tuples")
            kw, syn = v.keyword_text(triple[0]), v.keyword_text(triple[1])
            if kw != syn:
                rows[(kw, syn)] = v.unit_float(triple[2], name="similarity_score")
        if not rows:
            return 0
        stmt = insert_updating(
            self._db.backend, KeywordSynonymsTable, conflict=["keyword", "synonym"], update=["similarity_score"]
        )
        async with self._db.write() as session:
            await session.execute(
                stmt, [{"keyword": a, "synonym": b, "similarity_score": s} for (a, b), s in rows.items()]
            )
            await _revision.bump(session, self._db.backend, _revision.VOCABULARY)
        return len(rows)

    async def remove_synonym(self, keyword: str, synonym: str, *, bidirectional: bool = True) -> int:
        """Forget a synonym pair; returns how many rows were removed."""
        kw = v.keyword_text(keyword)
        syn = v.keyword_text(synonym)
        pairs = [(kw, syn)] + ([(syn, kw)] if bidirectional else [])
        async with self._db.write() as session:
            result = await session.execute(
                delete(KeywordSynonymsTable).where(
                    or_(*(and_(KeywordSynonymsTable.keyword == a, KeywordSynonymsTable.synonym == b) for a, b in pairs))
                )
            )
            await _revision.bump(session, self._db.backend, _revision.VOCABULARY)
        return rows_changed(result)

    async def synonyms_for(self, keywords: Sequence[str]) -> dict[str, list[SynonymRecord]]:
        """The recorded synonyms of each keyword, most similar first (keywords are lower-cased)."""
        words = sorted({v.keyword_text(k) for k in v.keyword_list(keywords)})
        result: dict[str, list[SynonymRecord]] = {w: [] for w in words}
        if not words:
            return result
        async with self._db.read() as session:
            for start in range(0, len(words), 500):
                rows = await session.scalars(
                    select(KeywordSynonymsTable)
                    .where(KeywordSynonymsTable.keyword.in_(words[start : start + 500]))
                    .order_by(KeywordSynonymsTable.similarity_score.desc(), KeywordSynonymsTable.synonym)
                )
                for r in rows:
                    result[r.keyword].append(SynonymRecord(r.keyword, r.synonym, _score(r.similarity_score)))
        return result

    async def list_synonyms(self, *, limit: int = 1000) -> list[SynonymRecord]:
        """Every synonym pair, alphabetically (at most ``limit``)."""
        size = v.bounded_int(limit, name="limit", low=1, high=100_000)
        async with self._db.read() as session:
            rows = await session.scalars(
                select(KeywordSynonymsTable)
                .order_by(KeywordSynonymsTable.keyword, KeywordSynonymsTable.synonym)
                .limit(size)
            )
            return [SynonymRecord(r.keyword, r.synonym, _score(r.similarity_score)) for r in rows]
