"""``agent-memory messages import FILE.jsonl``."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from data_layer import NewMessage

from ._common import URL_HELP, console, open_layer, run

app = typer.Typer(help="Import chat messages.", no_args_is_help=True)

BATCH = 500


@dataclass(frozen=True, slots=True)
class ParsedLine:
    user_id: str
    message: NewMessage


def parse_line(raw: str, *, lineno: int, default_user: str | None) -> ParsedLine:
    """One JSON line: ``{"user_id", "role", "content", "friend_id"?, "thread_id"?, "created_at"?}``."""
    try:
        data: Any = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"line {lineno}: not valid JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise ValueError(f"line {lineno}: expected a JSON object")
    unknown = set(data) - {"user_id", "role", "content", "friend_id", "thread_id", "created_at", "id"}
    if unknown:
        raise ValueError(f"line {lineno}: unknown fields {sorted(unknown)}")
    user = data.get("user_id", default_user)
    if user is None:
        raise ValueError(f"line {lineno}: no user_id; add it to the line or pass --user")
    if default_user is not None and str(user) != default_user:
        raise ValueError(f"line {lineno}: user_id {user!r} differs from --user {default_user!r}")
    created = data.get("created_at")
    if created is not None:
        try:
            created = datetime.fromisoformat(str(created).replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"line {lineno}: created_at {created!r} is not ISO-8601") from None
        if created.tzinfo is None:
            raise ValueError(f"line {lineno}: created_at needs a time zone, e.g. 2024-05-01T10:00:00+00:00")
    for field in ("role", "content"):
        if field not in data:
            raise ValueError(f"line {lineno}: missing {field!r}")
    return ParsedLine(
        user_id=str(user),
        message=NewMessage(
            role=data["role"],
            content=data["content"],
            friend_id=data.get("friend_id"),
            thread_id=data.get("thread_id"),
            created_at=created,
        ),
    )


@app.command("import")
@run
async def import_cmd(
    file: Path = typer.Argument(..., exists=True, dir_okay=False, readable=True, help="A .jsonl file"),
    user: str | None = typer.Option(None, "--user", "-u", help="User id for lines without one"),
    url: str | None = typer.Option(None, "--url", help=URL_HELP),
) -> None:
    """Import messages from a JSON-lines file. Every line is checked first: one bad line imports nothing."""
    parsed: dict[str, list[NewMessage]] = defaultdict(list)
    async with open_layer(url) as layer:
        with file.open(encoding="utf-8") as fh:
            for lineno, raw in enumerate(fh, start=1):
                if not raw.strip():
                    continue
                line = parse_line(raw, lineno=lineno, default_user=user)
                try:
                    layer.messages.validate(user_id=line.user_id, messages=[line.message])
                except ValueError as exc:
                    raise ValueError(f"line {lineno}: {exc}") from None
                parsed[line.user_id].append(line.message)
        total = sum(len(v) for v in parsed.values())
        with Progress(
            TextColumn("importing"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(), console=console
        ) as progress:
            task = progress.add_task("import", total=total)
            for uid, messages in parsed.items():
                for start in range(0, len(messages), BATCH):
                    chunk = messages[start : start + BATCH]
                    await layer.messages.append_many(user_id=uid, messages=chunk)
                    progress.advance(task, len(chunk))
    console.print(f"imported {total} messages for {len(parsed)} user(s)")
