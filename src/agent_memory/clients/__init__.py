"""Model clients and message shapes for servers beyond OpenAI's own (strict local servers).

>>> from agent_memory.clients import TolerantOpenAIChatCompletionClient, with_text_on_tool_calls

The tolerant client is imported on first use: it loads the OpenAI SDK, which the offline paths never need.
"""

from typing import TYPE_CHECKING, Any

from ._shapes import TextOnToolCallsContext, with_text_on_tool_calls

if TYPE_CHECKING:
    from ._tolerant import TolerantOpenAIChatCompletionClient, without_legacy_function_call

__all__ = [
    "TextOnToolCallsContext",
    "TolerantOpenAIChatCompletionClient",
    "with_text_on_tool_calls",
    "without_legacy_function_call",
]


def __getattr__(name: str) -> Any:
    if name in ("TolerantOpenAIChatCompletionClient", "without_legacy_function_call"):
        from . import _tolerant

        return getattr(_tolerant, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
