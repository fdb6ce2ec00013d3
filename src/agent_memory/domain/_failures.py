"""What a failed tool call tells its caller: the kinds of failure, decided once, worded by each surface.

:func:`failure_kind` sorts an exception into the kinds a caller acts on (its arguments were wrong, it
named nothing that exists, a duplicate, the database failed, and whether retrying helps, another library
error, a bug); each surface (the memory tools a model calls, in Chinese; the MCP server, in English)
words those kinds in its :class:`FailureWords` and :func:`failure_text` puts them together.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from data_layer import AgentMemoryError, DuplicateError, InvalidInputError, NotFoundError, StorageError

FailureKind = Literal["invalid", "duplicate", "not_found", "storage", "library", "internal"]


def failure_kind(exc: BaseException) -> FailureKind:
    """The kind of ``exc`` (a duplicate is one only where the surface words it; see :class:`FailureWords`).

    >>> failure_kind(InvalidInputError("x")), failure_kind(ValueError("x"))
    ('invalid', 'internal')
    """
    if isinstance(exc, InvalidInputError):
        return "invalid"
    if isinstance(exc, DuplicateError):
        return "duplicate"
    if isinstance(exc, NotFoundError):
        return "not_found"
    if isinstance(exc, StorageError):
        return "storage"
    if isinstance(exc, AgentMemoryError):
        return "library"
    return "internal"


@dataclass(frozen=True, slots=True)
class FailureWords:
    """How one surface words each kind. ``{error}`` is the exception's message; for a storage failure
    ``{reason}`` and ``{problem}`` are its parts and ``{advice}`` is ``retry`` or ``no_retry``; for a bug
    ``{name}`` is the exception's class and ``{error}`` its message cut to 300 characters. ``duplicate``
    ``None``: a duplicate is worded as the library error it also is."""

    invalid: str
    not_found: str
    storage: str
    retry: str
    no_retry: str
    library: str
    internal: str
    duplicate: str | None = None


def failure_text(exc: BaseException, words: FailureWords) -> str:
    """The message a caller reads for ``exc``, in ``words``."""
    kind = failure_kind(exc)
    if kind == "duplicate" and words.duplicate is None:
        kind = "library"
    if kind == "storage":
        assert isinstance(exc, StorageError)
        advice = words.retry if exc.retryable else words.no_retry
        return words.storage.format(reason=exc.reason, problem=exc.problem, advice=advice)
    if kind == "internal":
        return words.internal.format(name=type(exc).__name__, error=str(exc)[:300])
    template = words.duplicate if kind == "duplicate" else getattr(words, kind)
    assert isinstance(template, str)
    return template.format(error=exc)
