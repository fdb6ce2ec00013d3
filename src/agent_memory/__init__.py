"""agent-fusion-memory: long-term memory for AutoGen agents.

>>> from agent_memory import MemorySystem
>>> system = MemorySystem.from_settings()  # doctest: +SKIP
>>> context = system.context(user_id="u1", friend_id="mentor")  # doctest: +SKIP
"""

from typing import TYPE_CHECKING, Any

from data_layer import AgentFusionDataLayer, MemoryRecord, MemoryType, NewMemory, NewMessage, Scope

from .settings import AgentMemorySettings, SettingsError, get_settings, load_settings

if TYPE_CHECKING:
    from .system import MemorySystem


def __getattr__(name: str) -> Any:
    # the root pulls in AutoGen; importing it on first use keeps `agent-memory --help` fast
    if name == "MemorySystem":
        from .system import MemorySystem

        return MemorySystem
    raise AttributeError(f"module 'agent_memory' has no attribute {name!r}")


__version__ = "0.1.0"

__all__ = [
    "AgentFusionDataLayer",
    "AgentMemorySettings",
    "MemoryRecord",
    "MemorySystem",
    "MemoryType",
    "NewMemory",
    "NewMessage",
    "Scope",
    "SettingsError",
    "__version__",
    "get_settings",
    "load_settings",
]
