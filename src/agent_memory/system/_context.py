"""The context a :class:`MemorySystem` makes: a :class:`~agent_memory.context.MemoryContext` that AutoGen
rebuilds from its dumped config by building the system again (``load_component``)."""

from __future__ import annotations

from typing import Self

from autogen_core.models import ChatCompletionClient

from ..context import MemoryContext, MemoryContextConfig
from ..settings import load_settings
from ._parts import SystemOverrides


class SystemMemoryContext(MemoryContext):
    """A :class:`MemoryContext` of a memory system; loaded from its config, it builds a system of its own
    (on the config's database, or ``MEMORY_DATABASE_URL`` when the dumped URL held a password) and
    closes it with itself."""

    component_provider_override = "agent_memory.system.SystemMemoryContext"

    @classmethod
    def _from_config(cls, config: MemoryContextConfig) -> Self:
        from ._system import MemorySystem  # the system module makes these contexts: imported when one loads

        client = ChatCompletionClient.load_component(config.model_client) if config.model_client else None
        overrides = SystemOverrides(database_url=config.database_url or None, recall_client=client)
        system = MemorySystem.build(load_settings(), overrides=overrides)
        context = system.context(
            user_id=config.user_id,
            friend_id=config.friend_id,
            thread_id=config.thread_id,
            options=config.options,
            archive=config.archive,
            persist=config.persist,
        )
        context._owns_system = True
        # the system builds a SystemMemoryContext, not ``cls``: a subclass loaded from a config overrides this
        return context  # type: ignore[return-value]
