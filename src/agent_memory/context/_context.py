"""``MemoryContext``: an AutoGen model context that recalls memories before the main model answers.

>>> system = MemorySystem.from_settings()  # doctest: +SKIP
>>> context = system.context(user_id="u1", friend_id="mentor")  # doctest: +SKIP
>>> agent = AssistantAgent("main", model_client=client, model_context=context)  # doctest: +SKIP

``get_messages()`` runs the :class:`MemRecallAgent` once per new user turn (the agent's tool rounds in
that turn reuse the result) and returns the newest turns that fit the history token budget, with the
recall either as one system message in front (``injection="system"``)::

    [记忆召回] 找到 1 条相关记忆。
    [memory:db-config-001:MySQL 主从配置: host localhost, port 3306]

or as a simulated ``recall_memory`` call and its result right after the user's message
(``injection="tool_call"``: system, ..., user, assistant(tool call), tool, then the reply), the order
strict chat templates accept. The stored history is never changed. A recall that finds nothing leaves
the messages as they are; one that runs out of its time budget or fails (an event says why) still
gives what the searches had found. A turn that failed before its reply does not break the next
request: its message joins the next one (strict templates refuse two user messages in a row), and
tool calls are sent with empty text, never ``null`` content.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any, Literal, Self

from autogen_core import Component, ComponentModel, FunctionCall
from autogen_core.model_context import ChatCompletionContext
from autogen_core.models import (
    AssistantMessage,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    LLMMessage,
    SystemMessage,
    UserMessage,
)
from pydantic import BaseModel

from data_layer import InvalidInputError, MemoryRecallSettings, MemoryRecord, NotFoundError, Scope

from ..clients import with_text_on_tool_calls
from ..forgetting import BroadSubjectError, Forgetting, forget_request, forgotten_message_ids, undo_request
from ..recall import (
    MemoryForgottenEvent,
    MemoryNotForgottenEvent,
    MemoryUnforgottenEvent,
    MemRecallAgent,
    RecallErrorEvent,
    RecallFinishedEvent,
    RecallMemoryOutput,
    RecallResult,
    RecallStartedEvent,
    RecallTimeoutEvent,
    output_of_records,
)
from ..text import neutralize
from ..tool_archive import ToolResultManager
from ..tools import RecallLedger
from ._archiving import archive_results
from ._aside import kept_messages, without_set_aside
from ._block import RecallBlock, ledger_block, reachable
from ._host import MemoryHost
from ._options import RecallOptions
from ._turns import (
    MAX_RECALL_HISTORY,
    alternating,
    answered_turns,
    chat_pairs,
    conversation_of,
    current_turn,
    message_to_store,
    stored_before,
)
from ._window import bounded, message_tokens

logger = logging.getLogger(__name__)
#: The most stored messages :meth:`MemoryContext.resume` gives the model (the token budget bounds what is sent).
MAX_RESUME = 1000


class MemoryContextConfig(BaseModel):
    """Serialisable configuration of :class:`MemoryContext`.

    ``database_url`` is empty when the URL holds a password (a dumped config never carries secrets):
    loading then uses ``MEMORY_DATABASE_URL``. ``model_client`` is the recall model client's own
    component config (``None``: the offline planner); ``archive`` whether big tool results are archived.
    """

    database_url: str = ""
    user_id: str
    friend_id: str | None = None
    thread_id: str | None = None
    options: RecallOptions = RecallOptions()
    model_client: ComponentModel | None = None
    archive: bool = True
    persist: bool = True


class MemoryContext(ChatCompletionContext, Component[MemoryContextConfig]):
    """Model context with memory recall (see the module docs). Build it with
    :meth:`MemorySystem.context`; ``events`` (an ``asyncio.Queue``) receives recall events."""

    component_config_schema = MemoryContextConfig

    def __init__(
        self,
        system: MemoryHost,
        *,
        scope: Scope,
        options: RecallOptions | None = None,
        events: asyncio.Queue[Any] | None = None,
        archive: ToolResultManager | None = None,
        persist: bool = True,
        owns_system: bool = False,
        initial_messages: list[LLMMessage] | None = None,
    ) -> None:
        super().__init__(initial_messages)
        self.system = system
        self.scope = scope
        self.options = options or system.recall_options
        self.events = events
        self.archive = archive
        self.persist = persist
        self._owns_system = owns_system
        self._turn: tuple[int, str] | None = None
        self._injected: list[LLMMessage] = []
        #: The last recall's result (``None`` before the first, or when it timed out early or failed).
        self.last_result: RecallResult | None = None
        #: The last recall block ("" when none), what it gives in recall_memory's output shape, and
        #: the recall_memory arguments it answers (the simulated call's, the web page's card's).
        self.last_block = ""
        self.last_output: RecallMemoryOutput | None = None
        self.last_arguments: dict[str, Any] | None = None
        #: The stored chat read by :meth:`resume` (``(role, text)``, oldest first), reused by the recall,
        #: and what of it the model was shown (alternating, replies as ``assistant_text`` made them).
        self._stored: list[tuple[str, str]] | None = None
        self._shown: list[tuple[str, str]] = []
        #: The user's recall settings as the caller read them for the next turn (see :meth:`use_settings`).
        self._settings: MemoryRecallSettings | None = None
        #: What the user asked to forget in this context, oldest first (see :meth:`add_message`).
        self.forgotten: list[Forgetting] = []
        #: The messages forgettings set aside, read once for a turn (by :meth:`resume` or the recall).
        self._aside: frozenset[int] | None = None
        #: The stored id of the user's last message in this context (a pointing undo must follow the request).
        self._last_user_id: int | None = None

    # -- storage -------------------------------------------------------------------------------------

    async def add_message(self, message: LLMMessage) -> None:
        """Keep the message; user and assistant text is saved to ``chat_messages`` (blank text is not);
        a tool result over the archive threshold is archived and kept as its placeholder."""
        if isinstance(message, FunctionExecutionResultMessage) and self.archive is not None:
            message = await archive_results(self.archive, message, self._messages[-6:], emit=self._emit)
        await super().add_message(message)
        if not self.persist:
            return
        role: Literal["user", "assistant"] | None = (
            "user"
            if isinstance(message, UserMessage)
            else "assistant"
            if isinstance(message, AssistantMessage)
            else None
        )
        if role is None or not isinstance(message.content, str) or not message.content.strip():
            return
        try:
            stored = await self.system.layer.messages.append(
                user_id=self.scope.user_id,
                role=role,
                content=message_to_store(message.content),
                friend_id=self.scope.friend_id,
                thread_id=self.scope.thread_id,
            )
        except Exception as exc:  # the conversation goes on; the UI hears about it
            logger.warning("could not save a message", exc_info=True)
            await self._emit(
                RecallErrorEvent(
                    source="memory_context", content=f"saving a message failed: {exc}", error_type=type(exc).__name__
                )
            )
            return
        if role == "user":
            previous, self._last_user_id = self._last_user_id, stored.id
            if not await self._undo_if_asked(stored.content, previous):
                await self._forget_if_asked(stored.content, stored.id)
        if role == "user" and self.system.background_archiving:
            # earlier sessions that are over become memories; the reply does not wait for it
            self.system.session_archiver.schedule(self.scope)

    async def _forget_if_asked(self, text: str, message_id: int) -> None:
        """Carry out the user's request to forget, if the message makes one. It is done here, at the turn,
        before this turn's recall runs: the user expects to be heard at once, and the reply to the very
        request must not be given what it asked to forget. (The archiver keeps the request and the
        messages set aside out of the memories it forms later.)"""
        request = forget_request(text)
        if request is None:
            return
        try:
            done = await self.system.forget(self.scope, request.subject, request_message_id=message_id)
        except BroadSubjectError as exc:  # "用户", "the user": nearly everything; the user names it precisely
            await self._emit(
                MemoryNotForgottenEvent(
                    source="memory_context",
                    subject=exc.subject,
                    matches=exc.matches,
                    total=exc.total,
                    content=f"没有忘记任何内容：「{exc.subject}」涉及 {exc.matches} 条记忆中的大多数"
                    f"（共 {exc.total} 条），请说得更具体些，例如要忘记的人或事",
                )
            )
            return
        except Exception as exc:  # the conversation goes on; the UI hears about it
            logger.warning("forgetting what the user asked failed", exc_info=True)
            await self._emit(
                RecallErrorEvent(
                    source="memory_context", content=f"forgetting failed: {exc}"[:500], error_type=type(exc).__name__
                )
            )
            return
        self.forgotten.append(done)
        self._aside = None  # this turn's recall reads what is set aside now
        await self._emit(
            MemoryForgottenEvent(
                source="memory_context",
                content=done.describe(),
                subject=done.subject,
                forgetting_key=done.key,
                memory_keys=list(done.memory_keys),
                message_ids=list(done.message_ids),
            )
        )

    async def _undo_if_asked(self, text: str, previous_id: int | None) -> bool:
        """Undo this context's newest forgetting when the message takes it back (see
        :func:`~agent_memory.forgetting.undo_request`): one that names the forgetting at any later turn,
        one that only points at it ("undo that") as the user's next message after the request. Returns
        whether the message was such an undo (then it is no request to forget)."""
        request = undo_request(text)
        open_ones = [i for i, f in enumerate(self.forgotten) if f.undone_at is None]
        if request is None or not open_ones:
            return False
        index = open_ones[-1]
        target = self.forgotten[index]
        if not request.names_forgetting and (previous_id is None or previous_id != target.request_message_id):
            return False
        try:
            done = await self.system.unforget(self.scope.user_id, key=target.key)
        except NotFoundError:  # undone meanwhile (the memory page, the CLI): nothing left to take back
            return True
        except Exception as exc:  # the conversation goes on; the UI hears about it
            logger.warning("undoing a forgetting failed", exc_info=True)
            await self._emit(
                RecallErrorEvent(
                    source="memory_context", content=f"undo failed: {exc}"[:500], error_type=type(exc).__name__
                )
            )
            return True
        self.forgotten[index] = done
        self._aside = None
        await self._emit(
            MemoryUnforgottenEvent(
                source="memory_context",
                content=f"已撤销遗忘「{done.subject}」",
                subject=done.subject,
                forgetting_key=done.key,
                memory_keys=list(done.memory_keys),
            )
        )
        return True

    async def _set_aside(self) -> frozenset[int]:
        """The ids of the user's messages that forgettings set aside (read once a turn)."""
        if self._aside is None:
            self._aside = await forgotten_message_ids(self.system.layer.memory, user_id=self.scope.user_id)
        return self._aside

    async def resume(
        self, *, limit: int, assistant_text: Callable[[str], str] | None = None, assistant_source: str = "assistant"
    ) -> int:
        """Continue the stored chat of this (user, friend): its newest ``limit`` user and assistant
        messages enter the context (they are stored already, so not saved again). Returns how many.

        One read serves the model and the recall's look-back (which reaches up to
        ``MAX_RECALL_HISTORY`` messages back), instead of one each per turn. ``assistant_text`` turns a
        stored reply into what the model is shown (the web chat strips ``<think>`` parts);
        ``assistant_source`` names the agent on the replies (the agent's name).

        >>> context = system.context(user_id="alice", friend_id="f-1")  # doctest: +SKIP
        >>> await context.resume(limit=40)  # doctest: +SKIP
        12
        """
        if isinstance(limit, bool) or not isinstance(limit, int) or not 0 <= limit <= MAX_RESUME:
            raise InvalidInputError(f"limit must be a whole number of messages from 0 to {MAX_RESUME}, not {limit!r}")
        stored = await self.system.layer.messages.latest(
            user_id=self.scope.user_id, friend_id=self.scope.friend_id, limit=max(limit, MAX_RECALL_HISTORY)
        )
        self._stored = chat_pairs(kept_messages(stored, await self._set_aside()))  # none a forgetting set aside
        shown = alternating(self._stored[-limit:]) if limit > 0 else []
        if assistant_text is not None:
            shown = [(role, assistant_text(text) if role == "assistant" else text) for role, text in shown]
        for role, content in shown:  # stored chat in front of the model: neutralised like memory text
            if role == "user":
                await super().add_message(UserMessage(content=neutralize(content), source="user"))
            else:
                await super().add_message(AssistantMessage(content=neutralize(content), source=assistant_source))
        self._shown = shown
        return len(shown)

    def use_settings(self, settings: MemoryRecallSettings) -> None:
        """Recall with ``settings`` (the user's memory settings, read by the caller for this turn) in the
        next turn instead of reading them again; later turns read them anew, so a change the user
        saves meanwhile applies from the next message on.

        A web chat reads the user's settings at the start of each turn for its own display choices;
        handing them over spares the recall a second read of the same row.

        >>> settings = await system.layer.settings.get(user_id="alice")  # doctest: +SKIP
        >>> context.use_settings(settings.memory)  # doctest: +SKIP
        """
        if not isinstance(settings, MemoryRecallSettings):
            raise InvalidInputError(f"settings must be a MemoryRecallSettings, got {type(settings).__name__}")
        self._settings = settings

    # -- what the model sees -----------------------------------------------------------------------

    async def get_messages(self) -> list[LLMMessage]:
        """The newest turns within the history token budget (a copy), with the recall of the current
        user turn; archived results loaded in an earlier turn are back to their placeholders."""
        history = list(self._messages)
        if self.archive is not None and history:
            last_user = max((i for i, m in enumerate(history) if isinstance(m, UserMessage)), default=0)
            try:
                history = [*await self.archive.restore_placeholders(history[:last_user]), *history[last_user:]]
            except Exception as exc:  # the reply goes on with the history as stored
                logger.warning("restoring archive placeholders failed", exc_info=True)
                await self._emit(
                    RecallErrorEvent(
                        source="memory_context", content=f"archive: {exc}"[:500], error_type=type(exc).__name__
                    )
                )
        turn = current_turn(history)
        if turn is not None and turn != self._turn:
            self._injected = []
            self._injected = await self._recall(history, turn)
            self._turn = turn
        budget = self.options.history_token_budget - sum(message_tokens(m) for m in self._injected)
        # a failed turn's unanswered message joins the next one; tool calls go out with "" text, not null
        history = bounded(answered_turns(history), budget=max(budget, 1))
        if not self._injected:
            return with_text_on_tool_calls(history)
        if self.options.injection == "system":
            return with_text_on_tool_calls([*self._injected, *history])
        last_user = max(i for i, m in enumerate(history) if isinstance(m, UserMessage))
        return with_text_on_tool_calls([*history[: last_user + 1], *self._injected, *history[last_user + 1 :]])

    # -- recall ------------------------------------------------------------------------------------

    async def _recall(self, history: Sequence[LLMMessage], turn: tuple[int, str]) -> list[LLMMessage]:
        conversation = conversation_of(history)
        if not conversation:
            return []
        started = time.perf_counter()
        self.last_result, self.last_block, self.last_output, self.last_arguments = None, "", None, None
        agent: list[MemRecallAgent] = []
        settings: list[MemoryRecallSettings] = []
        try:
            # settings, engine start-up and the agent all count against the time budget; a time-out
            # cancels the model request (the task is cancelled) and keeps what was found so far
            async with asyncio.timeout(self.options.time_budget_s):
                result = await self._run_recall(conversation, agent, settings)
        except TimeoutError:
            await self._emit(RecallTimeoutEvent(source="memory_context", budget_s=self.options.time_budget_s))
            if not agent or not settings:
                return []
            ledger = agent[0].ledger
        except Exception as exc:
            logger.warning("memory recall failed", exc_info=True)
            await self._emit(
                RecallErrorEvent(source="memory_context", content=str(exc)[:500], error_type=type(exc).__name__)
            )
            if not agent or not settings:
                return []
            ledger = agent[0].ledger  # what the searches found before the failure
        else:
            if result is None:
                return []
            self.last_result = result
            ledger = result.ledger
        block, records = await self._block(ledger, settings[0])
        self.last_block = block.text
        user = settings[0]
        # what the block gives, in the recall_memory tool's shape (the simulated call, the page's card)
        self.last_output = output_of_records(records, profile_topk=user.profile_top_k, event_topk=user.event_top_k)
        self.last_arguments = {
            "query": conversation[-1][1][:500],
            "friend_id": self.scope.friend_id,
            "profile_topk": user.profile_top_k,
            "event_topk": user.event_top_k,
            "similarity_threshold": user.similarity_threshold,
        }
        await self._emit(
            RecallFinishedEvent(
                source="memory_context",
                content=block.text,
                memory_keys=list(block.keys),
                confidence=ledger.handoff.confidence if ledger.handoff else 0.0,
                iterations=self.last_result.iterations if self.last_result else 0,
                elapsed_ms=round((time.perf_counter() - started) * 1000, 1),
            )
        )
        if not block.keys:
            return []
        if self.options.injection == "system":
            return [SystemMessage(content=block.text)]
        call = FunctionCall(
            id=f"recall-{turn[0]}", name="recall_memory", arguments=json.dumps(self.last_arguments, ensure_ascii=False)
        )
        output = self.last_output.model_dump_json()
        executed = FunctionExecutionResult(content=output, name="recall_memory", call_id=call.id, is_error=False)
        return [
            AssistantMessage(content=[call], source="memory_context"),
            FunctionExecutionResultMessage(content=[executed]),
        ]

    async def _run_recall(
        self,
        conversation: list[tuple[str, str]],
        agent_out: list[MemRecallAgent],
        settings_out: list[MemoryRecallSettings],
    ) -> RecallResult | None:
        settings, self._settings = self._settings, None
        if settings is None:
            settings = (await self.system.layer.settings.get(user_id=self.scope.user_id)).memory
        settings_out.append(settings)
        if not settings.enabled:
            return None
        await self._emit(
            RecallStartedEvent(
                source="memory_context", content=conversation[-1][1][:200], window_size=self.options.window_size
            )
        )
        agent = self.system.recall_agent(
            self.scope, settings=settings, options=self.options, on_event=self._on_agent_event
        )
        agent_out.append(agent)
        return await agent.recall(await self._recall_conversation(conversation))

    async def _recall_conversation(self, conversation: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """What the recall model reads, in its window and each larger one: the conversation after the
        stored chat, without the messages a forgetting set aside (the current message stays)."""
        full = await self._with_stored_history(conversation)
        try:
            aside = await self._set_aside()
            stored = (
                await self.system.layer.messages.latest(
                    user_id=self.scope.user_id, friend_id=self.scope.friend_id, limit=MAX_RECALL_HISTORY
                )
                if aside
                else []
            )
        except Exception:  # unknown what is set aside: the recall reads the current message alone
            logger.warning("reading what the user asked to forget failed", exc_info=True)
            return full[-1:]
        finally:
            self._aside = None  # the next turn reads it anew
        return without_set_aside(full, stored, aside)

    async def _with_stored_history(self, conversation: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """The conversation with the stored chat of this (user, friend) before it, so a window
        expansion can look back past what this context object holds (an earlier session)."""
        if not self.persist or len(conversation) >= MAX_RECALL_HISTORY:
            return conversation
        if self._stored is None:  # else read by resume(): the stored chat before this context's turns
            try:
                stored = await self.system.layer.messages.latest(
                    user_id=self.scope.user_id, friend_id=self.scope.friend_id, limit=MAX_RECALL_HISTORY
                )
            except Exception:  # the recall goes on with what this context holds
                logger.warning("reading the stored chat for recall failed", exc_info=True)
                return conversation
            return stored_before(chat_pairs(stored), conversation)
        shown = self._shown
        if shown and conversation[: len(shown)] == shown:
            # what resume() gave the model, then this context's own turns: the stored chat as it is (with
            # what the model was not shown, in its place), then those turns
            return [*self._stored, *conversation[len(shown) :]][-MAX_RECALL_HISTORY:]
        return stored_before(self._stored, conversation)

    async def _block(
        self, ledger: RecallLedger, settings: MemoryRecallSettings
    ) -> tuple[RecallBlock, list[MemoryRecord]]:
        """Relevant memories (score >= the user's threshold, only keys the searches returned) that may
        reach this friend (read once more: ``reachable``; none when that read fails), and the
        memories of the block's slots as read."""
        try:
            pairs = await reachable(self.system.layer, self.scope, ledger.relevant(settings.similarity_threshold))
        except Exception as exc:  # the reply goes on without memories rather than with unchecked ones
            logger.warning("checking recalled memories failed", exc_info=True)
            await self._emit(
                RecallErrorEvent(
                    source="memory_context", content=f"recall block: {exc}"[:500], error_type=type(exc).__name__
                )
            )
            pairs = []
        return ledger_block(pairs, ledger=ledger, settings=settings, token_budget=self.options.slot_token_budget)

    async def _on_agent_event(self, event: Any) -> None:
        from autogen_agentchat.messages import ToolCallExecutionEvent

        await self._emit(event)
        if isinstance(event, ToolCallExecutionEvent):
            for item in event.content:
                if item.is_error:
                    await self._emit(
                        RecallErrorEvent(
                            source="memory_context", content=item.content[:500], error_type=f"tool:{item.name}"
                        )
                    )

    async def _emit(self, event: Any) -> None:
        """Hand an event to the UI queue; a full (bounded) queue drops it rather than stall the reply."""
        if self.events is not None:
            with contextlib.suppress(asyncio.QueueFull):
                self.events.put_nowait(event)

    # -- life cycle and component ----------------------------------------------------------------------

    async def close(self) -> None:
        """Close the memory system when this context created it (a context loaded from its config)."""
        if self._owns_system:
            await self.system.close()

    def _to_config(self) -> MemoryContextConfig:
        client = self.system.recall_client
        return MemoryContextConfig(
            database_url=self.system.shareable_url,
            user_id=self.scope.user_id,
            friend_id=self.scope.friend_id,
            thread_id=self.scope.thread_id,
            options=self.options,
            model_client=client.dump_component() if client is not None else None,
            archive=self.archive is not None,
            persist=self.persist,
        )

    @classmethod
    def _from_config(cls, config: MemoryContextConfig) -> Self:
        """A context is rebuilt by the memory system that opens its database: the one ``MemorySystem``
        makes dumps a provider that does (``agent_memory.system.SystemMemoryContext``)."""
        raise TypeError(
            f"{cls.__name__} is loaded through the memory system that opens its database: dump the context "
            "MemorySystem.context() made (its provider is agent_memory.system.SystemMemoryContext)"
        )
