"""Per-user change counters (``memory_index_state``), bumped inside every write transaction."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from ._dialect import module_for
from ._engine import Backend
from ._tables import AgentMemoryTable, MemoryIndexStateTable
from ._types import utcnow

#: ``memory_index_state`` row that counts changes to the shared synonym vocabulary (never a user id).
VOCABULARY = ""


async def bump(session: AsyncSession, backend: Backend, user_id: str, *, hard_delete: bool = False) -> int:
    """Increment the user's revision and return the new value.

    The row stays locked until the transaction ends, so revisions follow commit order per user. The
    rule of every write of a user's memories: bump before changing any of the user's rows (reads may
    come first). On PostgreSQL the row is then the user's write lock, taken first by all: two writers
    that took it and a memory row in opposite orders dead-locked (a keyword update against an edit), and
    a look-up after it sees what an earlier writer (a delete) committed.
    """
    table = MemoryIndexStateTable.__table__
    stmt = (
        module_for(backend)
        .insert(table)
        .values(user_id=user_id, revision=1, hard_delete_revision=1 if hard_delete else 0, updated_at=utcnow())
    )
    changes = {"revision": table.c.revision + 1, "updated_at": stmt.excluded.updated_at}
    if hard_delete:
        changes["hard_delete_revision"] = table.c.revision + 1
    stmt = stmt.on_conflict_do_update(index_elements=["user_id"], set_=changes).returning(table.c.revision)
    return int((await session.execute(stmt)).scalar_one())


async def stamp(session: AsyncSession, user_id: str, memory_ids: Sequence[uuid.UUID], revision: int) -> None:
    """Record ``revision`` on the given memory rows of ``user_id``."""
    ids = list(memory_ids)
    m = AgentMemoryTable
    for start in range(0, len(ids), 500):
        await session.execute(
            update(m).where(m.user_id == user_id, m.id.in_(ids[start : start + 500])).values(revision=revision)
        )
