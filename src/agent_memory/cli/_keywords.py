"""``agent-memory keywords backfill|show``: keyword extraction for memories stored without it."""

from __future__ import annotations

import typer

from ._common import URL_HELP, console, emit_json, open_system, progress_bar, run

app = typer.Typer(help="Keywords of memories: backfill and inspect.", no_args_is_help=True)


@app.command("backfill")
@run
async def backfill_cmd(
    user: str | None = typer.Option(None, "--user", "-u", help="Only this user (default: every user)"),
    batch: int = typer.Option(500, "--batch", min=1, max=10_000, help="Memories per transaction"),
    url: str | None = typer.Option(None, "--db", "--url", help=URL_HELP),
) -> None:
    """Extract keywords (and search terms) for memories still marked ``needs_keyword_extraction``
    or analysed by an older analyzer; prints what it did as JSON."""

    async with open_system(url) as system:
        layer = system.layer
        users = [user] if user else await layer.memory.users_with_memories()
        done: dict[str, int] = {}
        with progress_bar(console, "{task.description}") as progress:
            task = progress.add_task("backfilling keywords", total=len(users))
            for uid in users:
                done[uid] = await system.search.reanalyze(user_id=uid, batch=batch)
                progress.advance(task)
        left = len(await layer.memory.users_pending_keyword_extraction())
    emit_json({"users": len(users), "memories_updated": sum(done.values()), "users_still_pending": left})


@app.command("show")
@run
async def show_cmd(
    key: str = typer.Argument(..., help="Memory key"),
    user: str = typer.Option(..., "--user", "-u", help="The user whose memory it is"),
    url: str | None = typer.Option(None, "--db", "--url", help=URL_HELP),
) -> None:
    """Print a memory's keywords with weights and sources."""
    async with open_system(url) as system:
        keywords = await system.layer.memory.get_keywords(user_id=user, memory_key=key)
    emit_json([{"keyword": k.keyword, "weight": k.weight, "source": k.extraction_source} for k in keywords])
