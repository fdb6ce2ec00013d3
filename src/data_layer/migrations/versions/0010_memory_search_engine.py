"""The store's own full-text engine over memories, with BM25's collection statistics kept in the database.

Revision ID: 0010_memory_search_engine
Revises: 0011_memory_type_check

It runs after ``0011_memory_type_check`` (numbered later, written at the same time): that revision
rebuilds ``agent_memories`` on SQLite, which would drop the triggers this one puts on it. A later
revision that rebuilds ``agent_memories`` or ``agent_memory_search_index`` on SQLite must create
them again.
Create Date: 2026-12-08

``agent_memory_search_index`` (one row per analysed memory) gets:

- ``keyword_terms``: the search terms of the memory's stored keywords, space-joined (``NULL``: not
  analysed yet; the migration cannot run the tokenizer, so every existing row starts ``NULL`` and
  ``agent-memory db upgrade`` fills them);
- ``vector_terms``: the bucket terms of the memory's embedding, space-joined (``NULL`` or ``''``: none);
- ``row_id``: a stable integer naming the row to the engine (FTS5 needs an integer rowid; memory ids are
  UUIDs). Unique per table; on PostgreSQL from the sequence ``agent_memory_search_index_row_id_seq``,
  on SQLite numbered by the writer (the engine's largest rowid plus one, under the file's write lock;
  a trigger numbers a row inserted without one).

The engine indexes ``tokens``, ``keyword_terms`` and ``vector_terms`` as they are, one term between two
spaces:

- SQLite: the contentless FTS5 table ``agent_memories_fts(owner, terms, keywords, buckets)``, rowid =
  ``row_id``, tokenized as ``chat_messages_fts`` is (only spaces separate); ``owner`` is the user's
  token (``'u'`` and the hex digits of the UTF-8 user id). Triggers keep it with every write.
- PostgreSQL: generated ``tsvector`` columns ``search_vector`` (tokens), ``keyword_vector`` and
  ``bucket_vector`` (``array_to_tsvector`` of the terms: no parser) and one GIN index over the three,
  led by ``user_id`` where ``btree_gin`` can be had (as in ``0009_message_search_engine``), else over
  the vectors alone.

Collection statistics over the user's active analysed memories (a row of ``agent_memory_search_index``
whose memory has ``is_active``): ``memory_search_statistics`` (how many, their total length in terms)
and ``memory_term_statistics`` (each token's document frequency; keyword and bucket terms are not
counted). Triggers keep them in the writing transaction, whatever writes: the search row's insert,
delete and change of tokens, and the memory's change of ``is_active`` and delete (a ``BEFORE DELETE``
on the memory subtracts its row, since a cascaded delete of the search row no longer sees the memory).
PostgreSQL's run per statement over transition tables and apply their changes in key order; a count
that reaches zero deletes its row.

``agent_memories`` gets an index on ``(user_id, <metadata session_id as text>)``: a memory's
conversation neighbours are read by it.

Stored tokens must not hold a control character (below U+0020) nor a term over 500 UTF-8 bytes (the
write path drops them): this revision cleans existing rows first.

A batch rebuild of ``agent_memory_search_index`` or ``agent_memories`` on SQLite drops their triggers:
a later revision that rebuilds either must create them again.
"""

from __future__ import annotations

import string
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010_memory_search_engine"
down_revision: str | None = "0011_memory_type_check"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_IX = "agent_memory_search_index"
_M = "agent_memories"
_FTS = "agent_memories_fts"
_STATS = "memory_search_statistics"
_TERMS = "memory_term_statistics"
_ROW_INDEX = "ux_agent_memory_search_index_user_row"
_SESSION_INDEX = "ix_agent_memories_user_session"
_PENDING_INDEX = "ix_agent_memory_search_index_user_unanalysed"
_SEQUENCE = "agent_memory_search_index_row_id_seq"
_VECTORS = ("search_vector", "keyword_vector", "bucket_vector")
_VECTOR_INDEX = "ix_agent_memory_search_index_user_vectors"
_SQLITE_TRIGGERS = (
    "agent_memories_fts_number",
    "agent_memories_fts_insert",
    "agent_memories_fts_update",
    "agent_memories_fts_delete",
    "memory_search_statistics_insert",
    "memory_search_statistics_update",
    "memory_search_statistics_delete",
    "memory_search_statistics_activity",
    "memory_search_statistics_memory_delete",
)
_PG_INDEX_TRIGGERS = (
    "memory_search_statistics_insert",
    "memory_search_statistics_update",
    "memory_search_statistics_delete",
)
_PG_MEMORY_TRIGGERS = ("memory_search_statistics_activity", "memory_search_statistics_memory_delete")
_PG_FUNCTIONS = (
    "memory_search_statistics_change(text[], integer[], text[])",
    "memory_search_statistics_index()",
    "memory_search_statistics_activity()",
    "memory_search_statistics_memory_delete()",
    "memory_search_lexemes(text)",
)
#: Longest stored term, in UTF-8 bytes (as ``_message_search.MAX_TERM_BYTES``).
_MAX_TERM_BYTES = 500


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _clean(tokens: str) -> str:
    kept = [
        t
        for t in tokens.split(" ")
        if t and not any(ch < " " for ch in t) and len(t.encode("utf-8")) <= _MAX_TERM_BYTES
    ]
    return " ".join(kept)


