"""Throw-away databases for benchmarks: a SQLite file in a temporary folder, a PostgreSQL database
created on the server and dropped afterwards."""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from data_layer import normalize_url

DEFAULT_PG_ADMIN_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"


@asynccontextmanager
async def temporary_sqlite() -> AsyncIterator[str]:
    """The URL of a new SQLite file, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="agent-memory-") as folder:
        yield f"sqlite+aiosqlite:///{Path(folder) / 'bench.db'}"


@asynccontextmanager
async def temporary_postgres(admin_url: str = DEFAULT_PG_ADMIN_URL, *, prefix: str = "afm_tmp") -> AsyncIterator[str]:
    """Create a fresh PostgreSQL database through ``admin_url`` and drop it afterwards."""
    admin = normalize_url(admin_url)
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    engine = create_async_engine(admin, isolation_level="AUTOCOMMIT")
    try:
        async with engine.connect() as conn:
            await conn.execute(text(f'CREATE DATABASE "{name}"'))
        try:
            yield admin.set(database=name).render_as_string(hide_password=False)
        finally:
            async with engine.connect() as conn:
                await conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        await engine.dispose()


async def analyze(url: str) -> None:
    """``ANALYZE`` a PostgreSQL database: the statistics autovacuum gathers soon after a bulk write. Until
    then the planner sees empty tables, and a connection keeps the plans it made for them (the foreign key
    checks of a bulk insert among them, which then scan the table they check, every row)."""
    engine = create_async_engine(normalize_url(url), isolation_level="AUTOCOMMIT")
    try:
        async with engine.connect() as conn:
            await conn.execute(text("ANALYZE"))
    finally:
        await engine.dispose()
