"""Memories in the store's own full-text engine: the reads a search ranks from (migration 0010).

The engine holds, per analysed memory, its tokens, its keywords' search terms and its vector's bucket
terms (:mod:`data_layer._memory_engine` writes them): FTS5 on SQLite, generated ``tsvector`` columns with
a GIN index on PostgreSQL. ``memory_search_statistics`` and ``memory_term_statistics`` hold BM25's
collection statistics over the user's active analysed memories, kept by triggers. Every statement names
one user, and each of these reads is one round trip.

Candidates are ranked by the engine: on SQLite FTS5's ``bm25`` with column weights (its document
frequencies are the whole table's, every user's); on PostgreSQL, whose ``ts_rank`` knows no document
frequency, by the sum over the query terms a memory holds of ``weight x idf``, the idf from the user's
own ``memory_term_statistics``. Either way a memory holding a rarer query term ranks above one holding
a common one.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import (
    ColumnClause,
    Float,
    Integer,
    Select,
    Text,
    and_,
    bindparam,
    case,
    cast,
    column,
    func,
    literal_column,
    or_,
    select,
    table,
    update,
)
from sqlalchemy.dialects.postgresql import ARRAY, TSQUERY

from . import _validation as v
from ._index_ops import index_row_columns, index_row_of
from ._memory_engine import engine_text
from ._message_search import _fts_string, _lexeme, owner_token
from ._records import IndexRow
from ._scope import Scope
from ._tables import (
    MEMORY_FTS_TABLE,
    AgentMemoryKeywordsTable,
    AgentMemorySearchIndexTable,
    AgentMemoryTable,
    MemoryIndexStateTable,
    MemorySearchStatisticsTable,
    MemoryTermStatisticsTable,
)

if TYPE_CHECKING:
    from sqlalchemy import Connection

    from ._engine import Database

#: The weight of a keyword term's match beside a token's (bm25 column weight; idf factor on PostgreSQL).
KEYWORD_WEIGHT = 2.0
#: The weight of a prefix's match (PostgreSQL; on SQLite a prefix is a phrase of the ``terms`` column).
PREFIX_WEIGHT = 0.5
#: Most candidates one read returns.
MAX_CANDIDATES = 10_000

_M = AgentMemoryTable.__table__
_IX = AgentMemorySearchIndexTable.__table__
_KW = AgentMemoryKeywordsTable.__table__
_S = MemorySearchStatisticsTable.__table__
_T = MemoryTermStatisticsTable.__table__
_STATE = MemoryIndexStateTable.__table__
_FTS = table(MEMORY_FTS_TABLE, column("rowid", Integer))


@dataclass(frozen=True, slots=True)
class PendingVector:
    """A stored embedding without its bucket terms: whose, which memory's, by which embedder."""

    user_id: str
    memory_id: uuid.UUID
    embedder: str
    embedding: bytes


@dataclass(frozen=True, slots=True)
class SessionTurn:
    """Where a memory sits in its conversation session: what orders and links the session's turns."""

    id: uuid.UUID
    friend_id: str | None
    session: str
    created_at: datetime
    memory_key: str


@dataclass(frozen=True, slots=True)
class MemoryCollection:
    """A user's active analysed memories: how many, their total length (terms) and the user's change
    counter (``memory_index_state.revision``) read in the same transaction."""

    memories: int
    total_length: int
    revision: int

    @property
    def average_length(self) -> float:
        return self.total_length / self.memories if self.memories else 0.0


def session_expression(backend: str) -> Any:
    """A memory's metadata ``session_id`` as text, written as the expression index
    ``ix_agent_memories_user_session`` is (so the index serves it)."""
    if backend == "sqlite":
        return literal_column("CAST(json_extract(agent_memories.content_metadata, '$.session_id') AS TEXT)", Text())
    return literal_column("(agent_memories.content_metadata ->> 'session_id')", Text())


def prefix_bounds(prefix: str) -> tuple[str, str | None]:
    """``[low, high)``: every string starting with ``prefix`` and no other, by code point (``high`` None:
    no upper bound)."""
    text = prefix
    while text:
        last = ord(text[-1])
        if last < 0x10FFFF:
            nxt = last + 1 if not 0xD7FF <= last < 0xE000 else 0xE000
            return prefix, text[:-1] + chr(nxt)
        text = text[:-1]
    return prefix, None


