"""``TolerantOpenAIChatCompletionClient``: AutoGen's OpenAI client for servers that still add the legacy
``function_call`` field to an answer.

llama-cpp-python's function-calling chat format answers a tool call with both ``tool_calls`` and the
deprecated ``function_call``; AutoGen's client then raises ``ValueError: function_call is deprecated``
and the turn fails. This client reads each chat-completion answer before the OpenAI SDK does: a
``function_call`` beside ``tool_calls`` is dropped (it repeats the first call), one alone becomes the
one tool call it names. Requests go out as :func:`with_text_on_tool_calls` shapes them (``"content": ""``
on a tool call, never ``null``). Everything else is AutoGen's ``OpenAIChatCompletionClient``, with the
same configuration; its component JSON names this class.

>>> client = TolerantOpenAIChatCompletionClient(model="local", base_url="http://127.0.0.1:8080/v1",
...                                             api_key="x", model_info=info)  # doctest: +SKIP
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import Any, Literal

import openai
from autogen_core import CancellationToken
from autogen_core.models import CreateResult, LLMMessage
from autogen_core.tools import Tool, ToolSchema
from autogen_ext.models.openai import OpenAIChatCompletionClient
from autogen_ext.models.openai.config import OpenAIClientConfigurationConfigModel
from pydantic import BaseModel

from ._shapes import with_text_on_tool_calls

try:  # the HTTP library the OpenAI SDK is built on (newer releases ship their own fork of httpx)
    import httpx2 as _http
except ImportError:  # pragma: no cover - older openai releases
    import httpx as _http  # type: ignore[no-redef]  # the same API under its original name


def without_legacy_function_call(answer: dict[str, Any]) -> bool:
    """Rewrite a chat-completion answer (parsed JSON) in place so no choice carries ``function_call``;
    returns whether anything changed.

    >>> answer = {"choices": [{"message": {"function_call": {"name": "f", "arguments": "{}"}},
    ...                        "finish_reason": "function_call"}]}
    >>> without_legacy_function_call(answer), answer["choices"][0]["message"]["tool_calls"][0]["function"]
    (True, {'name': 'f', 'arguments': '{}'})
    """
    changed = False
    choices = answer.get("choices")
    for index, choice in enumerate(choices if isinstance(choices, list) else []):
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict) or "function_call" not in message:
            continue
        legacy = message.pop("function_call")
        changed = True
        if not message.get("tool_calls") and isinstance(legacy, dict) and legacy.get("name"):
            message["tool_calls"] = [
                {
                    "id": f"call_legacy_{index}",
                    "type": "function",
                    "function": {"name": legacy["name"], "arguments": legacy.get("arguments") or "{}"},
                }
            ]
        if choice.get("finish_reason") == "function_call":
            choice["finish_reason"] = "tool_calls"
    return changed


class _LegacyFieldTransport(_http.AsyncBaseTransport):
    """Passes requests on; rewrites JSON chat-completion answers with :func:`without_legacy_function_call`."""

    def __init__(self) -> None:
        self._inner = _http.AsyncHTTPTransport()

    async def handle_async_request(self, request: Any) -> Any:
        response = await self._inner.handle_async_request(request)
        if not request.url.path.endswith("/chat/completions") or "json" not in response.headers.get("content-type", ""):
            return response  # streams (server-sent events) and other endpoints as they are
        try:
            raw = await response.aread()
        finally:
            await response.aclose()
        try:
            answer = json.loads(raw)
        except ValueError:
            answer = None
        if isinstance(answer, dict) and without_legacy_function_call(answer):
            raw = json.dumps(answer, ensure_ascii=False).encode()
        skip = {"content-length", "content-encoding", "transfer-encoding"}
        headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() not in skip]
        version = response.extensions.get("http_version", b"HTTP/1.1")
        return _http.Response(
            response.status_code, headers=headers, content=raw, request=request, extensions={"http_version": version}
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


class TolerantOpenAIChatCompletionClient(OpenAIChatCompletionClient):
    """``OpenAIChatCompletionClient`` that accepts answers with the legacy ``function_call`` field and
    never sends ``null`` content (see the module docs). Takes the same keyword arguments; an
    ``http_client`` of your own replaces the one that reads the answers."""

    component_provider_override = "agent_memory.clients.TolerantOpenAIChatCompletionClient"

    def __init__(self, **kwargs: Any) -> None:
        if "http_client" not in kwargs:
            kwargs["http_client"] = openai.DefaultAsyncHttpxClient(transport=_LegacyFieldTransport())
        super().__init__(**kwargs)

    def _to_config(self) -> OpenAIClientConfigurationConfigModel:
        config = {k: v for k, v in self._raw_config.items() if k != "http_client"}
        return OpenAIClientConfigurationConfigModel(**config)

    async def create(
        self,
        messages: Sequence[LLMMessage],
        *,
        tools: Sequence[Tool | ToolSchema] = [],
        tool_choice: Tool | Literal["auto", "required", "none"] = "auto",
        json_output: bool | type[BaseModel] | None = None,
        extra_create_args: Mapping[str, Any] = {},
        cancellation_token: CancellationToken | None = None,
    ) -> CreateResult:
        return await super().create(
            with_text_on_tool_calls(messages),
            tools=tools,
            tool_choice=tool_choice,
            json_output=json_output,
            extra_create_args=extra_create_args,
            cancellation_token=cancellation_token,
        )

    def create_stream(
        self,
        messages: Sequence[LLMMessage],
        *,
        tools: Sequence[Tool | ToolSchema] = [],
        tool_choice: Tool | Literal["auto", "required", "none"] = "auto",
        json_output: bool | type[BaseModel] | None = None,
        extra_create_args: Mapping[str, Any] = {},
        cancellation_token: CancellationToken | None = None,
        max_consecutive_empty_chunk_tolerance: int = 0,
        include_usage: bool | None = None,
    ) -> AsyncGenerator[str | CreateResult, None]:
        return super().create_stream(
            with_text_on_tool_calls(messages),
            tools=tools,
            tool_choice=tool_choice,
            json_output=json_output,
            extra_create_args=extra_create_args,
            cancellation_token=cancellation_token,
            max_consecutive_empty_chunk_tolerance=max_consecutive_empty_chunk_tolerance,
            include_usage=include_usage,
        )
