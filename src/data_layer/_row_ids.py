"""Ids of new rows of an ``INTEGER PRIMARY KEY`` table on SQLite, numbered by the writer itself.

SQLite gives a new row the table's largest id plus one. It returns the ids of a many-row insert in no
promised order, so SQLAlchemy inserts such rows one statement at a time when it must tell which id each
got (about 6,000 rows a second, a round trip to the connection's thread each). A writer that holds the
file's write lock (``BEGIN IMMEDIATE``) can number its rows the way SQLite would, before inserting them
in one ``executemany``: no other writer can take an id between its look-up and its insert.

>>> numbering = await SqliteIds.start(session, ChatMessageTable.__table__)  # doctest: +SKIP
>>> ids = await numbering.insert(session, rows)  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Table, func, select
from sqlalchemy.ext.asyncio import AsyncSession


@dataclass(slots=True)
class SqliteIds:
    """The next free id of ``table`` in a write transaction on SQLite (see the module docs)."""

    table: Table
    next_id: int

    @classmethod
    async def start(cls, session: AsyncSession, table: Table) -> SqliteIds:
        """Read the table's largest id in ``session``, which must hold the write lock already."""
        largest = await session.scalar(select(func.max(table.c.id)))
        return cls(table, int(largest or 0) + 1)

    async def insert(self, session: AsyncSession, rows: Sequence[dict[str, Any]]) -> list[int]:
        """Insert ``rows`` with the next ids, in order, in one statement; returns their ids."""
        ids = list(range(self.next_id, self.next_id + len(rows)))
        if rows:
            await session.execute(self.table.insert(), [{**row, "id": i} for row, i in zip(rows, ids, strict=True)])
            self.next_id += len(rows)
        return ids