def _clean_stored_tokens(bind: sa.Connection) -> None:
    """Drop the terms the engine cannot hold from stored tokens (rare: pasted binary, a huge run)."""
    rows = bind.exec_driver_sql(f"SELECT user_id, memory_id, tokens FROM {_IX}").all()
    changed = [{"u": u, "m": m, "t": _clean(t)} for u, m, t in rows if _clean(t) != t]
    if changed:
        bind.execute(sa.text(f"UPDATE {_IX} SET tokens = :t WHERE user_id = :u AND memory_id = :m"), changed)


# -- SQLite ---------------------------------------------------------------------------------------


def _split(expr: str) -> str:
    """A table of the space-separated terms of ``expr`` (``value``; empty ones are filtered by callers)."""
    escaped = f"replace(replace(replace(coalesce({expr}, ''), '\\', '\\\\'), '\"', '\\\"'), ' ', '\",\"')"
    return f"json_each('[\"' || {escaped} || '\"]')"


def _sqlite_active(user: str, memory: str) -> str:
    return f"EXISTS (SELECT 1 FROM {_M} WHERE user_id = {user} AND id = {memory} AND is_active)"


def _sqlite_add(user: str, tokens: str, condition: str) -> list[str]:
    """Statements counting one memory of ``user`` with ``tokens`` when ``condition`` holds."""
    return [
        f"INSERT INTO {_STATS} (user_id, memories, total_length) "
        f"SELECT {user}, 1, (SELECT count(*) FROM {_split(tokens)} WHERE value <> '') WHERE {condition} "
        "ON CONFLICT (user_id) DO UPDATE SET memories = memories + 1, "
        "total_length = total_length + excluded.total_length",
        f"INSERT INTO {_TERMS} (user_id, term, memories) "
        f"SELECT DISTINCT {user}, value, 1 FROM {_split(tokens)} WHERE value <> '' AND {condition} "
        "ON CONFLICT (user_id, term) DO UPDATE SET memories = memories + 1",
    ]


def _sqlite_remove(user: str, tokens: str, condition: str) -> list[str]:
    """Statements no longer counting one memory of ``user`` with ``tokens`` when ``condition`` holds."""
    terms = f"(SELECT value FROM {_split(tokens)})"
    return [
        f"UPDATE {_STATS} SET memories = memories - 1, total_length = total_length - "
        f"(SELECT count(*) FROM {_split(tokens)} WHERE value <> '') WHERE user_id = {user} AND {condition}",
        f"DELETE FROM {_STATS} WHERE user_id = {user} AND memories <= 0 AND {condition}",
        f"UPDATE {_TERMS} SET memories = memories - 1 WHERE user_id = {user} AND term IN {terms} AND {condition}",
        f"DELETE FROM {_TERMS} WHERE user_id = {user} AND term IN {terms} AND memories <= 0 AND {condition}",
    ]


def _trigger(name: str, when: str, statements: Sequence[str]) -> str:
    return f"CREATE TRIGGER {name} {when} BEGIN " + "; ".join(statements) + "; END"


