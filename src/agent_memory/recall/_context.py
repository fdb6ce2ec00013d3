"""``MemoryContext``: an AutoGen model context that recalls memories before the main model answers.

>>> context = MemoryContext(layer=layer, user_id="u1", friend_id="mentor")  # doctest: +SKIP
>>> agent = AssistantAgent("main", model_client=client, model_context=context)  # doctest: +SKIP

``get_messages()`` runs the :class:`MemRecallAgent` once per new user turn (the agent's tool rounds in
that turn reuse the result) and returns the history with the recall block in front:

    [记忆召回] 找到 1 条相关记忆。...
    [memory:db-config-001:MySQL 主从配置: host localhost, port 3306]

The stored history is never changed. Recall that finds nothing, runs out of its time budget or fails
leaves the messages as they are (the failure is reported as an event) and the reply still happens.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Sequence
from typing import Any, Literal, Self

from autogen_core import Component, FunctionCall
from autogen_core.model_context import ChatCompletionContext
from autogen_core.models import (
    AssistantMessage,
    ChatCompletionClient,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    LLMMessage,
    SystemMessage,
    UserMessage,
)
from pydantic import BaseModel, Field

from data_layer import AgentFusionDataLayer, MemoryRecallSettings, scope_id

from ..archive import LOAD_TOOL, ToolResultManager
from ..search import HybridMemorySearch, search_from_settings
from ..settings import get_settings
from ._agent import MemRecallAgent, RecallResult
from ._events import (
    RecallErrorEvent,
    RecallFinishedEvent,
    RecallStartedEvent,
    RecallTimeoutEvent,
    WindowExpandedEvent,
)

logger = logging.getLogger(__name__)

InjectionMode = Literal["system", "tool_call"]
SLOT_HEADER = "[记忆召回]"
PROFILE_TYPES = frozenset({"profile", "user_preference"})


class MemoryContextConfig(BaseModel):
    """Serialisable configuration of :class:`MemoryContext`. ``database_url`` is empty when the URL holds
    a password (a dumped config never carries secrets): loading then uses ``MEMORY_DATABASE_URL``."""

    database_url: str = ""
    user_id: str
    friend_id: str | None = None
    thread_id: str | None = None
    window_size: int = Field(5, ge=1, le=50)
    max_iterations: int = Field(3, ge=1, le=5)
    time_budget_s: float = Field(3.0, gt=0, le=120)
    token_budget: int = Field(400, ge=20, le=8000)
    injection: InjectionMode = "system"
    persist: bool = True


def _shareable_url(layer: AgentFusionDataLayer | None) -> str:
    if layer is None or layer.url.password:
        return ""
    return layer.url.render_as_string(hide_password=False)


def estimate_tokens(text: str) -> int:
    """A cheap token estimate: Chinese characters count one each, other text one per four characters."""
    cjk = sum(1 for ch in text if "\u3400" <= ch <= "\u9fff")
    return cjk + (len(text) - cjk + 3) // 4


def slot(key: str, summary: str) -> str:
    """One slot line, ``[memory:key:summary]`` (brackets and newlines in the summary are flattened)."""
    clean = " ".join(summary.replace("[", "(").replace("]", ")").split())
    if clean in ("full", "summary") or clean.startswith("meta:"):
        clean = f"“{clean}”"  # would read as a placeholder format
    return f"[memory:{key}:{clean}]"


class MemoryContext(ChatCompletionContext, Component[MemoryContextConfig]):
    """Model context with memory recall (see the module docs).

    Give either ``layer`` (an open :class:`AgentFusionDataLayer`) or ``database_url``. ``model_client``
    drives the recall agent (default: the offline planner); ``events`` (an ``asyncio.Queue``)
    receives recall events; ``injection`` is ``"system"`` (slots as a system message) or
    ``"tool_call"`` (a simulated ``recall_memory`` call and its result before the user's message).
    Per-user recall settings (enabled, rounds, top-k, threshold) are read from the data layer.
    """

    component_config_schema = MemoryContextConfig
    component_provider_override = "agent_memory.recall.MemoryContext"

    def __init__(
        self,
        *,
        user_id: str | int,
        layer: AgentFusionDataLayer | None = None,
        database_url: str | None = None,
        friend_id: str | int | None = None,
        thread_id: str | int | None = None,
        search: HybridMemorySearch | None = None,
        model_client: ChatCompletionClient | None = None,
        window_size: int = 5,
        max_iterations: int = 3,
        time_budget_s: float = 3.0,
        token_budget: int = 400,
        injection: InjectionMode = "system",
        persist: bool = True,
        events: asyncio.Queue[Any] | None = None,
        archive: ToolResultManager | None = None,
        initial_messages: list[LLMMessage] | None = None,
    ) -> None:
        super().__init__(initial_messages)
        if layer is None and database_url is None:
            raise ValueError("MemoryContext needs layer= or database_url=")
        config = MemoryContextConfig(
            database_url=database_url if database_url is not None else _shareable_url(layer),
            user_id=str(scope_id(user_id, name="user_id")),
            friend_id=scope_id(friend_id, name="friend_id", optional=True),
            thread_id=scope_id(thread_id, name="thread_id", optional=True),
            window_size=window_size,
            max_iterations=max_iterations,
            time_budget_s=time_budget_s,
            token_budget=token_budget,
            injection=injection,
            persist=persist,
        )
        self.config = config
        self._layer = layer
        self._search = search
        self.model_client = model_client
        self.events = events
        self.archive = archive
        self._turn: tuple[int, str] | None = None
        self._injected: list[LLMMessage] = []
        #: The last recall's result.
        self.last_result: RecallResult | None = None

    # -- storage -------------------------------------------------------------------------------------

    async def _data(self) -> AgentFusionDataLayer:
        if self._layer is None:
            self._layer = AgentFusionDataLayer(self.config.database_url or get_settings().memory_database_url)
        return self._layer

    async def _engine(self) -> HybridMemorySearch:
        if self._search is None:
            self._search = search_from_settings((await self._data()).memory)
        return self._search

    async def add_message(self, message: LLMMessage) -> None:
        """Keep the message; user and assistant text is also saved to ``chat_messages``; a tool result
        over the archive threshold is archived and kept as its placeholder."""
        if isinstance(message, FunctionExecutionResultMessage) and self.archive is not None:
            message = await self._archive(message)
        await super().add_message(message)
        if not self.config.persist:
            return
        role = (
            "user"
            if isinstance(message, UserMessage)
            else "assistant"
            if isinstance(message, AssistantMessage)
            else None
        )
        if role is None or not isinstance(message.content, str):
            return
        try:
            layer = await self._data()
            await layer.messages.append(
                user_id=self.config.user_id,
                role=role,  # type: ignore[arg-type]
                content=message.content,
                friend_id=self.config.friend_id,
                thread_id=self.config.thread_id,
            )
        except Exception as exc:  # the conversation goes on; the UI hears about it
            logger.warning("could not save a message", exc_info=True)
            await self._emit(RecallErrorEvent(source="memory_context", content=f"saving a message failed: {exc}",
                                              error_type=type(exc).__name__))  # fmt: skip

    async def _archive(self, message: FunctionExecutionResultMessage) -> FunctionExecutionResultMessage:
        assert self.archive is not None
        calls = {
            c.id: c
            for m in self._messages[-6:]
            if isinstance(m, AssistantMessage) and isinstance(m.content, list)
            for c in m.content
        }
        results = []
        for r in message.content:
            if r.name == LOAD_TOOL or len(r.content) <= self.archive.threshold:
                results.append(r)
                continue
            call = calls.get(r.call_id)
            try:
                arguments = json.loads(call.arguments) if call and call.arguments else {}
            except ValueError:
                arguments = {}
            try:
                text = await self.archive.process_tool_result(r.name, arguments if isinstance(arguments, dict) else {},
                                                              r.content)  # fmt: skip
            except Exception as exc:  # keep the full result rather than lose it
                logger.warning("archiving a tool result failed", exc_info=True)
                await self._emit(RecallErrorEvent(source="memory_context", content=f"archiving failed: {exc}",
                                                  error_type=type(exc).__name__))  # fmt: skip
                text = r.content
            results.append(r.model_copy(update={"content": text}))
        return FunctionExecutionResultMessage(content=results)

    # -- recall ------------------------------------------------------------------------------------

    async def get_messages(self) -> list[LLMMessage]:
        """The history (a copy), with the recall block in front once per user turn; archived results
        loaded in an earlier turn are back to their placeholders."""
        history = list(self._messages)
        if self.archive is not None and history:
            last_user = max((i for i, m in enumerate(history) if isinstance(m, UserMessage)), default=0)
            try:
                history = [*await self.archive.restore_placeholders(history[:last_user]), *history[last_user:]]
            except Exception as exc:  # the reply goes on with the history as stored
                logger.warning("restoring archive placeholders failed", exc_info=True)
                await self._emit(RecallErrorEvent(source="memory_context", content=f"archive: {exc}"[:500],
                                                  error_type=type(exc).__name__))  # fmt: skip
        turn = _current_turn(history)
        if turn is None:
            return history
        if turn != self._turn:
            self._injected = []
            self._injected = await self._recall(history, turn)
            self._turn = turn
        if not self._injected:
            return history
        if self.config.injection == "system":
            return [*self._injected, *history]
        last_user = max(i for i, m in enumerate(history) if isinstance(m, UserMessage))
        return [*history[:last_user], *self._injected, *history[last_user:]]

    async def _recall(self, history: Sequence[LLMMessage], turn: tuple[int, str]) -> list[LLMMessage]:
        conversation = _conversation(history)
        if not conversation:
            return []
        started = time.perf_counter()
        self.last_result = None
        try:
            # settings, engine start-up and the agent all count against the time budget
            outcome = await asyncio.wait_for(self._run_recall(conversation), timeout=self.config.time_budget_s)
        except TimeoutError:
            await self._emit(RecallTimeoutEvent(source="memory_context", budget_s=self.config.time_budget_s))
            return []
        except Exception as exc:
            logger.warning("memory recall failed", exc_info=True)
            await self._emit(RecallErrorEvent(source="memory_context", content=str(exc)[:500],
                                              error_type=type(exc).__name__))  # fmt: skip
            return []
        if outcome is None:
            return []
        result, settings = outcome
        self.last_result = result
        block, keys = self._block(result, settings)
        await self._emit(
            RecallFinishedEvent(
                source="memory_context",
                content=block,
                memory_keys=keys,
                confidence=result.handoff.confidence if result.handoff else 0.0,
                iterations=result.iterations,
                elapsed_ms=round((time.perf_counter() - started) * 1000, 1),
            )
        )
        if not keys:
            return []
        if self.config.injection == "system":
            return [SystemMessage(content=block)]
        call = FunctionCall(id=f"recall-{turn[0]}", name="recall_memory",
                            arguments=json.dumps({"query": conversation[-1][1][:500]}, ensure_ascii=False))  # fmt: skip
        return [
            AssistantMessage(content=[call], source="memory_context"),
            FunctionExecutionResultMessage(
                content=[FunctionExecutionResult(content=block, name="recall_memory", call_id=call.id, is_error=False)]
            ),
        ]

    async def _run_recall(
        self, conversation: list[tuple[str, str]]
    ) -> tuple[RecallResult, MemoryRecallSettings] | None:
        settings = await self._settings()
        if not settings.enabled:
            return None
        await self._emit(RecallStartedEvent(source="memory_context", content=conversation[-1][1][:200],
                                            window_size=self.config.window_size))  # fmt: skip
        agent = MemRecallAgent(
            await self._engine(),
            user_id=self.config.user_id,
            friend_id=self.config.friend_id,
            model_client=self.model_client,
            rounds=settings.rounds,
            similarity_threshold=settings.similarity_threshold,
            max_iterations=self.config.max_iterations,
            window_size=self.config.window_size,
            on_event=self._on_agent_event,
        )
        return await agent.recall(conversation), settings

    @property
    def last_block(self) -> str:
        """The recall block the main model receives in the current turn ("" when nothing was recalled)."""
        for message in self._injected:
            if isinstance(message, SystemMessage):
                return message.content
            if isinstance(message, FunctionExecutionResultMessage):
                return message.content[0].content
        return ""

    async def _settings(self) -> MemoryRecallSettings:
        layer = await self._data()
        return (await layer.settings.get(user_id=self.config.user_id)).memory

    def _block(self, result: RecallResult, settings: MemoryRecallSettings) -> tuple[str, list[str]]:
        """The summary and one slot per relevant memory (only keys the searches returned), most
        relevant first, at most top-k profiles and top-k others, cut to the token budget."""
        found = {str(r["memory_key"]): r for r in result.found}
        keys = [k for k in (result.handoff.relevant_memory_keys if result.handoff else []) if k in found]
        summary = result.handoff.search_summary if result.handoff else ""
        head = f"{SLOT_HEADER} {' '.join(summary.split())}"[:300]
        lines, chosen = [head], []
        budget = self.config.token_budget - estimate_tokens(head)
        profiles = others = 0
        for key in keys:
            kind = str(found[key].get("memory_type") or "")
            if kind in PROFILE_TYPES:
                if profiles >= settings.profile_top_k:
                    continue
            elif others >= settings.event_top_k:
                continue
            line = slot(key, str(found[key].get("summary") or ""))
            cost = estimate_tokens(line)
            if cost > budget:
                break
            budget -= cost
            lines.append(line)
            chosen.append(key)
            profiles += kind in PROFILE_TYPES
            others += kind not in PROFILE_TYPES
        return ("\n".join(lines) if chosen else ""), chosen

    async def _on_agent_event(self, event: Any) -> None:
        from autogen_agentchat.messages import ToolCallExecutionEvent

        await self._emit(event)
        if isinstance(event, ToolCallExecutionEvent):
            for item in event.content:
                if item.is_error:
                    await self._emit(RecallErrorEvent(source="memory_context", content=item.content[:500],
                                                      error_type=f"tool:{item.name}"))  # fmt: skip
                elif item.name == "expand_context_window":
                    data = json.loads(item.content)
                    if data.get("approved"):
                        await self._emit(WindowExpandedEvent(source="memory_context", new_size=data["new_size"],
                                                             iteration=data["iteration"]))  # fmt: skip

    async def _emit(self, event: Any) -> None:
        """Hand an event to the UI queue; a full (bounded) queue drops it rather than stall the reply."""
        if self.events is not None:
            with contextlib.suppress(asyncio.QueueFull):
                self.events.put_nowait(event)

    # -- component -----------------------------------------------------------------------------------

    def _to_config(self) -> MemoryContextConfig:
        return self.config

    @classmethod
    def _from_config(cls, config: MemoryContextConfig) -> Self:
        return cls(
            database_url=config.database_url,
            user_id=config.user_id,
            friend_id=config.friend_id,
            thread_id=config.thread_id,
            window_size=config.window_size,
            max_iterations=config.max_iterations,
            time_budget_s=config.time_budget_s,
            token_budget=config.token_budget,
            injection=config.injection,
            persist=config.persist,
        )


def _current_turn(history: Sequence[LLMMessage]) -> tuple[int, str] | None:
    """``(number of user messages, text of the last one)``: a new value means a new user turn."""
    users = [m for m in history if isinstance(m, UserMessage)]
    if not users:
        return None
    return len(users), str(users[-1].content)


def _conversation(history: Sequence[LLMMessage]) -> list[tuple[str, str]]:
    """``(role, text)`` of the user and assistant text messages, oldest first, ending at the last user
    message."""
    pairs: list[tuple[str, str]] = []
    for m in history:
        if isinstance(m, UserMessage) and isinstance(m.content, str):
            pairs.append(("user", m.content))
        elif isinstance(m, AssistantMessage) and isinstance(m.content, str):
            pairs.append(("assistant", m.content))
    while pairs and pairs[-1][0] != "user":
        pairs.pop()
    return pairs
