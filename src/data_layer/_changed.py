"""How many rows a write statement changed."""

from __future__ import annotations

from typing import Any, cast

from sqlalchemy.engine import CursorResult, Result


def rows_changed(result: Result[Any]) -> int:
    """The rows an INSERT, UPDATE or DELETE run through ``AsyncSession.execute`` changed (0 when unknown).

    The session types every result as ``Result``; for a write statement it is the driver's ``CursorResult``,
    the only kind that holds a row count.
    """
    return int(cast(CursorResult[Any], result).rowcount or 0)
