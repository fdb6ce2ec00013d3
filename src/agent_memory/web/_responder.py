"""``OfflineResponder``: the web chat's model when none is configured; it needs no download.

It is a real AutoGen ``ChatCompletionClient`` (``create`` and ``create_stream``) that answers
deterministically from what the memory context gave it this turn: the recall block (a system message
``[记忆召回] ...`` with ``[memory:key:summary]`` slots) or the simulated ``recall_memory`` result.
It never calls a tool. The page labels it "离线应答器" so nobody takes its words for a model's.

>>> client = OfflineResponder()
>>> agent = AssistantAgent("friend", model_client=client, model_context=context)  # doctest: +SKIP

The reply starts with a short ``<think>`` part (what it found), so the page's "显示思维链" has
something to show offline too.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import Any

from autogen_core import CancellationToken
from autogen_core.models import (
    CreateResult,
    FunctionExecutionResultMessage,
    LLMMessage,
    ModelInfo,
    RequestUsage,
    SystemMessage,
    UserMessage,
)
from autogen_core.tools import Tool, ToolSchema

from ..recall import OfflineClient

#: How the page names this client.
OFFLINE_LABEL = "离线应答器（确定性，不是大模型）"
_SLOT = re.compile(r"\[memory:[^:\]]+:([^\]]*)\]")
_THINK = re.compile(r"<think>.*?(</think>|$)", re.S)
_CHUNK = 6
_OWN = ("我记下了：", "我记得：")
#: A think tag inside quoted text would end the reply's own thinking part early, or open one.
_TAG = re.compile(r"</?think>", re.I)


def _recalled(messages: Sequence[LLMMessage]) -> list[str]:
    """The memories recalled for the last user turn, best first."""
    last_user = max((i for i, m in enumerate(messages) if isinstance(m, UserMessage)), default=-1)
    found: list[str] = []
    for i, message in enumerate(messages):
        if isinstance(message, SystemMessage) and message.content.startswith("[记忆召回]"):
            found += [s.strip() for s in _SLOT.findall(message.content) if s.strip()]
        elif isinstance(message, FunctionExecutionResultMessage) and i > last_user:
            for result in message.content:
                if result.name != "recall_memory":
                    continue
                try:
                    data = json.loads(result.content)
                except ValueError:
                    continue
                found += [str(e.get("content", "")) for e in data.get("events", []) if isinstance(e, Mapping)]
                found += [
                    f"{p.get('topic', '')}: {p.get('content', '')}"
                    for p in data.get("profiles", [])
                    if isinstance(p, Mapping)
                ]
    clean = (" ".join(_THINK.sub("", f).split()) for f in found)
    # the responder's own earlier replies come back as conversation memories: quoting them is noise
    return [f for f in dict.fromkeys(clean) if f and not f.startswith(_OWN)]


def _untagged(text: str) -> str:
    """``text`` without think tags, also those that removing one puts together ("<thi</think>nk>")."""
    while (shorter := _TAG.sub("", text)) != text:
        text = shorter
    return text


def offline_reply(messages: Sequence[LLMMessage]) -> str:
    """The deterministic reply to ``messages`` (see the module docs)."""
    users = [m for m in messages if isinstance(m, UserMessage)]
    said = _untagged(str(users[-1].content)).strip() if users else ""
    said = said if len(said) <= 60 else said[:59] + "…"
    memories = _recalled(messages)
    if not memories:
        return f"<think>没有召回相关记忆。</think>我记下了：「{said}」。关于这件事，我还没有以前的记忆，能多说一点吗？"
    cited = _untagged("；".join(memories[:3]))
    thought = f"<think>召回了 {len(memories)} 条记忆，引用最相关的几条。</think>"
    return f"{thought}我记得：{cited}。你刚才说「{said}」，我们接着聊吧。"


class OfflineResponder(OfflineClient):
    """A deterministic chat client for the offline web chat (see the module docs)."""

    info = ModelInfo(**{**OfflineClient.info, "json_output": False})  # text replies, no JSON mode
    chars_per_token = 4
    context_tokens = 128_000

    def __init__(self, *, delay_s: float = 0.0) -> None:
        super().__init__()
        #: Pause between streamed chunks (0: none); lets a demo show the streaming.
        self.delay_s = delay_s

    def _result(self, messages: Sequence[LLMMessage]) -> CreateResult:
        """The reply; the ``<think>`` part goes to ``thought`` (as a reasoning model's client does), so
        the stored message holds only what was said."""
        text = offline_reply(messages)
        usage = RequestUsage(prompt_tokens=self.count_tokens(messages), completion_tokens=len(text) // 4)
        self._count(usage)
        thought, _, said = text.removeprefix("<think>").partition("</think>")
        return CreateResult(finish_reason="stop", content=said, thought=thought, usage=usage, cached=False)

    async def create(
        self,
        messages: Sequence[LLMMessage],
        *,
        tools: Sequence[Tool | ToolSchema] = (),
        tool_choice: Any = "auto",
        json_output: Any = None,
        extra_create_args: Mapping[str, Any] | None = None,
        cancellation_token: CancellationToken | None = None,
    ) -> CreateResult:
        return self._result(messages)

    async def create_stream(
        self,
        messages: Sequence[LLMMessage],
        *,
        tools: Sequence[Tool | ToolSchema] = (),
        tool_choice: Any = "auto",
        json_output: Any = None,
        extra_create_args: Mapping[str, Any] | None = None,
        cancellation_token: CancellationToken | None = None,
    ) -> AsyncGenerator[str | CreateResult, None]:
        result = self._result(messages)
        text = f"<think>{result.thought}</think>{result.content}"
        for start in range(0, len(text), _CHUNK):
            if self.delay_s:
                await asyncio.sleep(self.delay_s)
            yield text[start : start + _CHUNK]
        yield result


__all__ = ["OFFLINE_LABEL", "OfflineResponder", "offline_reply"]