def _sqlite_engine(bind: sa.Connection) -> None:
    tokenizer = "ascii tokenchars " + _quoted(string.punctuation)
    op.execute(
        f"CREATE VIRTUAL TABLE {_FTS} USING fts5(owner, terms, keywords, buckets, content='', "
        f"tokenize={_quoted(tokenizer)})"
    )
    bind.exec_driver_sql(f"UPDATE {_IX} SET row_id = rowid")
    owner = "'u' || lower(hex({0}.user_id))"
    add = (
        f"INSERT INTO {_FTS} (rowid, owner, terms, keywords, buckets) SELECT new.row_id, {owner.format('new')}, "
        "new.tokens, new.keyword_terms, new.vector_terms"
    )
    drop = (
        f"INSERT INTO {_FTS} ({_FTS}, rowid, owner, terms, keywords, buckets) SELECT 'delete', old.row_id, "
        f"{owner.format('old')}, old.tokens, old.keyword_terms, old.vector_terms"
    )
    number = (
        f"UPDATE {_IX} SET row_id = (SELECT coalesce(max(rowid), 0) + 1 FROM {_FTS}) "
        "WHERE user_id = new.user_id AND memory_id = new.memory_id"
    )
    names = iter(_SQLITE_TRIGGERS)
    op.execute(_trigger(next(names), f"AFTER INSERT ON {_IX} WHEN new.row_id IS NULL", [number]))
    op.execute(_trigger(next(names), f"AFTER INSERT ON {_IX} WHEN new.row_id IS NOT NULL", [add]))
    op.execute(
        _trigger(
            next(names),
            f"AFTER UPDATE OF row_id, tokens, keyword_terms, vector_terms ON {_IX}",
            [f"{drop} WHERE old.row_id IS NOT NULL", f"{add} WHERE new.row_id IS NOT NULL"],
        )
    )
    op.execute(_trigger(next(names), f"AFTER DELETE ON {_IX} WHEN old.row_id IS NOT NULL", [drop]))
    # the statistics
    new_active = _sqlite_active("new.user_id", "new.memory_id")
    old_active = _sqlite_active("old.user_id", "old.memory_id")
    op.execute(
        _trigger(next(names), f"AFTER INSERT ON {_IX} WHEN {new_active}", _sqlite_add("new.user_id", "new.tokens", "1"))
    )
    op.execute(
        _trigger(
            next(names),
            f"AFTER UPDATE OF tokens ON {_IX} WHEN old.tokens IS NOT new.tokens AND {new_active}",
            [*_sqlite_remove("old.user_id", "old.tokens", "1"), *_sqlite_add("new.user_id", "new.tokens", "1")],
        )
    )
    op.execute(
        _trigger(
            next(names), f"AFTER DELETE ON {_IX} WHEN {old_active}", _sqlite_remove("old.user_id", "old.tokens", "1")
        )
    )
    row_tokens = f"(SELECT tokens FROM {_IX} WHERE user_id = {{0}}.user_id AND memory_id = {{0}}.id)"
    has_row = f"EXISTS (SELECT 1 FROM {_IX} WHERE user_id = {{0}}.user_id AND memory_id = {{0}}.id)"
    op.execute(
        _trigger(
            next(names),
            f"AFTER UPDATE OF is_active ON {_M} WHEN old.is_active IS NOT new.is_active",
            [
                *_sqlite_add("new.user_id", row_tokens.format("new"), f"new.is_active AND {has_row.format('new')}"),
                *_sqlite_remove("old.user_id", row_tokens.format("old"), f"old.is_active AND {has_row.format('old')}"),
            ],
        )
    )
    op.execute(
        _trigger(
            next(names),
            f"BEFORE DELETE ON {_M} WHEN old.is_active AND {has_row.format('old')}",
            _sqlite_remove("old.user_id", row_tokens.format("old"), "1"),
        )
    )
    op.execute(
        f"INSERT INTO {_FTS} (rowid, owner, terms, keywords, buckets) "
        f"SELECT row_id, {owner.format(_IX)}, tokens, keyword_terms, vector_terms FROM {_IX}"
    )
    active = f"FROM {_IX} ix JOIN {_M} m ON m.user_id = ix.user_id AND m.id = ix.memory_id AND m.is_active"
    op.execute(
        f"INSERT INTO {_STATS} (user_id, memories, total_length) SELECT ix.user_id, count(*), "
        f"sum((SELECT count(*) FROM {_split('ix.tokens')} WHERE value <> '')) {active} GROUP BY ix.user_id"
    )
    op.execute(
        f"INSERT INTO {_TERMS} (user_id, term, memories) SELECT ix.user_id, t.value, count(DISTINCT ix.memory_id) "
        f"{active}, {_split('ix.tokens')} AS t WHERE t.value <> '' GROUP BY ix.user_id, t.value"
    )


