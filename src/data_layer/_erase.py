"""A user's rows in every table: erasing them in one transaction, reading them all (an export), and
setting the columns an import keeps as exported (:func:`restore_columns`).

The tables come from the schema itself, so a table added later is covered or refused, never missed:
a table with a ``user_id`` column loses the user's rows (every table of the user's data has one, the
rows of a memory's keywords and search index too); a table keyed by a memory id alone (a foreign key to
``agent_memories.id``) would lose the rows of the user's memories; a table in
:data:`GLOBAL_TABLES` holds no user's data. Any other table makes :func:`erase_user` refuse to run,
so a new table must be given its rule before a user can be erased.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Table, delete, select, update

from . import _validation as v
from ._changed import rows_changed
from ._engine import Database
from ._tables import GLOBAL_TABLES, AgentMemoryTable, Base

_MEMORIES = AgentMemoryTable.__table__


@dataclass(frozen=True, slots=True)
class UserErasure:
    """What erasing a user removed: rows per table (tables without rows of the user are listed with 0)."""

    user_id: str
    rows: dict[str, int]

    @property
    def total(self) -> int:
        """Rows removed in all tables."""
        return sum(self.rows.values())


def memory_keyed(table: Table) -> bool:
    """Whether ``table`` is reached through a memory id (a foreign key to ``agent_memories.id``)."""
    return any(fk.column.table is _MEMORIES for fk in table.foreign_keys)


def _rule(table: Table) -> str:
    if "user_id" in table.c:
        return "user"
    if memory_keyed(table):
        return "memory"
    if table.name in GLOBAL_TABLES:
        return "global"
    raise RuntimeError(
        f"table {table.name!r} has no user_id column and no memory id: give it a rule in data_layer._erase "
        "before erasing users"
    )


#: Tables whose rows triggers delete as their counts reach zero (the memories' search statistics): erased
#: first, so the erasure counts their rows instead of the triggers removing them unseen.
_ERASED_FIRST = ("memory_search_statistics", "memory_term_statistics")


def _erase_order() -> list[Table]:
    """The tables in the order an erasure deletes from them: :data:`_ERASED_FIRST`, then children before
    their parents."""
    tables = list(reversed(Base.metadata.sorted_tables))
    return [t for t in tables if t.name in _ERASED_FIRST] + [t for t in tables if t.name not in _ERASED_FIRST]


async def erase_user(db: Database, user_id: str | int) -> UserErasure:
    """Delete every row of ``user_id`` in every table of the schema, in one transaction."""
    uid = v.user_id(user_id)
    rules = {table: _rule(table) for table in Base.metadata.sorted_tables}
    counts: dict[str, int] = {}
    own_memories = select(_MEMORIES.c.id).where(_MEMORIES.c.user_id == uid).scalar_subquery()
    async with db.write() as session:
        # children first (reverse dependency order), explicit rather than only ON DELETE CASCADE: a SQLite
        # connection may run without foreign keys
        for table in _erase_order():
            rule = rules[table]
            if rule == "user":
                result = await session.execute(delete(table).where(table.c.user_id == uid))
            elif rule == "memory":
                fk = next(fk for fk in table.foreign_keys if fk.column.table is _MEMORIES)
                result = await session.execute(delete(table).where(fk.parent.in_(own_memories)))
            else:
                continue
            counts[table.name] = rows_changed(result)
    return UserErasure(user_id=uid, rows=counts)


async def user_rows(db: Database, user_id: str | int) -> dict[str, list[dict[str, Any]]]:
    """Every row of ``user_id`` per table (the tables of :func:`erase_user`), read in one transaction."""
    uid = v.user_id(user_id)
    tables = [(t, _rule(t)) for t in Base.metadata.sorted_tables]
    own_memories = select(_MEMORIES.c.id).where(_MEMORIES.c.user_id == uid).scalar_subquery()
    found: dict[str, list[dict[str, Any]]] = {}
    async with db.read(bulk=True) as session:
        for table, rule in tables:
            if rule == "global":
                continue
            if rule == "user":
                stmt = select(table).where(table.c.user_id == uid)
            else:
                fk = next(fk for fk in table.foreign_keys if fk.column.table is _MEMORIES)
                stmt = select(table).where(fk.parent.in_(own_memories))
            pk = list(table.primary_key.columns)
            rows = await session.execute(stmt.order_by(*pk))
            found[table.name] = [dict(r._mapping) for r in rows]
    return found


async def restore_columns(
    db: Database, user_id: str | int, table: str, *, key: Sequence[str], rows: Sequence[Mapping[str, Any]]
) -> int:
    """Set columns of the user's rows of ``table`` as given, in one transaction; returns the rows changed.

    Each of ``rows`` finds one stored row of the user by its ``key`` columns and sets its other columns
    (no ``key``: the user's row of a table of one row per user, the settings).
    An import writes through the repositories, which stamp a write with its own time (``updated_at``,
    ``archived_at``) and start counts afresh (``access_count``); this puts back what the export read.
    Only columns of the table are taken, and never ``user_id``: the rows stay the user's.
    """
    uid = v.user_id(user_id)
    if table not in Base.metadata.tables or "user_id" not in Base.metadata.tables[table].c:
        raise v.InvalidInputError(f"{table!r} is no table of a user's rows")
    t = Base.metadata.tables[table]
    unknown = sorted({c for row in rows for c in row} - set(t.c.keys()))
    if unknown or "user_id" in key:
        raise v.InvalidInputError(f"columns {unknown or list(key)} cannot be restored in {table}")
    changed = 0
    async with db.write() as session:
        for row in rows:
            values = {c: val for c, val in row.items() if c not in key and c != "user_id"}
            if not values:
                continue
            found = [t.c.user_id == uid, *(t.c[k] == row[k] for k in key)]
            result = await session.execute(update(t).where(*found).values(**values))
            changed += rows_changed(result)
    return changed
