"""``agent-memory messages import FILE.jsonl``: all or nothing per file, and safe to run again."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.text import Text

from ._common import URL_HELP, console, open_system, progress_bar, run

if TYPE_CHECKING:
    from data_layer import NewMessage

app = typer.Typer(help="Import chat messages.", no_args_is_help=True)

FIELDS = ("user_id", "role", "content", "friend_id", "thread_id", "created_at", "id")


@dataclass(frozen=True, slots=True)
class ParsedLine:
    lineno: int
    user_id: str
    message: NewMessage


def parse_line(raw: str, *, lineno: int, default_user: str | None, default_friend: str | None = None) -> ParsedLine:
    """One JSON line: ``{"role", "content", "user_id"?, "friend_id"?, "thread_id"?, "created_at"?, "id"?}``;
    ``default_user`` and ``default_friend`` fill a missing ``user_id`` and ``friend_id``."""
    from data_layer import NewMessage

    try:
        data: Any = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"line {lineno}: not valid JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise ValueError(f"line {lineno}: expected a JSON object")
    unknown = set(data) - set(FIELDS)
    if unknown:
        raise ValueError(f"line {lineno}: unknown fields {sorted(unknown)} (known: {', '.join(FIELDS)})")
    user = data.get("user_id", default_user)
    if user is None:
        raise ValueError(f"line {lineno}: no user_id; add it to the line or pass --user")
    if isinstance(user, bool) or not isinstance(user, str | int):
        raise ValueError(f"line {lineno}: user_id must be a string or an integer")
    for field in ("role", "content"):
        if field not in data:
            raise ValueError(f"line {lineno}: missing {field!r}")
    created = data.get("created_at")
    if created is not None:
        try:
            created = datetime.fromisoformat(str(created).replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"line {lineno}: created_at {created!r} is not ISO-8601") from None
        if created.tzinfo is None:
            raise ValueError(f"line {lineno}: created_at needs a time zone, e.g. 2024-05-01T10:00:00+00:00")
    return ParsedLine(
        lineno=lineno,
        user_id=str(user),
        message=NewMessage(
            role=data["role"],
            content=data["content"],
            friend_id=data.get("friend_id", default_friend),
            thread_id=data.get("thread_id"),
            created_at=created,
            external_id=data.get("id"),
        ),
    )


def read_file(file: Path, *, default_user: str | None, default_friend: str | None) -> list[ParsedLine]:
    """Every message of a JSON-lines file (blank lines skipped); the first bad line raises ``ValueError``."""
    lines = []
    with file.open("rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            try:
                text = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
            except UnicodeDecodeError:
                raise ValueError(f"line {lineno}: not UTF-8 text") from None
            if text.strip():
                lines.append(parse_line(text, lineno=lineno, default_user=default_user, default_friend=default_friend))
    return lines


@app.command("import")
@run
async def import_cmd(
    file: Path = typer.Argument(..., exists=True, dir_okay=False, readable=True, help="A .jsonl file"),
    user: str | None = typer.Option(None, "--user", "-u", help="User id for lines without one"),
    friend: str | None = typer.Option(None, "--friend", "-f", help="AI friend id for lines without one"),
    url: str | None = typer.Option(None, "--db", "--url", help=URL_HELP),
) -> None:
    """Import messages from a JSON-lines file, one object a line:
    {"user_id", "role", "content", "friend_id"?, "thread_id"?, "created_at"? (ISO-8601), "id"?}.

    All or nothing: every line is checked first (a bad line is named and nothing is written), then
    the whole file is written in one transaction. Run it again safely: messages already stored are
    skipped. A line's "id" is its identity; otherwise user, friend, thread, role, created_at and
    content are (a line without created_at matches a stored message with its role and content).
    """

    parsed = read_file(file, default_user=user, default_friend=friend)
    async with open_system(url) as system:
        messages = system.layer.messages
        by_user: dict[str | int, list[NewMessage]] = {}
        ids: dict[tuple[str, str], ParsedLine] = {}
        for line in parsed:
            try:
                messages.validate(user_id=line.user_id, messages=[line.message])
            except ValueError as exc:
                raise ValueError(f"line {line.lineno}: {exc}") from None
            if line.message.external_id is not None:
                first = ids.setdefault((line.user_id, str(line.message.external_id)), line)
                if first.message != line.message:
                    raise ValueError(
                        f"line {line.lineno}: id {line.message.external_id!r} is given to two different messages "
                        f"(first on line {first.lineno})"
                    )
            by_user.setdefault(line.user_id, []).append(line.message)
        with progress_bar(console, "importing") as progress:
            task = progress.add_task("import", total=len(parsed))
            stored = await messages.append_for_users(
                by_user, skip_existing=True, on_progress=lambda n: progress.advance(task, n)
            )
    new = sum(len(v) for v in stored.values())
    skipped = len(parsed) - new
    console.print(
        Text(f"imported {new} messages for {len(by_user)} user(s); skipped {skipped} already stored or repeated")
    )
