"""``agent-memory memory add|get|list|history|delete|search|forget|forgotten|unforget``."""

from __future__ import annotations

import json
import sys
from datetime import datetime
from typing import Any

import typer
from rich.table import Table
from rich.text import Text

from ._common import URL_HELP, console, emit_json, esc, fmt_time, open_system, run, short

app = typer.Typer(help="Add, show, list, delete and search one user's memories.", no_args_is_help=True)

USER = typer.Option(..., "--user", "-u", help="The user whose memories these are")


@app.command("add")
@run
async def add_cmd(
    key: str = typer.Argument(..., help="Memory key (letters, digits, '_' and '-')"),
    content: str = typer.Argument(..., help="The content; '-' reads it from standard input"),
    user: str = USER,
    summary: str | None = typer.Option(None, "--summary", "-s", help="One-line summary (default: first sentence)"),
    memory_type: str = typer.Option("general", "--type", "-t", help="Memory type, e.g. profile, event, general"),
    friend: str | None = typer.Option(
        None, "--friend", "-f", help="AI friend it belongs to (omit: shared by all; an event needs one or --shared)"
    ),
    shared: bool = typer.Option(False, "--shared", help="An event without --friend: show it to every AI friend"),
    meta: str | None = typer.Option(None, "--meta", help='Metadata as a JSON object, e.g. \'{"topic": "work"}\''),
    tag: list[str] = typer.Option([], "--tag", help="A keyword tag (repeatable)"),
    replace: bool = typer.Option(False, "--replace", help="Replace an existing memory with this key"),
    expires_at: str | None = typer.Option(
        None, "--expires-at", help="ISO-8601 time with a zone after which it is no longer current"
    ),
    url: str | None = typer.Option(None, "--db", "--url", help=URL_HELP),
) -> None:
    """Store a memory for a user."""
    if shared and friend is not None:
        raise ValueError("--shared is for an event without --friend (shown to every AI friend); drop one of the two")
    text = sys.stdin.read() if content == "-" else content
    if not text.strip():
        raise ValueError("the memory's content is empty; give some text (or '-' to read it from standard input)")
    try:
        metadata = json.loads(meta) if meta else None
    except json.JSONDecodeError as exc:
        raise ValueError(f"--meta is not valid JSON: {exc}") from None
    from ..history import with_expiry  # the data layer loads with the command, not with the CLI

    metadata = with_expiry(metadata, _time_option(expires_at, "--expires-at"))
    async with open_system(url) as system:
        fields: dict[str, Any] = {
            "user_id": user,
            "memory_key": key,
            "content": text,
            "summary": summary,
            "memory_type": memory_type,
            "friend_id": friend,
            "metadata": metadata,
            "keywords": tag or None,
            "shared": shared,
        }
        if replace:
            from ..history import revise

            result = await revise(system.layer.memory, **fields)  # a profile item's earlier value is kept
            record, verb = result.record, "stored" if result.created else "replaced"
        else:
            record, verb = await system.layer.memory.add(**fields), "stored"
    note = " [yellow](content truncated to 100 KB)[/]" if record.truncated else ""
    console.print(f"{verb} [bold]{esc(record.memory_key)}[/] ({esc(record.memory_type)}){note}")


@app.command("get")
@run
async def get_cmd(
    key: str = typer.Argument(..., help="Memory key"),
    user: str = USER,
    as_json: bool = typer.Option(False, "--json", help="Print the record as JSON"),
    url: str | None = typer.Option(None, "--db", "--url", help=URL_HELP),
) -> None:
    """Show one memory of a user (exit code 1 when there is none)."""
    async with open_system(url) as system:
        memory = system.layer.memory
        record = await memory.retrieve_memory(memory_key=key, user_id=user)
        keywords = [k.keyword for k in await memory.get_keywords(user_id=user, memory_key=key)] if record else []
    if record is None:
        console.print(
            Text(f"user {user!r} has no memory {key!r}; `agent-memory memory list --user {user}` lists the keys")
        )
        raise typer.Exit(code=1)
    past = _past(record)
    if as_json:
        data = {
            "memory_key": record.memory_key,
            "memory_type": record.memory_type,
            "friend_id": record.friend_id,
            "summary": record.summary,
            "content": record.content,
            "metadata": record.metadata,
            "keywords": keywords,
            "created_at": record.created_at.isoformat(),
            "past": past,
        }
        emit_json(data)
        return
    friend = record.friend_id or "shared"
    console.print(f"[bold]{esc(record.memory_key)}[/] ({esc(record.memory_type)}, friend: {esc(friend)})")
    console.print(Text(f"summary:  {past}{record.summary}"))
    console.print(Text(f"created:  {fmt_time(record.created_at)}   keywords: {', '.join(keywords) or '-'}"))
    console.print(Text(record.content))


