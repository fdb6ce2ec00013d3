"""The schema keeps ``agent_memories.memory_type`` to the known memory types (a CHECK constraint).

Revision ID: 0011_memory_type_check
Revises: 0009_message_search_engine
Create Date: 2026-12-06

The types are the memory-type table's (``data_layer._memory_types``) as of this revision, written out
here: a migration states the schema it makes, whatever the table holds later. A type added to the
table needs a revision that replaces the constraint with the longer list (``_replace_check`` of such a
revision reads like :func:`upgrade` below); the migration test fails until it exists.

A database holding a memory of a type outside the list (written past the library's validation, by
hand or by another program) is not changed: the upgrade stops, naming those types and how many rows
each has, and nothing of it is applied. Change or delete those rows, then upgrade again.

On SQLite the constraint is added by rebuilding the table (``batch_alter_table``), as 0008 does.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from data_layer._errors import StorageError
from data_layer._memory_types import memory_type_check

revision: str = "0011_memory_type_check"
down_revision: str | None = "0009_message_search_engine"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: The memory types this revision allows, in the table's order.
TYPES: tuple[str, ...] = (
    "user_preference",
    "command_output",
    "general",
    "profile",
    "event",
    "tool_result",
    "conversation",
)
#: The constraint's name (the models' naming convention ``ck_<table>_<name>`` for ``memory_type``).
CHECK = "ck_agent_memories_memory_type"


def unknown_types(connection: sa.Connection, known: Sequence[str]) -> dict[str, int]:
    """The memory types outside ``known`` that ``agent_memories`` holds, with their row counts."""
    memories = sa.table("agent_memories", sa.column("memory_type", sa.String(50)))
    query = (
        sa.select(memories.c.memory_type, sa.func.count())
        .where(memories.c.memory_type.not_in(list(known)))
        .group_by(memories.c.memory_type)
        .order_by(memories.c.memory_type)
    )
    return {str(kind): int(count) for kind, count in connection.execute(query)}


def refuse_unknown(connection: sa.Connection, known: Sequence[str]) -> None:
    """Stop the upgrade, in one line, when rows of a type outside ``known`` exist."""
    found = unknown_types(connection, known)
    if found:
        listed = ", ".join(f"{kind!r} ({count} row{'s' if count != 1 else ''})" for kind, count in found.items())
        raise StorageError(
            f"agent_memories holds memory types this version does not know: {listed}",
            reason="schema",
            hint=f"change those rows to one of {', '.join(known)} or delete them, then upgrade again",
        )


def upgrade() -> None:
    refuse_unknown(op.get_bind(), TYPES)
    with op.batch_alter_table("agent_memories") as batch:
        batch.create_check_constraint(op.f(CHECK), memory_type_check(TYPES))


def downgrade() -> None:
    with op.batch_alter_table("agent_memories") as batch:
        batch.drop_constraint(op.f(CHECK), type_="check")
