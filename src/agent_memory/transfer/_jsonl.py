"""The export file: a header line, then one ``{"kind": ...}`` line per memory, message, AI friend,
settings, archived tool result and archiving mark of the user.

Import writes through the repositories, so the search rows, the analysis and the change counters are
written as for any write. Message ids are the database's own: an import maps the file's ids to the new
ones, in the memories' ``source_message_ids`` as well. Derived rows (search index, change counters) are
not in the file: the import's writes make them again. The columns the repositories stamp with the
time of the write or start afresh (a memory's ``updated_at``, ``last_accessed_at`` and
``access_count``, an AI friend's times, a message's ``archived_at``, the archiving marks, the settings'
``updated_at``) are then set as exported, and an archived tool result keeps its ``uuid``, which the
chat's placeholders name: a round trip gives the rows the export read.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any, Literal, TextIO

from data_layer import (
    AgentFusionDataLayer,
    DuplicateError,
    KeywordInput,
    NewMemory,
    NewMessage,
    UserSettings,
    utcnow,
)

from ..forgetting import FORGETTING_FIELD

FORMAT_VERSION = 1
#: What to do with a memory key, AI friend or settings the target user already has.
OnConflict = Literal["error", "skip", "replace"]

#: The line kind of each table's rows; tables rebuilt by the import's writes are left out (None).
_KINDS: dict[str, str | None] = {
    "ai_friends": "friend",
    "system_settings": "settings",
    "chat_messages": "message",
    "agent_memories": "memory",
    "agent_memory_keywords": None,  # written on the memory's line
    "tool_result_archive": "tool_result",
    "session_archive_state": "archive_state",
    "agent_memory_search_index": None,  # the analysis, computed again on import
    "memory_index_state": None,  # change counters, bumped by the import's writes
    "chat_search_statistics": None,  # the messages' search statistics, kept by the store as they are written
    "memory_search_statistics": None,  # the memories' search statistics, likewise
    "memory_term_statistics": None,
}
_DROP = {"user_id", "id", "memory_id", "revision", "needs_keyword_extraction", "content_hash"}


def _json(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    raise TypeError(f"cannot write {type(value).__name__} to the export")


#: The most an ``access_count`` can be (the column is a 32-bit integer).
MAX_ACCESS_COUNT = 2**31 - 1


def _time(value: Any) -> datetime | None:
    """A time of the file (a time without a zone is UTC, as the export writes every time)."""
    if not value:
        return None
    at = datetime.fromisoformat(value)
    return at if at.tzinfo else at.replace(tzinfo=UTC)


def _field_problem(name: str, value: Any) -> str | None:
    """What is wrong with a column value the import sets as the file has it, or ``None``: every time is
    an ISO-8601 text (``updated_at`` always there), ``access_count`` a whole number in range."""
    if name.endswith("_at"):
        if value is None:
            return "must be an ISO-8601 time, e.g. 2026-03-01T09:00:00+00:00" if name == "updated_at" else None
        if not isinstance(value, str):
            return f"must be an ISO-8601 time as text, e.g. 2026-03-01T09:00:00+00:00, not {type(value).__name__}"
        try:
            datetime.fromisoformat(value)
        except ValueError:
            return f"is no ISO-8601 time ({value[:40]!r}); write e.g. 2026-03-01T09:00:00+00:00"
    if name == "access_count" and (
        not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_ACCESS_COUNT
    ):
        return f"must be a whole number 0-{MAX_ACCESS_COUNT}, not {str(value)[:40]!r}"
    return None


async def export_user(layer: AgentFusionDataLayer, *, user_id: str, out: TextIO) -> dict[str, int]:
    """Write every row of ``user_id`` to ``out`` (see the module docs); returns lines per kind."""
    from agent_memory import __version__

    rows = await layer.user_rows(user_id)
    unknown = set(rows) - set(_KINDS)
    if unknown:
        raise RuntimeError(f"tables {sorted(unknown)} are not in the export format: give them a kind in {__name__}")
    keywords: dict[uuid.UUID, list[dict[str, Any]]] = {}
    for kw in rows["agent_memory_keywords"]:
        keywords.setdefault(kw["memory_id"], []).append(
            {"keyword": kw["keyword"], "weight": kw["weight"], "source": kw["extraction_source"]}
        )
    header = {
        "kind": "header",
        "format": FORMAT_VERSION,
        "library_version": __version__,
        "user_id": user_id,
        "exported_at": utcnow(),
    }
    out.write(json.dumps(header, default=_json, ensure_ascii=False) + "\n")
    counts: dict[str, int] = {}
    for table, kind in _KINDS.items():
        if kind is None:
            continue
        for row in rows[table]:
            line: dict[str, Any] = {"kind": kind}
            line |= {k: val for k, val in row.items() if k not in _DROP or (kind == "message" and k == "id")}
            if kind == "memory":
                line["metadata"] = line.pop("content_metadata")
                line["keywords"] = keywords.get(row["id"], [])
            out.write(json.dumps(line, default=_json, ensure_ascii=False) + "\n")
            counts[kind] = counts.get(kind, 0) + 1
    return counts


def _read(lines: Iterable[str]) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    parsed: dict[str, list[dict[str, Any]]] = {}
    header: dict[str, Any] | None = None
    for lineno, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ValueError(f"line {lineno}: not valid JSON ({exc.msg}); is this an agent-memory export?") from None
        kind = data.get("kind") if isinstance(data, dict) else None
        if header is None:
            if kind != "header" or data.get("format") != FORMAT_VERSION:
                raise ValueError(f"line {lineno}: not an agent-memory export of format {FORMAT_VERSION} (no header)")
            header = data
            continue
        if kind is None or kind not in set(_KINDS.values()):
            raise ValueError(f"line {lineno}: unknown kind {kind!r}")
        # checked before anything is written: a bad value found midway would leave the import half done
        for name, value in data.items():
            problem = _field_problem(name, value)
            if problem is not None:
                raise ValueError(f"line {lineno}: {kind} {name} {problem}; nothing was imported")
        parsed.setdefault(kind, []).append(data)
    if header is None:
        raise ValueError("the file is empty: export a user with `agent-memory export --user U`")
    return header, parsed


def _identity(row: dict[str, Any]) -> tuple[Any, ...]:
    return (
        row["friend_id"],
        row["thread_id"],
        row["role"],
        row["content"],
        row["external_id"],
        _time(row["created_at"]) if isinstance(row["created_at"], str) else row["created_at"],
    )


async def import_user(
    layer: AgentFusionDataLayer, *, lines: Iterable[str], user_id: str | None = None, on_conflict: OnConflict = "error"
) -> dict[str, int]:
    """Read an export into ``layer`` as ``user_id`` (default: the exported user); returns rows per kind.

    Messages already stored (same external id, or same chat, role, time and content) are kept, not
    repeated. ``on_conflict`` decides for a memory key, AI friend or settings the user already has:
    ``error`` stops before anything is written, ``skip`` keeps the stored one, ``replace`` overwrites it.
    """
    if on_conflict not in ("error", "skip", "replace"):
        raise ValueError(f"on_conflict must be error, skip or replace, not {on_conflict!r}")
    header, data = _read(lines)
    uid = user_id or str(header["user_id"])
    counts: dict[str, int] = {}
    friends = data.get("friend", [])
    existing = {f.friend_id for f in await layer.friends.list(user_id=uid)}
    stored_settings = bool((await layer.user_rows(uid))["system_settings"])
    keys = {m["memory_key"] for m in data.get("memory", [])}
    if on_conflict == "error":
        taken = sorted({f["friend_id"] for f in friends} & existing)
        if taken:
            raise DuplicateError(
                f"user {uid!r} already has AI friend {taken[0]!r}: import with --on-conflict skip|replace"
            )
        if data.get("settings") and stored_settings:
            raise DuplicateError(f"user {uid!r} already has settings: import with --on-conflict skip|replace")
        have = [
            k
            for k in keys
            if await layer.memory.retrieve_memory(user_id=uid, memory_key=k, touch=False, include_inactive=True)
        ]
        if have:
            raise DuplicateError(
                f"user {uid!r} already has memory {min(have)!r}: import with --on-conflict skip|replace"
            )
    kept_friends: list[dict[str, Any]] = []
    for f in friends:
        if f["friend_id"] in existing:
            if on_conflict == "skip":
                continue
            await layer.friends.update(
                user_id=uid, friend_id=f["friend_id"], name=f["name"], system_prompt=f["system_prompt"]
            )
        else:
            await layer.friends.create(
                user_id=uid, friend_id=f["friend_id"], name=f["name"], system_prompt=f["system_prompt"]
            )
        kept_friends.append(f)
        counts["friend"] = counts.get("friend", 0) + 1
    await _restore(layer, uid, "ai_friends", ("friend_id",), kept_friends, ("created_at", "updated_at"))
    for s in data.get("settings", []):
        if not (stored_settings and on_conflict == "skip"):
            await layer.settings.put(user_id=uid, settings=UserSettings.model_validate(s["settings"]))
            await _restore(layer, uid, "system_settings", (), [s], ("updated_at",))
            counts["settings"] = 1
    messages = sorted(data.get("message", []), key=lambda m: m["id"])
    stored = await layer.messages.append_for_users(
        {
            uid: [
                NewMessage(
                    role=m["role"],
                    content=m["content"],
                    friend_id=m["friend_id"],
                    thread_id=m["thread_id"],
                    created_at=_time(m["created_at"]),
                    external_id=m["external_id"],
                )
                for m in messages
            ]
        },
        skip_existing=True,
    )
    counts["message"] = len(stored.get(uid, []))
    new_ids = _map_ids(messages, (await layer.user_rows(uid))["chat_messages"])
    by_chat: dict[str | None, list[int]] = {}
    for m in messages:
        if m.get("archived_at"):
            by_chat.setdefault(m["friend_id"], []).append(new_ids[m["id"]])
    for friend, ids in by_chat.items():
        for start in range(0, len(ids), 5000):
            await layer.archive_state.mark_archived(
                user_id=uid, friend_id=friend, message_ids=ids[start : start + 5000]
            )
    archived = [
        {"id": new_ids[m["id"]], "archived_at": m["archived_at"]}
        for m in messages
        if m.get("archived_at") and m["id"] in new_ids
    ]
    await _restore(layer, uid, "chat_messages", ("id",), archived, ("archived_at",))
    marks = [
        {**a, "last_message_id": new_ids[a["last_message_id"]]}
        for a in data.get("archive_state", [])
        if a["last_message_id"] in new_ids
    ]
    await _restore(
        layer,
        uid,
        "session_archive_state",
        ("friend_key",),
        marks,
        ("last_message_id", "last_message_at", "updated_at"),
    )
    memories = [_memory(m, new_ids) for m in data.get("memory", [])]
    written = await layer.memory.add_many(
        user_id=uid, memories=memories, on_conflict="skip" if on_conflict == "error" else on_conflict
    )
    counts["memory"] = len(written)
    done = {r.memory_key for r in written}
    for m in data.get("memory", []):
        if not m["is_active"] and m["memory_key"] in done:
            await layer.memory.delete(user_id=uid, memory_key=m["memory_key"])
    used = [m for m in data.get("memory", []) if m["memory_key"] in done]
    await _restore(
        layer, uid, "agent_memories", ("memory_key",), used, ("updated_at", "last_accessed_at", "access_count")
    )
    for t in data.get("tool_result", []):
        conversation = t["conversation_id"]
        if conversation and conversation.startswith(f"{header['user_id']}/"):  # the chat's id names its user
            conversation = f"{uid}/{conversation.split('/', 1)[1]}"
        if t.get("uuid") and await layer.archive.get(user_id=uid, archive_uuid=t["uuid"]) is not None:
            continue  # imported before: the same id is the same result
        # ids are the user's (the key is user_id, uuid): a copy for another user keeps them as well
        await _save_result(layer, uid, t, conversation, archive_uuid=t.get("uuid"))
        counts["tool_result"] = counts.get("tool_result", 0) + 1
    return counts


async def _save_result(
    layer: AgentFusionDataLayer, uid: str, t: dict[str, Any], conversation: str | None, *, archive_uuid: str | None
) -> None:
    await layer.archive.save(
        user_id=uid,
        tool_name=t["tool_name"],
        result_full=t["result_full"],
        conversation_id=conversation,
        thread_id=t["thread_id"],
        tool_input=t["tool_input"],
        query_summary=t["query_summary"],
        result_summary=t["result_summary"],
        sources=t["sources"],
        created_at=_time(t["created_at"]),
        archive_uuid=archive_uuid,
    )


async def _restore(
    layer: AgentFusionDataLayer,
    uid: str,
    table: str,
    key: tuple[str, ...],
    rows: list[dict[str, Any]],
    columns: tuple[str, ...],
) -> None:
    """Set ``columns`` of the imported rows of ``table`` as the file has them (times read back as times)."""
    values = [{c: _time(r[c]) if c.endswith("_at") else r[c] for c in (*key, *columns) if c in r} for r in rows]
    if values:
        await layer.restore_columns(uid, table, key=key, rows=values)


def _map_ids(exported: list[dict[str, Any]], stored: list[dict[str, Any]]) -> dict[int, int]:
    """The file's message ids -> the database's: equal messages matched in id order."""
    free: dict[tuple[Any, ...], list[int]] = {}
    for row in sorted(stored, key=lambda r: r["id"]):
        free.setdefault(_identity(row), []).append(row["id"])
    mapping: dict[int, int] = {}
    for m in exported:
        ids = free.get(_identity(m)) or []
        if ids:
            mapping[m["id"]] = ids.pop(0)
    return mapping


def _memory(m: dict[str, Any], new_ids: dict[int, int]) -> NewMemory:
    metadata = dict(m["metadata"] or {})
    if isinstance(metadata.get("source_message_ids"), list):
        metadata["source_message_ids"] = [new_ids[i] for i in metadata["source_message_ids"] if i in new_ids]
        if not metadata["source_message_ids"]:
            del metadata["source_message_ids"]
    forgetting = metadata.get(FORGETTING_FIELD)
    if isinstance(forgetting, dict):  # what a user asked to forget names messages too
        request = forgetting.get("request_message_id")
        metadata[FORGETTING_FIELD] = {
            **forgetting,
            "message_ids": [new_ids[i] for i in forgetting.get("message_ids") or [] if i in new_ids],
            "request_message_id": new_ids.get(request) if isinstance(request, int) else None,
        }
    return NewMemory(
        memory_key=m["memory_key"],
        content=m["content"],
        summary=m["summary"],
        memory_type=m["memory_type"],
        friend_id=m["friend_id"],
        metadata=metadata,
        created_at=_time(m["created_at"]),
        keywords=[
            KeywordInput(k["keyword"], k["weight"] if k["weight"] is not None else 1.0, k["source"] or "llm")
            for k in m["keywords"]
        ],
        shared=m["friend_id"] is None,
    )
