"""The store's own full-text engine over chat messages: evidence search needs no index in a process.

Revision ID: 0009_message_search_engine
Revises: 0008_user_leading_keys
Create Date: 2026-12-05

``chat_messages`` gets ``search_terms`` (the analyzer's tokens joined by single spaces; ``NULL``: not
analysed yet) and ``search_length`` (how many), written with the message. The engine indexes the terms
as they are, one token between two spaces, so words the stores' own parsers would cut (Chinese, ``c++``)
stay whole:

- SQLite: the contentless FTS5 table ``chat_messages_fts(owner, terms)``, rowid = the message id, with
  the ``ascii`` tokenizer told that every ASCII punctuation mark is part of a token (so only spaces
  separate, and non-ASCII characters always belong to tokens). ``owner`` holds one token per user
  (``'u'`` and the hex digits of the UTF-8 user id), so a query names its user to the engine. Triggers
  keep it in step with every insert, delete and analysis, in the writing transaction.
- PostgreSQL: the generated column ``search_vector = array_to_tsvector(string_to_array(search_terms,
  ' '))`` (lexemes exactly as stored, no parser) and a GIN index on it. Where the ``btree_gin`` extension
  is installed, or listed in ``pg_available_extensions`` and this role may create it, the index is on
  ``(user_id, search_vector)``: a term's look-up reads only the user's entries, whatever the other users
  hold, and the index leads with the user (a distributed table keeps it per shard). Elsewhere (no contrib
  package, no privilege) it is on ``search_vector`` alone: the same results, since every query also names
  its user, but a term's look-up reads the entries of every user holding the term and the user's rows are
  then kept by ``user_id`` (a bitmap AND with a ``user_id`` index or a recheck), so a common word costs
  in proportion to the whole table rather than to the user. Creating the extension is tried inside a
  SAVEPOINT, so a refusal does not abort this migration's transaction.

``chat_search_statistics`` holds BM25's collection statistics per chat ``(user_id, friend_key)``: how
many messages are analysed and their total length, kept by triggers on ``chat_messages`` in the
writing transaction (SQLite: per row, beside the FTS5 ones; PostgreSQL: per statement, over its
transition tables, so a batch insert makes one update per chat). A search sums the rows its scope sees.

Messages stored before this revision have no terms (the new columns are ``NULL``), so the engine and the
statistics start empty: the migration cannot run the project's tokenizer. ``agent-memory db upgrade``
analyses them right after migrating; a message still without terms (written by a layer without the
analyzer) is analysed by the evidence search before it reads (``ix_chat_messages_user_unanalysed``).
The terms do not record which analyzer made them: after a change of the tokenizer, old messages keep
their old terms until they are cleared (``search_terms = NULL``) and analysed again.

A batch rebuild of ``chat_messages`` on SQLite drops its triggers: a later revision that rebuilds the
table must create them again.
"""

from __future__ import annotations

import string
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009_message_search_engine"
down_revision: str | None = "0008_user_leading_keys"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_FTS = "chat_messages_fts"
_VECTOR = "search_vector"
_VECTOR_INDEX = "ix_chat_messages_user_search_vector"
_PENDING_INDEX = "ix_chat_messages_user_unanalysed"
_STATS = "chat_search_statistics"
_TRIGGERS = ("chat_messages_fts_insert", "chat_messages_fts_update", "chat_messages_fts_delete")
_STATS_TRIGGERS = ("chat_search_statistics_insert", "chat_search_statistics_update", "chat_search_statistics_delete")
_STATS_FUNCTION = "chat_search_statistics_apply"


