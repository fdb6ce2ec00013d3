"""``OfflineClient``: the ``ChatCompletionClient`` shell of the library's deterministic clients, and
``PlannerClient``, an offline planner on it.

An offline planner answers each model call with the next tool call its ``plan`` chooses, so the
recall runs through the real ``AssistantAgent`` loop, its tools and events, with or without a model.
The web chat's offline responder (``agent_memory.web``) answers with text on the same shell. The
shell holds the protocol (usage, token estimates, capabilities from ``info``); a planner only
implements :meth:`PlannerClient.plan`.
"""

from __future__ import annotations

import json
from abc import abstractmethod
from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import Any, Literal

from autogen_core import CancellationToken, FunctionCall
from autogen_core.models import (
    ChatCompletionClient,
    CreateResult,
    LLMMessage,
    ModelCapabilities,
    ModelFamily,
    ModelInfo,
    RequestUsage,
)
from autogen_core.tools import Tool, ToolSchema
from pydantic import BaseModel

PLANNER_INFO = ModelInfo(
    vision=False,
    function_calling=True,
    json_output=True,
    family=ModelFamily.UNKNOWN,
    structured_output=False,
    multiple_system_messages=True,
)


class OfflineClient(ChatCompletionClient):
    """The protocol part of a deterministic client: usage bookkeeping, token estimates, and the
    capabilities of ``info``. Subclasses implement ``create`` and ``create_stream`` and add each
    result's usage with :meth:`_count`."""

    info: ModelInfo = PLANNER_INFO
    chars_per_token = 2
    context_tokens = 1_000_000

    def __init__(self) -> None:
        self._usage = RequestUsage(prompt_tokens=0, completion_tokens=0)

    def _count(self, usage: RequestUsage) -> None:
        self._usage = RequestUsage(
            prompt_tokens=self._usage.prompt_tokens + usage.prompt_tokens,
            completion_tokens=self._usage.completion_tokens + usage.completion_tokens,
        )

    async def close(self) -> None:
        """Nothing to release."""

    def actual_usage(self) -> RequestUsage:
        return self._usage

    def total_usage(self) -> RequestUsage:
        return self._usage

    def count_tokens(self, messages: Sequence[LLMMessage], *, tools: Sequence[Tool | ToolSchema] = ()) -> int:
        """A rough estimate (characters / ``chars_per_token``): nothing is sent anywhere."""
        return sum(len(str(m.content)) for m in messages) // self.chars_per_token

    def remaining_tokens(self, messages: Sequence[LLMMessage], *, tools: Sequence[Tool | ToolSchema] = ()) -> int:
        return max(0, self.context_tokens - self.count_tokens(messages, tools=tools))

    @property
    def capabilities(self) -> ModelCapabilities:
        info = self.info
        return {
            "vision": info["vision"],
            "function_calling": info["function_calling"],
            "json_output": info["json_output"],
        }

    @property
    def model_info(self) -> ModelInfo:
        return self.info


class PlannerClient(OfflineClient):
    """A deterministic client whose answer is ``plan(messages)`` as a tool call (text "TERMINATE"
    when that tool is not offered). ``call_prefix`` names its call ids."""

    call_prefix = "plan"

    def __init__(self) -> None:
        super().__init__()
        self._calls = 0

    @abstractmethod
    def plan(self, messages: Sequence[LLMMessage]) -> tuple[str, dict[str, Any]]:
        """The next ``(tool name, arguments)`` for this conversation."""

    async def create(
        self,
        messages: Sequence[LLMMessage],
        *,
        tools: Sequence[Tool | ToolSchema] = (),
        tool_choice: Tool | Literal["auto", "required", "none"] = "auto",
        json_output: bool | type[BaseModel] | None = None,
        extra_create_args: Mapping[str, Any] = {},
        cancellation_token: CancellationToken | None = None,
    ) -> CreateResult:
        """The planned tool call as a ``CreateResult``."""
        name, arguments = self.plan(messages)
        self._calls += 1
        offered = {t["name"] if isinstance(t, dict) else t.name for t in tools}
        if tools and name not in offered:
            return CreateResult(finish_reason="stop", content="TERMINATE", usage=self._usage, cached=False)
        call = FunctionCall(
            id=f"{self.call_prefix}-{self._calls}", name=name, arguments=json.dumps(arguments, ensure_ascii=False)
        )
        return CreateResult(finish_reason="function_calls", content=[call], usage=self._usage, cached=False)

    async def create_stream(
        self,
        messages: Sequence[LLMMessage],
        *,
        tools: Sequence[Tool | ToolSchema] = (),
        tool_choice: Tool | Literal["auto", "required", "none"] = "auto",
        json_output: bool | type[BaseModel] | None = None,
        extra_create_args: Mapping[str, Any] = {},
        cancellation_token: CancellationToken | None = None,
    ) -> AsyncGenerator[str | CreateResult, None]:
        """Streams the single planned result."""
        yield await self.create(messages, tools=tools, tool_choice=tool_choice)