# -- PostgreSQL -----------------------------------------------------------------------------------

_PG_LEXEMES = """
CREATE FUNCTION memory_search_lexemes(terms text) RETURNS text[] LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN array_remove(string_to_array(coalesce(terms, ''), ' '), '')
"""

#: Applies counted (+1) and uncounted (-1) memories: ``users[i]`` with ``tokens[i]``, sign ``signs[i]``.
#: Rows change in key order (two writers lock them in one order); a count at zero deletes its row.
_PG_CHANGE = f"""
CREATE FUNCTION memory_search_statistics_change(users text[], signs integer[], tokens text[])
RETURNS void LANGUAGE plpgsql AS $body$
DECLARE
    zero_users text[]; zero_terms text[];
BEGIN
    IF cardinality(users) = 0 THEN
        RETURN;
    END IF;
    INSERT INTO {_STATS} AS s (user_id, memories, total_length)
    SELECT c.user_id, sum(c.sign), sum(c.sign * cardinality(memory_search_lexemes(c.tokens)))
    FROM unnest(users, signs, tokens) AS c(user_id, sign, tokens)
    GROUP BY 1 HAVING sum(c.sign) <> 0 OR sum(c.sign * cardinality(memory_search_lexemes(c.tokens))) <> 0
    ORDER BY 1
    ON CONFLICT (user_id) DO UPDATE
    SET memories = s.memories + excluded.memories, total_length = s.total_length + excluded.total_length;
    DELETE FROM {_STATS} WHERE user_id = ANY(users) AND memories <= 0;
    WITH changed AS (
        INSERT INTO {_TERMS} AS s (user_id, term, memories)
        SELECT c.user_id, t.term, sum(c.sign)
        FROM unnest(users, signs, tokens) AS c(user_id, sign, tokens)
        CROSS JOIN LATERAL (SELECT DISTINCT u AS term FROM unnest(memory_search_lexemes(c.tokens)) AS u) AS t
        GROUP BY 1, 2 HAVING sum(c.sign) <> 0 ORDER BY 1, 2
        ON CONFLICT (user_id, term) DO UPDATE SET memories = s.memories + excluded.memories
        RETURNING s.user_id, s.term, s.memories
    )
    SELECT array_agg(user_id), array_agg(term) INTO zero_users, zero_terms FROM changed WHERE memories <= 0;
    IF zero_users IS NOT NULL THEN
        DELETE FROM {_TERMS} AS s USING unnest(zero_users, zero_terms) AS z(user_id, term)
        WHERE s.user_id = z.user_id AND s.term = z.term AND s.memories <= 0;
    END IF;
END
$body$
"""

_PG_ACTIVE_NEW = f"JOIN {_M} AS m ON m.user_id = n.user_id AND m.id = n.memory_id AND m.is_active"
_PG_ACTIVE_OLD = f"JOIN {_M} AS m ON m.user_id = o.user_id AND m.id = o.memory_id AND m.is_active"

_PG_INDEX_FUNCTION = f"""
CREATE FUNCTION memory_search_statistics_index() RETURNS trigger LANGUAGE plpgsql AS $body$
DECLARE
    u text[]; s integer[]; t text[];
BEGIN
    IF TG_OP = 'INSERT' THEN
        SELECT coalesce(array_agg(n.user_id), '{{}}'), coalesce(array_agg(1), '{{}}'),
               coalesce(array_agg(n.tokens), '{{}}')
        INTO u, s, t FROM new_rows AS n {_PG_ACTIVE_NEW};
    ELSIF TG_OP = 'DELETE' THEN
        SELECT coalesce(array_agg(o.user_id), '{{}}'), coalesce(array_agg(-1), '{{}}'),
               coalesce(array_agg(o.tokens), '{{}}')
        INTO u, s, t FROM old_rows AS o {_PG_ACTIVE_OLD};
    ELSE
        SELECT coalesce(array_agg(c.user_id), '{{}}'), coalesce(array_agg(c.sign), '{{}}'),
               coalesce(array_agg(c.tokens), '{{}}')
        INTO u, s, t FROM (
            SELECT n.user_id, x.sign, x.tokens
            FROM new_rows AS n JOIN old_rows AS o ON o.user_id = n.user_id AND o.memory_id = n.memory_id
            {_PG_ACTIVE_NEW}
            CROSS JOIN LATERAL (VALUES (1, n.tokens), (-1, o.tokens)) AS x(sign, tokens)
            WHERE o.tokens IS DISTINCT FROM n.tokens
        ) AS c;
    END IF;
    PERFORM memory_search_statistics_change(u, s, t);
    RETURN NULL;
END
$body$
"""

