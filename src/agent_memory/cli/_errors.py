"""Errors as the CLI prints them: what went wrong (one line) and what to do (one line).

:func:`explain` checks the exception against the library's error classes whose modules are already
loaded (an error can only come from a loaded module), so explaining a settings error does not load
SQLAlchemy. The data layer wraps driver errors in ``StorageError``; the driver error it keeps as
``__cause__`` is told apart by its message, so the hint can name the URL's sources.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: Where a database URL comes from, for the hints.
URL_SOURCES = "--url or MEMORY_DATABASE_URL"

_QUOTED = re.compile(r'"([^"]*)"')


Handler = Callable[[BaseException, str | None], tuple[str, str | None]]


def explain(exc: BaseException, *, url: str | None = None) -> tuple[str, str | None]:
    """``(message, hint)`` for an error raised by a command on the database ``url``."""
    for kind, handler in _handlers():
        if isinstance(exc, kind):
            return handler(exc, url)
    return f"unexpected {type(exc).__name__}: {_first_line(str(exc)) or '(no message)'}", None


def _handlers() -> list[tuple[type[BaseException], Handler]]:
    """The error classes to check, most specific first."""
    found: list[tuple[type[BaseException], Handler]] = []
    for module, name, handler in (
        ("agent_memory.settings", "SettingsError", _settings),
        ("data_layer", "StorageError", _storage),
        ("data_layer", "AgentMemoryError", _data_layer),
        ("sqlalchemy.exc", "DBAPIError", _dbapi),
        ("alembic.util", "CommandError", _alembic),
    ):
        kind = getattr(sys.modules.get(module), name, None)
        if isinstance(kind, type) and issubclass(kind, BaseException):
            found.append((kind, handler))
    return [*found, (OSError, _os_error), (UnicodeError, _not_utf8), (ValueError, _data_layer)]


def _not_utf8(exc: BaseException, _url: str | None) -> tuple[str, str | None]:
    """Text from the command line that is not UTF-8 (Python keeps such bytes as lone surrogates), or
    output the terminal's encoding cannot show."""
    if isinstance(exc, UnicodeEncodeError) and exc.reason == "surrogates not allowed":
        return (
            "an argument (a text, a name or a path) holds bytes that are not UTF-8",
            "type it again in a UTF-8 terminal (LANG=C.UTF-8), or rename the file",
        )
    encoding = getattr(exc, "encoding", "?")
    return (
        f"the output cannot be written in the terminal's encoding ({encoding})",
        "run it in a UTF-8 terminal (LANG=C.UTF-8 or PYTHONIOENCODING=utf-8)",
    )


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else ""


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _where(url: str | None) -> str:
    """``host:port`` of a PostgreSQL URL or ``SQLite file PATH`` (never a password)."""
    if not url:
        return "the database"
    try:
        from sqlalchemy.engine import make_url

        parsed = make_url(url.replace("postgres://", "postgresql://", 1))
    except Exception:  # a malformed URL is reported elsewhere
        return "the database"
    if parsed.drivername.startswith("sqlite"):
        return f"SQLite file {parsed.database}"
    return f"{parsed.host or 'localhost'}:{parsed.port or 5432}"


def _settings(exc: BaseException, url: str | None) -> tuple[str, str | None]:
    text = str(exc).removeprefix("invalid settings:").strip()
    parts = [_one_line(line) for line in text.splitlines() if line.strip()]
    return f"invalid settings: {'; '.join(parts)}", "fix the variable in the environment or .env (see .env.example)"


def _data_layer(exc: BaseException, url: str | None) -> tuple[str, str | None]:
    # the data layer's messages already say what to do
    return _one_line(str(exc)), None


def _storage(exc: BaseException, url: str | None) -> tuple[str, str | None]:
    """A :class:`data_layer.StorageError`: the driver error it wraps is explained with the URL's
    sources in mind; an OS error or an unknown cause keeps the library's problem and hint."""
    cause = exc.__cause__
    dbapi = getattr(sys.modules.get("sqlalchemy.exc"), "DBAPIError", None)
    if cause is not None and isinstance(dbapi, type) and isinstance(cause, dbapi):
        message, hint = _dbapi(cause, url)
        return message, hint or getattr(exc, "hint", None)
    if isinstance(cause, OSError):
        return _os_error(cause, url)
    return _one_line(getattr(exc, "problem", str(exc))), getattr(exc, "hint", None)


