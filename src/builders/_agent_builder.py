"""``AgentBuilder``: a main ``AssistantAgent`` with memory (recall context, memory tools, prompt).

>>> builder = AgentBuilder(system)  # doctest: +SKIP
>>> agent = builder.build(name="xiaozhu", model_client=client, user_id="u1", friend_id="xiaozhu")  # doctest: +SKIP
>>> await agent.run(task="还记得我上次说的汇报吗？")  # doctest: +SKIP

An application with its own builder adds memory to the keyword arguments it passes to
``AssistantAgent`` with :meth:`AgentBuilder.with_memory`, or registers a hook that runs on every
agent this builder makes (:meth:`AgentBuilder.register_hook`).

The main agent reflects on tool results (``reflect_on_tool_use=True``) so a turn always ends in the
model's own words, never in raw tool JSON, and its reply is what the memory context saves.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from autogen_agentchat.agents import AssistantAgent
from autogen_core.models import ChatCompletionClient
from autogen_core.tools import BaseTool

from agent_memory.slots import RunCodeTool
from agent_memory.system import MemorySystem

from ._prompts import (
    ARCHIVE_TOOL_PROMPT,
    MEMORY_TOOLS_PROMPT,
    RECALL_BLOCK_PROMPT,
    RUN_CODE_PROMPT,
    Language,
    detect_language,
)

#: The main agent's memory tools (the recall itself runs in its own agent).
MAIN_AGENT_TOOLS = ("search_memories", "get_memory_detail")

Hook = Callable[[dict[str, Any]], dict[str, Any] | None]


class AgentBuilder:
    """Builds AssistantAgents that remember, on one :class:`MemorySystem`.

    The system's settings decide the rest: ``MEMORY_TOOLS_ENABLE_PROACTIVE_SEARCH`` gives the agent
    ``search_memories`` and ``get_memory_detail``; ``MEMORY_TOOLS_ENABLE_CODE_EXECUTION`` gives it
    ``run_code`` (isolated code runs with memory slots); ``MEMORY_LANGUAGE`` the language of the added
    instructions (``auto``: that of the application's system message). ``archive=False`` leaves big
    tool results in the window (and the agent without ``load_tool_history``).
    """

    def __init__(self, system: MemorySystem, *, archive: bool = True) -> None:
        if not isinstance(system, MemorySystem):
            raise TypeError("AgentBuilder needs a MemorySystem, e.g. AgentBuilder(MemorySystem.from_settings())")
        self.system = system
        self.archive = archive
        self._hooks: list[Hook] = []

    def register_hook(self, hook: Hook) -> None:
        """Run ``hook(kwargs)`` on the ``AssistantAgent`` keyword arguments of every agent built here
        (after memory was added); it may change them in place or return new ones."""
        self._hooks.append(hook)

    def memory_tools(self, *, user_id: str | int, friend_id: str | int | None = None) -> list[BaseTool[Any, Any]]:
        """``search_memories`` and ``get_memory_detail`` bound to the user and friend."""
        return self.system.toolbox(self.system.scope(user_id, friend_id)).tools(list(MAIN_AGENT_TOOLS))

    def code_tool(
        self, *, user_id: str | int, friend_id: str | int | None = None, events: asyncio.Queue[Any] | None = None
    ) -> RunCodeTool:
        """``run_code`` bound to the user and friend: code with ``[memory:key]`` slots (or a remembered
        command) runs through the system's isolated :class:`CommandExecutor`, streamed on ``events``.
        Agents get it when ``MEMORY_TOOLS_ENABLE_CODE_EXECUTION`` is on (off by default)."""
        return RunCodeTool(self.system.executor(user_id=user_id, friend_id=friend_id), events=events)

    def language(self, system_message: str | None) -> Language:
        """The language of the added instructions."""
        configured = self.system.settings.memory_language
        return detect_language(system_message) if configured == "auto" else configured

    def with_memory(
        self,
        kwargs: dict[str, Any],
        *,
        user_id: str | int,
        friend_id: str | int | None = None,
        thread_id: str | int | None = None,
        events: asyncio.Queue[Any] | None = None,
    ) -> dict[str, Any]:
        """``AssistantAgent`` keyword arguments with memory added: the recall context (with the
        tool-result archive of this conversation), the memory tools and ``load_tool_history`` (after
        the agent's own) and the memory instructions (after the agent's own system message)."""
        out = dict(kwargs)
        if out.get("model_context") is not None:
            raise ValueError("the agent already has a model_context; memory brings its own MemoryContext")
        context = self.system.context(
            user_id=user_id, friend_id=friend_id, thread_id=thread_id, events=events, archive=self.archive
        )
        out["model_context"] = context
        own = out.get("system_message")
        lang = self.language(own)
        tools: list[BaseTool[Any, Any]] = []
        prompts = []
        if self.system.settings.memory_tools_enable_proactive_search:
            tools += self.memory_tools(user_id=user_id, friend_id=friend_id)
            prompts.append(MEMORY_TOOLS_PROMPT[lang])
        else:
            prompts.append(RECALL_BLOCK_PROMPT[lang])
        if context.archive is not None:
            tools.append(context.archive.load_tool())
            prompts.append(ARCHIVE_TOOL_PROMPT[lang])
        if self.system.settings.memory_tools_enable_code_execution:
            tools.append(self.code_tool(user_id=user_id, friend_id=friend_id, events=events))
            prompts.append(RUN_CODE_PROMPT[lang])
        out["tools"] = [*(out.get("tools") or []), *tools]
        prompt = "\n\n".join(prompts)
        out["system_message"] = f"{own}\n\n{prompt}" if own else prompt
        out.setdefault("max_tool_iterations", 3)
        out.setdefault("reflect_on_tool_use", True)
        return out

    def build(
        self,
        *,
        name: str,
        model_client: ChatCompletionClient,
        user_id: str | int,
        friend_id: str | int | None = None,
        thread_id: str | int | None = None,
        system_message: str | None = None,
        tools: Sequence[Any] = (),
        events: asyncio.Queue[Any] | None = None,
        **agent_kwargs: Any,
    ) -> AssistantAgent:
        """An AssistantAgent for ``user_id`` talking as AI friend ``friend_id``, with memory.

        The model client must support function calling when the agent has tools (the memory tools,
        ``load_tool_history``): give a client for a non-OpenAI model a ``model_info`` with
        ``function_calling=True`` (see the README).
        """
        kwargs: dict[str, Any] = {
            "name": name,
            "model_client": model_client,
            "system_message": system_message,
            "tools": list(tools),
            **agent_kwargs,
        }
        kwargs = self.with_memory(kwargs, user_id=user_id, friend_id=friend_id, thread_id=thread_id, events=events)
        for hook in self._hooks:
            changed = hook(kwargs)
            if changed is not None:
                kwargs = changed
        if kwargs.get("tools") and not model_client.model_info.get("function_calling", False):
            raise ValueError(
                f"the model client of agent {name!r} says it does not support function calling, but memory gives the "
                "agent tools: pass model_info={..., 'function_calling': True} to the client if the model can call "
                "tools, or build without tools: MEMORY_TOOLS_ENABLE_PROACTIVE_SEARCH=false and "
                "AgentBuilder(system, archive=False)"
            )
        return AssistantAgent(**kwargs)
