"""AI friends: each user's friends of the web chat (name and system prompt).

Revision ID: 0006_ai_friends
Revises: 0005_session_archive_state
Create Date: 2026-11-23
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006_ai_friends"
down_revision: str | None = "0005_session_archive_state"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "ai_friends",
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("friend_id", sa.String(128), nullable=False),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("system_prompt", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("user_id", "friend_id", name=op.f("pk_ai_friends")),
    )
    op.create_index("ix_ai_friends_user_created", "ai_friends", ["user_id", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_ai_friends_user_created", table_name="ai_friends")
    op.drop_table("ai_friends")
