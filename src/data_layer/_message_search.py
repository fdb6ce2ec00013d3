"""Chat messages in the store's own full-text engine: search terms written with the message, read by query.

A message's search terms are its analyzer's tokens (:class:`MessageAnalyzer`), stored in
``chat_messages.search_terms`` joined by single spaces (:func:`stored_terms`, the one rule) with their
count in ``search_length``, in the transaction that writes the message. The engine indexes them as they
are (migration ``0009_message_search_engine``): FTS5 on SQLite, a ``tsvector`` with a GIN index on
PostgreSQL. Every statement names one user, and the user leads every index it uses.

Reads for a BM25 ranking above (:class:`MessageSearchMixin`): the statistics of a scope's visible
messages (count and total length summed over its chats' rows of ``chat_search_statistics``, which
triggers keep with every write; each term's document frequency counted by the engine) and the
candidates of a query with
their terms, the filters (visibility, role, time, quoted phrases' prefilter) applied in SQL. Messages
written by a layer without an analyzer are stored without terms; :meth:`MessageSearchMixin.unanalysed`
lists them and :meth:`MessageSearchMixin.store_terms` fills them in (the search does that before it
reads, so no process ever misses a message, whatever the order its id was committed in).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    Integer,
    String,
    Text,
    bindparam,
    cast,
    column,
    func,
    literal_column,
    or_,
    select,
    table,
)
from sqlalchemy import values as sa_values
from sqlalchemy.dialects.postgresql import TSQUERY
from sqlalchemy.engine import Connection, Row
from sqlalchemy.sql.expression import Executable

from . import _validation as v
from ._records import MessageRecord
from ._scope import Scope
from ._tables import (
    MESSAGE_FTS_TABLE,
    MESSAGE_VECTOR_COLUMN,
    MESSAGE_VECTOR_INDEX,
    SHARED_FRIEND_KEY,
    ChatMessageTable,
    ChatSearchStatisticsTable,
)

if TYPE_CHECKING:
    from ._engine import Database

#: Terms longer than this (UTF-8 bytes) are not stored nor searched: PostgreSQL refuses lexemes of 2 KiB
#: and more, and no word is that long (a run of letters in pasted data is no term anyone searches for).
MAX_TERM_BYTES = 500
#: Rows per read of unanalysed messages, and ids per ``IN (...)`` of a look-up.
READ_BATCH = 1000

_T = ChatMessageTable
_S = ChatSearchStatisticsTable
_FTS = table(MESSAGE_FTS_TABLE, column("rowid", Integer))
_RECORD_COLUMNS = (_T.id, _T.user_id, _T.friend_id, _T.thread_id, _T.role, _T.content, _T.created_at)


class MessageAnalyzer(Protocol):
    """Computes the search terms of messages about to be written (or stored without them)."""

    async def message_terms(self, contents: Sequence[str]) -> list[list[str]]:
        """The terms of each content, in order (repeats kept: they count as term frequency)."""
        ...


def stored_terms(tokens: Sequence[str]) -> tuple[str, int]:
    """``(search_terms, search_length)`` of a message: the tokens the engine can hold, space-joined.

    A token holding whitespace (none of the project's tokenizer does) or longer than
    :data:`MAX_TERM_BYTES` is left out, as :func:`engine_terms` leaves it out of a query.
    """
    kept = engine_terms(tokens)
    return " ".join(kept), len(kept)


def engine_terms(tokens: Sequence[str]) -> list[str]:
    """The tokens the engine holds, in order: non-empty, without whitespace, at most MAX_TERM_BYTES."""
    return [t for t in tokens if t.split() == [t] and len(t.encode("utf-8")) <= MAX_TERM_BYTES]


def _all_rows(stmt: Executable, conn: Connection) -> Sequence[Row[*tuple[Any, ...]]]:
    """Every row of ``stmt`` on ``conn`` (a :meth:`Database.quick_read` of one statement)."""
    return conn.execute(stmt).all()


def owner_token(user_id: str) -> str:
    """The FTS5 ``owner`` token of a user's messages (the triggers' rule): ``'u'`` and the hex digits of the
    UTF-8 user id, which the tokenizer keeps as one token."""
    return "u" + user_id.encode("utf-8").hex()


def _fts_string(term: str) -> str:
    """``term`` as an FTS5 string (the table's tokenizer keeps it one token: only spaces separate)."""
    return '"' + term.replace('"', '""') + '"'


def fts_query(user_id: str, terms: Sequence[str], *, every: bool = False) -> str:
    """The FTS5 expression of the user's messages holding any (``every``: all) of ``terms``."""
    joined = (" AND " if every else " OR ").join(_fts_string(t) for t in terms)
    return f"owner : {_fts_string(owner_token(user_id))} AND terms : ({joined})"


def _lexeme(term: str) -> str:
    """``term`` as a quoted ``tsquery`` lexeme, taken verbatim (no parser, no normalisation)."""
    return "'" + term.replace("\\", "\\\\").replace("'", "''") + "'"


def ts_query(terms: Sequence[str], *, every: bool = False) -> str:
    """The ``tsquery`` text of messages holding any (``every``: all) of ``terms``."""
    return (" & " if every else " | ").join(_lexeme(t) for t in terms)


@dataclass(frozen=True, slots=True)
class TermStatistics:
    """BM25's statistics over a scope's visible (analysed) messages: how many, their total length and
    each term's document frequency."""

    documents: int
    total_length: int
    frequencies: dict[str, int]

    @property
    def average_length(self) -> float:
        return self.total_length / self.documents if self.documents else 0.0


@dataclass(frozen=True, slots=True)
class TermCandidate:
    """A message that may match a query: its id, stored terms and length (``content`` when asked for)."""

    id: int
    terms: str
    length: int
    content: str | None = None


@dataclass(frozen=True, slots=True)
class PhraseFilter:
    """A quoted phrase's prefilter: messages holding all of ``terms``, or (``text`` given) whose content
    holds ``text`` (case-insensitive). The caller then checks the phrase itself on the content."""

    terms: tuple[str, ...]
    text: str | None = None


def _passing(*, role: str | None, since: datetime | None, until: datetime | None) -> list[Any]:
    """The conditions of the role and ``[since, until)`` filters (validated; none when not given)."""
    conditions: list[Any] = []
    if role is not None:
        conditions.append(_T.role == v.message_role(role))
    lo, hi = v.time_range(since, until)
    if lo is not None:
        conditions.append(_T.created_at >= lo)
    if hi is not None:
        conditions.append(_T.created_at < hi)
    return conditions


def _like_pattern(text_: str) -> str:
    return "%" + text_.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


class MessageSearchMixin:
    """The engine's reads and the terms' writes of :class:`~data_layer._message_repo.MessageRepository`."""

    _db: Database
    _analyzer: MessageAnalyzer | None = None

    # -- analysis ----------------------------------------------------------------------------------

    @property
    def analyzer(self) -> MessageAnalyzer | None:
        """The analyzer run on every write (``None``: messages are stored without terms, analysed later)."""
        return self._analyzer

    def set_analyzer(self, analyzer: MessageAnalyzer | None) -> None:
        """Compute the search terms of every message written from now on, in its transaction."""
        self._analyzer = analyzer

    async def _add_terms(self, rows: Sequence[dict[str, Any]]) -> None:
        """Give each row its ``search_terms`` and ``search_length`` (no analyzer: left ``None``)."""
        if self._analyzer is None or not rows:
            return
        found = await self._analyzer.message_terms([r["content"] for r in rows])
        for row, tokens in zip(rows, found, strict=True):
            row["search_terms"], row["search_length"] = stored_terms(tokens)

    async def unanalysed(self, *, user_id: str | int, limit: int = READ_BATCH) -> list[tuple[int, str]]:
        """Up to ``limit`` of the user's messages stored without search terms, as ``(id, content)``."""
        uid = v.user_id(user_id)
        size = v.bounded_int(limit, name="limit", low=1, high=READ_BATCH)
        stmt = select(_T.id, _T.content).where(_T.user_id == uid, _T.search_terms.is_(None)).order_by(_T.id).limit(size)
        rows = await self._db.quick_read(lambda conn: conn.execute(stmt).all())
        return [(int(r[0]), str(r[1])) for r in rows]

    async def unanalysed_users(self, *, after: str | None = None, limit: int = READ_BATCH) -> list[str]:
        """Up to ``limit`` users holding messages stored without search terms, in id order after ``after``
        (read from the partial index of those messages)."""
        size = v.bounded_int(limit, name="limit", low=1, high=READ_BATCH)
        stmt = select(_T.user_id).where(_T.search_terms.is_(None)).distinct().order_by(_T.user_id).limit(size)
        if after is not None:
            stmt = stmt.where(_T.user_id > v.user_id(after))
        rows = await self._db.quick_read(lambda conn: conn.execute(stmt).all())
        return [str(r[0]) for r in rows]

    async def store_terms(self, *, user_id: str | int, terms: Sequence[tuple[int, Sequence[str]]]) -> int:
        """Store the search terms of the user's messages ``(id, tokens)`` that have none yet (another process
        may have stored them meanwhile: the same terms); returns how many rows were filled."""
        uid = v.user_id(user_id)
        if not terms:
            return 0
        values = []
        for mid, tokens in terms:
            joined, length = stored_terms(tokens)
            values.append({"mid": mid, "terms": joined, "length": length})
        t = _T.__table__
        if self._db.backend == "postgresql":
            # one statement for the batch: the statistics trigger (per statement) then runs once
            given = sa_values(column("mid", BigInteger), column("terms", Text), column("length", Integer), name="given")
            rows = given.data([(r["mid"], r["terms"], r["length"]) for r in values])
            stmt = (
                t.update()
                .where(t.c.user_id == uid, t.c.id == rows.c.mid, t.c.search_terms.is_(None))
                .values(search_terms=rows.c.terms, search_length=rows.c.length)
            )
            async with self._db.write() as session:
                done = await (await session.connection()).execute(stmt)
            return int(done.rowcount or 0)
        stmt = (
            t.update()
            .where(t.c.user_id == uid, t.c.id == bindparam("mid"), t.c.search_terms.is_(None))
            .values(search_terms=bindparam("terms"), search_length=bindparam("length"))
        )
        async with self._db.write() as session:
            done = await (await session.connection()).execute(stmt, values)
        return int(done.rowcount or 0)

    async def settle_engine(self) -> None:
        """After many messages were analysed at once (``agent-memory db upgrade``): on PostgreSQL, move the
        GIN index's pending entries into the index (until then every search scans them) and refresh the
        planner's statistics of the messages; on SQLite, let it refresh its statistics (``PRAGMA optimize``)."""
        async with self._db.write() as session:
            conn = await session.connection()
            if self._db.backend == "postgresql":
                await conn.exec_driver_sql(f"SELECT gin_clean_pending_list('{MESSAGE_VECTOR_INDEX}'::regclass)")
                await conn.exec_driver_sql(f"ANALYZE {_T.__tablename__}, {_S.__tablename__}")
            else:
                await conn.exec_driver_sql("PRAGMA optimize")

    # -- reads for a ranking -----------------------------------------------------------------------

    def _engine_user(self) -> Any:
        """The ``user_id`` column of a statement the engine drives. On SQLite it is written ``+user_id``,
        which no index serves: the planner then reads the FTS5 matches (already the user's, by their owner
        token) and looks each row up by id, instead of testing every row of the user against the matches
        (ten to a thousand times slower)."""
        if self._db.backend == "sqlite":
            return literal_column(f"+{_T.__tablename__}.user_id", String())
        return _T.user_id

    def _match(self, user_id: str, terms: Sequence[str], *, every: bool = False) -> ColumnElement[bool]:
        """The engine's condition on ``chat_messages`` rows: the user's messages holding any (``every``: all)
        of ``terms``."""
        if self._db.backend == "postgresql":
            vector: ColumnElement[Any] = literal_column(f"{_T.__tablename__}.{MESSAGE_VECTOR_COLUMN}")
            query = cast(bindparam(None, ts_query(terms, every=every), unique=True), TSQUERY)
            return vector.op("@@")(query)
        matching = (
            select(_FTS.c.rowid)
            .where(literal_column(MESSAGE_FTS_TABLE).op("MATCH")(fts_query(user_id, terms, every=every)))
            .scalar_subquery()
        )
        return _T.id.in_(matching)

    async def term_statistics(self, scope: Scope, terms: Sequence[str]) -> TermStatistics:
        """How many of the scope's messages are analysed, their total length, and how many hold each of
        ``terms`` (the scope's visibility rule applies; role and time do not: the statistics are the
        scope's, whatever a query filters)."""
        # the count and total length are the sums of the scope's chats' rows of chat_search_statistics
        # (kept by triggers); each document frequency is an uncorrelated subquery the engine counts
        friend = func.nullif(_S.friend_key, SHARED_FRIEND_KEY)
        columns: list[Any] = [func.coalesce(func.sum(_S.messages), 0), func.coalesce(func.sum(_S.total_length), 0)]
        matched = scope.memory_clause(self._engine_user(), _T.friend_id)
        wanted = list(dict.fromkeys(engine_terms(terms)))
        for term in wanted:
            columns.append(select(func.count()).where(matched, self._match(scope.user_id, [term])).scalar_subquery())
        stmt = select(*columns).where(scope.memory_clause(_S.user_id, friend))
        row = await self._db.quick_read(lambda conn: conn.execute(stmt).one())
        frequencies = {term: int(n) for term, n in zip(wanted, row[2:], strict=True)}
        return TermStatistics(documents=int(row[0]), total_length=int(row[1]), frequencies=frequencies)

    async def term_candidates(
        self,
        scope: Scope,
        *,
        any_of: Sequence[str] = (),
        phrases: Sequence[PhraseFilter] = (),
        role: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        with_content: bool = False,
    ) -> list[TermCandidate]:
        """The scope's analysed messages holding any of ``any_of`` (when given) and passing every phrase's
        prefilter, the role and ``[since, until)``; with their terms (and content when asked for)."""
        conditions: list[Any] = [
            scope.memory_clause(self._engine_user(), _T.friend_id),
            _T.search_terms.is_not(None),
        ]
        wanted = engine_terms(any_of)
        if any_of:
            if not wanted:
                return []
            conditions.append(self._match(scope.user_id, wanted))
        for phrase in phrases:
            held = engine_terms(phrase.terms)
            options = [self._match(scope.user_id, held, every=True)] if held else []
            if phrase.text is not None:
                options.append(_T.content.ilike(_like_pattern(phrase.text), escape="\\"))
            if not options:
                return []
            conditions.append(or_(*options))
        conditions += _passing(role=role, since=since, until=until)
        selected: list[Any] = [_T.id, _T.search_terms, _T.search_length]
        if with_content:
            selected.append(_T.content)
        stmt = select(*selected).where(*conditions)
        async with self._db.read(bulk=True) as session:
            rows = (await session.execute(stmt)).all()
        return [TermCandidate(int(r[0]), r[1], int(r[2] or 0), r[3] if with_content else None) for r in rows]

    async def records(self, *, user_id: str | int, ids: Sequence[int]) -> dict[int, MessageRecord]:
        """The user's messages with these ids (others' ids and missing ones are left out)."""
        uid = v.user_id(user_id)
        found: dict[int, MessageRecord] = {}
        wanted = list(dict.fromkeys(int(i) for i in ids))
        for start in range(0, len(wanted), READ_BATCH):
            part = wanted[start : start + READ_BATCH]
            stmt = select(*_RECORD_COLUMNS).where(_T.user_id == uid, _T.id.in_(part))
            rows = await self._db.quick_read(partial(_all_rows, stmt))
            found.update((int(r[0]), MessageRecord(*r)) for r in rows)
        return found

    async def recent_contents(
        self,
        scope: Scope,
        *,
        limit: int,
        role: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        ids: Sequence[int] = (),
    ) -> list[tuple[int, str]]:
        """``(id, content)`` of the scope's newest ``limit`` messages passing role and ``[since, until)``,
        newest first, plus those of ``ids`` that pass the same filters (a bounded candidate set)."""
        conditions: list[Any] = [scope.memory_clause(_T.user_id, _T.friend_id)]
        conditions += _passing(role=role, since=since, until=until)
        newest = select(_T.id, _T.content).where(*conditions).order_by(_T.created_at.desc(), _T.id.desc()).limit(limit)
        async with self._db.read(bulk=True) as session:
            rows = [(int(r[0]), str(r[1])) for r in (await session.execute(newest)).all()]
            have = {r[0] for r in rows}
            extra = [i for i in dict.fromkeys(ids) if i not in have]
            for start in range(0, len(extra), READ_BATCH):
                part = extra[start : start + READ_BATCH]
                stmt = select(_T.id, _T.content).where(*conditions, _T.id.in_(part))
                rows += [(int(r[0]), str(r[1])) for r in (await session.execute(stmt)).all()]
        return rows
