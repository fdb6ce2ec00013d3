"""``agent-memory mcp``: serve one user's memories as MCP tools (stdio, or streamable HTTP with --http)."""

from __future__ import annotations

import logging
import sys

import typer

from ._common import as_database_url, err_console, open_system, run

DB_HELP = (
    "SQLite file (created and migrated on first use) or database URL "
    "(default: MEMORY_DATABASE_URL, or a SQLite file in the user data directory)"
)


@run
async def mcp_cmd(
    user: str = typer.Option(..., "--user", "-u", help="The user whose memories the tools read and write"),
    db: str | None = typer.Option(None, "--db", "--url", help=DB_HELP),
    http: int | None = typer.Option(
        None, "--http", min=1, max=65535, help="Serve streamable HTTP on this port (at /mcp) instead of stdio"
    ),
    host: str | None = typer.Option(
        None, "--host", help="Address to bind with --http (default: MEMORY_SERVER_HOST, 127.0.0.1)"
    ),
) -> None:
    """Serve a user's memories to MCP clients (recall_memory, search_memories, add_memory and more).

    The user is fixed by --user, never a tool argument. Standard output carries the protocol; logs go to stderr.

    Over HTTP a bind other than loopback needs MEMORY_SERVER_TOKEN; with a token, requests need a Bearer header.
    """
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if host is not None and http is None:
        raise ValueError("--host applies to --http only; add --http PORT")
    from data_layer import Scope

    from ..settings import load_settings

    settings = load_settings()
    bind = host or settings.memory_server_host
    token = settings.memory_server_token
    if http is not None:
        from ..serving import check_bind, check_port

        check_bind(bind, token=token)  # refused before the database is opened
        check_port(bind, http, flag="--http")
    Scope.of(user)  # a bad user id is refused at start too
    async with open_system(as_database_url(db)) as system:
        from ..mcp import MCP_PATH, serve_http, serve_stdio

        if http is None:
            await serve_stdio(system, user_id=user)
            return
        shown = f"[{bind}]" if ":" in bind else bind
        err_console.print(
            f"MCP server for user {user} on http://{shown}:{http}{MCP_PATH}" + (" (token required)" if token else ""),
            markup=False,
            highlight=False,
        )
        await serve_http(system, user_id=user, host=bind, port=http, token=token)
