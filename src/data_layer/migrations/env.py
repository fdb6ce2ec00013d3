"""Alembic environment: works with a connection handed over by ``data_layer.upgrade`` (the usual way)
or on its own with ``alembic -x url=...`` / ``sqlalchemy.url``."""

from __future__ import annotations

import asyncio

from alembic import context
from sqlalchemy.engine import Connection

from data_layer._engine import create_engine
from data_layer._tables import Base, is_engine_object

target_metadata = Base.metadata


def _configure(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
        transaction_per_migration=False,
        # the message search engine is made by the migrations, not by the models
        include_name=lambda name, kind, parents: not is_engine_object(name, kind),
        include_object=lambda obj, name, kind, reflected, other: not is_engine_object(name, kind),
    )
    with context.begin_transaction():
        context.run_migrations()


async def _run_async(url: str) -> None:
    engine = create_engine(url, sqlite_foreign_keys=False)
    try:
        async with engine.begin() as conn:
            await conn.run_sync(_configure)
    finally:
        await engine.dispose()


def run() -> None:
    connection = context.config.attributes.get("connection")
    if connection is not None:
        _configure(connection)
        return
    url = context.get_x_argument(as_dictionary=True).get("url") or context.config.get_main_option("sqlalchemy.url")
    if not url:
        raise SystemExit("no database URL: pass -x url=... or set sqlalchemy.url")
    asyncio.run(_run_async(url))


if context.is_offline_mode():
    raise SystemExit("offline (SQL script) mode is not supported; run against a database")
run()
