"""``agent-memory serve``: the web chat on this machine (AI friends, memory recall, settings, memories)."""

from __future__ import annotations

import typer

from ._common import URL_HELP, console, database_url, esc, run

LOG_LEVELS = ("critical", "error", "warning", "info", "debug")


@run
async def serve_cmd(
    host: str | None = typer.Option(
        None, "--host", help="Address to bind (default: MEMORY_SERVER_HOST, 127.0.0.1); others need MEMORY_SERVER_TOKEN"
    ),
    port: int = typer.Option(8766, "--port", min=1, max=65535, help="Port to listen on"),
    db: str | None = typer.Option(None, "--db", help=f"SQLite file or {URL_HELP}"),
    log_level: str = typer.Option("warning", "--log-level", help="uvicorn log level: warning, info, debug"),
    workers: int = typer.Option(
        1, "--workers", min=1, max=32, help="Worker processes sharing the port (one per core; 1: one process)"
    ),
) -> None:
    """Start the web chat: sign in with a user name, make AI friends, chat with memory recall.

    Without MEMORY_CHAT_MODEL_CLIENT the friends answer with the offline responder (no model, no download).
    Stop with Ctrl-C.
    """
    if log_level not in LOG_LEVELS:
        raise ValueError(f"--log-level must be one of {', '.join(LOG_LEVELS)}")
    from ..serving import check_bind
    from ..settings import load_settings

    settings = load_settings()
    check_bind(host or settings.memory_server_host, token=settings.memory_server_token)  # before anything opens
    url = database_url(db)
    from ..web import serve

    def ready(address: str) -> None:
        console.print(
            f"web chat on [bold]{address}[/bold] (database: {esc(url.split('@')[-1])}); Ctrl-C stops it", soft_wrap=True
        )

    await serve(host=host, port=port, database_url=url, log_level=log_level, workers=workers, on_ready=ready)
