"""The project's errors: one root, a few kinds, each message saying what was wrong and what to do.

They live in the lowest layer so that every package can raise and catch them without importing
upward; ``agent_memory`` re-exports them. None carries another user's data.

::

    AgentMemoryError                     root: everything the project raises on purpose
    ├── InvalidInputError (ValueError)   an argument is of the wrong type, out of range or malformed
    │   └── UnsupportedDatabaseURLError
    ├── NotFoundError (LookupError)      the call names something the user does not have
    │   ├── MemoryNotFoundError
    │   └── MessageNotFoundError
    ├── DuplicateError                   the call would create something that already exists
    │   └── DuplicateMemoryKeyError
    └── StorageError                     the database failed (``reason`` says how; ``__cause__`` the driver error)

``DataLayerError`` is the old name of the root and stays an alias of it. Driver and OS errors never
reach callers raw: the session helpers of :class:`~data_layer.Database` turn them into
:class:`StorageError` (see ``_storage_errors``). An ``InvalidInputError`` is raised before anything
is written, the same way on SQLite and PostgreSQL.
"""

from __future__ import annotations

from typing import Literal

#: How the database failed; each reason has its own advice (``StorageError.hint``).
StorageFailure = Literal["unreachable", "terminated", "schema", "full", "busy", "conflict", "read_only", "other"]


class AgentMemoryError(Exception):
    """Base class of every error agent-fusion-memory raises on purpose."""


#: The data layer's original name for the root error; kept so existing ``except DataLayerError`` still works.
DataLayerError = AgentMemoryError


class InvalidInputError(AgentMemoryError, ValueError):
    """An argument is of the wrong type, out of range or malformed; nothing was written.

    Subclasses ``ValueError`` so callers that validate generically still catch it.
    """


class UnsupportedDatabaseURLError(InvalidInputError):
    """The database URL is malformed or names a backend this library does not support."""


class NotFoundError(AgentMemoryError, LookupError):
    """An operation names something (a memory key, a message id) the user does not have."""


class MissingPackageError(AgentMemoryError, LookupError):
    """A packaged resource a setting asks for (the word vectors, the thesaurus) is not installed; the
    message names the command that installs it."""


class DuplicateError(AgentMemoryError):
    """An operation would create something the user already has."""


class StorageError(AgentMemoryError):
    """The database could not do what was asked: unreachable, connection lost, schema out of date,
    disk full, locked for too long, ...

    ``reason`` classifies the failure, ``hint`` says what to do (it is also the message's second
    sentence), ``retryable`` whether the same call may succeed when repeated. The driver's exception
    is kept as ``__cause__``. A failed write was rolled back: nothing of it is stored.
    """

    def __init__(self, problem: str, *, reason: StorageFailure, hint: str, retryable: bool = False) -> None:
        super().__init__(f"{problem}; {hint}")
        self.problem = problem
        self.reason: StorageFailure = reason
        self.hint = hint
        self.retryable = retryable


class DuplicateMemoryKeyError(DuplicateError):
    """``add`` was called with a ``memory_key`` the user already has."""

    def __init__(self, memory_key: str, *, inactive: bool) -> None:
        state = " (inactive: deleted or superseded; the key stays reserved)" if inactive else ""
        super().__init__(
            f"memory key {memory_key!r} already exists for this user{state}; replace its content (upsert() in "
            "Python, --replace on the command line, replace=true over MCP) or choose another key"
        )
        self.memory_key = memory_key


class StaleMemoryError(AgentMemoryError):
    """An edit expected a memory's content that another edit had changed before it committed: nothing was
    written. Read the memory again and decide on its current content."""

    def __init__(self, memory_key: str) -> None:
        super().__init__(
            f"memory {memory_key[:80]!r} changed since it was read (another edit committed first); "
            "read it again and retry the edit"
        )
        self.memory_key = memory_key


class MemoryNotFoundError(NotFoundError):
    """An operation names a memory key the user does not have."""

    def __init__(self, memory_key: str) -> None:
        super().__init__(
            f"no active memory with key {memory_key!r} for this user; list the user's memories to find the right key"
        )
        self.memory_key = memory_key


class MessageNotFoundError(NotFoundError):
    """An operation names a chat message id the user does not have."""

    def __init__(self, message_id: int) -> None:
        super().__init__(f"no chat message with id {message_id} for this user; list the user's messages for valid ids")
        self.message_id = message_id
