"""``MemoryContextProvider``: a Microsoft Agent Framework context provider that gives the agent the
recall a :class:`~agent_memory.context.MemoryContext` gives an AutoGen agent.

Before each run of the agent (a user turn; the run's tool rounds reuse it) it hands the run's new user
and assistant messages to a ``MemoryContext`` of the provider's scope, which saves them to the chat
history and runs the recall over them and the stored chat before them; the recall block
(``[记忆召回] ...`` and one ``[memory:key:summary]`` line per memory) is added to the run's
instructions, which the framework's chat clients send as the system message. After the run the reply
is saved too. So recall, its settings, time budget, events and background archiving are the
``MemoryContext``'s own, and the provider keeps nothing between runs: the stored chat is the
conversation, and any process can serve the next turn.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import TYPE_CHECKING, Any

from autogen_core.models import AssistantMessage, LLMMessage, UserMessage

from ...context import MemoryContext, RecallOptions
from ...system import MemorySystem

try:
    from agent_framework import AgentSession, ContextProvider, Message, SessionContext
except ModuleNotFoundError as exc:  # pragma: no cover - the extra is part of the dev install
    raise ModuleNotFoundError(
        "the Agent Framework integration needs agent-framework-core: pip install 'agent-fusion-memory[agent-framework]'"
    ) from exc

if TYPE_CHECKING:
    from agent_framework import SupportsAgentRun

__all__ = ["MemoryContextProvider"]


class MemoryContextProvider(ContextProvider):
    """Recall before every run of an Agent Framework agent, and the chat saved, for one user talking to
    AI friend ``friend_id`` (see the module docs).

    ``options`` default to the system's (``MEMORY_RECALL_*``); the block always enters as instructions
    (the framework places provider messages before the run's input, where a simulated tool call would
    come before the user's message, which strict chat templates refuse). ``events`` receives the recall
    events a ``MemoryContext`` emits.
    """

    #: The provider's ``source_id`` unless one is given (attribution of what it adds to a run).
    DEFAULT_SOURCE_ID = "agent_memory"

    def __init__(
        self,
        system: MemorySystem,
        *,
        user_id: str | int,
        friend_id: str | int | None = None,
        thread_id: str | int | None = None,
        options: RecallOptions | None = None,
        events: asyncio.Queue[Any] | None = None,
        source_id: str = DEFAULT_SOURCE_ID,
    ) -> None:
        if not isinstance(system, MemorySystem):
            raise TypeError(f"system must be a MemorySystem (MemorySystem.open(url)), got {type(system).__name__}")
        if options is not None and not isinstance(options, RecallOptions):
            raise TypeError(f"options must be a RecallOptions, got {type(options).__name__}")
        super().__init__(source_id)
        self.system = system
        self.scope = system.scope(user_id, friend_id, thread_id)
        self.options = options or system.recall_options
        self.events = events
        #: The MemoryContext of each run in progress (a run's before and after share its SessionContext).
        self._runs: weakref.WeakKeyDictionary[SessionContext, MemoryContext] = weakref.WeakKeyDictionary()

    async def before_run(
        self,
        *,
        agent: SupportsAgentRun,
        session: AgentSession,
        context: SessionContext,
        state: dict[str, Any],
    ) -> None:
        """Save the run's new messages and add the recall block of its last user message to the run's
        instructions (nothing when the recall finds nothing, is off for the user or fails)."""
        memory = MemoryContext(self.system, scope=self.scope, options=self.options, events=self.events)
        self._runs[context] = memory
        for message in context.input_messages:
            converted = _autogen_message(message, source=_agent_name(agent))
            if converted is not None:
                await memory.add_message(converted)
        await memory.get_messages()  # runs the recall of the new user turn
        if memory.last_block:
            context.extend_instructions(self.source_id, memory.last_block)

    async def after_run(
        self,
        *,
        agent: SupportsAgentRun,
        session: AgentSession,
        context: SessionContext,
        state: dict[str, Any],
    ) -> None:
        """Save the reply's assistant text (tool calls and their results are not chat history)."""
        memory = self._runs.pop(context, None)
        if memory is None or context.response is None:
            return
        for message in context.response.messages:
            if message.role == "assistant":
                converted = _autogen_message(message, source=_agent_name(agent))
                if converted is not None:
                    await memory.add_message(converted)


def _agent_name(agent: SupportsAgentRun) -> str:
    return getattr(agent, "name", None) or "assistant"


def _autogen_message(message: Message, *, source: str) -> LLMMessage | None:
    """A user or assistant message's text as the AutoGen message a MemoryContext keeps (``None``: no
    text, or another role)."""
    text = message.text
    if not text.strip():
        return None
    if message.role == "user":
        return UserMessage(content=text, source="user")
    if message.role == "assistant":
        return AssistantMessage(content=text, source=source)
    return None
