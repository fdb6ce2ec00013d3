"""The composition root: ``MemorySystem`` builds and wires everything from settings.

>>> from agent_memory.system import MemorySystem
>>> system = MemorySystem.from_settings()  # doctest: +SKIP

``MemorySystem.build(settings, overrides=SystemOverrides(...))`` is the one wiring; ``search_engine``
is the search engine it wires, for a benchmark or a test that needs the engine without the rest, and
``describe_engine`` what an engine was built with. ``SystemMemoryContext`` is the context a system
makes (AutoGen's ``load_component`` rebuilds it, and its system, from the dumped config).
"""

from ._context import SystemMemoryContext
from ._parts import (
    EngineDescription,
    SystemOverrides,
    describe_engine,
    search_analyzer,
    search_engine,
    settings_embedder,
)
from ._system import MemorySystem

__all__ = [
    "EngineDescription",
    "MemorySystem",
    "SystemMemoryContext",
    "SystemOverrides",
    "describe_engine",
    "search_analyzer",
    "search_engine",
    "settings_embedder",
]
