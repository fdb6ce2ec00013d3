"""Keyword tables, synonyms and the keyword-extraction flag.

Revision ID: 0002_memory_keywords
Revises: 0001_base_schema
Create Date: 2026-11-22
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002_memory_keywords"
down_revision: str | None = "0001_base_schema"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "agent_memory_keywords",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("memory_id", sa.Uuid(), nullable=False),
        sa.Column("keyword", sa.String(100), nullable=False),
        sa.Column("weight", sa.Float(), server_default=sa.text("1.0"), nullable=True),
        sa.Column("extraction_source", sa.String(20), server_default="llm", nullable=True),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.func.current_timestamp(),
            nullable=True,
        ),
        sa.ForeignKeyConstraint(
            ["memory_id"],
            ["agent_memories.id"],
            name="fk_agent_memory_keywords_memory_id_agent_memories",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_agent_memory_keywords"),
        sa.UniqueConstraint("memory_id", "keyword", name="unique_memory_keyword"),
    )
    op.create_index("idx_memory_keywords_memory", "agent_memory_keywords", ["memory_id"])
    op.create_index("idx_memory_keywords_keyword", "agent_memory_keywords", ["keyword"])

    op.create_table(
        "keyword_synonyms",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("keyword", sa.String(100), nullable=False),
        sa.Column("synonym", sa.String(100), nullable=False),
        sa.Column("similarity_score", sa.Float(), server_default=sa.text("0.8"), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_keyword_synonyms"),
        sa.UniqueConstraint("keyword", "synonym", name="unique_keyword_synonym"),
    )
    op.create_index("idx_keyword_synonyms_keyword", "keyword_synonyms", ["keyword"])

    # Existing memories have no keywords yet: mark the active ones for backfill.
    op.add_column(
        "agent_memories",
        sa.Column("needs_keyword_extraction", sa.Boolean(), server_default=sa.false(), nullable=False),
    )
    memories = sa.table(
        "agent_memories",
        sa.column("is_active", sa.Boolean),
        sa.column("needs_keyword_extraction", sa.Boolean),
    )
    op.execute(memories.update().where(memories.c.is_active.is_(True)).values(needs_keyword_extraction=True))


def downgrade() -> None:
    op.drop_index("idx_keyword_synonyms_keyword", table_name="keyword_synonyms")
    op.drop_table("keyword_synonyms")
    op.drop_index("idx_memory_keywords_keyword", table_name="agent_memory_keywords")
    op.drop_index("idx_memory_keywords_memory", table_name="agent_memory_keywords")
    op.drop_table("agent_memory_keywords")
    with op.batch_alter_table("agent_memories") as batch:
        batch.drop_column("needs_keyword_extraction")
