"""Shared fixtures: a real SQLite file and a real PostgreSQL database for every backend-aware test.

PostgreSQL: a database ``afm_test_<random>`` is created on the server named by
``AGENT_MEMORY_TEST_PG_URL`` (default: the local server, user postgres) for the test session,
migrated once, emptied after each test and dropped at the end. When the server cannot be reached
the PostgreSQL tests are skipped locally, and fail under ``CI=true``.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from sqlalchemy.engine import make_url

from data_layer import AgentFusionDataLayer, upgrade
from data_layer._tables import Base

# A generous recall time budget for every test: a loaded CI machine must not turn a recall test into a
# time-out test. The tests of the budget itself set their own small value.
os.environ.setdefault("MEMORY_RECALL_TIME_BUDGET_S", "30")
# Search index snapshots of PostgreSQL test databases go to a folder of this run, not the user's cache.
os.environ.setdefault(
    "MEMORY_SEARCH_INDEX_SNAPSHOT_DIR",
    str(Path(os.environ.get("TMPDIR", "/tmp")) / f"afm-test-snapshots-{uuid.uuid4().hex[:8]}"),
)

PG_ADMIN_URL = os.environ.get("AGENT_MEMORY_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
#: Every table of the models (a truncation fires no trigger: the message statistics are emptied with the rest).
TABLES = sorted(Base.metadata.tables)


def _conninfo(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def _pg_unavailable(reason: str) -> None:
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"PostgreSQL is required under CI=true but unreachable: {reason}", pytrace=False)
    pytest.skip(f"PostgreSQL unreachable ({reason}); set AGENT_MEMORY_TEST_PG_URL")


@pytest.fixture(scope="session")
def pg_admin_url() -> str:
    """The admin URL, after checking the server answers."""
    try:
        with psycopg.connect(_conninfo(PG_ADMIN_URL), connect_timeout=5) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        _pg_unavailable(str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__)
    return PG_ADMIN_URL


def create_pg_database(admin_url: str) -> str:
    """Create an empty database; returns its URL."""
    name = f"afm_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(_conninfo(admin_url), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return make_url(admin_url).set(database=name).render_as_string(hide_password=False)


def drop_pg_database(admin_url: str, url: str) -> None:
    name = make_url(url).database
    with psycopg.connect(_conninfo(admin_url), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def pg_session_url(pg_admin_url: str) -> Iterator[str]:
    """One migrated PostgreSQL database for the whole test session."""
    url = create_pg_database(pg_admin_url)
    try:
        asyncio.run(upgrade(url))
        yield url
    finally:
        drop_pg_database(pg_admin_url, url)


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated SQLite file that each test copies."""
    path = tmp_path_factory.mktemp("template") / "template.db"
    asyncio.run(upgrade(f"sqlite+aiosqlite:///{path}"))
    return path


@pytest.fixture
def fresh_pg_url(pg_admin_url: str) -> Iterator[str]:
    """An empty (unmigrated) PostgreSQL database of its own, dropped after the test."""
    url = create_pg_database(pg_admin_url)
    try:
        yield url
    finally:
        drop_pg_database(pg_admin_url, url)


def _truncate(url: str) -> None:
    with psycopg.connect(_conninfo(url), autocommit=True) as conn:
        conn.execute(f"TRUNCATE {', '.join(TABLES)} RESTART IDENTITY CASCADE")


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def backend(request: pytest.FixtureRequest) -> str:
    """Runs the test once on SQLite and once on PostgreSQL."""
    return str(request.param)


@pytest.fixture
def db_url(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A migrated, empty database of the test's backend."""
    if backend == "sqlite":
        path = tmp_path / "memory.db"
        shutil.copy(request.getfixturevalue("sqlite_template"), path)
        yield f"sqlite+aiosqlite:///{path}"
        return
    url = request.getfixturevalue("pg_session_url")
    _truncate(url)
    try:
        yield url
    finally:
        _truncate(url)


@pytest.fixture
async def layer(db_url: str) -> AsyncIterator[AgentFusionDataLayer]:
    """The data layer on a migrated, empty database of the test's backend."""
    async with AgentFusionDataLayer(db_url) as dl:
        yield dl


@pytest.fixture
async def system(db_url: str) -> AsyncIterator[Any]:
    """The composition root on a migrated, empty database of the test's backend (default settings)."""
    from agent_memory.settings import load_settings
    from agent_memory.system import MemorySystem

    async with MemorySystem.from_settings(load_settings(memory_database_url=db_url)) as built:
        yield built


@pytest.fixture
async def words_system(db_url: str) -> AsyncIterator[Any]:
    """The composition root with the hashing embedder: what the words alone find (folding, compounds,
    the thesaurus, the word neighbours, session lifting). The default embedder also lists memories
    alike in meaning alone, under the recall threshold; ``tests/storage/test_word_vectors.py`` tests that."""
    from agent_memory.settings import load_settings
    from agent_memory.system import MemorySystem

    settings = load_settings(memory_database_url=db_url, memory_search_embedder="hashing")
    async with MemorySystem.from_settings(settings) as built:
        yield built


@pytest.fixture(scope="session", autouse=True)
def _remove_snapshot_folder() -> Iterator[None]:
    """The run's search index snapshots are removed when the run ends."""
    yield
    shutil.rmtree(os.environ["MEMORY_SEARCH_INDEX_SNAPSHOT_DIR"], ignore_errors=True)
