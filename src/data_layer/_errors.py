"""Errors raised by the data layer.

Every error says what was wrong and what to do about it; none carries another user's data.
"""

from __future__ import annotations


class DataLayerError(Exception):
    """Base class of every error the data layer raises on purpose."""


class InvalidInputError(DataLayerError, ValueError):
    """An argument is of the wrong type, out of range or malformed.

    Subclasses ``ValueError`` so callers that validate generically still catch it.
    """


class UnsupportedDatabaseURLError(InvalidInputError):
    """The database URL is malformed or names a backend this library does not support."""


class DuplicateMemoryKeyError(DataLayerError):
    """``add`` was called with a ``memory_key`` the user already has."""

    def __init__(self, memory_key: str, *, inactive: bool) -> None:
        state = " (it was deleted; the key stays reserved)" if inactive else ""
        super().__init__(
            f"memory key {memory_key!r} already exists for this user{state}; "
            "use upsert() to replace its content, or choose another key"
        )
        self.memory_key = memory_key


class MemoryNotFoundError(DataLayerError, LookupError):
    """An operation names a memory key the user does not have."""

    def __init__(self, memory_key: str) -> None:
        super().__init__(
            f"no active memory with key {memory_key!r} for this user; list the user's memories to find the right key"
        )
        self.memory_key = memory_key


class MessageNotFoundError(DataLayerError, LookupError):
    """An operation names a chat message id the user does not have."""

    def __init__(self, message_id: int) -> None:
        super().__init__(f"no chat message with id {message_id} for this user")
        self.message_id = message_id