def _quoted(text: str) -> str:
    """``text`` as a SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def _owner(row: str) -> str:
    """The owner token of ``row`` (``new`` or ``old``): ``'u'`` and the hex of its UTF-8 user id."""
    return f"'u' || lower(hex({row}.user_id))"


def _sqlite_engine() -> None:
    tokenizer = "ascii tokenchars " + _quoted(string.punctuation)
    op.execute(
        f"CREATE VIRTUAL TABLE {_FTS} USING fts5(owner, terms, content='', detail='column', columnsize=0, "
        f"tokenize={_quoted(tokenizer)})"
    )
    add = f"INSERT INTO {_FTS} (rowid, owner, terms) SELECT new.id, {_owner('new')}, new.search_terms"
    drop = (
        f"INSERT INTO {_FTS} ({_FTS}, rowid, owner, terms) SELECT 'delete', old.id, {_owner('old')}, old.search_terms"
    )
    op.execute(
        f"CREATE TRIGGER {_TRIGGERS[0]} AFTER INSERT ON chat_messages WHEN new.search_terms IS NOT NULL "
        f"BEGIN {add}; END"
    )
    op.execute(
        f"CREATE TRIGGER {_TRIGGERS[1]} AFTER UPDATE OF search_terms ON chat_messages "
        f"BEGIN {drop} WHERE old.search_terms IS NOT NULL; {add} WHERE new.search_terms IS NOT NULL; END"
    )
    op.execute(
        f"CREATE TRIGGER {_TRIGGERS[2]} AFTER DELETE ON chat_messages WHEN old.search_terms IS NOT NULL "
        f"BEGIN {drop}; END"
    )


def _sqlite_statistics() -> None:
    """Per-row triggers: a message counts in its chat's row while its ``search_length`` is set."""
    add = (
        f"INSERT INTO {_STATS} (user_id, friend_key, messages, total_length) "
        "SELECT new.user_id, coalesce(new.friend_id, ''), 1, new.search_length WHERE new.search_length IS NOT NULL "
        "ON CONFLICT (user_id, friend_key) DO UPDATE SET messages = messages + 1, "
        "total_length = total_length + excluded.total_length"
    )
    drop = (
        f"UPDATE {_STATS} SET messages = messages - 1, total_length = total_length - old.search_length "
        "WHERE old.search_length IS NOT NULL AND user_id = old.user_id AND friend_key = coalesce(old.friend_id, '')"
    )
    op.execute(f"CREATE TRIGGER {_STATS_TRIGGERS[0]} AFTER INSERT ON chat_messages BEGIN {add}; END")
    op.execute(
        f"CREATE TRIGGER {_STATS_TRIGGERS[1]} AFTER UPDATE OF user_id, friend_id, search_length ON chat_messages "
        f"BEGIN {drop}; {add}; END"
    )
    op.execute(f"CREATE TRIGGER {_STATS_TRIGGERS[2]} AFTER DELETE ON chat_messages BEGIN {drop}; END")


#: PostgreSQL's statistics triggers: one function for the three statement-level triggers, over their
#: transition tables (``new_rows``, ``old_rows``). Each chat's change is summed, then applied in key order
#: (two transactions touching the same chats lock their rows in one order). A delete only subtracts: it
#: never makes a row (an erasure may have deleted the chat's row first).
_PG_UPSERT = f"""
        INSERT INTO {_STATS} AS s (user_id, friend_key, messages, total_length)
        SELECT user_id, friend_key, sum(n), sum(total) FROM ({{rows}}) AS c
        GROUP BY 1, 2 HAVING sum(n) <> 0 OR sum(total) <> 0 ORDER BY 1, 2
        ON CONFLICT (user_id, friend_key) DO UPDATE
        SET messages = s.messages + excluded.messages, total_length = s.total_length + excluded.total_length;"""
_PG_ADDED = (
    "SELECT user_id, coalesce(friend_id, '') AS friend_key, 1 AS n, search_length AS total "
    "FROM new_rows WHERE search_length IS NOT NULL"
)
_PG_REMOVED = (
    "SELECT user_id, coalesce(friend_id, ''), -1, -search_length FROM old_rows WHERE search_length IS NOT NULL"
)
_PG_FUNCTION = f"""
CREATE FUNCTION {_STATS_FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS $body$
BEGIN
    IF TG_OP = 'INSERT' THEN{_PG_UPSERT.format(rows=_PG_ADDED)}
    ELSIF TG_OP = 'UPDATE' THEN{_PG_UPSERT.format(rows=_PG_ADDED + " UNION ALL " + _PG_REMOVED)}
    ELSE
        UPDATE {_STATS} AS s SET messages = s.messages - d.n, total_length = s.total_length - d.total
        FROM (SELECT user_id, coalesce(friend_id, '') AS friend_key, count(*) AS n, sum(search_length) AS total
              FROM old_rows WHERE search_length IS NOT NULL GROUP BY 1, 2) AS d
        WHERE s.user_id = d.user_id AND s.friend_key = d.friend_key;
    END IF;
    RETURN NULL;
END
$body$
"""


