"""Memory for Microsoft Agent Framework agents: the same recall and the same chat history as the AutoGen
path, as a context provider (needs the ``agent-framework`` extra).

>>> from agent_memory.integrations.agent_framework import MemoryContextProvider  # doctest: +SKIP
>>> agent = Agent(client, "你是职场导师。",
...               context_providers=[MemoryContextProvider(system, user_id="u1", friend_id="mentor")])  # doctest: +SKIP
"""

from ._provider import MemoryContextProvider

__all__ = ["MemoryContextProvider"]
