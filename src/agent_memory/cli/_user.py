"""``agent-memory user delete U``: erase every row of a user in every table (one transaction)."""

from __future__ import annotations

import typer
from rich.text import Text

from ._common import URL_HELP, console, emit_json, open_system, run

app = typer.Typer(help="Users: erase everything stored of one.", no_args_is_help=True)


@app.command("delete")
@run
async def delete_cmd(
    user: str = typer.Argument(..., help="The user whose data is erased"),
    yes: bool = typer.Option(False, "--yes", help="Do not ask for confirmation"),
    as_json: bool = typer.Option(False, "--json", help="Print the rows removed per table as JSON"),
    url: str | None = typer.Option(None, "--db", "--url", help=URL_HELP),
) -> None:
    """Erase the user: memories with their keywords and search rows, chat messages, AI friends,
    settings, archived tool results and archiving marks, in one transaction. Other users stay."""
    if not yes and not typer.confirm(
        f"erase every memory, message and setting of user {user!r}? This cannot be undone"
    ):
        raise typer.Exit(code=1)
    async with open_system(url) as system:
        erased = await system.layer.erase_user(user)
    if as_json:
        emit_json({"user_id": erased.user_id, "rows": erased.rows, "total": erased.total})
        return
    parts = ", ".join(f"{name} {n}" for name, n in erased.rows.items() if n)
    console.print(Text(f"erased user {erased.user_id}: {erased.total} rows" + (f" ({parts})" if parts else "")))
