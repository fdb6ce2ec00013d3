"""The few statements that differ between SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

from sqlalchemy.dialects import postgresql, sqlite

from ._engine import Backend


def insert_ignoring(backend: Backend, table: Any, *, conflict: list[str]) -> Any:
    """``INSERT ... ON CONFLICT (conflict) DO NOTHING`` for either backend."""
    module = sqlite if backend == "sqlite" else postgresql
    return module.insert(table).on_conflict_do_nothing(index_elements=conflict)


def insert_updating(backend: Backend, table: Any, *, conflict: list[str], update: list[str]) -> Any:
    """``INSERT ... ON CONFLICT (conflict) DO UPDATE SET col = excluded.col`` for either backend."""
    module = sqlite if backend == "sqlite" else postgresql
    stmt = module.insert(table)
    return stmt.on_conflict_do_update(
        index_elements=conflict, set_={col: getattr(stmt.excluded, col) for col in update}
    )
