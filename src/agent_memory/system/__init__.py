"""The composition root: ``MemorySystem`` builds and wires everything from settings.

>>> from agent_memory.system import MemorySystem
>>> system = MemorySystem.from_settings()  # doctest: +SKIP
"""

from ._system import MemorySystem

__all__ = ["MemorySystem"]
