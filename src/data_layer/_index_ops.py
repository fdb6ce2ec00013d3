"""What a search index needs from storage: change counters, compact rows, stored analysis and backfill."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, and_, bindparam, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from . import _revision
from . import _validation as v
from ._dialect import insert_updating
from ._errors import InvalidInputError
from ._keyword_ops import KeywordOpsMixin
from ._memory_engine import engine_text, number_rows, refresh_keyword_terms
from ._questions import QUESTION_MARKS
from ._records import SESSION_FIELD, SPEAKER_FIELD, IndexRow, IndexState, KeywordInput, MemoryAnalysis, MemoryRecord
from ._rows import record_of
from ._tables import (
    AgentMemoryKeywordsTable,
    AgentMemorySearchIndexTable,
    AgentMemoryTable,
    MemoryIndexStateTable,
)
from ._types import utcnow

_STATE = MemoryIndexStateTable
#: A memory asks something (``IndexRow.asks``) when it holds a question mark other than "?" (full
#: width, small, Arabic) anywhere ...
WIDE_MARKS = tuple(mark for mark in QUESTION_MARKS if mark != "?")
#: ... or "?" where a sentence ends: before one of these or at the end. A "?" inside a link
#: (``page?id=3``) asks nothing.
QUESTION_ENDS = (" ", "\n", "\t", "!", '"', "'", ")", "]", "”", "’", "）", "?")


def _asks(content: Any) -> Any:
    """The SQL condition of ``IndexRow.asks`` over a content column (the same on both backends)."""
    return or_(
        *(content.contains(mark, autoescape=True) for mark in WIDE_MARKS),
        content.endswith("?", autoescape=True),
        *(content.contains("?" + end, autoescape=True) for end in QUESTION_ENDS),
    )


#: The user's change counters and the synonym vocabulary's.
_STATES = select(_STATE.user_id, _STATE.revision, _STATE.hard_delete_revision).where(
    or_(_STATE.user_id == bindparam("uid"), _STATE.user_id == bindparam("vocabulary"))
)


def index_row_of(r: Any, keywords: Mapping[uuid.UUID, Sequence[tuple[str, float]]]) -> IndexRow:
    """An :class:`IndexRow` from a row of the index reads' columns (id, key, friend, type, created,
    active, revision, analyzer, tokens, embedder, embedding, session, speaker, asks[, keyword terms]) and
    the memories' keywords: the one rule for how a stored value reads."""
    return IndexRow(
        id=r[0],
        memory_key=r[1],
        friend_id=r[2],
        memory_type=r[3],
        created_at=r[4],
        is_active=bool(r[5]),
        revision=int(r[6]),
        analyzer=r[7],
        tokens=r[8],
        embedder=r[9],
        embedding=r[10],
        keywords=tuple(keywords.get(r[0], ())),
        session=None if r[11] is None or r[11] == "" else str(r[11]),  # 7 and "7" are one session
        # text only: a value stored before speakers were checked (a number, true) reads as none
        speaker=r[12] if isinstance(r[12], str) and r[12].strip() else None,
        asks=bool(r[13]),
        keyword_terms=r[14] if len(r) > 14 else None,
    )


def index_row_columns() -> list[Any]:
    """The columns :func:`index_row_of` reads, in its order (a memory outer-joined with its search row)."""
    m, ix = AgentMemoryTable, AgentMemorySearchIndexTable
    return [
        m.id,
        m.memory_key,
        m.friend_id,
        m.memory_type,
        m.created_at,
        m.is_active,
        m.revision,
        ix.analyzer,
        ix.tokens,
        ix.embedder,
        ix.embedding,
        m.content_metadata[SESSION_FIELD].as_string(),
        m.content_metadata[SPEAKER_FIELD],
        _asks(m.content),
    ]


#: Memories whose keywords one statement reads by id (:func:`_index_read`).
KEYWORD_IDS_PER_READ = 500


def _index_statements(*, active_only: bool) -> tuple[Any, Any]:
    """The index read's statements, built once: the user's memories changed after a revision (bind
    parameters ``uid``, ``after``), and all their keywords (the same parameters)."""
    m, ix, kw = AgentMemoryTable, AgentMemorySearchIndexTable, AgentMemoryKeywordsTable
    conditions: list[Any] = [m.user_id == bindparam("uid"), m.revision > bindparam("after")]
    if active_only:
        conditions.append(m.is_active.is_(True))
    rows = (
        select(*index_row_columns())
        .outerjoin(ix, and_(ix.user_id == m.user_id, ix.memory_id == m.id))
        .where(*conditions)
        .order_by(m.created_at, m.memory_key)
    )
    keywords = (
        select(kw.memory_id, kw.keyword, kw.weight)
        .join(m, and_(m.user_id == kw.user_id, m.id == kw.memory_id))
        .where(kw.user_id == bindparam("uid"), *conditions)
        .order_by(kw.memory_id, kw.keyword)
    )
    return rows, keywords


