"""Base schema: memories, chat messages, tool-result archive, per-user settings.

Revision ID: 0001_base_schema
Revises:
Create Date: 2026-11-22
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0001_base_schema"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
BIGINT_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _ts(name: str, *, nullable: bool = False) -> sa.Column:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "agent_memories",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("memory_key", sa.String(255), nullable=False),
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("friend_id", sa.String(128), nullable=True),
        sa.Column("memory_type", sa.String(50), nullable=False),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("content_metadata", JSON, nullable=False),
        _ts("created_at"),
        _ts("updated_at"),
        _ts("last_accessed_at", nullable=True),
        sa.Column("access_count", sa.Integer(), nullable=False),
        sa.Column("is_active", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_agent_memories"),
        sa.UniqueConstraint("user_id", "memory_key", name="uq_agent_memories_user_id_memory_key"),
    )
    op.create_index("ix_agent_memories_user_active_created", "agent_memories", ["user_id", "is_active", "created_at"])
    op.create_index("ix_agent_memories_user_friend", "agent_memories", ["user_id", "friend_id"])

    op.create_table(
        "chat_messages",
        sa.Column("id", BIGINT_ID, autoincrement=True, nullable=False),
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("friend_id", sa.String(128), nullable=True),
        sa.Column("thread_id", sa.String(128), nullable=True),
        sa.Column("role", sa.String(20), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        _ts("created_at"),
        sa.PrimaryKeyConstraint("id", name="pk_chat_messages"),
    )
    op.create_index("ix_chat_messages_user_created", "chat_messages", ["user_id", "created_at", "id"])
    op.create_index(
        "ix_chat_messages_user_friend_thread",
        "chat_messages",
        ["user_id", "friend_id", "thread_id", "created_at"],
    )

    op.create_table(
        "tool_result_archive",
        sa.Column("uuid", sa.String(36), nullable=False),
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("conversation_id", sa.String(128), nullable=True),
        sa.Column("thread_id", sa.String(128), nullable=True),
        sa.Column("tool_name", sa.String(100), nullable=False),
        sa.Column("tool_input", JSON, nullable=True),
        sa.Column("query_summary", sa.String(500), nullable=False),
        sa.Column("result_summary", sa.Text(), nullable=False),
        sa.Column("result_full", sa.Text(), nullable=False),
        sa.Column("result_length", sa.Integer(), nullable=False),
        sa.Column("sources", JSON, nullable=True),
        _ts("created_at"),
        sa.PrimaryKeyConstraint("uuid", name="pk_tool_result_archive"),
    )
    op.create_index("ix_tool_result_archive_conversation_id", "tool_result_archive", ["conversation_id"])
    op.create_index("ix_tool_result_archive_thread_id", "tool_result_archive", ["thread_id"])
    op.create_index("ix_tool_result_archive_user_created", "tool_result_archive", ["user_id", "created_at"])

    op.create_table(
        "system_settings",
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("settings", JSON, nullable=False),
        _ts("updated_at"),
        sa.PrimaryKeyConstraint("user_id", name="pk_system_settings"),
    )


def downgrade() -> None:
    op.drop_table("system_settings")
    op.drop_index("ix_tool_result_archive_user_created", table_name="tool_result_archive")
    op.drop_index("ix_tool_result_archive_thread_id", table_name="tool_result_archive")
    op.drop_index("ix_tool_result_archive_conversation_id", table_name="tool_result_archive")
    op.drop_table("tool_result_archive")
    op.drop_index("ix_chat_messages_user_friend_thread", table_name="chat_messages")
    op.drop_index("ix_chat_messages_user_created", table_name="chat_messages")
    op.drop_table("chat_messages")
    op.drop_index("ix_agent_memories_user_friend", table_name="agent_memories")
    op.drop_index("ix_agent_memories_user_active_created", table_name="agent_memories")
    op.drop_table("agent_memories")
