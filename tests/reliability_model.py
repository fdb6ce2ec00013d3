"""Shared helpers of the reliability suite: a model of what each (user, friend) scope may see, database
resets between examples, and the operation count (``AFM_RELIABILITY_OPS``).

The model restates the visibility rule of ``data_layer.Scope`` independently: a scope without a friend sees
all of its user's memories; a scope with a friend sees that friend's memories and the user's shared ones
(``friend_id`` null), never another friend's and never another user's.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
from sqlalchemy.engine import make_url

from conftest import TABLES  # the tables a test database is emptied of, kept in one place

#: Operations per backend: 1,000 by default (CI), ``make reliability`` raises it to 10,000.
DEFAULT_OPS = 1_000


USERS = ("u0", "u1", "u2")
FRIENDS = ("f0", "f1", "f2")


def operation_count() -> int:
    """The operations each backend runs (``AFM_RELIABILITY_OPS``, default 1,000)."""
    raw = os.environ.get("AFM_RELIABILITY_OPS", "").strip()
    return max(10, int(raw)) if raw else DEFAULT_OPS


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def visible(scope_user: str, scope_friend: str | None, *, user_id: str, friend_id: str | None) -> bool:
    """The model's rule (written out again, not imported, so a change to ``Scope.sees`` is caught)."""
    if user_id != scope_user:
        return False
    if scope_friend is None:
        return True
    return friend_id is None or friend_id == scope_friend


@dataclass
class ModelMemory:
    friend_id: str | None
    content: str
    active: bool = True


@dataclass
class ModelMessage:
    user_id: str
    friend_id: str | None
    content: str


@dataclass
class Model:
    """What exists, as acknowledged by the system: memories by (user, key), messages by id."""

    memories: dict[tuple[str, str], ModelMemory] = field(default_factory=dict)
    messages: dict[int, ModelMessage] = field(default_factory=dict)

    def active(self, user: str, key: str) -> ModelMemory | None:
        found = self.memories.get((user, key))
        return found if found is not None and found.active else None

    def visible_keys(self, user: str, friend: str | None) -> set[str]:
        return {
            key
            for (owner, key), mem in self.memories.items()
            if mem.active and visible(user, friend, user_id=owner, friend_id=mem.friend_id)
        }


@dataclass
class Tally:
    """Counts over a whole run (all examples of one backend)."""

    operations: int = 0
    reads: int = 0
    leaks: int = 0
    lost: int = 0
    problems: list[str] = field(default_factory=list)

    def leak(self, what: str) -> None:
        self.leaks += 1
        self.problems.append(f"LEAK {what}")

    def lose(self, what: str) -> None:
        self.lost += 1
        self.problems.append(f"LOST {what}")


def _conninfo(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def reset_database(url: str, sqlite_template: Path | None) -> None:
    """Empty the database at ``url``: copy the migrated template over a SQLite file, truncate PostgreSQL."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        assert sqlite_template is not None and parsed.database
        path = Path(parsed.database)
        for suffix in ("-wal", "-shm", "-journal"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        shutil.copy(sqlite_template, path)
        return
    with psycopg.connect(_conninfo(url), autocommit=True) as conn:
        conn.execute(f"TRUNCATE {', '.join(TABLES)} RESTART IDENTITY CASCADE")