def _unique(terms: Sequence[str]) -> list[str]:
    return [t for t in dict.fromkeys(terms) if t and t.split() == [t]]


def _ids(ids: Sequence[uuid.UUID]) -> list[uuid.UUID]:
    return list(dict.fromkeys(v.uuid_list(ids, name="ids")))


class MemorySearchMixin:
    """The engine's reads of :class:`~data_layer._memory_repo.MemoryRepository`."""

    _db: Database

    # -- statistics --------------------------------------------------------------------------------

    async def memory_collection(self, *, user_id: str | int) -> MemoryCollection:
        """The user's collection statistics and change counter, in one statement."""
        uid = v.user_id(user_id)
        stmt = select(
            select(_S.c.memories).where(_S.c.user_id == uid).scalar_subquery(),
            select(_S.c.total_length).where(_S.c.user_id == uid).scalar_subquery(),
            select(_STATE.c.revision).where(_STATE.c.user_id == uid).scalar_subquery(),
        )
        row = await self._db.quick_read(lambda conn: conn.execute(stmt).one())
        return MemoryCollection(int(row[0] or 0), int(row[1] or 0), int(row[2] or 0))

    def _in_list(self, col: Any, values: Sequence[Any], name: str) -> Any:
        """``col`` is one of ``values``, as one bound parameter (PostgreSQL ``= ANY``, SQLite ``json_each``)."""
        if self._db.backend == "postgresql":
            return col == func.any(bindparam(name, list(values), type_=ARRAY(Text)))
        import json

        each: Select[Any] = select(literal_column("value")).select_from(
            func.json_each(bindparam(name, json.dumps(list(values))))
        )
        return col.in_(each.scalar_subquery())

    async def memory_term_frequencies(self, *, user_id: str | int, terms: Sequence[str]) -> dict[str, int]:
        """How many of the user's active analysed memories hold each of ``terms`` (terms none holds are
        left out); one statement for any number of terms."""
        uid = v.user_id(user_id)
        wanted = list(dict.fromkeys(t for t in terms if isinstance(t, str) and t))
        if not wanted:
            return {}
        stmt = select(_T.c.term, _T.c.memories).where(_T.c.user_id == uid, self._in_list(_T.c.term, wanted, "terms"))
        rows = await self._db.quick_read(lambda conn: conn.execute(stmt).all())
        return {str(r[0]): int(r[1]) for r in rows if r[1] > 0}

    async def memory_term_prefixes(self, *, user_id: str | int, prefix: str, limit: int = 50) -> list[str]:
        """The terms of the user's vocabulary starting with ``prefix``, sorted, at most ``limit``."""
        uid = v.user_id(user_id)
        size = v.bounded_int(limit, name="limit", low=1, high=MAX_CANDIDATES)
        if not isinstance(prefix, str) or not prefix:
            return []
        low, high = prefix_bounds(prefix)
        conditions = [_T.c.user_id == uid, _T.c.term >= low]
        if high is not None:
            conditions.append(_T.c.term < high)
        stmt = select(_T.c.term).where(*conditions).order_by(_T.c.term).limit(size)
        rows = await self._db.quick_read(lambda conn: conn.execute(stmt).all())
        return [str(r[0]) for r in rows]

    # -- candidates --------------------------------------------------------------------------------

    def _filters(
        self,
        scope: Scope,
        *,
        memory_types: Sequence[str] | None,
        start: datetime | None,
        end: datetime | None,
    ) -> list[Any]:
        """The conditions on ``agent_memories`` of a candidate read: active, the scope, types, time."""
        user = literal_column("+agent_memories.user_id", Text()) if self._db.backend == "sqlite" else _M.c.user_id
        conditions: list[Any] = [_M.c.is_active.is_(True), scope.memory_clause(user, _M.c.friend_id)]
        if memory_types is not None:
            conditions.append(_M.c.memory_type.in_([v.memory_type(t) for t in memory_types]))
        lo, hi = v.time_range(start, end)
        if lo is not None:
            conditions.append(_M.c.created_at >= lo)
        if hi is not None:
            conditions.append(_M.c.created_at < hi)
        return conditions

    def _joined(self, uid: str, *, engine: bool) -> Any:
        """``agent_memory_search_index`` joined with its memory (SQLite ``engine``: driven by the FTS5 rows)."""
        to_memory = and_(_M.c.user_id == _IX.c.user_id, _M.c.id == _IX.c.memory_id)
        if engine:
            return _FTS.join(_IX, and_(_IX.c.user_id == uid, _IX.c.row_id == _FTS.c.rowid)).join(_M, to_memory)
        return _IX.join(_M, to_memory)

    async def memory_candidates(
        self,
        *,
        user_id: str | int,
        terms: Sequence[str],
        keyword_terms: Sequence[str] = (),
        prefixes: Sequence[str] = (),
        scope: Scope | None = None,
        memory_types: Sequence[str] | None = None,
        start: datetime | None = None,
        end: datetime | None = None,
        limit: int,
    ) -> list[uuid.UUID]:
        """Active memories holding any of ``terms`` in their tokens, any of ``keyword_terms`` in their
        keyword terms, or a token starting with one of ``prefixes``; filtered by ``scope`` (default: all
        the user's), ``memory_types`` and ``created_at`` in ``[start, end)``; best first by the engine's
        ranking (module docs), at most ``limit``. One statement."""
        uid = v.user_id(user_id)
        size = v.bounded_int(limit, name="limit", low=1, high=MAX_CANDIDATES)
        seen = scope if scope is not None else Scope.of(uid)
        if seen.user_id != uid:
            raise v.InvalidInputError("the scope names another user")
        words, keys, starts = _unique(terms), _unique(keyword_terms), _unique(prefixes)
        if not (words or keys or starts):
            return []
        filters = self._filters(seen, memory_types=memory_types, start=start, end=end)
        if self._db.backend == "sqlite":
            stmt = self._sqlite_candidates(uid, words, keys, starts, filters, size)
        else:
            stmt = self._pg_candidates(uid, words, keys, starts, filters, size)
        rows = await self._db.quick_read(lambda conn: conn.execute(stmt).all())
        return [r[0] for r in rows]

    def _sqlite_candidates(
        self, uid: str, words: list[str], keys: list[str], starts: list[str], filters: list[Any], size: int
    ) -> Any:
        phrases = [_fts_string(t) for t in words] + [_fts_string(p) + " *" for p in starts]
        parts = []
        if phrases:
            parts.append("terms : (" + " OR ".join(phrases) + ")")
        if keys:
            parts.append("keywords : (" + " OR ".join(_fts_string(k) for k in keys) + ")")
        query = f"owner : {_fts_string(owner_token(uid))} AND (" + " OR ".join(parts) + ")"
        fts: ColumnClause[Any] = literal_column(MEMORY_FTS_TABLE)
        rank = func.bm25(fts, 0.0, 1.0, KEYWORD_WEIGHT, 0.0)
        return (
            select(_IX.c.memory_id)
            .select_from(self._joined(uid, engine=True))
            .where(fts.op("MATCH")(bindparam("query", query)), *filters)
            .order_by(rank, _IX.c.memory_id)
            .limit(size)
        )

    def _pg_candidates(
        self, uid: str, words: list[str], keys: list[str], starts: list[str], filters: list[Any], size: int
    ) -> Any:
        tokens: ColumnClause[Any] = literal_column("agent_memory_search_index.search_vector")
        keywords: ColumnClause[Any] = literal_column("agent_memory_search_index.keyword_vector")
        entries = (
            [("t", _lexeme(t), t) for t in words]
            + [("k", _lexeme(k), k) for k in keys]
            + [("p", _lexeme(p) + ":*", p) for p in starts]
        )
        kinds, queries, names = (list(x) for x in zip(*entries, strict=True))
        given = (
            func.unnest(
                bindparam("kinds", kinds, type_=ARRAY(Text)),
                bindparam("queries", queries, type_=ARRAY(Text)),
                bindparam("names", names, type_=ARRAY(Text)),
            )
            .table_valued(column("kind", Text), column("tq", Text), column("term", Text))
            .render_derived(name="given")
        )
        n = func.coalesce(select(_S.c.memories).where(_S.c.user_id == uid).scalar_subquery(), 0)
        df = func.coalesce(
            select(_T.c.memories).where(_T.c.user_id == uid, _T.c.term == given.c.term).scalar_subquery(), 0
        )
        weight = case((given.c.kind == "k", KEYWORD_WEIGHT), (given.c.kind == "p", PREFIX_WEIGHT), else_=1.0)
        idf = func.ln(1.0 + (cast(n, Float) - df + 0.5) / (cast(df, Float) + 0.5))
        q = (
            select(given.c.kind, cast(given.c.tq, TSQUERY).label("tq"), (weight * idf).label("w"))
            .cte("q")
            .prefix_with("MATERIALIZED")
        )
        held = case((q.c.kind == "k", keywords.op("@@")(q.c.tq)), else_=tokens.op("@@")(q.c.tq))
        rank = select(func.coalesce(func.sum(q.c.w), 0.0)).where(held).scalar_subquery()
        matched = []
        token_query = " | ".join(x for k, x, _ in entries if k != "k")
        if token_query:
            matched.append(tokens.op("@@")(cast(bindparam("token_query", token_query), TSQUERY)))
        if keys:
            keyword_query = " | ".join(_lexeme(k) for k in keys)
            matched.append(keywords.op("@@")(cast(bindparam("keyword_query", keyword_query), TSQUERY)))
        return (
            select(_IX.c.memory_id)
            .select_from(self._joined(uid, engine=False))
            .where(_IX.c.user_id == uid, or_(*matched), *filters)
            .order_by(rank.desc(), _IX.c.memory_id)
            .limit(size)
        )

    async def memory_ids_in_range(
        self,
        *,
        user_id: str | int,
        start: datetime,
        end: datetime,
        scope: Scope | None = None,
        memory_types: Sequence[str] | None = None,
        limit: int,
    ) -> list[uuid.UUID]:
        """The user's active analysed memories created in ``[start, end)``, newest first (ties by id), at
        most ``limit``; the filters as :meth:`memory_candidates`'. One statement."""
        uid = v.user_id(user_id)
        size = v.bounded_int(limit, name="limit", low=1, high=MAX_CANDIDATES)
        seen = scope if scope is not None else Scope.of(uid)
        if seen.user_id != uid:
            raise v.InvalidInputError("the scope names another user")
        filters = self._filters(seen, memory_types=memory_types, start=start, end=end)
        stmt = (
            select(_IX.c.memory_id)
            .select_from(self._joined(uid, engine=False))
            .where(_IX.c.user_id == uid, _M.c.user_id == uid, *filters)
            .order_by(_M.c.created_at.desc(), _IX.c.memory_id)
            .limit(size)
        )
        rows = await self._db.quick_read(lambda conn: conn.execute(stmt).all())
        return [r[0] for r in rows]

    async def memory_vector_candidates(
        self,
        *,
        user_id: str | int,
        vector_terms: Sequence[str],
        scope: Scope | None = None,
        memory_types: Sequence[str] | None = None,
        start: datetime | None = None,
        end: datetime | None = None,
        limit: int,
    ) -> list[uuid.UUID]:
        """Active memories holding any of ``vector_terms`` (bucket terms), those sharing the most first
        (SQLite: FTS5's BM25 of the buckets column; PostgreSQL: how many they hold; ties by id); the
        filters as :meth:`memory_candidates`'. One statement."""
        uid = v.user_id(user_id)
        size = v.bounded_int(limit, name="limit", low=1, high=MAX_CANDIDATES)
        seen = scope if scope is not None else Scope.of(uid)
        if seen.user_id != uid:
            raise v.InvalidInputError("the scope names another user")
        buckets = _unique(vector_terms)
        if not buckets:
            return []
        filters = self._filters(seen, memory_types=memory_types, start=start, end=end)
        if self._db.backend == "sqlite":
            query = (
                f"owner : {_fts_string(owner_token(uid))} AND buckets : ("
                + " OR ".join(_fts_string(b) for b in buckets)
                + ")"
            )
            fts: ColumnClause[Any] = literal_column(MEMORY_FTS_TABLE)
            # FTS5's BM25 over the buckets column: the memories sharing the most (and the rarest) of the
            # query's buckets first, computed by the engine as it walks the matches
            stmt = (
                select(_IX.c.memory_id)
                .select_from(self._joined(uid, engine=True))
                .where(fts.op("MATCH")(bindparam("query", query)), *filters)
                .order_by(func.bm25(fts, 0.0, 0.0, 0.0, 1.0), _IX.c.memory_id)
            )
        else:
            vector: ColumnClause[Any] = literal_column("agent_memory_search_index.bucket_vector")
            query = " | ".join(_lexeme(b) for b in buckets)
            held = (
                func.unnest(func.memory_search_lexemes(_IX.c.vector_terms))
                .table_valued(column("t", Text))
                .render_derived(name="held")
            )
            count = (
                select(func.count())
                .select_from(held)
                .where(held.c.t == func.any(bindparam("buckets", buckets, type_=ARRAY(Text))))
                .scalar_subquery()
            )
            stmt = (
                select(_IX.c.memory_id)
                .select_from(self._joined(uid, engine=False))
                .where(_IX.c.user_id == uid, vector.op("@@")(cast(bindparam("query", query), TSQUERY)), *filters)
                .order_by(count.desc(), _IX.c.memory_id)
            )
        stmt = stmt.limit(size)
        rows = await self._db.quick_read(lambda conn: conn.execute(stmt).all())
        return [r[0] for r in rows]

    # -- keyword terms not analysed yet ----------------------------------------------------------------

    async def keyword_terms_pending_users(self, *, after: str | None = None, limit: int = 1000) -> list[str]:
        """Up to ``limit`` users, in id order after ``after``, with search rows whose keyword terms are not
        analysed yet (read from the partial index of those rows)."""
        size = v.bounded_int(limit, name="limit", low=1, high=MAX_CANDIDATES)
        stmt = select(_IX.c.user_id).where(_IX.c.keyword_terms.is_(None)).distinct().order_by(_IX.c.user_id)
        if after is not None:
            stmt = stmt.where(_IX.c.user_id > v.user_id(after))
        rows = await self._db.quick_read(lambda conn: conn.execute(stmt.limit(size)).all())
        return [str(r[0]) for r in rows]

    async def keyword_terms_pending(
        self, *, user_id: str | int, limit: int = 1000
    ) -> list[tuple[uuid.UUID, list[str]]]:
        """Up to ``limit`` of the user's search rows whose keyword terms are not analysed yet, as
        ``(memory id, the keywords it holds)``."""
        uid = v.user_id(user_id)
        size = v.bounded_int(limit, name="limit", low=1, high=MAX_CANDIDATES)
        ids = (
            select(_IX.c.memory_id)
            .where(_IX.c.user_id == uid, _IX.c.keyword_terms.is_(None))
            .order_by(_IX.c.memory_id)
            .limit(size)
        )
        async with self._db.read(bulk=True) as session:
            found = list((await session.execute(ids)).scalars())
            held: dict[uuid.UUID, list[str]] = {mid: [] for mid in found}
            if found:
                words = select(_KW.c.memory_id, _KW.c.keyword).where(
                    _KW.c.user_id == uid, _KW.c.memory_id.in_(ids.scalar_subquery())
                )
                for mid, word in (await session.execute(words.order_by(_KW.c.keyword))).all():
                    if mid in held:
                        held[mid].append(str(word))
        return list(held.items())

    async def store_keyword_terms(self, *, user_id: str | int, terms: Sequence[tuple[uuid.UUID, str]]) -> int:
        """Store the keyword terms of the user's search rows that have none yet; returns how many rows were
        filled (another process may have filled some meanwhile)."""
        uid = v.user_id(user_id)
        values = [{"mid": mid, "terms": engine_text(t) or ""} for mid, t in terms]
        if not values:
            return 0
        stmt = (
            update(_IX)
            .where(_IX.c.user_id == uid, _IX.c.memory_id == bindparam("mid"), _IX.c.keyword_terms.is_(None))
            .values(keyword_terms=bindparam("terms"))
        )
        async with self._db.write() as session:
            done = await (await session.connection()).execute(stmt, values)
        return int(done.rowcount or 0)

    # -- vectors stored without their bucket terms -----------------------------------------------------

    async def vector_terms_pending(
        self, *, after: tuple[str, uuid.UUID] | None = None, limit: int = 1000
    ) -> list[PendingVector]:
        """Up to ``limit`` search rows with a stored embedding but no bucket terms (written before the
        terms were stored with the vector), in (user, memory) order after ``after``."""
        size = v.bounded_int(limit, name="limit", low=1, high=MAX_CANDIDATES)
        stmt = select(_IX.c.user_id, _IX.c.memory_id, _IX.c.embedder, _IX.c.embedding).where(
            _IX.c.embedding.is_not(None), _IX.c.embedder.is_not(None), func.coalesce(_IX.c.vector_terms, "") == ""
        )
        if after is not None:
            if not (isinstance(after, tuple) and len(after) == 2):
                raise v.InvalidInputError("after must be a (user id, memory id) pair from a previous page")
            user, memory_id = v.user_id(after[0]), v.uuid_list([after[1]], name="after")[0]
            stmt = stmt.where(or_(_IX.c.user_id > user, and_(_IX.c.user_id == user, _IX.c.memory_id > memory_id)))
        stmt = stmt.order_by(_IX.c.user_id, _IX.c.memory_id).limit(size)
        rows = await self._db.quick_read(lambda conn: conn.execute(stmt).all(), bulk=True)
        return [PendingVector(str(r[0]), r[1], str(r[2]), bytes(r[3])) for r in rows]

    async def store_vector_terms(
        self, *, user_id: str | int, embedder: str, terms: Sequence[tuple[uuid.UUID, str]]
    ) -> int:
        """Store the bucket terms of the user's search rows whose vector (by ``embedder``) has none yet;
        returns how many rows were filled (a row embedded again meanwhile is left to its new terms)."""
        uid = v.user_id(user_id)
        name = v.stored_text(embedder, name="embedder")
        values = [{"mid": mid, "terms": engine_text(t) or ""} for mid, t in terms if t]
        if not values:
            return 0
        stmt = (
            update(_IX)
            .where(
                _IX.c.user_id == uid,
                _IX.c.memory_id == bindparam("mid"),
                _IX.c.embedder == name,
                func.coalesce(_IX.c.vector_terms, "") == "",
            )
            .values(vector_terms=bindparam("terms"))
        )
        async with self._db.write() as session:
            done = await (await session.connection()).execute(stmt, values)
        return int(done.rowcount or 0)

    # -- rows ----------------------------------------------------------------------------------------

    def _active(self) -> Any:
        """``is_active`` as a condition no index serves on SQLite (written ``+is_active``): the planner then
        looks the given ids (or sessions) up instead of scanning the user's active memories."""
        if self._db.backend == "sqlite":
            return literal_column("+agent_memories.is_active", Integer()) == 1
        return AgentMemoryTable.is_active.is_(True)

    def _row_columns(self) -> list[Any]:
        return [*index_row_columns(), AgentMemorySearchIndexTable.keyword_terms]

    async def _rows_where(self, uid: str, conditions: Sequence[Any], ids_of: Any) -> list[IndexRow]:
        """The user's active memories meeting ``conditions`` as :class:`IndexRow` (index_rows' shape), with
        their keywords (``ids_of``: a subquery of their ids, for the keyword read)."""
        m, ix, kw = AgentMemoryTable, AgentMemorySearchIndexTable, AgentMemoryKeywordsTable
        stmt = (
            select(*self._row_columns())
            .outerjoin(ix, and_(ix.user_id == m.user_id, ix.memory_id == m.id))
            .where(m.user_id == uid, self._active(), *conditions)
            .order_by(m.created_at, m.memory_key)
        )
        kw_stmt = (
            select(kw.memory_id, kw.keyword, kw.weight)
            .where(kw.user_id == uid, kw.memory_id.in_(ids_of))
            .order_by(kw.memory_id, kw.keyword)
        )

        def read(conn: Connection) -> tuple[Sequence[Any], Sequence[Any]]:
            rows = conn.execute(stmt).all()
            return rows, conn.execute(kw_stmt).all() if rows else []

        rows, keyword_rows = await self._db.quick_read(read)
        keywords: dict[uuid.UUID, list[tuple[str, float]]] = {}
        for memory_id, keyword, weight in keyword_rows:
            keywords.setdefault(memory_id, []).append((keyword, 1.0 if weight is None else float(weight)))
        return [index_row_of(r, keywords) for r in rows]

    async def memory_rows(self, *, user_id: str | int, ids: Sequence[uuid.UUID]) -> list[IndexRow]:
        """The rows (as ``index_rows`` builds them) of the user's active memories among ``ids``."""
        uid = v.user_id(user_id)
        wanted = _ids(ids)
        if not wanted:
            return []
        m = AgentMemoryTable
        chosen = self._uuid_in(m.id, wanted, "ids")
        ids_of = select(m.id).where(m.user_id == uid, self._active(), chosen)
        return await self._rows_where(uid, [chosen], ids_of)

    def _uuid_in(self, col: Any, ids: Sequence[uuid.UUID], name: str) -> Any:
        """``col`` is one of ``ids`` (one bound parameter; SQLite stores a UUID as 32 hex digits)."""
        if self._db.backend == "postgresql":
            from sqlalchemy.dialects.postgresql import UUID

            return col == func.any(bindparam(name, list(ids), type_=ARRAY(UUID(as_uuid=True))))
        import json

        each: Select[Any] = select(literal_column("value")).select_from(
            func.json_each(bindparam(name, json.dumps([i.hex for i in ids])))
        )
        return col.in_(each.scalar_subquery())

    def _session_conditions(self, uid: str, wanted: list[uuid.UUID]) -> list[Any]:
        """The conditions on ``agent_memories`` of the memories in the session of one of ``wanted``."""
        m = AgentMemoryTable
        session_of = session_expression(self._db.backend)
        seeds = (
            select(m.friend_id.label("friend"), session_of.label("session"))
            .where(m.user_id == uid, self._uuid_in(m.id, wanted, "ids"), session_of.is_not(None), session_of != "")
            .distinct()
            .subquery("seeds")
        )
        # the IN lets the index on (user_id, session) find the sessions' memories; the EXISTS pairs each
        # with its seed's friend
        in_session = session_of.in_(select(seeds.c.session).scalar_subquery())
        same = (
            select(literal_column("1"))
            .select_from(seeds)
            .where(seeds.c.session == session_of, seeds.c.friend.is_not_distinct_from(m.friend_id))
            .exists()
        )
        return [in_session, same]

    async def memory_revisions(self, *, user_id: str | int, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, int]:
        """The change counter of each of the user's active memories among ``ids`` (a memory's stored
        analysis cannot change under its revision). One statement."""
        uid = v.user_id(user_id)
        wanted = _ids(ids)
        if not wanted:
            return {}
        m = AgentMemoryTable
        stmt = select(m.id, m.revision).where(m.user_id == uid, self._active(), self._uuid_in(m.id, wanted, "ids"))
        rows = await self._db.quick_read(lambda conn: conn.execute(stmt).all())
        return {r[0]: int(r[1]) for r in rows}

    async def memory_session_turns(self, *, user_id: str | int, ids: Sequence[uuid.UUID]) -> list[SessionTurn]:
        """The turns (no terms, no vector) of the user's active memories in the same conversation session
        (metadata ``session_id``, of the same AI friend) as one of ``ids``, in session order; memories
        without a session have none."""
        uid = v.user_id(user_id)
        wanted = _ids(ids)
        if not wanted:
            return []
        m = AgentMemoryTable
        session_of = session_expression(self._db.backend)
        stmt = (
            select(m.id, m.friend_id, session_of, m.created_at, m.memory_key)
            .where(m.user_id == uid, self._active(), *self._session_conditions(uid, wanted))
            .order_by(m.created_at, m.memory_key)
        )
        rows = await self._db.quick_read(lambda conn: conn.execute(stmt).all())
        return [SessionTurn(r[0], r[1], str(r[2]), r[3], r[4]) for r in rows]
