"""Helpers shared by the CLI commands: settings, the data layer, errors printed without tracebacks."""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Awaitable, Callable
from typing import Any, ParamSpec, TypeVar

import typer
from rich.console import Console

from data_layer import AgentFusionDataLayer, DataLayerError

from ..settings import SettingsError, get_settings

console = Console()
err_console = Console(stderr=True)

P = ParamSpec("P")
T = TypeVar("T")

URL_HELP = "Database URL (default: MEMORY_DATABASE_URL, or a SQLite file in the user data directory)"


def database_url(url: str | None) -> str:
    """The URL given on the command line, else the configured one."""
    return url or get_settings().memory_database_url


def run(fn: Callable[P, Awaitable[T]]) -> Callable[P, T]:
    """Run an async command; turn the library's expected errors into a message and exit code 2."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return asyncio.run(fn(*args, **kwargs))  # type: ignore[arg-type]
        except (SettingsError, DataLayerError, ValueError) as exc:
            err_console.print(f"[bold red]error:[/] {exc}")
            raise typer.Exit(code=2) from None
        except OSError as exc:
            err_console.print(f"[bold red]error:[/] cannot reach the database or a file: {exc}")
            raise typer.Exit(code=2) from None

    return wrapper


def open_layer(url: str | None) -> AgentFusionDataLayer:
    """The data layer for ``url`` with the configured per-user defaults; memories written through it
    get keywords and search terms (the search analysis is installed on its repository)."""
    from ..search import search_from_settings

    layer = AgentFusionDataLayer(database_url(url), default_settings=get_settings().user_defaults())
    search_from_settings(layer.memory)
    return layer


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