def _postgresql_statistics() -> None:
    op.execute(_PG_FUNCTION)
    for trigger, event, tables in (
        (_STATS_TRIGGERS[0], "INSERT", "NEW TABLE AS new_rows"),
        # no column list: PostgreSQL refuses transition tables on one; an update of other columns sums to 0
        (_STATS_TRIGGERS[1], "UPDATE", "OLD TABLE AS old_rows NEW TABLE AS new_rows"),
        (_STATS_TRIGGERS[2], "DELETE", "OLD TABLE AS old_rows"),
    ):
        op.execute(
            f"CREATE TRIGGER {trigger} AFTER {event} ON chat_messages REFERENCING {tables} "
            f"FOR EACH STATEMENT EXECUTE FUNCTION {_STATS_FUNCTION}()"
        )


def btree_gin_ready(bind: sa.Connection) -> bool:
    """Whether ``btree_gin`` is installed, or listed as available and created now. The creation runs in a
    SAVEPOINT: a refusal (no privilege) rolls back only that, and the migration goes on without it."""
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
    """The GIN index of ``search_vector``: on ``(user_id, search_vector)`` with ``btree_gin``, else on
    ``search_vector`` alone (see the module docs for what each costs)."""
    columns = f"user_id, {_VECTOR}" if btree_gin else _VECTOR
    bind.exec_driver_sql(f"CREATE INDEX {_VECTOR_INDEX} ON chat_messages USING gin ({columns})")


def _postgresql_engine() -> None:
    bind = op.get_bind()
    op.execute(
        f"ALTER TABLE chat_messages ADD COLUMN {_VECTOR} tsvector "
        "GENERATED ALWAYS AS (array_to_tsvector(string_to_array(search_terms, ' '))) STORED"
    )
    create_vector_index(bind, btree_gin=btree_gin_ready(bind))


def upgrade() -> None:
    # plain ADD COLUMN (no batch rebuild): a rebuild on SQLite would drop the triggers made below
    op.add_column("chat_messages", sa.Column("search_terms", sa.Text(), nullable=True))
    op.add_column("chat_messages", sa.Column("search_length", sa.Integer(), nullable=True))
    op.create_index(
        _PENDING_INDEX,
        "chat_messages",
        ["user_id", "id"],
        sqlite_where=sa.text("search_terms IS NULL"),
        postgresql_where=sa.text("search_terms IS NULL"),
    )
    op.create_table(
        _STATS,
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("friend_key", sa.String(128), nullable=False),
        sa.Column("messages", sa.BigInteger(), nullable=False),
        sa.Column("total_length", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("user_id", "friend_key", name=op.f(f"pk_{_STATS}")),
    )
    if op.get_bind().dialect.name == "sqlite":
        _sqlite_engine()
        _sqlite_statistics()
    else:
        _postgresql_engine()
        _postgresql_statistics()
    # every existing message has no terms yet (the columns are new): the engine and the statistics start
    # empty, and `agent-memory db upgrade` analyses the messages next


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for trigger in (*_TRIGGERS, *_STATS_TRIGGERS):
            op.execute(f"DROP TRIGGER IF EXISTS {trigger}")
        op.execute(f"DROP TABLE IF EXISTS {_FTS}")
    else:
        for trigger in _STATS_TRIGGERS:
            op.execute(f"DROP TRIGGER IF EXISTS {trigger} ON chat_messages")
        op.execute(f"DROP FUNCTION IF EXISTS {_STATS_FUNCTION}()")
        op.execute(f"DROP INDEX IF EXISTS {_VECTOR_INDEX}")
        op.execute(f"ALTER TABLE chat_messages DROP COLUMN IF EXISTS {_VECTOR}")
    op.drop_table(_STATS)
    op.drop_index(_PENDING_INDEX, table_name="chat_messages")
    with op.batch_alter_table("chat_messages") as batch:
        batch.drop_column("search_length")
        batch.drop_column("search_terms")
