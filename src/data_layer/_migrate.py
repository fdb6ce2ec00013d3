"""Run the Alembic migrations programmatically (what ``agent-memory db ...`` calls).

Migrations run on a dedicated engine (SQLite with foreign keys off so batch table rebuilds are
safe) inside one transaction. Driver errors come out as :class:`~data_layer.StorageError`.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import URL, Connection

from ._engine import backend_of, create_engine, describe, normalize_url, storage_errors
from ._tables import Base, is_engine_object

MIGRATIONS_DIR = Path(__file__).with_name("migrations")


def alembic_config(url: str | URL | None = None) -> Config:
    """An Alembic ``Config`` pointing at this package's migrations."""
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    if url is not None:
        cfg.set_main_option("sqlalchemy.url", normalize_url(url).render_as_string(hide_password=False))
    return cfg


def head_revision() -> str:
    """The newest revision id shipped with this version of the library."""
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None
    return head


async def _run(url: str | URL, fn: Any) -> Any:
    parsed = normalize_url(url)
    async with storage_errors(describe(parsed)):
        engine = create_engine(parsed, sqlite_foreign_keys=False)
        try:
            async with engine.begin() as conn:
                return await conn.run_sync(fn)
        finally:
            await engine.dispose()


async def upgrade(url: str | URL, revision: str = "head") -> str | None:
    """Migrate the database up to ``revision`` (default: the newest). Returns the revision reached."""

    def _do(conn: Connection) -> str | None:
        cfg = alembic_config(url)
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)
        return MigrationContext.configure(conn).get_current_revision()

    result: str | None = await _run(url, _do)
    return result


async def downgrade(url: str | URL, revision: str = "base") -> str | None:
    """Migrate the database down to ``revision`` (default: no tables). Returns the revision reached."""

    def _do(conn: Connection) -> str | None:
        cfg = alembic_config(url)
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, revision)
        return MigrationContext.configure(conn).get_current_revision()

    result: str | None = await _run(url, _do)
    return result


async def current_revision(url: str | URL) -> str | None:
    """The revision the database is at (``None``: never migrated)."""

    def _do(conn: Connection) -> str | None:
        return MigrationContext.configure(conn).get_current_revision()

    result: str | None = await _run(url, _do)
    return result


def _not_engine(name: str | None, kind: str, parent_names: Any) -> bool:
    """Leave the message search engine out of the comparison: the migrations make it, not the models."""
    return not is_engine_object(name, kind)


async def schema_differences(url: str | URL) -> list[Any]:
    """What Alembic's autogenerate finds between the models and the migrated database ([] = agree)."""
    backend = backend_of(normalize_url(url))

    def _do(conn: Connection) -> list[Any]:
        opts = {
            "compare_type": True,
            "render_as_batch": backend == "sqlite",
            "include_name": _not_engine,
            "include_object": lambda obj, name, kind, reflected, other: _not_engine(name, kind, {}),
        }
        ctx = MigrationContext.configure(conn, opts=opts)
        with warnings.catch_warnings():
            # SQLite's reflection skips the engine's expression index (is_engine_object), with a warning
            warnings.filterwarnings("ignore", "Skipped unsupported reflection of expression-based index")
            return list(compare_metadata(ctx, Base.metadata))

    result: list[Any] = await _run(url, _do)
    return result
