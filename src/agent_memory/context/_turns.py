"""What a conversation holds, as the recall reads it: the current user turn, the ``(role, text)`` pairs
of the chat, and the stored chat that came before what a context object holds."""

from __future__ import annotations

from collections.abc import Sequence

from autogen_core.models import AssistantMessage, FunctionExecutionResultMessage, LLMMessage, UserMessage

from data_layer import MAX_MESSAGE_BYTES, MessageRecord, storable_copy, truncate_utf8

#: The most messages of stored history a recall can look back over (the largest window).
MAX_RECALL_HISTORY = 50
#: Ends a message cut to what the chat history stores.
CUT_MARK = "\n…[消息过长，只保存了前 {kept} 字节，原文 {size} 字节]"


def message_to_store(text: str) -> str:
    """What the chat history stores of a user or assistant message the model was already given.

    The turn goes on with the message as it was, so refusing to store it would leave the reply stored
    without its question: the stored chat would then say two replies in a row, which strict chat
    templates refuse in every later turn. So a character no backend stores (NUL, a lone surrogate)
    becomes U+FFFD, and a message over the history's limit (1 MB) keeps its start and says it was cut.

    >>> message_to_store("第二句\x00话")
    '第二句\ufffd话'
    """
    text = storable_copy(text)
    kept, size = truncate_utf8(text, MAX_MESSAGE_BYTES - 200)  # room for the mark
    if size <= MAX_MESSAGE_BYTES:
        return text
    return kept + CUT_MARK.format(kept=len(kept.encode("utf-8")), size=size)


def chat_pairs(stored: Sequence[MessageRecord]) -> list[tuple[str, str]]:
    """The user and assistant messages of a stored chat that say something, as ``(role, text)``."""
    return [(m.role, m.content) for m in stored if m.role in ("user", "assistant") and m.content.strip()]


def alternating(pairs: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """``pairs`` as a model is shown them: user and assistant in turn, opening on a user message and
    ending on a reply.

    A chat stores one user message and one reply a turn, but a reply that said nothing (blank text is
    not stored) or a message that could not be stored (the database was down) leaves two of one role in
    a row, and strict chat templates refuse a conversation that does not alternate, in every later turn.
    So messages of one role in a row are joined, and a last user message without its reply is left out
    (the new message follows); the recall still reads the stored chat as it is.

    >>> alternating([("assistant", "早"), ("user", "在吗"), ("user", "我周六搬家"), ("assistant", "好"), ("user", "?")])
    [('user', '在吗\n\n我周六搬家'), ('assistant', '好')]
    """
    out: list[tuple[str, str]] = []
    for role, text in pairs:
        if out and out[-1][0] == role:
            out[-1] = (role, f"{out[-1][1]}\n\n{text}")
        elif out or role == "user":
            out.append((role, text))
    if out and out[-1][0] == "user":
        out.pop()
    return out


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


def answered_turns(history: Sequence[LLMMessage]) -> list[LLMMessage]:
    """``history`` as strict chat templates accept it: each earlier turn ends in a reply.

    A turn whose model call failed leaves its user message (and any tool round it had begun) without a
    reply; the next user message would then follow a user message or a tool result, which Mistral- and
    Gemma-style templates refuse in every later request. So a tool round that no reply followed is left
    out, and a user message without its reply is joined to the next one, as :func:`alternating` joins a
    stored chat's.
    The current turn (after the last user message) is kept as it is: its tool rounds are still running.

    >>> a, b = UserMessage(content="a", source="u"), UserMessage(content="b", source="u")
    >>> [m.content for m in answered_turns([a, b])]
    ['a\n\nb']
    """
    out: list[LLMMessage] = []
    for message in history:
        if isinstance(message, UserMessage):
            while out and _tool_round(out[-1]):
                out.pop()
            before = out[-1] if out else None
            if isinstance(before, UserMessage) and isinstance(before.content, str) and isinstance(message.content, str):
                out[-1] = message.model_copy(update={"content": f"{before.content}\n\n{message.content}"})
                continue
        out.append(message)
    return out


def _tool_round(message: LLMMessage) -> bool:
    """A tool call or its results (a step of a turn, not its reply)."""
    return isinstance(message, FunctionExecutionResultMessage) or (
        isinstance(message, AssistantMessage) and isinstance(message.content, list)
    )
