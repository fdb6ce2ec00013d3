"""Search index support: per-user revisions, stored analysis (tokens, embeddings).

Revision ID: 0003_search_index
Revises: 0002_memory_keywords
Create Date: 2026-11-22
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003_search_index"
down_revision: str | None = "0002_memory_keywords"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("agent_memories", sa.Column("revision", sa.BigInteger(), server_default=sa.text("0"), nullable=False))
    op.create_index("ix_agent_memories_user_revision", "agent_memories", ["user_id", "revision"])
    op.create_table(
        "memory_index_state",
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("revision", sa.BigInteger(), nullable=False),
        sa.Column("hard_delete_revision", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("user_id", name="pk_memory_index_state"),
    )
    op.create_table(
        "agent_memory_search_index",
        sa.Column("memory_id", sa.Uuid(), nullable=False),
        sa.Column("analyzer", sa.String(64), nullable=False),
        sa.Column("tokens", sa.Text(), nullable=False),
        sa.Column("embedder", sa.String(128), nullable=True),
        sa.Column("embedding", sa.LargeBinary(), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["memory_id"],
            ["agent_memories.id"],
            name="fk_agent_memory_search_index_memory_id_agent_memories",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("memory_id", name="pk_agent_memory_search_index"),
    )


def downgrade() -> None:
    op.drop_table("agent_memory_search_index")
    op.drop_table("memory_index_state")
    op.drop_index("ix_agent_memories_user_revision", table_name="agent_memories")
    with op.batch_alter_table("agent_memories") as batch:
        batch.drop_column("revision")
