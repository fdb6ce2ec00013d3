"""The few statements that differ between SQLite and PostgreSQL."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from sqlalchemy.dialects import postgresql, sqlite

from ._engine import Backend


def module_for(backend: Backend) -> ModuleType:
    """The SQLAlchemy dialect module whose ``insert`` supports ``ON CONFLICT``."""
    return sqlite if backend == "sqlite" else postgresql


def insert_ignoring(backend: Backend, table: Any, *, conflict: list[str]) -> Any:
    """``INSERT ... ON CONFLICT (conflict) DO NOTHING`` for either backend."""
    return module_for(backend).insert(table).on_conflict_do_nothing(index_elements=conflict)


def insert_updating(backend: Backend, table: Any, *, conflict: list[str], update: list[str]) -> Any:
    """``INSERT ... ON CONFLICT (conflict) DO UPDATE SET col = excluded.col`` for either backend."""
    stmt = module_for(backend).insert(table)
    return stmt.on_conflict_do_update(
        index_elements=conflict, set_={col: getattr(stmt.excluded, col) for col in update}
    )
