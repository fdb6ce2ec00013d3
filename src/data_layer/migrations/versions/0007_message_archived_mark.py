"""Archiving progress per message: when the session archiver turned a message into memories.

Revision ID: 0007_message_archived_mark
Revises: 0006_ai_friends
Create Date: 2026-12-01

A chat's progress was the largest archived message id, but sessions are cut by time: a message whose
``created_at`` puts it before a later-id message archived already was never read again. Each message
now carries its own mark. Messages up to a chat's stored progress count as archived here, as the
archiver counted them.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007_message_archived_mark"
down_revision: str | None = "0006_ai_friends"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_PENDING = "archived_at IS NULL"


def upgrade() -> None:
    op.add_column("chat_messages", sa.Column("archived_at", sa.DateTime(timezone=True), nullable=True))
    messages = sa.table(
        "chat_messages",
        sa.column("id", sa.BigInteger()),
        sa.column("user_id", sa.String(128)),
        sa.column("friend_id", sa.String(128)),
        sa.column("archived_at", sa.DateTime(timezone=True)),
    )
    state = sa.table(
        "session_archive_state",
        sa.column("user_id", sa.String(128)),
        sa.column("friend_key", sa.String(128)),
        sa.column("last_message_id", sa.BigInteger()),
        sa.column("updated_at", sa.DateTime(timezone=True)),
    )
    chat = (state.c.user_id == messages.c.user_id) & (state.c.friend_key == sa.func.coalesce(messages.c.friend_id, ""))
    mark = sa.select(state.c.updated_at).where(chat, state.c.last_message_id >= messages.c.id).scalar_subquery()
    op.get_bind().execute(
        messages.update()
        .where(sa.exists().where(chat, state.c.last_message_id >= messages.c.id))
        .values(archived_at=mark)
    )
    op.create_index(
        "ix_chat_messages_user_friend_pending",
        "chat_messages",
        ["user_id", "friend_id", "created_at", "id"],
        sqlite_where=sa.text(_PENDING),
        postgresql_where=sa.text(_PENDING),
    )


def downgrade() -> None:
    op.drop_index("ix_chat_messages_user_friend_pending", table_name="chat_messages")
    with op.batch_alter_table("chat_messages") as batch:
        batch.drop_column("archived_at")
