"""Settings: ``MEMORY_*`` environment variables and ``.env`` (see ``.env.example``).

>>> from agent_memory.settings import load_settings
>>> load_settings(memory_recall_rounds=2).memory_recall_rounds
2
"""

from data_layer import ChatSettings, MemoryRecallSettings, UserSettings

from ._reference import settings_reference
from ._settings import (
    AgentMemorySettings,
    EmbeddingEndpoint,
    SearchMode,
    SettingsError,
    default_database_url,
    load_settings,
)

__all__ = [
    "AgentMemorySettings",
    "ChatSettings",
    "EmbeddingEndpoint",
    "MemoryRecallSettings",
    "SearchMode",
    "SettingsError",
    "UserSettings",
    "default_database_url",
    "load_settings",
    "settings_reference",
]
