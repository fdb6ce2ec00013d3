"""Message identity for re-runnable imports: a content hash and an optional external id per message.

Revision ID: 0004_message_identity
Revises: 0003_search_index
Create Date: 2026-11-23

Stored messages get their hash here, so an import after the upgrade recognises them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004_message_identity"
down_revision: str | None = "0003_search_index"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BATCH = 1000


def _content_hash(content: str) -> str:
    # frozen copy of data_layer._message_repo.content_hash at this revision
    return hashlib.sha256(content.encode("utf-8")).hexdigest()[:32]


def upgrade() -> None:
    op.add_column("chat_messages", sa.Column("content_hash", sa.String(32), nullable=True))
    op.add_column("chat_messages", sa.Column("external_id", sa.String(255), nullable=True))
    bind = op.get_bind()
    messages = sa.table(
        "chat_messages",
        sa.column("id", sa.BigInteger()),
        sa.column("content", sa.Text()),
        sa.column("content_hash", sa.String(32)),
    )
    update = (
        messages.update().where(messages.c.id == sa.bindparam("row_id")).values(content_hash=sa.bindparam("row_hash"))
    )
    last = 0
    while True:
        rows = bind.execute(
            sa.select(messages.c.id, messages.c.content)
            .where(messages.c.id > last)
            .order_by(messages.c.id)
            .limit(BATCH)
        ).all()
        if not rows:
            break
        bind.execute(update, [{"row_id": r.id, "row_hash": _content_hash(r.content)} for r in rows])
        last = rows[-1].id
    op.create_index("ix_chat_messages_user_content_hash", "chat_messages", ["user_id", "content_hash"])
    op.create_index("ux_chat_messages_user_external_id", "chat_messages", ["user_id", "external_id"], unique=True)


def downgrade() -> None:
    op.drop_index("ux_chat_messages_user_external_id", table_name="chat_messages")
    op.drop_index("ix_chat_messages_user_content_hash", table_name="chat_messages")
    with op.batch_alter_table("chat_messages") as batch:
        batch.drop_column("external_id")
        batch.drop_column("content_hash")
