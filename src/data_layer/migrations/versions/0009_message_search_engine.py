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
  ' '))`` (lexemes exactly as stored, no parser) and a GIN index on ``(user_id, search_vector)``
  (``btree_gin`` puts the user first).

BM25's statistics of a scope (messages and their total length) are read from the index
``(user_id, friend_id, search_length)`` alone.

Messages stored before this revision have no terms yet; the evidence search analyses a user's
unanalysed messages (``ix_chat_messages_user_unanalysed``) before it reads them, once for all processes.
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
_LENGTH_INDEX = "ix_chat_messages_user_friend_length"
_TRIGGERS = ("chat_messages_fts_insert", "chat_messages_fts_update", "chat_messages_fts_delete")


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


def _postgresql_engine() -> None:
    op.execute("CREATE EXTENSION IF NOT EXISTS btree_gin")
    op.execute(
        f"ALTER TABLE chat_messages ADD COLUMN {_VECTOR} tsvector "
        "GENERATED ALWAYS AS (array_to_tsvector(string_to_array(search_terms, ' '))) STORED"
    )
    op.execute(f"CREATE INDEX {_VECTOR_INDEX} ON chat_messages USING gin (user_id, {_VECTOR})")


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
    op.create_index(_LENGTH_INDEX, "chat_messages", ["user_id", "friend_id", "search_length"])
    if op.get_bind().dialect.name == "sqlite":
        _sqlite_engine()
        # rows that already carry terms (none written by an earlier revision) enter the engine
        op.execute(
            f"INSERT INTO {_FTS} (rowid, owner, terms) SELECT id, 'u' || lower(hex(user_id)), search_terms "
            "FROM chat_messages WHERE search_terms IS NOT NULL"
        )
    else:
        _postgresql_engine()  # the generated column is computed for every row as it is added


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for trigger in _TRIGGERS:
            op.execute(f"DROP TRIGGER IF EXISTS {trigger}")
        op.execute(f"DROP TABLE IF EXISTS {_FTS}")
    else:
        op.execute(f"DROP INDEX IF EXISTS {_VECTOR_INDEX}")
        op.execute(f"ALTER TABLE chat_messages DROP COLUMN IF EXISTS {_VECTOR}")
    op.drop_index(_LENGTH_INDEX, table_name="chat_messages")
    op.drop_index(_PENDING_INDEX, table_name="chat_messages")
    with op.batch_alter_table("chat_messages") as batch:
        batch.drop_column("search_length")
        batch.drop_column("search_terms")
