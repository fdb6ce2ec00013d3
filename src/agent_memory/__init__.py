"""agent-fusion-memory: long-term memory for AutoGen agents.

>>> from agent_memory import MemorySystem
>>> system = MemorySystem.from_settings()  # doctest: +SKIP
>>> context = system.context(user_id="u1", friend_id="mentor")  # doctest: +SKIP
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from data_layer import (
        AgentFusionDataLayer,
        AgentMemoryError,
        DuplicateError,
        DuplicateMemoryKeyError,
        InvalidInputError,
        MemoryNotFoundError,
        MemoryRecord,
        MemoryType,
        MessageNotFoundError,
        NewMemory,
        NewMessage,
        NotFoundError,
        Scope,
        StorageError,
    )

    from .settings import AgentMemorySettings, SettingsError, load_settings
    from .system import MemorySystem

#: The project's errors (defined in the data layer, the lowest layer; see ``data_layer._errors``):
#: ``AgentMemoryError`` is the root; ``InvalidInputError``, ``NotFoundError``, ``DuplicateError`` and
#: ``StorageError`` the kinds a caller handles.
_ERRORS = (
    "AgentMemoryError",
    "DuplicateError",
    "DuplicateMemoryKeyError",
    "InvalidInputError",
    "MemoryNotFoundError",
    "MessageNotFoundError",
    "NotFoundError",
    "StorageError",
)

# Loaded on first use: importing a subpackage (`agent-memory --help` imports agent_memory.cli) must
# not pull in SQLAlchemy, pydantic-settings or AutoGen.
_LAZY = {
    **dict.fromkeys(
        ("AgentFusionDataLayer", "MemoryRecord", "MemoryType", "NewMemory", "NewMessage", "Scope", *_ERRORS),
        "data_layer",
    ),
    **dict.fromkeys(("AgentMemorySettings", "SettingsError", "load_settings"), "agent_memory.settings"),
    "MemorySystem": "agent_memory.system",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'agent_memory' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


__version__ = "0.1.0"

__all__ = [
    "AgentFusionDataLayer",
    "AgentMemoryError",
    "AgentMemorySettings",
    "DuplicateError",
    "DuplicateMemoryKeyError",
    "InvalidInputError",
    "MemoryNotFoundError",
    "MemoryRecord",
    "MemorySystem",
    "MemoryType",
    "MessageNotFoundError",
    "NewMemory",
    "NewMessage",
    "NotFoundError",
    "Scope",
    "SettingsError",
    "StorageError",
    "__version__",
    "load_settings",
]
