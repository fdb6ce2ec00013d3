"""``agent-memory export --user U`` and ``agent-memory import FILE``: a user's memory as one JSON-lines file."""

from __future__ import annotations

import sys
from pathlib import Path

import typer
from rich.text import Text

from ._common import URL_HELP, err_console, open_system, run


@run
async def export_cmd(
    user: str = typer.Option(..., "--user", "-u", help="The user to export"),
    out: Path | None = typer.Option(None, "--out", "-o", help="The file to write (default: standard output)"),
    url: str | None = typer.Option(None, "--db", "--url", help=URL_HELP),
) -> None:
    """Write every row of the user (memories with keywords, messages, AI friends, settings, archived
    tool results, archiving marks) as one JSON-lines file, a header line first."""
    from ..transfer import export_user

    async with open_system(url) as system:
        if out is None:
            counts = await export_user(system.layer, user_id=user, out=sys.stdout)
        else:
            with out.open("w", encoding="utf-8") as fh:
                counts = await export_user(system.layer, user_id=user, out=fh)
    err_console.print(Text("exported " + (", ".join(f"{k} {n}" for k, n in counts.items()) or "nothing")))


@run
async def import_cmd(
    file: Path = typer.Argument(..., exists=True, dir_okay=False, readable=True, help="A file of agent-memory export"),
    user: str | None = typer.Option(None, "--user", "-u", help="Import as this user (default: the exported one)"),
    on_conflict: str = typer.Option(
        "error", "--on-conflict", help="A memory key, AI friend or settings the user has: error, skip or replace"
    ),
    url: str | None = typer.Option(None, "--db", "--url", help=URL_HELP),
) -> None:
    """Read an export into the database (either backend), through the normal writes."""
    from ..transfer import import_user

    if on_conflict not in ("error", "skip", "replace"):
        raise ValueError(f"--on-conflict must be error, skip or replace, not {on_conflict!r}")
    async with open_system(url) as system:
        with file.open(encoding="utf-8") as fh:
            # typer gives a str; the check above let only the three choices through
            counts = await import_user(system.layer, lines=fh, user_id=user, on_conflict=on_conflict)  # type: ignore[arg-type]
    err_console.print(Text("imported " + (", ".join(f"{k} {n}" for k, n in counts.items()) or "nothing")))