#: By ``active_only``: the statements of :func:`_index_statements`.
_INDEX_READS = {flag: _index_statements(active_only=flag) for flag in (False, True)}
#: The keywords of some of a user's memories by id (``uid``, ``ids``), by memory, then keyword.
_KEYWORDS_BY_ID = (
    select(AgentMemoryKeywordsTable.memory_id, AgentMemoryKeywordsTable.keyword, AgentMemoryKeywordsTable.weight)
    .where(
        AgentMemoryKeywordsTable.user_id == bindparam("uid"),
        AgentMemoryKeywordsTable.memory_id.in_(bindparam("ids", expanding=True)),
    )
    .order_by(AgentMemoryKeywordsTable.memory_id, AgentMemoryKeywordsTable.keyword)
)


def _index_read(conn: Connection, uid: str, after: int, active_only: bool) -> tuple[list[Any], list[Any]]:
    """The rows of :meth:`IndexOpsMixin.index_rows` and ``(memory id, keyword, weight)`` of their memories.

    A first read (``after`` -1) reads every keyword of the user in one statement. An update reads the
    keywords of the memories it read by id, which the primary key finds directly: through the join,
    SQLite's planner (with no statistics) starts from every keyword of the user and looks each one's
    memory up, 17 ms at 5,000 memories for one changed memory, growing with the user.
    """
    rows_stmt, keywords_stmt = _INDEX_READS[active_only]
    params = {"uid": uid, "after": after}
    rows = list(conn.execute(rows_stmt, params).all())
    if after < 0:
        return rows, list(conn.execute(keywords_stmt, params).all())
    ids = [r[0] for r in rows]
    found: list[Any] = []
    for start in range(0, len(ids), KEYWORD_IDS_PER_READ):
        found.extend(conn.execute(_KEYWORDS_BY_ID, {"uid": uid, "ids": ids[start : start + KEYWORD_IDS_PER_READ]}))
    return rows, found


