"""What part of the history the main model sees: whole turns, newest first, within a token budget.

A turn starts at a user message and holds everything up to the next one (assistant replies, tool
calls and their results), so a cut never separates a tool call from its result and what is sent
always starts with a user message (strict chat templates require it). The current turn is always
sent. Dropped turns stay stored (``chat_messages``) and the recall can bring them back.

>>> old, new = UserMessage(content="x" * 4000, source="u"), UserMessage(content="hi", source="u")
>>> [m.content for m in bounded([old, new], budget=300)]
['hi']
"""

from __future__ import annotations

from collections.abc import Sequence

from autogen_core.models import AssistantMessage, FunctionExecutionResultMessage, LLMMessage, SystemMessage, UserMessage

from ._block import estimate_tokens

#: Per-message overhead of the chat format (role, separators), in tokens.
MESSAGE_OVERHEAD = 4


def message_tokens(message: LLMMessage) -> int:
    """The estimated tokens of one message."""
    content = message.content
    if isinstance(message, AssistantMessage) and isinstance(message.content, list):
        text = " ".join(f"{c.name} {c.arguments}" for c in message.content)
    elif isinstance(message, FunctionExecutionResultMessage):
        text = " ".join(r.content for r in message.content)
    elif isinstance(content, str):
        text = content
    else:
        text = " ".join(str(part) for part in content) if isinstance(content, list) else str(content)
    return estimate_tokens(text) + MESSAGE_OVERHEAD


def bounded(history: Sequence[LLMMessage], *, budget: int) -> list[LLMMessage]:
    """The newest whole turns of ``history`` that fit ``budget`` tokens (the current turn always;
    system messages at the very start, an application's own, always)."""
    starts = [i for i, m in enumerate(history) if isinstance(m, UserMessage)]
    if not starts:
        return list(history)
    lead = 0
    while lead < len(history) and isinstance(history[lead], SystemMessage):
        lead += 1
    prefix = list(history[:lead])
    keep_from = starts[-1]
    used = sum(message_tokens(m) for m in history[keep_from:])
    for start, end in zip(reversed(starts[:-1]), reversed(starts[1:]), strict=True):
        cost = sum(message_tokens(m) for m in history[start:end])
        if used + cost > budget:
            break
        used += cost
        keep_from = start
    return [*prefix, *history[max(keep_from, lead) :]]