_PG_ACTIVITY_FUNCTION = f"""
CREATE FUNCTION memory_search_statistics_activity() RETURNS trigger LANGUAGE plpgsql AS $body$
DECLARE
    u text[]; s integer[]; t text[];
BEGIN
    SELECT coalesce(array_agg(n.user_id), '{{}}'),
           coalesce(array_agg(CASE WHEN n.is_active THEN 1 ELSE -1 END), '{{}}'),
           coalesce(array_agg(ix.tokens), '{{}}')
    INTO u, s, t
    FROM new_rows AS n JOIN old_rows AS o ON o.user_id = n.user_id AND o.id = n.id
    JOIN {_IX} AS ix ON ix.user_id = n.user_id AND ix.memory_id = n.id
    WHERE o.is_active IS DISTINCT FROM n.is_active;
    PERFORM memory_search_statistics_change(u, s, t);
    RETURN NULL;
END
$body$
"""

_PG_MEMORY_DELETE_FUNCTION = f"""
CREATE FUNCTION memory_search_statistics_memory_delete() RETURNS trigger LANGUAGE plpgsql AS $body$
BEGIN
    IF old.is_active THEN
        PERFORM memory_search_statistics_change(ARRAY[old.user_id]::text[], ARRAY[-1], ARRAY[ix.tokens])
        FROM {_IX} AS ix WHERE ix.user_id = old.user_id AND ix.memory_id = old.id;
    END IF;
    RETURN old;
END
$body$
"""


def btree_gin_ready(bind: sa.Connection) -> bool:
    """As ``0009_message_search_engine.btree_gin_ready``: installed, or created now in a SAVEPOINT."""
    if bind.exec_driver_sql("SELECT 1 FROM pg_extension WHERE extname = 'btree_gin'").first() is not None:
        return True
    if bind.exec_driver_sql("SELECT 1 FROM pg_available_extensions WHERE name = 'btree_gin'").first() is None:
        return False
    try:
        with bind.begin_nested():
            bind.exec_driver_sql("CREATE EXTENSION IF NOT EXISTS btree_gin")
    except sa.exc.DBAPIError:
        return False
    return True


def create_vector_index(bind: sa.Connection, *, btree_gin: bool) -> None:
    """The GIN index of the three vectors, led by ``user_id`` with ``btree_gin``."""
    columns = ", ".join((("user_id",) if btree_gin else ()) + _VECTORS)
    bind.exec_driver_sql(f"CREATE INDEX {_VECTOR_INDEX} ON {_IX} USING gin ({columns})")


def _postgresql_engine(bind: sa.Connection) -> None:
    op.execute(f"CREATE SEQUENCE {_SEQUENCE} OWNED BY {_IX}.row_id")
    op.execute(f"UPDATE {_IX} SET row_id = nextval('{_SEQUENCE}')")
    op.execute(f"ALTER TABLE {_IX} ALTER COLUMN row_id SET DEFAULT nextval('{_SEQUENCE}')")
    op.execute(_PG_LEXEMES)
    for name, source in zip(_VECTORS, ("tokens", "keyword_terms", "vector_terms"), strict=True):
        op.execute(
            f"ALTER TABLE {_IX} ADD COLUMN {name} tsvector "
            f"GENERATED ALWAYS AS (array_to_tsvector(memory_search_lexemes({source}))) STORED"
        )
    create_vector_index(bind, btree_gin=btree_gin_ready(bind))
    for sql in (_PG_CHANGE, _PG_INDEX_FUNCTION, _PG_ACTIVITY_FUNCTION, _PG_MEMORY_DELETE_FUNCTION):
        op.execute(sql)
    for trigger, event, tables in zip(
        _PG_INDEX_TRIGGERS,
        ("INSERT", "UPDATE", "DELETE"),
        ("NEW TABLE AS new_rows", "OLD TABLE AS old_rows NEW TABLE AS new_rows", "OLD TABLE AS old_rows"),
        strict=True,
    ):
        op.execute(
            f"CREATE TRIGGER {trigger} AFTER {event} ON {_IX} REFERENCING {tables} "
            "FOR EACH STATEMENT EXECUTE FUNCTION memory_search_statistics_index()"
        )
    op.execute(
        f"CREATE TRIGGER {_PG_MEMORY_TRIGGERS[0]} AFTER UPDATE ON {_M} REFERENCING OLD TABLE AS old_rows "
        "NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION memory_search_statistics_activity()"
    )
    op.execute(
        f"CREATE TRIGGER {_PG_MEMORY_TRIGGERS[1]} BEFORE DELETE ON {_M} "
        "FOR EACH ROW EXECUTE FUNCTION memory_search_statistics_memory_delete()"
    )
    op.execute(
        "SELECT memory_search_statistics_change(coalesce(array_agg(ix.user_id), '{}'), "
        "coalesce(array_agg(1), '{}'), coalesce(array_agg(ix.tokens), '{}')) "
        f"FROM {_IX} AS ix JOIN {_M} AS m ON m.user_id = ix.user_id AND m.id = ix.memory_id AND m.is_active"
    )