class IndexOpsMixin(KeywordOpsMixin):
    """Index support operations of :class:`MemoryRepository` (keyword operations come with them)."""

    async def index_state(self, *, user_id: str | int) -> IndexState:
        """The user's change counters and the synonym vocabulary's (all 0 before the first write)."""
        uid = v.user_id(user_id)
        # called before every search: the quick path, a statement built once
        params = {"uid": uid, "vocabulary": _revision.VOCABULARY}
        rows = await self._db.quick_read(lambda conn: conn.execute(_STATES, params).all())
        by_user = {r[0]: (int(r[1]), int(r[2])) for r in rows}
        revision, hard = by_user.get(uid, (0, 0))
        return IndexState(revision, hard, by_user.get(_revision.VOCABULARY, (0, 0))[0])

    async def index_rows(
        self, *, user_id: str | int, after_revision: int = -1, active_only: bool = False
    ) -> list[IndexRow]:
        """The user's memories changed after ``after_revision`` (all of them for -1), in a stable order.

        Soft-deleted rows are included (``is_active=False``) unless ``active_only``, so an index can
        drop them.
        """
        uid = v.user_id(user_id)
        after = v.bounded_int(after_revision, name="after_revision", low=-1, high=2**62)
        # statements built once (an update after a write reads one row: building them cost more); an
        # update on the quick path, a first read of every row as a scan
        rows, found = await self._db.quick_read(lambda conn: _index_read(conn, uid, after, active_only), bulk=after < 0)
        keywords: dict[uuid.UUID, list[tuple[str, float]]] = {}
        for memory_id, keyword, weight in found:
            keywords.setdefault(memory_id, []).append((keyword, 1.0 if weight is None else float(weight)))
        return [index_row_of(r, keywords) for r in rows]

    async def active_ids(self, *, user_id: str | int) -> set[uuid.UUID]:
        """The ids of the user's active memories (to reconcile an index after hard deletes)."""
        uid = v.user_id(user_id)
        async with self._db.read(bulk=True) as session:
            rows = await session.scalars(
                select(AgentMemoryTable.id).where(AgentMemoryTable.user_id == uid, AgentMemoryTable.is_active.is_(True))
            )
            return set(rows)

    async def pending_analysis(self, *, user_id: str | int, analyzer: str, limit: int = 500) -> list[MemoryRecord]:
        """Active memories of the user without keywords, or analysed by another analyzer (for backfill)."""
        name = v.stored_text(analyzer, name="analyzer")
        m, ix = AgentMemoryTable, AgentMemorySearchIndexTable
        missing = or_(m.needs_keyword_extraction.is_(True), ix.memory_id.is_(None), ix.analyzer != name)
        return await self._pending(user_id, limit, missing, outer=True)

    async def pending_embedding(self, *, user_id: str | int, embedder: str, limit: int = 256) -> list[MemoryRecord]:
        """Active, analysed memories of the user with no vector of ``embedder`` (none stored, as when the
        embedding endpoint failed at the write, or another embedder's): what a re-embedding pass embeds."""
        name = v.stored_text(embedder, name="embedder")
        ix = AgentMemorySearchIndexTable
        return await self._pending(user_id, limit, or_(ix.embedder.is_(None), ix.embedder != name), outer=False)

    async def _pending(self, user_id: str | int, limit: int, condition: Any, *, outer: bool) -> list[MemoryRecord]:
        """The user's active memories, joined with their search rows (``outer``: also those without one),
        that meet ``condition``, oldest first."""
        uid = v.user_id(user_id)
        size = v.bounded_int(limit, name="limit", low=1, high=10_000)
        m, ix = AgentMemoryTable, AgentMemorySearchIndexTable
        on = and_(ix.user_id == m.user_id, ix.memory_id == m.id)
        async with self._db.read() as session:
            query = select(m).join(ix, on, isouter=outer)
            rows = await session.scalars(
                query.where(m.user_id == uid, m.is_active.is_(True), condition).order_by(m.created_at, m.id).limit(size)
            )
            return [record_of(r) for r in rows]

    async def pending_keyword_extraction(self, *, user_id: str | int, limit: int = 500) -> list[MemoryRecord]:
        """Active memories of the user still marked ``needs_keyword_extraction``."""
        uid = v.user_id(user_id)
        size = v.bounded_int(limit, name="limit", low=1, high=10_000)
        async with self._db.read() as session:
            rows = await session.scalars(
                select(AgentMemoryTable)
                .where(
                    AgentMemoryTable.user_id == uid,
                    AgentMemoryTable.is_active.is_(True),
                    AgentMemoryTable.needs_keyword_extraction.is_(True),
                )
                .order_by(AgentMemoryTable.created_at, AgentMemoryTable.id)
                .limit(size)
            )
            return [record_of(r) for r in rows]

    async def users_pending_keyword_extraction(self) -> list[str]:
        """Maintenance: the ids (only) of users with memories awaiting keyword extraction (backfill)."""
        async with self._db.read(bulk=True) as session:
            rows = await session.scalars(
                select(AgentMemoryTable.user_id)
                .where(AgentMemoryTable.is_active.is_(True), AgentMemoryTable.needs_keyword_extraction.is_(True))
                .distinct()
                .order_by(AgentMemoryTable.user_id)
            )
            return list(rows)

    async def users_with_memories(self) -> list[str]:
        """Maintenance: the ids (only) of users who have active memories (re-indexing, backfill)."""
        async with self._db.read(bulk=True) as session:
            rows = await session.scalars(
                select(AgentMemoryTable.user_id)
                .where(AgentMemoryTable.is_active.is_(True))
                .distinct()
                .order_by(AgentMemoryTable.user_id)
            )
            return list(rows)

    async def _owned(self, session: AsyncSession, uid: str, ids: Sequence[uuid.UUID]) -> set[uuid.UUID]:
        owned: set[uuid.UUID] = set()
        for start in range(0, len(ids), 500):
            owned.update(
                await session.scalars(
                    select(AgentMemoryTable.id).where(
                        AgentMemoryTable.user_id == uid, AgentMemoryTable.id.in_(list(ids[start : start + 500]))
                    )
                )
            )
        return owned

    async def store_extracted_keywords(
        self, *, user_id: str | int, extracted: Sequence[tuple[uuid.UUID, Sequence[KeywordInput]]]
    ) -> int:
        """Write keywords computed by a backfill for the user's memories and clear their flag.

        Returns how many memories were updated (ids of other users are ignored).
        """
        uid = v.user_id(user_id)
        extracted = v.id_pairs(extracted, name="extracted")
        done: list[uuid.UUID] = []
        async with self._db.write() as session:
            owned = await self._owned(session, uid, [mid for mid, _ in extracted])
            revision = await _revision.bump(session, self._db.backend, uid) if owned else 0  # before any change
            for memory_id, kws in extracted:
                if memory_id in owned:
                    await self._replace_keyword_rows(
                        session, uid, memory_id, v.analysis_keywords(v.keyword_list(kws)), keep_user_tags=True
                    )
                    done.append(memory_id)
            if done:
                await _revision.stamp(session, uid, done, revision)
                await refresh_keyword_terms(session, self._analyzer, uid, done)
        if done:
            self._changed(uid)
        return len(done)

    async def store_analysis(self, *, user_id: str | int, analyses: Sequence[tuple[uuid.UUID, MemoryAnalysis]]) -> int:
        """Store re-computed analyses (tokens, keywords, embedding) of the user's memories.

        Keeps user tags, clears ``needs_keyword_extraction``; ids of other users are ignored.
        Returns how many memories were updated.
        """
        uid = v.user_id(user_id)
        analyses = v.id_pairs(analyses, name="analyses")
        if not all(isinstance(a, MemoryAnalysis) for _, a in analyses):
            raise InvalidInputError("analyses must pair memory ids with MemoryAnalysis values")
        done: list[uuid.UUID] = []
        # an analysis without a vector (the embedding is left to a background pass) keeps the memory's
        # stored one: its content did not change
        with_vectors, words_only = (
            insert_updating(
                self._db.backend, AgentMemorySearchIndexTable, conflict=["user_id", "memory_id"], update=columns
            )
            for columns in (
                ["analyzer", "tokens", "embedder", "embedding", "vector_terms", "updated_at"],
                ["analyzer", "tokens", "updated_at"],
            )
        )
        async with self._db.write() as session:
            owned = await self._owned(session, uid, [mid for mid, _ in analyses])
            revision = await _revision.bump(session, self._db.backend, uid) if owned else 0  # before any change
            rows = []
            for memory_id, analysis in analyses:
                if memory_id not in owned:
                    continue
                v.stored_text(analysis.tokens, name="the analyzer's tokens")
                await self._replace_keyword_rows(
                    session, uid, memory_id, v.analysis_keywords(analysis.keywords), keep_user_tags=True
                )
                rows.append(
                    {
                        "user_id": uid,
                        "memory_id": memory_id,
                        "analyzer": analysis.analyzer,
                        "tokens": engine_text(analysis.tokens),
                        "embedder": analysis.embedder,
                        "embedding": analysis.embedding,
                        "vector_terms": engine_text(analysis.vector_terms),
                        "updated_at": utcnow(),
                    }
                )
                done.append(memory_id)
            # a row that exists keeps its number (the upsert does not set it)
            await number_rows(session, self._db.backend, rows)
            for stmt, part in (
                (with_vectors, [r for r in rows if r["embedding"] is not None]),
                (words_only, [r for r in rows if r["embedding"] is None]),
            ):
                if part:
                    await session.execute(stmt, part)
            if rows:
                await _revision.stamp(session, uid, done, revision)
                # the keywords it holds now: the analysis' and the user tags kept
                await refresh_keyword_terms(session, self._analyzer, uid, done)
        if done:
            self._changed(uid)
        return len(done)

    async def store_embeddings(
        self,
        *,
        user_id: str | int,
        embedder: str,
        vectors: Sequence[tuple[uuid.UUID, bytes]],
        vector_terms: Mapping[uuid.UUID, str] | None = None,
    ) -> int:
        """Store embeddings (float32 bytes) made by ``embedder`` for memories that already have an index row,
        with their bucket terms (``vector_terms``: a memory left out has none stored, the old vector's
        being stale)."""
        uid = v.user_id(user_id)
        name = v.stored_text(embedder, name="embedder")
        vectors = v.id_pairs(vectors, name="vectors")
        done: list[uuid.UUID] = []
        async with self._db.write() as session:
            owned = await self._owned(session, uid, [mid for mid, _ in vectors])
            revision = await _revision.bump(session, self._db.backend, uid) if owned else 0  # before any change
            terms = vector_terms or {}
            rows: list[dict[str, Any]] = [
                {"mid": memory_id, "blob": blob, "terms": engine_text(terms.get(memory_id))}
                for memory_id, blob in vectors
                if memory_id in owned and isinstance(blob, bytes)
            ]
            if rows:  # one statement, executed for every row (a batch of a background pass: hundreds)
                table = AgentMemorySearchIndexTable.__table__
                await session.execute(
                    update(table)
                    .where(table.c.user_id == uid, table.c.memory_id == bindparam("mid"))
                    .values(
                        embedder=name, embedding=bindparam("blob"), vector_terms=bindparam("terms"), updated_at=utcnow()
                    ),
                    rows,
                )
                done.extend(r["mid"] for r in rows)
            if done:
                await _revision.stamp(session, uid, done, revision)
        if done:
            self._changed(uid)
        return len(done)
