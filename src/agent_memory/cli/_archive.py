"""``agent-memory archive run``: turn ended chat sessions into profile items and event gists."""

from __future__ import annotations

import typer
from rich.text import Text

from ._common import URL_HELP, console, emit_json, open_system, run

app = typer.Typer(help="Chats become memories: profile items and event gists.", no_args_is_help=True)


@app.command("run")
@run
async def run_cmd(
    user: str = typer.Option(..., "--user", "-u", help="The user"),
    friend: str | None = typer.Option(None, "--friend", "-f", help="One AI friend (default: every chat)"),
    keep_open: bool = typer.Option(
        False, "--keep-open", help="Leave the last session of a chat open until it goes idle (default: end it)"
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON"),
    url: str | None = typer.Option(None, "--db", "--url", help=URL_HELP),
) -> None:
    """Archive the user's chats: every session becomes dated event gists (this friend only) and the
    user's own statements become shared profile items; safe to run again, and it resumes."""
    async with open_system(url) as system:
        report = await system.session_archiver.run(
            user_id=user, friend_id=friend, all_friends=friend is None, end_open=not keep_open
        )
    data = {
        "sessions": report.sessions,
        "messages": report.messages,
        "gists": report.gists,
        "turns": report.turns,
        "profiles": report.profiles,
        "superseded": report.superseded,
        "open_sessions": report.open_sessions,
    }
    if as_json:
        emit_json(data)
        return
    console.print(Text(", ".join(f"{k} {v}" for k, v in data.items())))