def _session_expression(dialect: str) -> str:
    if dialect == "sqlite":
        return "CAST(json_extract(content_metadata, '$.session_id') AS TEXT)"
    return "(content_metadata ->> 'session_id')"


def upgrade() -> None:
    bind = op.get_bind()
    dialect = bind.dialect.name
    # plain ADD COLUMN (no batch rebuild): a rebuild on SQLite would drop the triggers made below
    op.add_column(_IX, sa.Column("keyword_terms", sa.Text(), nullable=True))
    op.add_column(_IX, sa.Column("vector_terms", sa.Text(), nullable=True))
    op.add_column(_IX, sa.Column("row_id", sa.BigInteger(), nullable=True))
    term_type = sa.Text().with_variant(sa.Text(collation="C"), "postgresql")
    op.create_table(
        _STATS,
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("memories", sa.BigInteger(), nullable=False),
        sa.Column("total_length", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("user_id", name=op.f(f"pk_{_STATS}")),
    )
    op.create_table(
        _TERMS,
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("term", term_type, nullable=False),
        sa.Column("memories", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("user_id", "term", name=op.f(f"pk_{_TERMS}")),
    )
    _clean_stored_tokens(bind)
    op.execute(f"CREATE INDEX {_SESSION_INDEX} ON {_M} (user_id, {_session_expression(dialect)})")
    if dialect == "sqlite":
        _sqlite_engine(bind)
    else:
        _postgresql_engine(bind)
    op.create_index(_ROW_INDEX, _IX, ["user_id", "row_id"], unique=True)
    op.create_index(
        _PENDING_INDEX,
        _IX,
        ["user_id", "memory_id"],
        sqlite_where=sa.text("keyword_terms IS NULL"),
        postgresql_where=sa.text("keyword_terms IS NULL"),
    )
    # keyword_terms stay NULL (the tokenizer is not SQL): `agent-memory db upgrade` fills them next


def downgrade() -> None:
    bind = op.get_bind()
    op.drop_index(_PENDING_INDEX, table_name=_IX)
    op.drop_index(_ROW_INDEX, table_name=_IX)
    if bind.dialect.name == "sqlite":
        for trigger in _SQLITE_TRIGGERS:
            op.execute(f"DROP TRIGGER IF EXISTS {trigger}")
        op.execute(f"DROP TABLE IF EXISTS {_FTS}")
    else:
        for trigger in _PG_INDEX_TRIGGERS:
            op.execute(f"DROP TRIGGER IF EXISTS {trigger} ON {_IX}")
        for trigger in _PG_MEMORY_TRIGGERS:
            op.execute(f"DROP TRIGGER IF EXISTS {trigger} ON {_M}")
        op.execute(f"DROP INDEX IF EXISTS {_VECTOR_INDEX}")
        for name in _VECTORS:
            op.execute(f"ALTER TABLE {_IX} DROP COLUMN IF EXISTS {name}")
        for function in _PG_FUNCTIONS:
            op.execute(f"DROP FUNCTION IF EXISTS {function}")
        op.execute(f"ALTER TABLE {_IX} ALTER COLUMN row_id DROP DEFAULT")
        op.execute(f"DROP SEQUENCE IF EXISTS {_SEQUENCE}")
    op.execute(f"DROP INDEX IF EXISTS {_SESSION_INDEX}")
    op.drop_table(_TERMS)
    op.drop_table(_STATS)
    with op.batch_alter_table(_IX) as batch:
        batch.drop_column("row_id")
        batch.drop_column("vector_terms")
        batch.drop_column("keyword_terms")
