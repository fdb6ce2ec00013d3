"""Session archiving progress: the last archived message of each (user, AI friend) chat.

Revision ID: 0005_session_archive_state
Revises: 0004_message_identity
Create Date: 2026-11-23
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005_session_archive_state"
down_revision: str | None = "0004_message_identity"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "session_archive_state",
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("friend_key", sa.String(128), nullable=False),
        sa.Column("last_message_id", sa.BigInteger(), nullable=False),
        sa.Column("last_message_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("user_id", "friend_key", name=op.f("pk_session_archive_state")),
    )


def downgrade() -> None:
    op.drop_table("session_archive_state")
