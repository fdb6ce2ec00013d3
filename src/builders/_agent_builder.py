"""``AgentBuilder``: a main ``AssistantAgent`` with memory (recall context, memory tools, prompt).

>>> builder = AgentBuilder(layer)  # doctest: +SKIP
>>> agent = builder.build(name="xiaozhu", model_client=client, user_id="u1", friend_id="xiaozhu")  # doctest: +SKIP
>>> await agent.run(task="还记得我上次说的汇报吗？")  # doctest: +SKIP

An application with its own builder adds memory to the keyword arguments it passes to
``AssistantAgent`` with :meth:`AgentBuilder.with_memory`, or registers a hook that runs on every
agent this builder makes (:meth:`AgentBuilder.register_hook`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from autogen_agentchat.agents import AssistantAgent
from autogen_core.models import ChatCompletionClient
from autogen_core.tools import BaseTool

from agent_memory.archive import ARCHIVE_PROMPT, ToolResultManager
from agent_memory.recall import memory_context
from agent_memory.search import HybridMemorySearch, search_from_settings
from agent_memory.settings import AgentMemorySettings, get_settings
from agent_memory.tools import MemoryToolbox
from data_layer import AgentFusionDataLayer

#: Seed 002 section 3.4.2: tells the main model when to use the memory tools.
MEMORY_TOOLS_SYSTEM_PROMPT = """你是一个智能助手，拥有访问用户历史记忆的权限。

## 记忆工具使用指南

当你需要以下信息时，请主动调用 `search_memories` 工具：

1. **用户提及历史内容**
   - 用户说："按照之前的配置"、"我之前问过"、"上次的方案"
   - 操作：调用 search_memories 搜索相关主题

2. **用户偏好与习惯**
   - 需要了解用户的风格偏好、常用设置
   - 操作：搜索 memory_types=["user_preference"] 的记忆

3. **复杂任务延续**
   - 多轮对话中需要引用之前步骤的结果
   - 操作：使用关键词搜索相关步骤

4. **不确定性澄清**
   - 对用户请求中的模糊引用不确定时
   - 操作：使用 semantic 模式搜索相关记忆

## 搜索策略建议

- **精确查找**: 使用 keywords 参数指定确切词汇
- **模糊匹配**: 使用 search_mode="semantic" 进行语义搜索
- **类型过滤**: 使用 memory_types 缩小搜索范围
- **时间范围**: 对于近期事件使用时间过滤

## 搜索结果使用

搜索结果会显示相关性分数（0-1），建议：
- 优先使用分数 > 0.8 的记忆
- 0.6-0.8 的记忆作为参考
- 多个相关记忆时综合判断

对话开头的 [记忆召回] 块列出了系统为本轮召回的记忆，形如 [memory:key:summary]；需要完整内容时用
get_memory_detail(memory_key=key)。"""

#: The main agent's memory tools (seed 002 section 3.1.3).
MAIN_AGENT_TOOLS = ("search_memories", "get_memory_detail")

Hook = Callable[[dict[str, Any]], dict[str, Any] | None]


class AgentBuilder:
    """Builds AssistantAgents that remember, for one data layer.

    ``settings`` (default: the environment) gives search, recall and budget settings; ``search``
    shares one :class:`HybridMemorySearch` (and its per-user indexes) between all agents built here.
    """

    def __init__(
        self,
        layer: AgentFusionDataLayer,
        *,
        settings: AgentMemorySettings | None = None,
        search: HybridMemorySearch | None = None,
    ) -> None:
        self.layer = layer
        self.settings = settings or get_settings()
        self.search = search or search_from_settings(layer.memory, self.settings)
        self._hooks: list[Hook] = []

    def register_hook(self, hook: Hook) -> None:
        """Run ``hook(kwargs)`` on the ``AssistantAgent`` keyword arguments of every agent built here
        (after memory was added); it may change them in place or return new ones."""
        self._hooks.append(hook)

    def memory_tools(self, *, user_id: str | int, friend_id: str | int | None = None) -> list[BaseTool[Any, Any]]:
        """``search_memories`` and ``get_memory_detail`` bound to the user and friend."""
        return MemoryToolbox(self.search, user_id=user_id, friend_id=friend_id).tools(list(MAIN_AGENT_TOOLS))

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
        the agent's own) and the memory prompts (after the agent's own system message)."""
        out = dict(kwargs)
        if out.get("model_context") is not None:
            raise ValueError("the agent already has a model_context; memory brings its own MemoryContext")
        archive = ToolResultManager(
            self.layer,
            user_id=user_id,
            conversation_id=thread_id if thread_id is not None else f"{user_id}/{friend_id or '-'}",
            thread_id=thread_id,
            threshold=self.settings.memory_archive_threshold,
        )
        out["model_context"] = memory_context(
            self.layer,
            user_id=user_id,
            friend_id=friend_id,
            thread_id=thread_id,
            search=self.search,
            events=events,
            archive=archive,
            settings=self.settings,
        )
        memory_tools = [*self.memory_tools(user_id=user_id, friend_id=friend_id), archive.load_tool()]
        out["tools"] = [*(out.get("tools") or []), *memory_tools]
        prompt = f"{MEMORY_TOOLS_SYSTEM_PROMPT}\n\n{ARCHIVE_PROMPT}"
        own = out.get("system_message")
        out["system_message"] = f"{own}\n\n{prompt}" if own else prompt
        out.setdefault("max_tool_iterations", 3)
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
        """An AssistantAgent for ``user_id`` talking as AI friend ``friend_id``, with memory."""
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
        return AssistantAgent(**kwargs)
