"""``agent-memory bench ...``: benchmarks that print one JSON object."""

from __future__ import annotations

import dataclasses
from typing import Literal

import typer

from ..bench import DEFAULT_PG_ADMIN_URL, bench_ingest, temporary_postgres, temporary_sqlite
from ._common import emit_json, run

app = typer.Typer(help="Benchmarks; each prints one JSON object on stdout.", no_args_is_help=True)

BackendChoice = Literal["sqlite", "postgresql", "both"]


@app.command("ingest")
@run
async def ingest_cmd(
    memories: int = typer.Option(10_000, "--memories", "-n", min=1, max=1_000_000, help="Memories to write"),
    batch: int = typer.Option(500, "--batch", min=1, max=10_000, help="Memories per transaction"),
    backend: str = typer.Option("both", "--backend", help="sqlite, postgresql or both"),
    pg_admin_url: str = typer.Option(
        DEFAULT_PG_ADMIN_URL, "--pg-admin-url", help="Where a temporary PostgreSQL database is created"
    ),
) -> None:
    """Write N synthetic zh+en memories into fresh databases and print rows/s per backend."""
    if backend not in ("sqlite", "postgresql", "both"):
        raise ValueError("--backend must be sqlite, postgresql or both")
    results = {}
    if backend in ("sqlite", "both"):
        async with temporary_sqlite() as url:
            results["sqlite"] = dataclasses.asdict(await bench_ingest(url, memories=memories, batch=batch))
    if backend in ("postgresql", "both"):
        async with temporary_postgres(pg_admin_url) as url:
            results["postgresql"] = dataclasses.asdict(await bench_ingest(url, memories=memories, batch=batch))
    emit_json({"bench": "ingest", "memories": memories, "batch": batch, "results": results})
