"""A scripted Microsoft Agent Framework chat client: canned answers, every request recorded, no network."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agent_framework import BaseChatClient, ChatResponse, Content, FunctionInvocationLayer, Message


class ScriptedChatClient(FunctionInvocationLayer[Any], BaseChatClient[Any]):
    """Answers with ``answers`` in turn (text, or a ``(tool name, arguments)`` call) and records every
    request: its messages and options."""

    def __init__(self, answers: Sequence[str | tuple[str, dict[str, Any]]]) -> None:
        super().__init__()
        self.answers = list(answers)
        self.requests: list[dict[str, Any]] = []

    def _inner_get_response(
        self, *, messages: Sequence[Message], stream: bool, options: Mapping[str, Any], **kwargs: Any
    ) -> Any:
        assert not stream
        self.requests.append({"messages": list(messages), "options": dict(options)})
        answer = self.answers.pop(0)
        if isinstance(answer, str):
            contents = [Content.from_text(answer)]
        else:
            name, arguments = answer
            contents = [Content.from_function_call(call_id=f"c{len(self.requests)}", name=name, arguments=arguments)]

        async def respond() -> ChatResponse:
            return ChatResponse(messages=[Message(role="assistant", contents=contents)])

        return respond()
