"""Helpers shared by the CLI commands: the memory system, errors in two lines, safe printing.

Imports stay light here (typer and rich only): ``agent-memory --help`` must start fast, so every
command imports the library (SQLAlchemy, AutoGen, the search) inside its function.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import traceback
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.text import Text
from typer.exceptions import TyperException

from ._errors import explain, sqlite_file

if TYPE_CHECKING:
    from ..system import MemorySystem

console = Console()
err_console = Console(stderr=True)

P = ParamSpec("P")
T = TypeVar("T")

URL_HELP = (
    "A SQLite file path or a database URL (default: MEMORY_DATABASE_URL, or a SQLite file in the user data directory)"
)

#: Exit code of every reported error (the same as a usage error).
ERROR_EXIT = 2


@dataclass(slots=True)
class _State:
    debug: bool = False
    url: str | None = None  # the database the command works on, for error messages


state = _State()


def start_command(*, debug: bool) -> None:
    """A command starts (the app's callback): ``debug`` (``--debug``) prints the traceback of an
    error as well as its explanation."""
    state.debug = debug
    state.url = None


def as_database_url(value: str | None) -> str | None:
    """``--db`` / ``--url``: a URL as it is (``sqlite+aiosqlite:///...``, ``postgresql+psycopg://...``),
    else a SQLite file path made absolute (``~/memory.db`` -> ``sqlite+aiosqlite:////home/me/memory.db``)."""
    if not value or "://" in value:
        return value
    return f"sqlite+aiosqlite:///{Path(value).expanduser().absolute()}"


def database_url(url: str | None) -> str:
    """The URL (or SQLite path) given on the command line, else the configured one (raises
    ``SettingsError``)."""
    url = as_database_url(url)
    if not url:
        from ..settings import load_settings

        url = load_settings().memory_database_url
    state.url = url
    return url


@asynccontextmanager
async def open_system(url: str | None, *, announce_new: bool = True) -> AsyncIterator[MemorySystem]:
    """The memory system on ``url`` (default: the settings'), closed at the end.

    A new SQLite file is created and migrated first, and a note on stderr says so (a mistyped ``--db``
    path otherwise looked exactly like a database with no memories); a PostgreSQL database behind the
    code is refused with advice (``MemorySystem.ensure_schema``). Settings errors raise ``SettingsError``.
    ``announce_new=False``: a command that makes the file on purpose (the demo) says nothing.
    """
    from ..settings import load_settings
    from ..system import MemorySystem, SystemOverrides

    settings = load_settings()
    state.url = as_database_url(url) or settings.memory_database_url
    system = MemorySystem.build(settings, overrides=SystemOverrides(database_url=state.url))
    try:
        new_file = await _new_sqlite_file(system)
        created = await system.ensure_schema() and new_file is not None and announce_new
        yield system
        if created:  # after the command's own output, and only when it succeeded (an error stays 1-2 lines)
            err_console.print(
                Text(f"note: created a new database at {new_file} (check --db if you expected earlier memories there)"),
                soft_wrap=True,
            )
    finally:
        await system.close()


async def _new_sqlite_file(system: MemorySystem) -> str | None:
    """The path of the SQLite file ``system`` is about to create or fill for the first time (``None``: a
    database with tables, or not a file). A file without tables (empty, or left by a tool that opened
    the path) is as new as a missing one: its memories cannot be what the user expected to find."""
    from data_layer import current_revision

    path = sqlite_file(system.layer.url)
    if path is None or path.is_dir():
        return None
    if path.exists() and (await current_revision(system.layer.url) is not None or _has_tables(path)):
        return None
    return str(path)


def _has_tables(path: Path) -> bool:
    """Whether the SQLite file holds any table (another application's, say), read without writing."""
    import sqlite3

    try:
        with contextlib.closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as conn:
            return conn.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table'").fetchone()[0] > 0
    except sqlite3.Error:
        return True  # not readable as SQLite: not a new database (the command's own error says what it is)


def fail(message: str, hint: str | None = None) -> None:
    """Print ``error: message`` (and ``hint`` on a second line) on stderr, unwrapped and without markup."""
    err_console.print(Text("error: ", style="bold red") + Text(" ".join(message.split())), soft_wrap=True)
    if hint:
        err_console.print(Text("  " + " ".join(hint.split()), style="dim"), soft_wrap=True)


def run(fn: Callable[P, Coroutine[Any, Any, T]]) -> Callable[P, T]:
    """Run an async command. An error becomes one or two lines on stderr (what went wrong, what to
    do) and exit code 2; ``agent-memory --debug ...`` prints the traceback first."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return asyncio.run(fn(*args, **kwargs))
        except (typer.Exit, typer.Abort, TyperException):
            raise
        except KeyboardInterrupt:
            if state.debug:
                traceback.print_exc()
            fail("interrupted", "an unfinished write was rolled back; run the command again")
            raise typer.Exit(code=130) from None
        except Exception as exc:
            if state.debug:
                traceback.print_exc()
            message, hint = explain(exc, url=state.url)
            if not state.debug and hint is None and message.startswith("unexpected"):
                hint = "run again with `agent-memory --debug ...` for the traceback"
            fail(message, hint)
            raise typer.Exit(code=ERROR_EXIT) from None

    return wrapper


def emit_json(data: Any) -> None:
    """Print one JSON object on stdout (plain text, so scripts can parse it)."""
    typer.echo(json.dumps(data, ensure_ascii=False, indent=2))


def short(text: str, width: int = 60) -> str:
    """One line of at most ``width`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def fmt_time(value: Any) -> str:
    """A timestamp as ``YYYY-MM-DD HH:MM`` (UTC)."""
    return value.strftime("%Y-%m-%d %H:%M") if value is not None else "-"


def esc(value: object) -> str:
    """User data (ids, keys, content) for a rich markup string: brackets are shown, never applied."""
    return escape(str(value))


def progress_bar(console: Any, description: str) -> Any:
    """A transient progress bar with a count and the time remaining, for a command's long loop."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (TextColumn(description), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    return Progress(*columns, console=console, transient=True)