@app.command("list")
@run
async def list_cmd(
    user: str = USER,
    memory_type: list[str] = typer.Option([], "--type", "-t", help="Only these types (repeatable)"),
    friend: str | None = typer.Option(None, "--friend", "-f", help="Only what this AI friend can see"),
    limit: int = typer.Option(20, "--limit", "-n", help="Rows per page (1-1000)"),
    cursor: str | None = typer.Option(None, "--cursor", help="next_cursor printed by the previous page"),
    history: bool = typer.Option(False, "--history", help="Also superseded profile values (inactive)"),
    as_json: bool = typer.Option(False, "--json", help="Print the page as JSON"),
    url: str | None = typer.Option(None, "--db", "--url", help=URL_HELP),
) -> None:
    """List a user's memories, newest first, with the chat messages each was formed from."""
    async with open_system(url) as system:
        page = await system.layer.memory.list_memories(
            user_id=user,
            memory_types=memory_type or None,
            friend_id=friend,
            limit=limit,
            cursor=cursor,
            include_inactive=history,
        )
    if as_json:
        emit_json({"items": [_row(r) for r in page.items], "next_cursor": page.next_cursor})
        return
    table = Table("key", "type", "friend", "created", "summary", "sources", title=Text(f"memories of {user}"))
    for r in page.items:
        sources = ",".join(str(i) for i in (r.metadata.get("source_message_ids") or [])[:6])
        state = "" if r.is_active else f" (until {str(r.metadata.get('valid_to') or '')[:10]})"
        table.add_row(
            *map(
                Text,
                (
                    r.memory_key,
                    r.memory_type,
                    r.friend_id or "shared",
                    fmt_time(r.created_at),
                    _past(r) + short(r.summary) + state,
                    sources or "-",
                ),
            )
        )
    console.print(table)
    if page.next_cursor:
        console.print(Text(f"more: --cursor {page.next_cursor}"))


@app.command("history")
@run
async def history_cmd(
    key: str = typer.Argument(..., help="The item's key (e.g. profile-residence)"),
    user: str = USER,
    as_json: bool = typer.Option(False, "--json", help="Print the versions as JSON"),
    url: str | None = typer.Option(None, "--db", "--url", help=URL_HELP),
) -> None:
    """Show a profile item's values over time, oldest first: when each held, what replaced it, its sources."""
    async with open_system(url) as system:
        from ..history import memory_history

        versions = await memory_history(system.layer.memory, user_id=user, memory_key=key)
    if as_json:
        emit_json([v.as_dict() for v in versions])
        return
    table = Table("from", "to", "value", "superseded by", "sources", title=Text(f"history of {key}"))
    for v in versions:
        until = "now" if v.current else fmt_time(v.valid_to) if v.valid_to else "-"
        sources = ",".join(map(str, v.evidence_ids)) or "-"
        table.add_row(*map(Text, (fmt_time(v.valid_from), until, short(v.value), v.superseded_by or "-", sources)))
    console.print(table)


def _time_option(value: str | None, name: str) -> datetime | None:
    """A command-line time: ISO-8601 with a zone, else a one-line error saying what to give."""
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"{name} must be an ISO-8601 time, e.g. 2026-06-03T18:00:00+08:00, not {value!r}") from None
    if parsed.tzinfo is None:
        raise ValueError(f"{name} needs a time zone, e.g. 2026-06-03T18:00:00+08:00 (or ...Z for UTC)")
    return parsed


@app.command("delete")
@run
async def delete_cmd(
    key: str = typer.Argument(..., help="Memory key"),
    user: str = USER,
    hard: bool = typer.Option(False, "--hard", help="Remove the row instead of marking it inactive"),
    url: str | None = typer.Option(None, "--db", "--url", help=URL_HELP),
) -> None:
    """Delete a user's memory (soft delete unless --hard)."""
    async with open_system(url) as system:
        done = await system.layer.memory.delete(user_id=user, memory_key=key, hard=hard)
    if not done:
        console.print(
            Text(f"user {user!r} has no active memory {key!r}; `agent-memory memory list --user {user}` lists the keys")
        )
        raise typer.Exit(code=1)
    console.print(Text(f"deleted {key}{' (hard)' if hard else ''}"))


