"""``agent-memory db upgrade|downgrade|current``."""

from __future__ import annotations

import typer

from ._common import URL_HELP, console, database_url, esc, run
from ._errors import sqlite_file

app = typer.Typer(help="Create and migrate the database schema (Alembic).", no_args_is_help=True)


def _shown(url: str) -> str:
    from data_layer import normalize_url

    return esc(normalize_url(url).render_as_string(hide_password=True))


@app.command("upgrade")
@run
async def upgrade_cmd(
    revision: str = typer.Argument("head", help="Target revision"),
    url: str | None = typer.Option(None, "--db", "--url", help=URL_HELP),
) -> None:
    """Migrate the database up (creates the tables on a new database), then analyse the chat messages
    stored without search terms (written before the search engine existed) for evidence search, and
    store what the memories' search needs that older versions did not (keyword and vector bucket terms)."""
    from data_layer import upgrade

    target = database_url(url)
    reached = await upgrade(target, revision)
    console.print(f"database {_shown(target)} is at revision [bold]{esc(reached)}[/]")
    if reached is not None and _has_message_search(reached):
        await _analyse_messages(target)
    if reached is not None and _has_revision(reached, MEMORY_SEARCH_REVISION):
        await _analyse_keyword_terms(target)
        await _bucket_vectors(target)


def _has_revision(revision: str, wanted: str) -> bool:
    """Whether the schema at ``revision`` has what ``wanted`` made."""
    from alembic.script import ScriptDirectory

    from data_layer import MIGRATIONS_DIR

    script = ScriptDirectory(str(MIGRATIONS_DIR))
    return any(r.revision == wanted for r in script.iterate_revisions(revision, "base"))


#: The revision that puts memories in the store's engine (their keyword terms filled after it).
MEMORY_SEARCH_REVISION = "0010_memory_search_engine"


async def _analyse_keyword_terms(target: str) -> None:
    """The keyword terms of every search row stored without them (idempotent)."""
    from agent_memory.search import fill_keyword_terms
    from agent_memory.settings import load_settings
    from agent_memory.system import search_analyzer
    from data_layer import AgentFusionDataLayer

    async with AgentFusionDataLayer(target) as layer:  # the analysis a system on these settings runs on write
        rows, users = await fill_keyword_terms(layer, search_analyzer(load_settings()))
    if rows:
        console.print(
            f"analysed the keywords of {rows:,} memories of {users:,} user{'' if users == 1 else 's'} for search"
        )
    else:
        console.print("every analysed memory has its keyword terms")


async def _bucket_vectors(target: str) -> None:
    """The bucket terms of every stored vector that has none, which the store's engine finds memories
    near in meaning by (idempotent)."""
    from agent_memory.search import fill_vector_terms
    from data_layer import AgentFusionDataLayer

    async with AgentFusionDataLayer(target) as layer:
        rows, users = await fill_vector_terms(layer.memory)
    if rows:
        console.print(
            f"stored the bucket terms of {rows:,} vectors of {users:,} user{'' if users == 1 else 's'} for search"
        )
    else:
        console.print("every stored vector has its bucket terms")


def _has_message_search(revision: str) -> bool:
    """Whether the schema at ``revision`` has the messages' search terms (revision 0009 or later)."""
    from alembic.script import ScriptDirectory

    from data_layer import MIGRATIONS_DIR

    script = ScriptDirectory(str(MIGRATIONS_DIR))
    return any(r.revision == MESSAGE_SEARCH_REVISION for r in script.iterate_revisions(revision, "base"))


#: The revision that gives chat messages their search terms.
MESSAGE_SEARCH_REVISION = "0009_message_search_engine"
#: A progress line after every this many messages analysed.
PROGRESS_EVERY = 10_000


async def _analyse_messages(target: str) -> None:
    """Every user's messages without search terms, analysed and stored in batches (idempotent: a second
    run finds none), with a progress line every :data:`PROGRESS_EVERY` messages."""
    from agent_memory.evidence import MessageTermsAnalyzer, analyse_stored
    from data_layer import AgentFusionDataLayer

    done = 0

    def progress(user_id: str, filled: int) -> None:
        nonlocal done
        before, done = done, done + filled
        if done // PROGRESS_EVERY > before // PROGRESS_EVERY:
            console.print(f"  analysed {done:,} messages (now: user {esc(user_id)})")

    async with AgentFusionDataLayer(target) as layer:
        messages, users = await analyse_stored(layer, MessageTermsAnalyzer(), on_batch=progress)
        if messages:
            await layer.messages.settle_engine()
    if messages:
        console.print(
            f"analysed {messages:,} chat messages of {users:,} user{'' if users == 1 else 's'} for evidence search"
        )
    else:
        console.print("every chat message has its search terms")


@app.command("downgrade")
@run
async def downgrade_cmd(
    revision: str = typer.Argument(..., help="Target revision, or 'base' to drop every table"),
    url: str | None = typer.Option(None, "--db", "--url", help=URL_HELP),
    yes: bool = typer.Option(False, "--yes", help="Do not ask for confirmation"),
) -> None:
    """Migrate the database down (drops what later revisions added, with its data)."""
    from data_layer import downgrade, normalize_url

    target = database_url(url)
    shown = normalize_url(target).render_as_string(hide_password=True)
    if not yes and not typer.confirm(f"downgrade {shown} to {revision}? Data may be lost"):
        raise typer.Exit(code=1)
    reached = await downgrade(target, revision)
    console.print(f"database is at revision [bold]{esc(reached or 'base')}[/]")


@app.command("current")
@run
async def current_cmd(url: str | None = typer.Option(None, "--db", "--url", help=URL_HELP)) -> None:
    """Show the database's revision and the newest one this version ships (only reads: a SQLite file
    that does not exist is not created)."""
    from data_layer import current_revision, head_revision, normalize_url

    target = database_url(url)
    head = head_revision()
    path = sqlite_file(normalize_url(target))
    if path is not None and not path.exists():
        console.print(f"current: [bold]none[/] (no database file at {esc(str(path))}; data commands create it)")
        console.print(f"head: {esc(head)}")
        return
    rev = await current_revision(target)
    state = "up to date" if rev == head else "run `agent-memory db upgrade`"
    console.print(f"current: [bold]{esc(rev or 'none')}[/]\nhead: {esc(head)} ({state})")
