"""What a forgetting sets aside, kept out of the stored chat a context shows the models.

A message the user asked to forget stays in ``chat_messages`` (the chat page shows the user what they
said), but neither the main model, resuming the chat, nor the recall model, reading its window over the
conversation (and each larger window ``expand_context_window`` approves), is shown it again: it would
bring back what the user asked to forget.
"""

from __future__ import annotations

from collections.abc import Sequence

from data_layer import MessageRecord

from ._turns import message_to_store


def kept_messages(stored: Sequence[MessageRecord], aside: frozenset[int]) -> list[MessageRecord]:
    """``stored`` without the messages ``aside`` (ids a forgetting set aside)."""
    return [m for m in stored if m.id not in aside] if aside else list(stored)


def without_set_aside(
    conversation: Sequence[tuple[str, str]], stored: Sequence[MessageRecord], aside: frozenset[int]
) -> list[tuple[str, str]]:
    """``conversation`` (``(role, text)``, the last the current message, which is always kept) without the
    earlier messages that are, in ``stored``, messages set aside: a context's own turns carry no ids, so a
    turn is known by its role and its text as stored.

    >>> from datetime import UTC, datetime
    >>> said = MessageRecord(id=7, user_id="u1", friend_id="f", thread_id=None, role="user", content="我前任叫小美",
    ...                      created_at=datetime.now(UTC))
    >>> without_set_aside([("user", "我前任叫小美"), ("assistant", "好"), ("user", "你好")], [said], frozenset({7}))
    [('assistant', '好'), ('user', '你好')]
    """
    hidden = {(m.role, m.content) for m in stored if m.id in aside}
    if not hidden or not conversation:
        return list(conversation)
    earlier = [(role, text) for role, text in conversation[:-1] if (role, message_to_store(text)) not in hidden]
    return [*earlier, conversation[-1]]
