"""Message shapes every chat server accepts.

AutoGen's OpenAI client sends an assistant tool call without text as ``"content": null``. OpenAI
accepts that; llama-cpp-python's server refuses ``null`` content on every message ("Input should be
a valid string"). A tool call that carries an empty thought is sent with ``"content": ""`` instead,
which every server reads as no text.

>>> from autogen_core import FunctionCall
>>> call = AssistantMessage(content=[FunctionCall(id="1", name="f", arguments="{}")], source="a")
>>> [m.thought for m in with_text_on_tool_calls([call])]
['']
"""

from __future__ import annotations

from collections.abc import Sequence

from autogen_core.model_context import UnboundedChatCompletionContext
from autogen_core.models import AssistantMessage, LLMMessage


def with_text_on_tool_calls(messages: Sequence[LLMMessage]) -> list[LLMMessage]:
    """``messages`` (a new list) where each assistant tool call without a thought has an empty one, so
    it is sent with ``"content": ""`` rather than ``null``; other messages are the same objects."""
    return [
        m.model_copy(update={"thought": ""})
        if isinstance(m, AssistantMessage) and isinstance(m.content, list) and m.thought is None
        else m
        for m in messages
    ]


class TextOnToolCallsContext(UnboundedChatCompletionContext):
    """AutoGen's unbounded model context whose tool calls are sent with empty text, not ``null``
    (see :func:`with_text_on_tool_calls`): for agents, such as the recall agent, that may talk to
    strict local servers."""

    component_provider_override = "agent_memory.clients.TextOnToolCallsContext"

    async def get_messages(self) -> list[LLMMessage]:
        return with_text_on_tool_calls(self._messages)
