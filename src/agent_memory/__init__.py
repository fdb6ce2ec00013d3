"""agent-fusion-memory: long-term memory for AutoGen agents.

>>> from agent_memory import AgentFusionDataLayer, load_settings
>>> settings = load_settings()  # doctest: +SKIP
"""

from data_layer import AgentFusionDataLayer, MemoryRecord, MemoryType, NewMemory, NewMessage

from .settings import AgentMemorySettings, SettingsError, get_settings, load_settings

__version__ = "0.1.0"

__all__ = [
    "AgentFusionDataLayer",
    "AgentMemorySettings",
    "MemoryRecord",
    "MemoryType",
    "NewMemory",
    "NewMessage",
    "SettingsError",
    "__version__",
    "get_settings",
    "load_settings",
]