def _os_error(exc: BaseException, url: str | None) -> tuple[str, str | None]:
    """An OS error: the database's advice only when the file is the database (or a folder on its way);
    another file (benchmark data, an import) is the command's own argument to check."""
    assert isinstance(exc, OSError)
    target = exc.filename or (url and _where(url)) or "a file"
    reason = exc.strerror or _one_line(str(exc))
    if isinstance(exc, FileExistsError | NotADirectoryError):
        reason = "a file is in the way of a folder"
    if not _is_database_path(exc.filename, url):
        return f"cannot open {target}: {reason}", "check the path you gave"
    return f"cannot create or open {target}: {reason}", f"choose a writable path with {URL_SOURCES}"


def _is_database_path(filename: object, url: str | None) -> bool:
    """Whether ``filename`` (an OS error's) is the SQLite file of ``url`` or a folder that holds it; an
    error naming no file is taken to be the database's."""
    if filename is None:
        return True
    database = sqlite_file(url)
    if database is None:
        return False
    path, db = Path(str(filename)).expanduser().absolute(), database.absolute()
    return path == db or db.is_relative_to(path)


def sqlite_file(url: Any) -> Path | None:
    """The file of a SQLite URL, given as a string or a SQLAlchemy ``URL`` (``None``: another backend, in
    memory, a ``file:`` URI, or not a URL).

    >>> sqlite_file("sqlite+aiosqlite:////tmp/m.db"), sqlite_file("postgresql+psycopg://h/db")
    (PosixPath('/tmp/m.db'), None)
    """
    try:
        from sqlalchemy.engine import make_url

        parsed = make_url(url) if url else None
    except Exception:  # a malformed URL is reported elsewhere
        return None
    path = parsed.database if parsed is not None and parsed.get_backend_name() == "sqlite" else None
    if not path or path == ":memory:" or path.startswith("file:"):
        return None
    return Path(path).expanduser()


def _dbapi(exc: BaseException, url: str | None) -> tuple[str, str | None]:
    """SQLAlchemy's wrapper of a driver error (psycopg, sqlite3)."""
    orig: Any = getattr(exc, "orig", None)
    text = str(orig if orig is not None else exc)
    first = _first_line(text)
    where = _where(url)
    lowered = text.lower()
    quoted = _QUOTED.findall(text)
    if "does not exist" in lowered and "database" in lowered and quoted:
        name = quoted[-1]
        return (
            f'database "{name}" does not exist on {where}',
            f"create it (`createdb {name}`, then `agent-memory db upgrade`) or fix the name in {URL_SOURCES}",
        )
    if "does not exist" in lowered and "role" in lowered and quoted:
        return (
            f'role (user) "{quoted[-1]}" does not exist on {where}',
            f"put an existing user in the URL (postgresql+psycopg://USER@HOST/DB) with {URL_SOURCES}",
        )
    if "password authentication failed" in lowered or "no password supplied" in lowered:
        return (
            f"the server at {where} refused the login: {_strip_driver(first)}",
            f"check user and password in {URL_SOURCES}",
        )
    if "failed to resolve host" in lowered or "could not translate host name" in lowered:
        return f"unknown database host: {_strip_driver(first)}", f"fix the host in {URL_SOURCES}"
    if any(
        s in lowered
        for s in (
            "connection refused",
            "timeout expired",
            "could not connect",
            "no route to host",
            "connection failed",
            "network is unreachable",
        )
    ):
        return (
            f"cannot reach the PostgreSQL server at {where} ({_reason(first)})",
            f"start the server, or fix host and port in {URL_SOURCES}",
        )
    folder = sqlite_file(url)
    if "unable to open database file" in lowered and folder is not None and folder.is_dir():
        return f"{folder} is a folder, not a SQLite file", f"name a file in it, e.g. --db {folder / 'memory.db'}"
    if "unable to open database file" in lowered or "readonly database" in lowered:
        return (
            f"cannot write the {where}: {first}",
            f"check that its folder is writable, or choose another path with {URL_SOURCES}",
        )
    if "database is locked" in lowered:
        return f"the {where} is locked by another writer", "wait for the other process to finish, then run it again"
    if "file is not a database" in lowered:
        return f"the {where} is not a SQLite database", f"choose another path with {URL_SOURCES}"
    if "no such table" in lowered or ("relation" in lowered and "does not exist" in lowered):
        return f"{where} has no agent-memory tables: {first}", "run `agent-memory db upgrade`"
    return f"database error on {where}: {_strip_driver(first)}", None


def _strip_driver(line: str) -> str:
    return re.sub(r"^\([\w.]+\)\s*", "", line).removeprefix("connection failed: ")


def _reason(line: str) -> str:
    """The last part of libpq's ``connection to server at ... failed: REASON``."""
    return _strip_driver(line).rsplit("failed:", 1)[-1].strip() or line


def _alembic(exc: BaseException, url: str | None) -> tuple[str, str | None]:
    return f"migration: {_one_line(str(exc))}", "see `agent-memory db current` for the revisions"
