"""What a conversation holds, as the recall reads it: the current user turn, the ``(role, text)`` pairs
of the chat, and the stored chat that came before what a context object holds."""

from __future__ import annotations

from collections.abc import Sequence

from autogen_core.models import AssistantMessage, LLMMessage, UserMessage

from data_layer import MessageRecord

#: The most messages of stored history a recall can look back over (the largest window).
MAX_RECALL_HISTORY = 50


def chat_pairs(stored: Sequence[MessageRecord]) -> list[tuple[str, str]]:
    """The user and assistant messages of a stored chat that say something, as ``(role, text)``."""
    return [(m.role, m.content) for m in stored if m.role in ("user", "assistant") and m.content.strip()]


def stored_before(stored: Sequence[tuple[str, str]], conversation: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """``conversation`` after the stored messages it does not hold, at most ``MAX_RECALL_HISTORY`` in all
    (the stored chat ends with this conversation: what came before is kept).

    >>> stored_before([("user", "a"), ("assistant", "b"), ("user", "c")], [("user", "c")])
    [('user', 'a'), ('assistant', 'b'), ('user', 'c')]
    """
    known = set(conversation)
    earlier = [p for p in stored if p not in known]
    return [*earlier[-(MAX_RECALL_HISTORY - len(conversation)) :], *conversation]


def current_turn(history: Sequence[LLMMessage]) -> tuple[int, str] | None:
    """``(number of user messages, text of the last one)``: a new value means a new user turn."""
    users = [m for m in history if isinstance(m, UserMessage)]
    if not users:
        return None
    return len(users), str(users[-1].content)


def conversation_of(history: Sequence[LLMMessage]) -> list[tuple[str, str]]:
    """``(role, text)`` of the user and assistant text messages, oldest first, ending at the last user
    message."""
    pairs: list[tuple[str, str]] = []
    for m in history:
        if isinstance(m, UserMessage) and isinstance(m.content, str):
            pairs.append(("user", m.content))
        elif isinstance(m, AssistantMessage) and isinstance(m.content, str) and m.content.strip():
            pairs.append(("assistant", m.content))
    while pairs and pairs[-1][0] != "user":
        pairs.pop()
    return pairs