@app.command("search")
@run
async def search_cmd(
    query: str = typer.Argument(..., help="What to look for (Chinese or English)"),
    user: str = USER,
    friend: str | None = typer.Option(None, "--friend", "-f", help="Only this AI friend's memories and shared ones"),
    mode: str | None = typer.Option(None, "--mode", "-m", help="hybrid, keyword or semantic (default: settings)"),
    memory_type: list[str] = typer.Option([], "--type", "-t", help="Only these memory types (repeatable)"),
    limit: int = typer.Option(5, "--limit", "-n", help="Results, 1-100"),
    min_score: float = typer.Option(0.0, "--min-score", help="Drop results scoring below this (0-1)"),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table"),
    url: str | None = typer.Option(None, "--db", "--url", help=URL_HELP),
) -> None:
    """Search a user's memories (hybrid keyword + text + time by default).

    The engine picks the best ``--limit`` memories; they are shown by the score printed, highest first.
    """
    from ..search import SEARCH_MODES, is_search_mode

    if mode is not None and not is_search_mode(mode):
        raise ValueError(f"--mode must be one of {', '.join(SEARCH_MODES)}")
    async with open_system(url) as system:
        found = await system.search.search(
            query,
            user_id=user,
            friend_id=friend,
            mode=mode,
            memory_types=memory_type or None,
            limit=limit,
            min_relevance_score=min_score,
        )
    # the engine's order also weighs interaction, type and query coverage; show the scores in order
    hits = sorted(found, key=lambda h: -h.score)
    if as_json:
        emit_json(
            [
                {
                    "memory_key": h.memory_key,
                    "score": h.score,
                    "rank_score": h.rank_score,
                    "memory_type": h.record.memory_type,
                    "friend_id": h.record.friend_id,
                    "summary": h.summary,
                    "keywords": list(h.keywords),
                    "past": _past(h.record),
                }
                for h in hits
            ]
        )
        return
    if not hits:
        console.print("no matching memories")
        return
    table = Table("key", "score", "type", "friend", "summary")
    for h in hits:
        summary = _past(h.record) + short(h.summary)
        row = (h.memory_key, f"{h.score:.3f}", h.record.memory_type, h.record.friend_id or "(shared)", summary)
        table.add_row(*map(Text, row))
    console.print(table)


@app.command("forget")
@run
async def forget_cmd(
    subject: str = typer.Argument(..., help="What to forget, e.g. '前任' or 'my ex'"),
    user: str = USER,
    friend: str | None = typer.Option(
        None, "--friend", "-f", help="As asked in the chat with this AI friend (its events; profiles are shared)"
    ),
    all_matching: bool = typer.Option(
        False, "--all-matching", help="Forget even when SUBJECT matches most of the memories (refused otherwise)"
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON"),
    url: str | None = typer.Option(None, "--db", "--url", help=URL_HELP),
) -> None:
    """Forget what the user told about SUBJECT, as if the user asked in the chat (undo: memory unforget)."""
    async with open_system(url) as system:
        done = await system.forget(system.scope(user, friend), subject, broad=all_matching)
    _print_forgetting(done, as_json=as_json)


@app.command("forgotten")
@run
async def forgotten_cmd(
    user: str = USER,
    as_json: bool = typer.Option(False, "--json", help="Print JSON"),
    url: str | None = typer.Option(None, "--db", "--url", help=URL_HELP),
) -> None:
    """List what the user asked to forget, newest first: the subject, the memories and messages set aside."""
    async with open_system(url) as system:
        found = await system.forgettings(user)
    if as_json:
        emit_json([f.as_dict() for f in found])
        return
    if not found:
        console.print("nothing forgotten")
        return
    table = Table("key", "when", "friend", "subject", "memories", "messages", "undone")
    for f in found:
        row = (
            f.key,
            fmt_time(f.at),
            f.friend_id or "(shared)",
            short(f.subject),
            str(len(f.memories)),
            str(len(f.message_ids)),
            fmt_time(f.undone_at) if f.undone_at else "",
        )
        table.add_row(*map(Text, row))
    console.print(table)


@app.command("unforget")
@run
async def unforget_cmd(
    key: str | None = typer.Argument(None, help="The forgetting to undo (default: the newest not undone)"),
    user: str = USER,
    as_json: bool = typer.Option(False, "--json", help="Print JSON"),
    url: str | None = typer.Option(None, "--db", "--url", help=URL_HELP),
) -> None:
    """Undo a forgetting: its memories come back as they were, its messages return to evidence recall."""
    async with open_system(url) as system:
        done = await system.unforget(user, key=key)
    _print_forgetting(done, as_json=as_json)


def _print_forgetting(done: Any, *, as_json: bool) -> None:
    if as_json:
        emit_json(done.as_dict())
        return
    console.print(Text(f"{done.key}: {done.describe()}"))
    for m in done.memories:
        console.print(Text(f"  {m.memory_key} ({m.memory_type}): {short(m.summary)}"))


def _past(record: Any) -> str:
    """The mark of an event whose time has passed ("（已过去：2026-03-20）"), else ""."""
    from datetime import UTC

    from ..history import past_mark  # the data layer loads with the command, not with the CLI

    return past_mark(record, datetime.now(UTC))


def _row(r: Any) -> dict[str, Any]:
    return {
        "memory_key": r.memory_key,
        "memory_type": r.memory_type,
        "friend_id": r.friend_id,
        "summary": r.summary,
        "content": r.content,
        "created_at": r.created_at.isoformat(),
        "is_active": r.is_active,
        "source_message_ids": r.metadata.get("source_message_ids") or [],
        "metadata": r.metadata,
        "past": _past(r),
    }
