"""One chat turn of the web chat: the real AutoGen ``AssistantAgent`` with the friend's system prompt
and the memory context, its events turned into the page's stream.

>>> service = ChatService(system, model_client=OfflineResponder())  # doctest: +SKIP
>>> async for event in service.turn(user_id="alice", friend_id="f-1", text="我下周去北京"):  # doctest: +SKIP
...     print(event["type"])   # status, recall_step..., tool_call (recall_memory), token..., done

The agent is built per turn by :class:`builders.AgentBuilder` (recall context, memory tools,
instructions) and given the stored chat of the friend, so reopening a friend continues where it
ended. The memory context saves the user's message and the reply. Recall events come first: the
``recall_memory`` card is sent before the first reply token. What the page sees follows the user's
chat settings: the card only with 显示工具调用, the recall agent's steps and ``<think>`` text only with
显示思维链.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.base import TaskResult
from autogen_agentchat.messages import (
    BaseChatMessage,
    ModelClientStreamingChunkEvent,
    ThoughtEvent,
    ToolCallExecutionEvent,
    ToolCallRequestEvent,
)
from autogen_core.models import ChatCompletionClient

from builders import AgentBuilder
from data_layer import (
    FriendDeletion,
    FriendRecord,
    InvalidInputError,
    Scope,
    UserSettings,
    has_visible_text,
    storable_text,
)

from ..context import MemoryContext, estimate_tokens
from ..recall import (
    RecallErrorEvent,
    RecallFinishedEvent,
    RecallMemoryOutput,
    RecallStartedEvent,
    RecallTimeoutEvent,
    merge_streams,
)
from ..system import MemorySystem

#: Longest chat message, in characters (the token limit, :func:`check_message`, is usually the tighter one).
MAX_MESSAGE_CHARS = 8000
#: What the page says when the model's reply holds no text.
EMPTY_REPLY = "the chat model gave an empty reply: send the message again, or check the model server's log"
#: How many stored messages a turn's agent starts with.
HISTORY_MESSAGES = 40
#: The main agent's name (AutoGen wants an identifier; the friend's own name is in its prompt).
AGENT_NAME = "friend"
RECALL_AGENT = "mem_recall"
logger = logging.getLogger(__name__)


class ThinkSplitter:
    """Splits streamed text into reply and ``<think>`` parts, with tags cut across chunks.

    >>> s = ThinkSplitter()
    >>> s.feed("<thi") + s.feed("nk>hm</think>ok") + s.end()
    [('thinking', 'hm'), ('reply', 'ok')]
    """

    OPEN, CLOSE = "<think>", "</think>"

    def __init__(self) -> None:
        self._buf = ""
        self._inside = False

    def feed(self, text: str) -> list[tuple[str, str]]:
        self._buf += text
        out: list[tuple[str, str]] = []
        while self._buf:
            tag = self.CLOSE if self._inside else self.OPEN
            kind = "thinking" if self._inside else "reply"
            at = self._buf.find(tag)
            if at >= 0:
                if at:
                    out.append((kind, self._buf[:at]))
                self._buf = self._buf[at + len(tag) :]
                self._inside = not self._inside
                continue
            keep = next(
                (n for n in range(min(len(tag) - 1, len(self._buf)), 0, -1) if tag.startswith(self._buf[-n:])), 0
            )
            if len(self._buf) > keep:
                out.append((kind, self._buf[: len(self._buf) - keep]))
                self._buf = self._buf[len(self._buf) - keep :]
            break
        return out

    def end(self) -> list[tuple[str, str]]:
        rest, self._buf = self._buf, ""
        return [("thinking" if self._inside else "reply", rest)] if rest else []


def split_think(text: str) -> tuple[str, str]:
    """``(reply, thinking)`` of a whole message."""
    parts = ThinkSplitter()
    pieces = parts.feed(text) + parts.end()
    return "".join(t for k, t in pieces if k == "reply").strip(), "".join(t for k, t in pieces if k == "thinking")


def check_message(text: object, *, max_tokens: int) -> str:
    """A chat message fit to send (raises ``InvalidInputError`` saying why not).

    Its length is counted in the chat model's tokens as the history budget counts them
    (:func:`~agent_memory.context.estimate_tokens`: a Chinese, Japanese or Korean character is one token,
    other text one per four characters), against ``max_tokens`` (half of ``MEMORY_CONTEXT_TOKEN_BUDGET``):
    7,990 Chinese characters pass a limit of 8,000 characters but are some 16,000 tokens for a small
    model, over an 8k context."""
    if not isinstance(text, str) or not has_visible_text(text):
        raise InvalidInputError("message must be non-empty text (zero-width characters alone show nothing)")
    if len(text) > MAX_MESSAGE_CHARS:
        raise InvalidInputError(f"the message is {len(text)} characters long; at most {MAX_MESSAGE_CHARS}: shorten it")
    tokens = estimate_tokens(text)
    if tokens > max_tokens:
        raise InvalidInputError(
            f"the message is about {tokens} tokens long; at most {max_tokens} fit the chat model's budget (about "
            f"{max_tokens} Chinese characters or {max_tokens * 4} letters): shorten it, or raise "
            "MEMORY_CONTEXT_TOKEN_BUDGET (half of it is the limit)"
        )
    return storable_text(text.strip(), name="message")  # refused before the turn, not while saving it


class ChatService:
    """Runs chat turns and reads chat history for the web app (see the module docs)."""

    def __init__(self, system: MemorySystem, *, model_client: ChatCompletionClient) -> None:
        self.system = system
        self.model_client = model_client
        self.builder = AgentBuilder(system)

    async def history(self, *, user_id: str, friend_id: str, limit: int = 200) -> list[dict[str, Any]]:
        """The stored chat with the friend, oldest first, ``<think>`` parts shown per the settings."""
        await self.system.layer.friends.get(user_id=user_id, friend_id=friend_id)
        show = (await self.system.layer.settings.get(user_id=user_id)).chat.show_thinking
        stored = await self.system.layer.messages.latest(user_id=user_id, friend_id=friend_id, limit=limit)
        out = []
        for m in stored:
            if m.role not in ("user", "assistant"):
                continue
            reply, thinking = split_think(m.content) if m.role == "assistant" else (m.content, "")
            out.append(
                {
                    "id": m.id,
                    "role": m.role,
                    "content": reply,
                    "thinking": thinking if show else "",
                    "created_at": m.created_at.isoformat(),
                }
            )
        return out

    async def turn(self, *, user_id: str, friend_id: str, text: str) -> AsyncIterator[dict[str, Any]]:
        """Run one turn; yields the page's events. The friend is read once the chat's turn lock is held,
        so a turn that waited for the friend's deletion finds it gone (``NotFoundError``) rather than
        storing messages for it."""
        # turns of one chat run one at a time (in every worker process), so the stored history stays in order
        scope = Scope.of(user_id, friend_id)
        async with self.system.locks.hold("turn", scope.user_id, scope.friend_id):
            friend = await self.system.layer.friends.get(user_id=user_id, friend_id=friend_id)
            async for event in self._turn(friend, text):
                yield event

    async def delete_friend(self, *, user_id: str, friend_id: str) -> FriendDeletion:
        """Delete the friend (its chat and event memories) once a turn in progress has ended and the
        archiving of its chat has finished (in any worker process), so neither writes for the friend
        after it is gone."""
        locks, scope = self.system.locks, Scope.of(user_id, friend_id)  # the keys the archiver locks
        async with locks.hold("turn", scope.user_id, scope.friend_id):
            await self.system.session_archiver.drain(scope=scope)
            async with locks.hold("archive", scope.user_id, scope.friend_id):
                return await self.system.layer.friends.delete(user_id=user_id, friend_id=friend_id)

    async def _agent(
        self, user_id: str, friend_id: str, system_prompt: str, settings: UserSettings, queue: asyncio.Queue[Any]
    ) -> tuple[AssistantAgent, MemoryContext]:
        kwargs: dict[str, Any] = {
            "name": AGENT_NAME,
            "model_client": self.model_client,
            "system_message": system_prompt or None,
            "model_client_stream": True,
        }
        kwargs = self.builder.with_memory(kwargs, user_id=user_id, friend_id=friend_id, events=queue)
        context: MemoryContext = kwargs["model_context"]
        context.use_settings(settings.memory)  # read once per turn, for the page and the recall
        await context.resume(
            limit=HISTORY_MESSAGES, assistant_text=lambda text: split_think(text)[0], assistant_source=AGENT_NAME
        )
        return AssistantAgent(**kwargs), context

    async def _turn(self, friend: FriendRecord, text: str) -> AsyncIterator[dict[str, Any]]:
        user_id, friend_id = friend.user_id, friend.friend_id
        settings: UserSettings = await self.system.layer.settings.get(user_id=user_id)
        show_tools, show_thinking = settings.chat.show_tool_calls, settings.chat.show_thinking
        queue: asyncio.Queue[Any] = asyncio.Queue(maxsize=1000)
        agent, context = await self._agent(user_id, friend_id, friend.system_prompt, settings, queue)
        splitter = ThinkSplitter()
        finished: list[RecallFinishedEvent] = []
        card_sent = False
        reply: list[str] = []
        thinking: list[str] = []
        final = ""

        async def card() -> AsyncIterator[dict[str, Any]]:
            nonlocal card_sent
            if card_sent:
                return
            card_sent = True
            if finished and show_tools:
                yield self._recall_card(context)

        def pieces(parts: list[tuple[str, str]]) -> list[dict[str, Any]]:
            events = []
            for kind, chunk in parts:
                if kind == "reply":
                    reply.append(chunk)
                    events.append({"type": "token", "text": chunk})
                else:
                    thinking.append(chunk)
                    if show_thinking:
                        events.append({"type": "thinking", "text": chunk})
            return events

        yield {"type": "status", "text": "已收到消息"}
        try:
            async for item in merge_streams(agent.run_stream(task=text), queue):
                if isinstance(item, RecallStartedEvent):
                    yield {"type": "status", "text": "正在回忆…"}
                elif isinstance(item, RecallFinishedEvent):
                    finished.append(item)
                    yield {
                        "type": "status",
                        "text": f"回忆完成：{len(item.memory_keys)} 条记忆，{item.elapsed_ms:.0f} ms",
                    }
                elif isinstance(item, RecallTimeoutEvent | RecallErrorEvent):
                    yield {"type": "notice", "text": item.to_text()}
                elif isinstance(item, ModelClientStreamingChunkEvent):
                    async for event in card():
                        yield event
                    for event in pieces(splitter.feed(item.content)):
                        yield event
                elif item.__class__.__name__ != "TaskResult" and getattr(item, "source", "") == RECALL_AGENT:
                    if show_thinking:
                        yield {"type": "recall_step", "kind": type(item).__name__, "text": _step_text(item)}
                elif isinstance(item, ThoughtEvent):
                    if not thinking:  # a client that keeps the thought apart from the streamed text
                        thinking.append(item.content)
                        if show_thinking:
                            yield {"type": "thinking", "text": item.content}
                elif isinstance(item, ToolCallRequestEvent | ToolCallExecutionEvent):
                    async for event in card():
                        yield event
                    if show_tools:
                        yield {"type": "tool_event", "kind": type(item).__name__, "text": _step_text(item)}
                elif isinstance(item, TaskResult):
                    last = item.messages[-1] if item.messages else None
                    if isinstance(last, BaseChatMessage) and last.source == AGENT_NAME:
                        final = last.to_text()
        except Exception as exc:  # the model's request failed: the person is told, never shown an empty reply
            logger.warning("the chat model failed", exc_info=True)
            yield {"type": "error", "message": model_failure(exc)}
            return
        async for event in card():
            yield event
        for event in pieces(splitter.end()):
            yield event
        if not reply and final:  # a client that did not stream: send the whole reply at once
            for event in pieces(ThinkSplitter().feed(final)):
                yield event
        visible = split_think(final)[0] if final else "".join(reply).strip()
        if not visible:
            yield {"type": "error", "message": EMPTY_REPLY}
            return
        yield {"type": "done", "reply": visible, "thinking": "".join(thinking) if show_thinking else ""}

    @staticmethod
    def _recall_card(context: MemoryContext) -> dict[str, Any]:
        """The ``recall_memory`` call as the page shows it: the arguments and the profiles/events the
        recall gave the model (the memory context's record of its last recall)."""
        output = context.last_output or RecallMemoryOutput()
        result = output.model_dump(include={"profiles", "events"})
        return {
            "type": "tool_call",
            "name": "recall_memory",
            "arguments": context.last_arguments or {},
            "result": result,
        }


def model_failure(exc: Exception) -> str:
    """What the page says when the chat model's request failed: the server's own reason, on one line."""
    reason = " ".join(str(getattr(exc, "message", "") or exc).split())[:300]
    return f"the chat model failed ({type(exc).__name__}: {reason}); try again or send a shorter message"


def _step_text(item: Any) -> str:
    """One line for a step of an agent (a tool call, its result, a hand-off)."""
    if isinstance(item, ToolCallRequestEvent):
        return "; ".join(f"调用 {c.name}({c.arguments})" for c in item.content)[:2000]
    if isinstance(item, ToolCallExecutionEvent):
        return "; ".join(f"{r.name} 返回 {r.content}" for r in item.content)[:2000]
    to_text = getattr(item, "to_text", None)
    return (to_text() if callable(to_text) else json.dumps(str(item), ensure_ascii=False))[:2000]
