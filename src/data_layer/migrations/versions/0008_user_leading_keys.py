"""Keys that lead with ``user_id``: every per-user table can be distributed by user.

Revision ID: 0008_user_leading_keys
Revises: 0007_message_archived_mark
Create Date: 2026-12-02

The keyword and search-index rows get the ``user_id`` of their memory (filled from it, then NOT NULL);
rows whose memory is gone (left by a SQLite connection without foreign keys) are unreachable and are
dropped. Primary keys, unique keys, indexes and the foreign keys to ``agent_memories`` then lead with
``user_id``. The keywords' surrogate ``id`` gives way to the key ``(user_id, memory_id, keyword)``.

On SQLite ``chat_messages`` keeps ``id INTEGER PRIMARY KEY``: SQLite numbers only such a column
itself, and a SQLite file is never distributed.

The downgrade renumbers the keywords' ``id``. It fails where two users hold an archived tool result of
the same ``uuid`` (an import of one user's export as another, allowed from this revision on), since
0007's key is the ``uuid`` alone.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008_user_leading_keys"
down_revision: str | None = "0007_message_archived_mark"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_KEYWORDS = "agent_memory_keywords"
_INDEX = "agent_memory_search_index"
_CHILDREN = (_KEYWORDS, _INDEX)


def _fk(table: str) -> str:
    return f"fk_{table}_memory_id_agent_memories"


def _fk_user(table: str) -> str:
    return f"fk_{table}_user_id_agent_memories"


def _backfill_user_ids() -> None:
    """Give each keyword and search-index row its memory's user (one statement per table)."""
    memories = sa.table("agent_memories", sa.column("id", sa.Uuid()), sa.column("user_id", sa.String(128)))
    for name in _CHILDREN:
        child = sa.table(name, sa.column("memory_id", sa.Uuid()), sa.column("user_id", sa.String(128)))
        owner = sa.select(memories.c.user_id).where(memories.c.id == child.c.memory_id).scalar_subquery()
        op.execute(child.delete().where(~sa.exists().where(memories.c.id == child.c.memory_id)))
        op.execute(child.update().values(user_id=owner))


def upgrade() -> None:
    for name in _CHILDREN:
        op.add_column(name, sa.Column("user_id", sa.String(128), nullable=True))
    _backfill_user_ids()
    # the children's foreign keys hang on the memories' primary key: off first, on again after
    for name in _CHILDREN:
        with op.batch_alter_table(name) as batch:
            batch.drop_constraint(_fk(name), type_="foreignkey")

    with op.batch_alter_table("agent_memories") as batch:
        batch.drop_constraint("pk_agent_memories", type_="primary")
        batch.create_primary_key("pk_agent_memories", ["user_id", "id"])

    with op.batch_alter_table(_KEYWORDS) as batch:
        batch.drop_index("idx_memory_keywords_memory")
        batch.drop_index("idx_memory_keywords_keyword")
        batch.drop_constraint("unique_memory_keyword", type_="unique")
        batch.drop_constraint(f"pk_{_KEYWORDS}", type_="primary")
        batch.drop_column("id")
        batch.alter_column("user_id", existing_type=sa.String(128), nullable=False)
        batch.create_primary_key(f"pk_{_KEYWORDS}", ["user_id", "memory_id", "keyword"])
        batch.create_index("idx_memory_keywords_user_keyword", ["user_id", "keyword"])
        batch.create_foreign_key(
            _fk_user(_KEYWORDS), "agent_memories", ["user_id", "memory_id"], ["user_id", "id"], ondelete="CASCADE"
        )

    with op.batch_alter_table(_INDEX) as batch:
        batch.drop_constraint(f"pk_{_INDEX}", type_="primary")
        batch.alter_column("user_id", existing_type=sa.String(128), nullable=False)
        batch.create_primary_key(f"pk_{_INDEX}", ["user_id", "memory_id"])
        batch.create_foreign_key(
            _fk_user(_INDEX), "agent_memories", ["user_id", "memory_id"], ["user_id", "id"], ondelete="CASCADE"
        )

    if op.get_bind().dialect.name != "sqlite":
        with op.batch_alter_table("chat_messages") as batch:
            batch.drop_constraint("pk_chat_messages", type_="primary")
            batch.create_primary_key("pk_chat_messages", ["user_id", "id"])

    with op.batch_alter_table("tool_result_archive") as batch:
        batch.drop_index("ix_tool_result_archive_conversation_id")
        batch.drop_index("ix_tool_result_archive_thread_id")
        batch.drop_constraint("pk_tool_result_archive", type_="primary")
        batch.create_primary_key("pk_tool_result_archive", ["user_id", "uuid"])
        batch.create_index("ix_tool_result_archive_user_conversation", ["user_id", "conversation_id"])
        batch.create_index("ix_tool_result_archive_user_thread", ["user_id", "thread_id"])


def downgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    with op.batch_alter_table("tool_result_archive") as batch:
        batch.drop_index("ix_tool_result_archive_user_thread")
        batch.drop_index("ix_tool_result_archive_user_conversation")
        batch.drop_constraint("pk_tool_result_archive", type_="primary")
        batch.create_primary_key("pk_tool_result_archive", ["uuid"])
        batch.create_index("ix_tool_result_archive_conversation_id", ["conversation_id"])
        batch.create_index("ix_tool_result_archive_thread_id", ["thread_id"])

    if not sqlite:
        with op.batch_alter_table("chat_messages") as batch:
            batch.drop_constraint("pk_chat_messages", type_="primary")
            batch.create_primary_key("pk_chat_messages", ["id"])

    for name in _CHILDREN:
        with op.batch_alter_table(name) as batch:
            batch.drop_constraint(_fk_user(name), type_="foreignkey")

    with op.batch_alter_table("agent_memories") as batch:
        batch.drop_constraint("pk_agent_memories", type_="primary")
        batch.create_primary_key("pk_agent_memories", ["id"])

    with op.batch_alter_table(_INDEX) as batch:
        batch.drop_constraint(f"pk_{_INDEX}", type_="primary")
        batch.drop_column("user_id")
        batch.create_primary_key(f"pk_{_INDEX}", ["memory_id"])
        batch.create_foreign_key(_fk(_INDEX), "agent_memories", ["memory_id"], ["id"], ondelete="CASCADE")

    # the surrogate id comes back numbered by the database: SERIAL fills it on PostgreSQL, SQLite's
    # rowid on the table's rebuild
    if not sqlite:
        op.execute(sa.text(f"ALTER TABLE {_KEYWORDS} ADD COLUMN id SERIAL"))
    with op.batch_alter_table(_KEYWORDS) as batch:
        batch.drop_index("idx_memory_keywords_user_keyword")
        batch.drop_constraint(f"pk_{_KEYWORDS}", type_="primary")
        if sqlite:
            batch.add_column(sa.Column("id", sa.Integer(), nullable=False))
        batch.drop_column("user_id")
        batch.create_primary_key(f"pk_{_KEYWORDS}", ["id"])
        batch.create_unique_constraint("unique_memory_keyword", ["memory_id", "keyword"])
        batch.create_index("idx_memory_keywords_memory", ["memory_id"])
        batch.create_index("idx_memory_keywords_keyword", ["keyword"])
        batch.create_foreign_key(_fk(_KEYWORDS), "agent_memories", ["memory_id"], ["id"], ondelete="CASCADE")
