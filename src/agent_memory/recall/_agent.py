"""``MemRecallAgent``: an AutoGen ``AssistantAgent`` with the memory tools, run until it hands off.

>>> recall = MemRecallAgent(search, scope=Scope.of("u1", "mentor"))  # doctest: +SKIP
>>> result = await recall.recall([("user", "按之前的数据库配置来")])  # doctest: +SKIP
>>> result.relevant_memory_keys, result.iterations  # doctest: +SKIP
(['db-config-001'], 1)

Each iteration runs a fresh agent over the last ``window_size`` messages. An approved
``expand_context_window`` ends the iteration and the next one starts with the larger window, up to
``max_iterations``. ``handoff`` (given to the agent through ``handoffs=``, with the
tools' ``HandoffInput`` as its arguments) ends the recall.

A recall driven by a model always delivers: the deterministic planner's first round runs before the
model (one search, a few milliseconds), and its memories stand in the ledger as the fallback. A model
that never searches, names only memories no search returned, fails, or runs past
``model_time_budget_s`` (its request is cancelled then, so a one-slot server is free for the reply)
still leaves the recall with what its searches found, or else with that first round's memories.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.base import Handoff
from autogen_agentchat.messages import BaseAgentEvent, BaseChatMessage
from autogen_core.models import ChatCompletionClient
from autogen_core.tools import BaseTool

from data_layer import Scope

from ..clients import TextOnToolCallsContext
from ..search import HybridMemorySearch
from ..telemetry import RECALL_SPAN, span
from ..tools import (
    MEMRECALL_TOOLS,
    HandoffInput,
    MemorySearchResultItem,
    MemoryToolbox,
    RecallLedger,
    ScopedTool,
    ToolLimits,
)
from ._days import told_days_filter
from ._events import RecallErrorEvent, RecallTimeoutEvent, WindowExpandedEvent
from ._planner import OfflineRecallPlanner
from ._prompt import format_task, recall_prompt

AGENT_NAME = "mem_recall"
logger = logging.getLogger(__name__)


class RecallHandoff(Handoff):
    """A recall tool that ends the agent's run, with the tool's own input model as its arguments.

    ``handoff`` ends the recall; ``expand_context_window`` ends the current iteration ("调用此工具后会
    立即结束当前迭代"). AutoGen's default handoff takes no arguments; this one calls the toolbox, whose
    output becomes the ``HandoffMessage`` content and which keeps the arguments. It never raises: bad
    arguments come back as a message.
    """

    _box: MemoryToolbox | None = None
    _tool: str = "handoff"

    @classmethod
    def for_toolbox(cls, box: MemoryToolbox, tool: str = "handoff", *, target: str = "memory_context") -> RecallHandoff:
        """A handoff that runs ``tool`` of ``box``."""
        spec = MEMRECALL_TOOLS[tool]
        if not (spec.is_handoff or spec.is_expansion):
            raise ValueError(f"{tool} does not end a recall iteration")
        handoff = cls(target=target, name=tool, description=spec.description.strip().splitlines()[0])
        handoff._box = box
        handoff._tool = tool
        return handoff

    @property
    def handoff_tool(self) -> BaseTool[Any, Any]:
        assert self._box is not None, "use RecallHandoff.for_toolbox(...)"
        return ScopedTool(self._box, self._tool, compact=True)


@dataclass(frozen=True, slots=True)
class RecallResult:
    """What a recall produced: the typed :class:`RecallLedger` (searches, details, expansions, the
    handoff), how many iterations ran, the final window, and the agent's events."""

    ledger: RecallLedger
    iterations: int
    window_size: int
    events: tuple[BaseAgentEvent | BaseChatMessage, ...] = field(default=(), repr=False)

    @property
    def handoff(self) -> HandoffInput | None:
        """The model's handoff, when it gave valid arguments."""
        return self.ledger.handoff

    @property
    def found(self) -> list[MemorySearchResultItem]:
        """Every memory the searches returned, the latest search first, in the engine's order (:func:`rank_found`)."""
        return self.ledger.found()

    @property
    def relevant_memory_keys(self) -> list[str]:
        """The handoff's keys that a search returned, else every key found."""
        found = {r.memory_key for r in self.found}
        keys = [k for k in (self.handoff.relevant_memory_keys if self.handoff else []) if k in found]
        return keys or [r.memory_key for r in self.found]

    @property
    def ranked_keys(self) -> list[str]:
        """The handoff's keys first, then the other results found, best first, each once."""
        return list(dict.fromkeys([*self.relevant_memory_keys, *(r.memory_key for r in self.found)]))

    def relevant(self, threshold: float) -> list[MemorySearchResultItem]:
        """The memories for the main model: see :meth:`RecallLedger.relevant`."""
        return self.ledger.relevant(threshold)


class MemRecallAgent:
    """Runs the recall for one :class:`Scope`.

    ``model_client`` is any AutoGen client (default: :class:`OfflineRecallPlanner`); ``limits`` the
    search rounds and tool limits; ``similarity_threshold`` the lowest score the offline planner
    reports; ``max_iterations`` window expansions; ``window_size`` messages in the first iteration;
    ``on_event`` receives every agent event as it happens (``queue.put_nowait`` will do);
    ``model_time_budget_s`` bounds the part a ``model_client`` drives (``None``: no bound of its own;
    see the module docs); ``as_of`` recalls what was current at that time.
    """

    def __init__(
        self,
        search: HybridMemorySearch,
        *,
        scope: Scope,
        model_client: ChatCompletionClient | None = None,
        keyword_client: ChatCompletionClient | None = None,
        limits: ToolLimits | None = None,
        similarity_threshold: float = 0.5,
        max_iterations: int = 3,
        window_size: int = 5,
        system_message: str | None = None,
        on_event: Any = None,
        now: datetime | None = None,
        model_time_budget_s: float | None = None,
        as_of: datetime | None = None,
    ) -> None:
        if not 1 <= max_iterations <= 5:
            raise ValueError("max_iterations must be between 1 and 5")
        if not 1 <= window_size <= 50:
            raise ValueError("window_size must be between 1 and 50")
        if model_time_budget_s is not None and not model_time_budget_s > 0:
            raise ValueError(f"model_time_budget_s must be a positive number of seconds, not {model_time_budget_s!r}")
        self.search = search
        self.scope = scope
        self.limits = limits or ToolLimits()
        self.similarity_threshold = similarity_threshold
        self.model_time_budget_s = model_time_budget_s
        #: Whether a model (not the offline planner) drives the recall.
        self.model_driven = model_client is not None
        self.model_client = model_client or OfflineRecallPlanner(
            limits=self.limits,
            similarity_threshold=similarity_threshold,
            # the semantic round scores in hybrid mode: a stored embedder's likeness already takes part
            # there (up to the share), a share of 0 asks for words only, and a vector-only round compares
            # raw cosines with the threshold (averaged word vectors put unrelated everyday sentences at
            # 0.6-0.85: "晚上我很难过" recalled "老公换了新工作")
            semantic=False,
        )
        self.keyword_client = keyword_client
        self.max_iterations = max_iterations
        self.window_size = window_size
        self.system_message = system_message or recall_prompt(rounds=self.limits.rounds)
        self.on_event = on_event
        self.now = now
        #: recall what was current at this time (``None``: now)
        self.as_of = as_of
        #: The ledger of the recall running now (or last run): kept when the run is cancelled.
        self.ledger = RecallLedger()
        self._iteration = 0

    def build_agent(self, box: MemoryToolbox) -> AssistantAgent:
        """The AssistantAgent of one iteration: three tools, and ``expand_context_window`` and ``handoff``
        through ``handoffs=`` (both end the run)."""
        return AssistantAgent(
            AGENT_NAME,
            model_client=self.model_client,
            tools=[*box.tools(["search_memories", "get_memory_detail", "extract_search_keywords"], compact=True)],
            handoffs=[RecallHandoff.for_toolbox(box, "expand_context_window"), RecallHandoff.for_toolbox(box)],
            system_message=self.system_message,
            # every search round, a detail read, keyword extraction and the handoff itself
            max_tool_iterations=self.limits.rounds + 4,
            reflect_on_tool_use=False,
            model_context=TextOnToolCallsContext(),  # tool calls go out with "" text: strict servers refuse null
        )

    async def recall(self, messages: Sequence[tuple[str, str]]) -> RecallResult:
        """Recall for the conversation ``messages`` (``(role, text)``, oldest first; the last is the
        current user message). ``self.ledger`` fills as the agent works, so a caller that cancels the
        recall (a time budget) still has what the searches found."""
        if not messages:
            raise ValueError("recall needs at least the current message")
        attributes = {
            "agent_memory.recall.max_iterations": self.max_iterations,
            "agent_memory.recall.window_size": self.window_size,
            "agent_memory.recall.timed_out": False,
        }
        with span(RECALL_SPAN, attributes) as traced:
            traced.content("agent_memory.recall.message", messages[-1][1])
            try:
                await self.search.warm_up()  # the dictionaries load once per process, not in the first round's time
                with self.search.one_view():  # every round searches the same memories, read once
                    if not self.model_driven:
                        return await self._recall(messages)
                    return await self._model_recall(messages)
            except asyncio.CancelledError:  # the caller's time budget ran out
                traced.set("agent_memory.recall.timed_out", True)
                raise
            finally:
                if traced.recording:
                    traced.set_many(_ledger_attributes(self.ledger))

    async def _model_recall(self, messages: Sequence[tuple[str, str]]) -> RecallResult:
        """The model's recall, with the deterministic first round as its fallback (see the module docs)."""
        first = MemRecallAgent(
            self.search,
            scope=self.scope,
            limits=dataclasses.replace(self.limits, rounds=1),
            similarity_threshold=self.similarity_threshold,
            max_iterations=1,
            window_size=self.window_size,
            now=self.now,
        )
        fallback = tuple((await first._recall(messages)).ledger.relevant(self.similarity_threshold))
        self.ledger = RecallLedger(fallback=fallback)  # what a cancelled recall keeps from the start
        event: BaseAgentEvent
        try:
            async with asyncio.timeout(self.model_time_budget_s):
                return await self._recall(messages, fallback=fallback)
        except TimeoutError:
            logger.warning(
                "the recall model ran past its %s s; the recall gives what was found", self.model_time_budget_s
            )
            event = RecallTimeoutEvent(
                source=AGENT_NAME,
                budget_s=self.model_time_budget_s or 0.0,
                content="the recall model was stopped; what was found is given",
            )
        except Exception as exc:  # a model's error ends its part, never the recall
            logger.warning("the recall model failed; the recall gives what was found", exc_info=True)
            event = RecallErrorEvent(
                source=AGENT_NAME, content=f"recall model: {exc}"[:500], error_type=type(exc).__name__
            )
        await self._emit(event)
        return RecallResult(self.ledger, max(self._iteration, 1), self.window_size)

    async def _emit(self, event: Any) -> None:
        if self.on_event is not None:
            result = self.on_event(event)
            if asyncio.iscoroutine(result):
                await result

    async def _recall(
        self, messages: Sequence[tuple[str, str]], *, fallback: tuple[MemorySearchResultItem, ...] = ()
    ) -> RecallResult:
        window = self.window_size
        events: list[BaseAgentEvent | BaseChatMessage] = []
        self.ledger = ledger = RecallLedger(fallback=fallback)
        listing = told_days_filter(self.search, messages[-1][1])
        for iteration in range(1, self.max_iterations + 1):
            self._iteration = iteration
            box = MemoryToolbox(
                self.search,
                scope=self.scope,
                ledger=ledger,
                limits=self.limits,
                model_client=self.keyword_client,
                iteration=iteration,
                max_iterations=self.max_iterations,
                window_size=window,
                now=self.now,
                as_of=self.as_of,
                listing=listing,
            )
            earlier = list(messages[:-1])[-(window - 1) :] if window > 1 else []
            task = format_task(
                messages[-1][1], earlier, iteration=iteration, max_iterations=self.max_iterations, window_size=window
            )
            agent = self.build_agent(box)
            async for item in agent.run_stream(task=task):
                if isinstance(item, BaseAgentEvent | BaseChatMessage):
                    events.append(item)
                    await self._emit(item)
            expansion = box.expansion
            if ledger.handoff is not None or ledger.handoff_problem is not None or expansion is None:
                return RecallResult(ledger, iteration, window, tuple(events))
            window = expansion.new_size
            await self._emit(WindowExpandedEvent(source=AGENT_NAME, new_size=window, iteration=expansion.iteration))
        return RecallResult(ledger, self.max_iterations, window, tuple(events))


def _ledger_attributes(ledger: RecallLedger) -> dict[str, int | bool]:
    """What a recall's span says of its ledger: iterations (the first and each approved window
    expansion), search rounds, tool calls (searches, detail reads, expansions and the handoff), whether a
    valid handoff ended it, how many memories its searches found. Read when the recall ends, also when
    its time ran out."""
    handed = ledger.handoff is not None or ledger.handoff_problem is not None
    return {
        "agent_memory.recall.iterations": 1 + sum(1 for e in ledger.expansions if e.approved),
        "agent_memory.recall.rounds": len(ledger.searches),
        "agent_memory.recall.tool_calls": len(ledger.searches) + len(ledger.details) + len(ledger.expansions) + handed,
        "agent_memory.recall.handoff": ledger.handoff is not None,
        "agent_memory.recall.memories_found": len(ledger.found()),
    }
