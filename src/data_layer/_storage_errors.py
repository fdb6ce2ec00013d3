"""Driver and OS errors as :class:`StorageError`: what failed, in words, and what to do about it.

The session helpers of :class:`~data_layer.Database` call :func:`translate` on any SQLAlchemy,
driver or OS error, so callers see one error type whatever the backend. The failure is classified
from the driver's own codes first (psycopg's ``sqlstate``, sqlite3's ``sqlite_errorname``) and
its message second; the first line of the driver's message is quoted (later lines of PostgreSQL
errors can hold row values, so they are left out). A value the database refuses (PostgreSQL's
class 22 "data exception", text that is not valid Unicode) is the caller's input, not a storage
failure: it becomes :class:`InvalidInputError`.
"""

from __future__ import annotations

import errno
from typing import Any

from sqlalchemy import exc as sa_exc

from ._errors import AgentMemoryError, InvalidInputError, StorageError, StorageFailure

_UPGRADE = "run `agent-memory db upgrade` (or data_layer.upgrade(url)) against this database, then repeat the call"
_RETRY = "repeat the call; the failed transaction was rolled back, so nothing of it is stored"

#: PostgreSQL SQLSTATE codes (and classes: the first two characters) by failure.
_PG_CODES: dict[str, StorageFailure] = {
    "08": "unreachable",  # connection exception
    "28": "unreachable",  # invalid authorization
    "3D000": "unreachable",  # database does not exist
    "57P01": "terminated",  # admin shutdown / pg_terminate_backend
    "57P02": "terminated",  # crash shutdown
    "57P03": "unreachable",  # cannot connect now (starting up)
    "53100": "full",  # disk full
    "42P01": "schema",  # undefined table
    "42703": "schema",  # undefined column
    "40001": "busy",  # serialization failure
    "40P01": "busy",  # deadlock
    "55P03": "busy",  # lock not available
    "57014": "busy",  # statement timeout / cancelled
    "25006": "read_only",  # read-only transaction (a standby)
    "23": "conflict",  # integrity constraint violation
}

_SQLITE_CODES: dict[str, StorageFailure] = {
    "SQLITE_FULL": "full",
    "SQLITE_BUSY": "busy",
    "SQLITE_LOCKED": "busy",
    "SQLITE_READONLY": "read_only",
    "SQLITE_CANTOPEN": "unreachable",
    "SQLITE_NOTADB": "unreachable",
    "SQLITE_CONSTRAINT": "conflict",
}

#: Message fragments (lower case) for drivers without codes, first match wins.
_MESSAGES: tuple[tuple[str, StorageFailure], ...] = (
    ("disk is full", "full"),
    ("no space left", "full"),
    ("database or disk is full", "full"),
    ("terminating connection", "terminated"),
    ("server closed the connection", "terminated"),
    ("connection is closed", "terminated"),
    ("consuming input failed", "terminated"),
    ("connection refused", "unreachable"),
    ("could not connect", "unreachable"),
    ("connection failed", "unreachable"),
    ("timeout expired", "unreachable"),
    ("no route to host", "unreachable"),
    ("network is unreachable", "unreachable"),
    ("could not translate host", "unreachable"),
    ("failed to resolve host", "unreachable"),
    ("unable to open database file", "unreachable"),
    ("file is not a database", "unreachable"),
    ("no such table", "schema"),
    ("no such column", "schema"),
    ("has no column named", "schema"),
    ("database is locked", "busy"),
    ("readonly database", "read_only"),
    ("read-only", "read_only"),
)

_HINTS: dict[StorageFailure, str] = {
    "unreachable": "check that the database server is running and that the URL's host, port, user and database "
    "are right (a SQLite path must be a writable file), then repeat the call",
    "terminated": "the server ended the connection (restart, failover or an administrator); " + _RETRY,
    "schema": "the database schema is missing or older than this code: " + _UPGRADE,
    "full": "free disk space (or raise the database's size limit); nothing of the failed write is stored, "
    "repeat it afterwards",
    "busy": "another writer held the rows or the file for too long; " + _RETRY,
    "conflict": "a concurrent write changed the same rows; " + _RETRY,
    "read_only": "the database or its file is read-only: connect to a writable server or fix the file's permissions",
    "other": "the driver's error is attached as __cause__; repeat the call once and report it if it persists",
}

_RETRYABLE: frozenset[StorageFailure] = frozenset({"terminated", "busy", "conflict"})


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[0][:300] if lines else ""


def classify(exc: BaseException) -> StorageFailure:
    """The failure behind a SQLAlchemy, driver or OS error."""
    orig: Any = getattr(exc, "orig", None) or exc
    if isinstance(exc, sa_exc.IntegrityError):
        return "conflict"
    if isinstance(exc, sa_exc.TimeoutError):  # no pooled connection became free in time
        return "busy"
    sqlstate = getattr(orig, "sqlstate", None)
    if isinstance(sqlstate, str) and sqlstate:
        for code in (sqlstate, sqlstate[:2]):
            if code in _PG_CODES:
                return _PG_CODES[code]
    name = getattr(orig, "sqlite_errorname", None)
    if isinstance(name, str):
        for prefix, failure in _SQLITE_CODES.items():
            if name == prefix or name.startswith(prefix + "_"):
                return failure
    if isinstance(orig, OSError) and orig.errno == errno.ENOSPC:
        return "full"
    if isinstance(orig, OSError) and orig.errno in (errno.EACCES, errno.EROFS, errno.EPERM):
        return "read_only"
    if isinstance(orig, OSError) and orig.errno in (errno.EEXIST, errno.ENOTDIR, errno.ENOENT, errno.EISDIR):
        return "unreachable"  # the SQLite path cannot be a file: a file where a folder must be, or the reverse
    text = str(orig).lower()
    for fragment, failure in _MESSAGES:
        if fragment in text:
            return failure
    if getattr(exc, "connection_invalidated", False):
        return "terminated"
    return "other"


def translate(exc: BaseException, *, where: str) -> AgentMemoryError:
    """The project error for a driver or OS error raised while talking to ``where`` (no password in it).

    Raise the result ``from exc`` so the driver's error stays available as ``__cause__``.
    """
    orig: Any = getattr(exc, "orig", None) or exc
    if isinstance(orig, UnicodeError):
        return InvalidInputError(
            f"the database driver could not encode a value ({orig}); text must be valid Unicode without "
            "lone surrogates, nothing was written"
        )
    sqlstate = getattr(orig, "sqlstate", None)
    if isinstance(sqlstate, str) and sqlstate.startswith("22"):  # data exception: the value itself
        return InvalidInputError(
            f"the database refused a value: {_first_line(str(orig))}; fix the value (text without NUL "
            "characters, numbers in range), nothing was written"
        )
    failure = classify(exc)
    detail = _first_line(str(orig)) or type(orig).__name__
    problems: dict[StorageFailure, str] = {
        "unreachable": f"cannot reach {where}",
        "terminated": f"the connection to {where} was lost",
        "schema": f"{where} does not have the tables or columns this code needs",
        "full": f"{where} is full",
        "busy": f"{where} was busy for too long",
        "conflict": f"a write to {where} conflicted with another writer",
        "read_only": f"{where} is read-only",
        "other": f"database error on {where}",
    }
    return StorageError(
        f"{problems[failure]} ({detail})",
        reason=failure,
        hint=_HINTS[failure],
        retryable=failure in _RETRYABLE,
    )
