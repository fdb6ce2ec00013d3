"""The tool-result archive: full tool output kept out of the context window."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import delete, select

from . import _validation as v
from ._changed import rows_changed
from ._engine import Database
from ._errors import InvalidInputError
from ._records import ArchiveRecord
from ._tables import ToolResultArchiveTable
from ._types import utcnow

#: Archived results hold at most this many characters (a 50 MB tool result is refused, not truncated).
MAX_ARCHIVED_CHARS = 20_000_000
#: Sources (URLs, file names) kept with an archived result, and the longest result summary.
MAX_SOURCES = 100
MAX_SUMMARY_CHARS = 20_000


def _record(row: ToolResultArchiveTable) -> ArchiveRecord:
    return ArchiveRecord(
        uuid=row.uuid,
        user_id=row.user_id,
        conversation_id=row.conversation_id,
        thread_id=row.thread_id,
        tool_name=row.tool_name,
        tool_input=row.tool_input,
        query_summary=row.query_summary,
        result_summary=row.result_summary,
        result_full=row.result_full,
        result_length=row.result_length,
        sources=row.sources,
        created_at=row.created_at,
    )


def archive_id(value: object) -> str:
    """A canonical UUID string (what ``load_tool_history(uuid=...)`` receives)."""
    if not isinstance(value, str):
        raise InvalidInputError(f"archive uuid must be a str, got {type(value).__name__}")
    try:
        return str(uuid.UUID(value.strip()))
    except ValueError:
        raise InvalidInputError(f"{value[:60]!r} is not an archive uuid; copy it from the placeholder") from None


def _sources(values: object) -> list[str] | None:
    if values is None:
        return None
    if isinstance(values, str | bytes) or not isinstance(values, Sequence):
        raise InvalidInputError("sources must be a list of str")
    if len(values) > MAX_SOURCES or not all(isinstance(s, str) and len(s) <= 2000 for s in values):
        raise InvalidInputError(f"sources must be a list of at most {MAX_SOURCES} str of at most 2000 characters")
    return [v.stored_text(s, name="a source") for s in values]


class ArchiveRepository:
    """Save and load archived tool results, always within one user's scope.

    >>> rec = await layer.archive.save(user_id="u1", tool_name="search_docs", result_full=big_text)  # doctest: +SKIP
    >>> (await layer.archive.get(user_id="u1", archive_uuid=rec.uuid)).result_length  # doctest: +SKIP
    """

    def __init__(self, db: Database) -> None:
        self._db = db

    async def save(
        self,
        *,
        user_id: str | int,
        tool_name: str,
        result_full: str,
        conversation_id: str | int | None = None,
        thread_id: str | int | None = None,
        tool_input: dict[str, Any] | None = None,
        query_summary: str = "",
        result_summary: str = "",
        sources: Sequence[str] | None = None,
        created_at: datetime | None = None,
        archive_uuid: str | None = None,
    ) -> ArchiveRecord:
        """Archive a tool result and return its record (with a new ``uuid``, or ``archive_uuid``: an
        import keeps the id the chat's placeholders name)."""
        uid = v.user_id(user_id)
        key = str(uuid.uuid4()) if archive_uuid is None else archive_id(archive_uuid)
        name = v.stored_text(tool_name, name="tool_name").strip()
        if not name or len(name) > 100:
            raise InvalidInputError("tool_name must hold 1 to 100 characters")
        full = v.text_field(result_full, name="result_full")
        if len(full) > MAX_ARCHIVED_CHARS:
            raise InvalidInputError(f"result_full is {len(full)} characters; at most {MAX_ARCHIVED_CHARS}")
        v.stored_text(full, name="result_full")
        source_list = _sources(sources)
        row: dict[str, Any] = {
            "uuid": key,
            "user_id": uid,
            "conversation_id": v.scope_id(conversation_id, name="conversation_id", optional=True),
            "thread_id": v.scope_id(thread_id, name="thread_id", optional=True),
            "tool_name": name,
            "tool_input": v.json_object(tool_input, name="tool_input") if tool_input is not None else None,
            "query_summary": v.stored_text(query_summary, name="query_summary")[:500],
            "result_summary": v.stored_text(result_summary, name="result_summary")[:MAX_SUMMARY_CHARS],
            "result_full": full,
            "result_length": len(full),
            "sources": source_list,
            "created_at": v.aware_datetime(created_at, name="created_at") or utcnow(),
        }
        async with self._db.write() as session:
            await session.execute(ToolResultArchiveTable.__table__.insert(), [row])
        return ArchiveRecord(**row)

    async def get(self, *, user_id: str | int, archive_uuid: str) -> ArchiveRecord | None:
        """The user's archived result, or ``None`` (also for another user's uuid)."""
        uid = v.user_id(user_id)
        key = archive_id(archive_uuid)
        async with self._db.read() as session:
            row = await session.scalar(
                select(ToolResultArchiveTable).where(
                    ToolResultArchiveTable.user_id == uid, ToolResultArchiveTable.uuid == key
                )
            )
        return _record(row) if row is not None else None

    async def list_results(
        self, *, user_id: str | int, conversation_id: str | int | None = None, limit: int = 50
    ) -> list[ArchiveRecord]:
        """The user's archived results, newest first (one conversation when ``conversation_id`` is given)."""
        uid = v.user_id(user_id)
        size = v.bounded_int(limit, name="limit", low=1, high=1000)
        t = ToolResultArchiveTable
        stmt = select(t).where(t.user_id == uid)
        cid = v.scope_id(conversation_id, name="conversation_id", optional=True)
        if cid is not None:
            stmt = stmt.where(t.conversation_id == cid)
        async with self._db.read() as session:
            rows = await session.scalars(stmt.order_by(t.created_at.desc(), t.uuid).limit(size))
            return [_record(r) for r in rows]

    async def delete(self, *, user_id: str | int, archive_uuid: str) -> bool:
        """Remove one archived result of the user; ``False`` if there was none."""
        uid = v.user_id(user_id)
        key = archive_id(archive_uuid)
        async with self._db.write() as session:
            result = await session.execute(
                delete(ToolResultArchiveTable).where(
                    ToolResultArchiveTable.user_id == uid, ToolResultArchiveTable.uuid == key
                )
            )
        return bool(rows_changed(result))

    async def purge_older_than(self, *, user_id: str | int, before: datetime) -> int:
        """Remove the user's archived results created before ``before``; returns how many."""
        uid = v.user_id(user_id)
        cutoff = v.aware_datetime(before, name="before", optional=False)
        async with self._db.write() as session:
            result = await session.execute(
                delete(ToolResultArchiveTable).where(
                    ToolResultArchiveTable.user_id == uid, ToolResultArchiveTable.created_at < cutoff
                )
            )
        return rows_changed(result)
